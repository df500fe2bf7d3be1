#!/usr/bin/env python3
"""XLA's GPU kernel sets for the Hopper family (``op_classes.XLA_CLASS``), fitted on XLA's own
single-op kernels measured on the lent H200 (``bench/results/h200_xla_ops_2026-12-04.csv``,
``bench/gpu/measure_xla.py``: jax 0.11.2, kernel sum per jitted call, L2-warm, run 1; run 2 is
the repeat).  No H100 row and no whole program is read here.

Rows used: the cases whose call ran one kernel (``n_kernels`` 1) that opcost also plans as one
kernel, in their XLA class (``FIT``).  The features of that kernel (FLOPs, bytes) are opcost's own
(``analyzer.analyze_jax``: the KernelTerms of the one kernel); a matrix row's (m, n, k, batch)
come from its case's shapes.

- Memory-bound classes (``xla_loop``, ``xla_act``, ``xla_reduce``, ``xla_softmax``):
  ``efficiency_class_fit.fit_memory_class`` (the per-SM "sum" form every NVIDIA memory set uses:
  floor_s, b_half_bytes, bpc, l2_hit; floor in cycles of the H200's clock), per byte or per
  element (``per_element``) as the leave-one-size-out score on these rows says (``choose_form``).
- Matrix classes (``xla_gemm``, ``xla_bgemm``): the floor only (``fit_floor``), every other
  constant held at the family's ``gemm`` / ``bgemm`` set (fitted on cuBLAS's kernels; a Triton GEMM
  fusion's large-size rate is not identified by these few rows).  Each row at the matrix peak
  opcost's kernel took (bf16, or TF32 for an f32 dot: ``row_hw``); a product on the FMA units is
  left out (``engine_rows``).
- ``xla_softmax_block`` takes ``xla_softmax``'s set (XLA runs one Triton softmax kernel at every
  row length measured, 64..4096).
- ``cold_start_s`` (what a flushed L2 adds, ``cache_clock.cold_start``) is carried from the
  PyTorch set of the same kernel shape measured flushed (``COLD_FROM``): the first loads' wait for
  DRAM, not fitted here (these rows are L2-warm).

    PYTHONPATH=$PWD python bench/xla_sets.py [--out bench/results/xla_sets.md] [--write]

``--write`` puts the sets into ``hardware_db/efficiency/nvidia-hopper.json`` and their copies
(provenance ``inherit``) into ``nvidia-blackwell.json`` (no Blackwell XLA measurement: the same
compiler's kernels, counted in cycles of the B200's clock).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "gpu"))
from report_lines import emit_text  # noqa: E402

ROWS = os.path.join(ROOT, "bench", "results", "h200_xla_ops_2026-12-04.csv")
FAMILY, PROFILE, DEVICE = "nvidia-hopper", "h200-sxm", "h200_sxm"
COMMAND = "PYTHONPATH=$PWD python bench/xla_sets.py --write"
# the xla_cases families read (every one-kernel case of a single op); each row is fitted in the
# class opcost plans its kernel in (a jnp layer norm or softmax: a fusion with a reduction member,
# xla_reduce; GELU's tanh form: a loop fusion whose heaviest member is a multiply, xla_loop)
FAMILIES = ("add", "affine_relu", "transpose", "tanh", "gelu", "layernorm", "softmax", "sum", "colmean",
            "dot", "dot_bias_relu", "bdot")
CLASSES = ("xla_loop", "xla_act", "xla_reduce", "xla_gemm", "xla_bgemm")
MATRIX = {"xla_gemm": "gemm", "xla_bgemm": "bgemm"}
# XLA classes no JAX single op of these rows lands in, given the set of the class their kernels
# run as: an ONNX Softmax under ``xla`` is a reduction fusion like jax.nn.softmax's
COPIES = {"xla_softmax": "xla_reduce", "xla_softmax_block": "xla_reduce"}
COLD_FROM = {"xla_loop": "elementwise", "xla_act": "activation", "xla_reduce": "norm_row"}
FIT_DATE = "2026-12-04"


def read_rows(path: str = ROWS) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _mnk(key: str) -> tuple[float, float, float, float]:
    """(m, n, k, batch) of a matrix case from its key (``xla_cases``: dot MxKxK, dot_bias_relu
    MxKxN, bdot BHxSxSx64), zeros for another."""
    fam, _, shape = key.split("|")
    d = [float(x) for x in shape.split("x")]
    if fam == "dot":
        return d[0], d[1], d[1], 1.0
    if fam == "dot_bias_relu":
        return d[0], d[2], d[1], 1.0
    if fam == "bdot":
        return d[1], d[2], d[3], d[0]
    return 0.0, 0.0, 0.0, 1.0


def kernel_rows(rows: list[dict], col: str = "kernel_sum_us"):
    """One DataFrame row per one-kernel case of a ``FAMILIES`` family: opcost's features of its one
    kernel, the XLA class it plans it in (``op_class``), the measured time ``t`` (s) and its size
    ``group`` (elements)."""
    import analyzer
    import pandas as pd
    import xla_cases

    by_key = {c["key"]: c for c in xla_cases.cases()}
    out = []
    for r in rows:
        if r["family"] not in FAMILIES or not r.get(col) or r.get("n_kernels") != "1":
            continue
        c = by_key[r["key"]]
        p = analyzer.analyze_jax(c["fn"], *xla_cases.abstract_args(c), hw=PROFILE).predictions[0]
        if p.launches != 1:
            continue
        kt = next(t for t in (p.explain(i) for i in range(len(p.nodes))) if t is not None)
        m, n, k, b = _mnk(r["key"])
        out.append({"key": r["key"], "family": r["family"], "dtype": r["dtype"], "op_class": kt.op_class, "mac": kt.mac_flops, "vec": kt.vector_flops,
                    "trans": kt.transcendental_flops, "bytes": kt.bytes, "m": m, "n": n, "k": k, "batch": b,
                    "elem_bytes": 4.0 if r["dtype"] == "f32" else 2.0, "matrix_peak": kt.matrix_peak,
                    "t": float(r[col]) * 1e-6, "group": int(r["elems"])})
    return pd.DataFrame(out)


def engine_rows(df, hw):
    """The rows a matrix class is fitted on: those the profile runs on its tensor cores (bf16, or
    f32 at XLA's TF32 default: ``matrix_peak`` above the FMA units' ``vector_peak``; a product on
    the FMA units is another kernel), all rows of another class."""
    keep = ~df.op_class.isin(list(MATRIX)) | (df.matrix_peak > hw["vector_peak"])
    return df[keep].reset_index(drop=True)


def row_hw(d, hw) -> dict:
    """``hw`` with each row's own matrix peak (the one opcost's kernel took: bf16 or TF32)."""
    return dict(hw, matrix_peak=d.matrix_peak.to_numpy())


def family_set(family: str, cls: str) -> dict:
    """``family``'s constants of ``cls`` as loaded (inherited and fallback sets resolved)."""
    from analyzer.prediction.efficiency.constants import load_constants
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE, CLASS_PARAMS

    arr = load_constants(family).arrays
    i = CLASS_CODE[cls]
    return {p: float(arr[p][i]) for p in CLASS_PARAMS if p in arr and np.ndim(arr[p]) and p not in ("sm_bw", "kloop_s")}


def _ape(df, hw, cls: str, consts: dict) -> np.ndarray:
    from efficiency_class_fit import _arrays_with
    from efficiency_data import predict

    return np.abs(predict(df, row_hw(df, hw), _arrays_with(cls, consts)) / df.t.to_numpy() - 1.0)


def fit_floor(cls: str, df, hw, held: dict) -> dict:
    """``held`` with ``floor_s`` (seconds at the fit device's clock; ``floor_clock_hz`` set to it)
    by one least squares on log(pred/measured) over ``df`` (soft L1 at scale 0.1)."""
    from efficiency_class_fit import _arrays_with
    from efficiency_data import predict
    from scipy.optimize import least_squares

    base = dict(held, floor_clock_hz=hw["clock_hz"])
    lt = np.log(df.t.to_numpy())
    hw = row_hw(df, hw)

    def resid(x):
        return np.log(predict(df, hw, _arrays_with(cls, dict(base, floor_s=float(np.exp(x[0])))))) - lt

    r = least_squares(resid, [np.log(1e-6)], bounds=([np.log(1e-7)], [np.log(2e-5)]), loss="soft_l1",
                      f_scale=0.1, method="trf", max_nfev=200)
    return dict(base, floor_s=float(np.exp(r.x[0])))


def _fit(cls: str, d, hw, per: bool) -> dict:
    from efficiency_class_fit import fit_memory_class

    if cls in MATRIX:
        return fit_floor(cls, d, hw, family_set(FAMILY, MATRIX[cls]))
    consts, _ = fit_memory_class(cls, [(d, row_hw(d, hw))], per, floor_clock_hz=hw["clock_hz"])
    return consts


def logo(cls: str, d, hw, per: bool) -> np.ndarray:
    """Absolute percentage errors with each size group (``group``: elements) left out of its fit."""
    held = np.zeros(len(d))
    for g in sorted(set(d.group)):
        mask = (d.group == g).to_numpy()
        if mask.all():
            continue
        held[mask] = _ape(d[mask], hw, cls, _fit(cls, d[~mask].reset_index(drop=True), hw, per))
    return held


def choose_form(cls: str, d, hw) -> dict:
    """The class's fit: per byte and per element scored by leaving one size out (matrix classes:
    the floor fit only); the lower held-out MAPE kept. Returns its constants and the scores, and
    'before': the MAPE of the set the class takes by its fallback (PyTorch's kernels)."""
    from analyzer.prediction.efficiency.op_classes import CLASS_FALLBACK

    forms = (False,) if cls in MATRIX else (False, True)
    scores = {per: 100 * logo(cls, d, hw, per).mean() for per in forms}
    per = min(scores, key=scores.get)
    consts = _fit(cls, d, hw, per)
    return {"constants": consts, "per_element": per, "logo": scores,
            "in_sample": 100 * _ape(d, hw, cls, consts).mean(),
            "before": 100 * _ape(d, hw, cls, family_set(FAMILY, CLASS_FALLBACK[cls])).mean(), "rows": len(d)}


def fit_all(rows: list[dict]) -> dict:
    """class -> ``choose_form``'s result, over the H200's one-kernel rows (``kernel_rows``,
    ``engine_rows``)."""
    from efficiency_data import hw_of

    hw = hw_of(DEVICE)
    df = engine_rows(kernel_rows(rows), hw)
    out = {}
    for cls in CLASSES:
        d = df[df.op_class == cls].reset_index(drop=True)
        if len(d):
            out[cls] = dict(choose_form(cls, d, hw), families=sorted(set(d.family)))
    return out


def constants_doc(cls: str, consts: dict) -> dict:
    """A set's constants as written: 4 significant digits, the cold start carried (``COLD_FROM``)."""
    from analyzer.prediction.efficiency.kernel_time import FILE_PARAMS

    base = FILE_PARAMS[:10]    # (e_compute .. l2_hit: written always; the optional ones where not 0)
    doc = {k: float(f"{consts.get(k, 0.0):.4g}") for k in base}
    doc.update({k: float(f"{v:.4g}") for k, v in consts.items() if k in FILE_PARAMS and k not in base and v})
    if cls in COLD_FROM:
        cold = family_set(FAMILY, COLD_FROM[cls]).get("cold_start_s", 0.0)
        if cold:
            doc["cold_start_s"] = float(f"{cold:.4g}")
    return doc


def provenance(cls: str, r: dict) -> dict:
    per = " per element (per_element 1: bpc at 2 bytes an element)" if r["per_element"] else ""
    method = (f"floor_s only, by one least squares on log(pred/measured) (soft L1 at 0.1); every other constant "
              f"held at this family's {MATRIX[cls]} set" if cls in MATRIX else
              f"per-SM form (fit_memory_class){per}: floor_s, b_half_bytes, bpc, l2_hit; per byte or per element "
              f"by the lower leave-one-size-out MAPE ({', '.join(f'{k}: {v:.1f} %' for k, v in r['logo'].items())})")
    cold = (f"; cold_start_s carried from this family's {COLD_FROM[cls]} set (PyTorch's kernels measured flushed: "
            f"the first loads' wait for DRAM, not fitted here)" if cls in COLD_FROM else "")
    return {"kind": "fit", "measurement_file": os.path.relpath(ROWS, ROOT), "device_system": DEVICE,
            "hardware": PROFILE,
            "filter": (f"XLA's single-op programs (bench/gpu/xla_cases.py, jax 0.11.2 on this project's H200 SXM) "
                       f"that ran one kernel, planned as one kernel of class {cls}: families "
                       f"{', '.join(r['families'])}"),
            "timing": "kernel_sum (CUPTI kernel durations per jitted call, median of 20 calls on the same inputs: L2-warm)",
            "rows": r["rows"], "rows_used_in_fit": r["rows"], "fit_method": method + cold,
            "fit_date": FIT_DATE, "fit_script": "bench/xla_sets.py", "command": COMMAND,
            "fit_error": {"rows": r["rows"], "mape": round(r["in_sample"], 2),
                          "mape_one_size_left_out": round(min(r["logo"].values()), 2)}}


def kept(r: dict) -> bool:
    """A fitted set is kept where, each size left out of its fit, it scores better than the set its
    class took before (its fallback's, fitted on PyTorch's kernels)."""
    return min(r["logo"].values()) < r["before"]


def _fallback_set(cls: str, r: dict) -> dict:
    """A class whose fit is not kept: its fallback's set copied under its own name (the cold start
    with it: a class taking a set by fallback takes no cold start, ``constants.load_constants``)."""
    from analyzer.prediction.efficiency.op_classes import CLASS_FALLBACK

    src = CLASS_FALLBACK[cls]
    consts = family_set(FAMILY, src)
    return {"constants": constants_doc(cls, consts) | (
                {"cold_start_s": float(f"{consts['cold_start_s']:.4g}")} if consts.get("cold_start_s") else {}),
            "provenance": {"kind": "inherit", "source": (
                f"this family's {src} set (PyTorch's kernels): the fit on XLA's kernels ({r['rows']} rows) did not "
                f"beat it with each size left out ({min(r['logo'].values()):.1f} against {r['before']:.1f} % MAPE); "
                f"bench/xla_sets.py")}}


def write(fits: dict, directory: str) -> None:
    """The sets into ``<directory>/nvidia-hopper.json`` (a fit not ``kept``: its fallback's set under
    its name), their copies into ``nvidia-blackwell.json``."""
    from neusight_report import _dump

    hop = os.path.join(directory, f"{FAMILY}.json")
    with open(hop, encoding="utf-8") as f:
        doc = json.load(f)
    sets = {cls: ({"constants": constants_doc(cls, r["constants"]), "provenance": provenance(cls, r)} if kept(r)
                  else _fallback_set(cls, r)) for cls, r in fits.items()}
    for cls, src in COPIES.items():
        sets[cls] = {"constants": sets[src]["constants"],
                     "provenance": {"kind": "inherit", "source": (
                         f"this family's {src} set: XLA runs such a kernel as a reduction fusion, as it runs "
                         f"jax.nn.softmax (one kernel at every row length measured, 64..4096); bench/xla_sets.py")}}
    doc["sets"].update(sets)
    _dump(doc, hop)
    bw = os.path.join(directory, "nvidia-blackwell.json")
    with open(bw, encoding="utf-8") as f:
        doc = json.load(f)
    for cls, s in sets.items():
        doc["sets"][cls] = {"constants": s["constants"], "provenance": {"kind": "inherit", "source": (
            f"nvidia-hopper's {cls} set: the same compiler's kernels, no Blackwell XLA measurement; its floor in "
            f"cycles of this family's clocks (floor_clock_hz); bench/xla_sets.py")}}
    _dump(doc, bw)


def report(fits: dict) -> list[str]:
    lines = ["# XLA's GPU kernel sets (Hopper), fitted on the H200's single-op XLA kernels", "",
             "`PYTHONPATH=$PWD python bench/xla_sets.py --out bench/results/xla_sets.md`", "",
             f"Rows: `{os.path.relpath(ROWS, ROOT)}` run 1 (kernel sum, L2-warm), one-kernel cases planned as one "
             "kernel. In-sample and leave-one-size-out (each row count of elements left out of its fit, scored) "
             "MAPE; 'before': the set each class took by fallback before (PyTorch's kernels).", "",
             "| class | rows | families | before % | in-sample % | one size left out % | kept | per element | floor_s us | bpc |",
             "|---|---:|---|---:|---:|---:|---|---|---:|---:|"]
    for cls, r in fits.items():
        c = r["constants"]
        lines.append(f"| {cls} | {r['rows']} | {', '.join(r['families'])} | {r['before']:.1f} | {r['in_sample']:.1f} | "
                     f"{min(r['logo'].values()):.1f} | {'yes' if kept(r) else 'no'} | {'yes' if r['per_element'] else 'no'} | "
                     f"{c['floor_s'] * 1e6:.3f} | {c.get('bpc', 0.0):.4g} |")
    return lines + ["", "A set not kept is written as a copy of its fallback's (PyTorch's kernels' set) under its "
                    "name, with that set's cold start."]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=None, help="write the report here too")
    ap.add_argument("--write", action="store_true", help="write the sets into hardware_db/efficiency")
    ap.add_argument("--dir", default=os.path.join(ROOT, "hardware_db", "efficiency"))
    a = ap.parse_args(argv)
    fits = fit_all(read_rows())
    emit_text(a.out, "\n".join(report(fits)) + "\n")
    if a.write:
        write(fits, a.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
