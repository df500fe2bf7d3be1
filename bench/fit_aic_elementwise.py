"""Fit the elementwise class of the Hopper, Blackwell and Ada families on aiconfigurator's
bf16 -> fp8 quantize kernel (``aic_elementwise.csv``), seven systems, leave-one-system-out.

The rows: vLLM's ``static_scaled_fp8_quant`` and TensorRT-LLM's ``static_quantize_e4m3_per_tensor``
CUDA kernels (one launch each; ``flag`` empty: the SGLang four-kernel PyTorch composite and the
TensorRT-LLM tables before 1.3 are left out), x[m, k] bf16 -> fp8 e4m3 with a per-tensor scale,
CUDA-graph replay time (mean of 30 back-to-back executions on the same x: no host launch, no L2
flush).  The fit uses the newest table of each framework on each system (``FIT_TABLES``); the
other unflagged versions are scored as a check.  Each row is opcost's one-op ONNX model
``QuantizeLinear(x bf16 [m, k], scale, zero point fp8) -> y fp8`` (``counts``; checked against
``analyzer.analyze`` at every run): op class elementwise, ``bytes = 3 m k + 3``, ``vec = 5 m k``.

The model is ``kernel_time``'s elementwise form on each system's profile (DRAM bandwidth, SMs,
L2 size, clock as ``analyzer.prediction.hardware`` resolves it: a profile without a clock gets the
median GPU clock for the per-SM term and its family set's floor in seconds), with ``sm_overlap = 1``::

    time = floor + max((dram_bytes + b_half) / (mem_bw * e_bw), bytes / (units * clock * bpc))
    dram_bytes = bytes * (1 - l2_hit * s(bytes / l2_bytes)),   floor = floor_cycles / clock

Five constants, all pooled over the systems fitted on (``fit_shipped``): ``e_bw`` = the
large-size DRAM fraction (``dram_fraction``: measured at >= 1.6 GB); ``bpc`` (bytes per SM-cycle:
the L2-resident rate) and ``l2_hit`` (the share of an L2-resident working set that skips DRAM) by
one least squares on log(pred/measured) (soft L1, deterministic; each (system, framework) table
weighted equally), and ``b_half`` (the size ramp) and ``floor_cycles`` with them.  The floor
enters the class floor the library pools over the NVIDIA families; the variant with PyTorch's
floor from that pool (``pooled_floor_cycles``) is scored too.  Scored in-sample and
leave-one-system-out (fit on six, score the seventh), against the sum form (DRAM + per-SM term,
``e_bw`` free), a two-level variant (``e_bw`` and ``bpc`` per family) and one-system fits.

    PYTHONPATH=$PWD python bench/fit_aic_elementwise.py [MEASUREMENTS_DIR] [--no-write]

Writes ``bench/results/aic_elementwise_fit.md`` (and ``.json``) and, unless ``--no-write``, the
``quantize`` sets (QuantizeLinear / DequantizeLinear; PyTorch's own elementwise kernels keep the
A100/A40 sets) of ``hardware_db/efficiency/nvidia-{hopper,blackwell,ada}.json`` (the other sets
of those files are kept; ``bench/fit_efficiency.py`` writes the same sets through ``family_sets``).
The rows, their counts and the systems' figures: ``aic_elementwise_data``; the report:
``aic_elementwise_report``.  Needs pandas and scipy (this script only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from aic_elementwise_data import (  # (puts the repository root on sys.path first)
    COMMAND, FAMILIES, FILE, FIT_DATE, FIT_TABLES, KERNELS, RESULTS, ROOT, SCRIPT, SYSTEMS, hw_of, load, regime,
    verify_counts)
from aic_elementwise_report import render
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE, CLASS_PARAMS, OP_CLASSES, kernel_time

# free constants: name -> (initial, low, high), fitted in log space
FREE = {"e_bw": (0.85, 0.3, 1.5), "b_half_bytes": (1e5, 1e2, 1e9), "floor_cycles": (3000.0, 100.0, 3e4),
        "bpc": (20.0, 1.0, 500.0), "l2_hit": (0.5, 1e-3, 1.0)}
E_COMPUTE = 0.5   # not identified: every row is memory-bound (5 vector FLOPs per 3 bytes)


# ----------------------------------------------------------------------------- model


# the memory form (kernel_time's sm_overlap): 1, the larger of the DRAM and per-SM terms (shipped: it
# holds e_bw at the measured large-size DRAM fraction and the SM-limited L2-resident rate at once);
# 0, their sum (the vidur-fitted sets' form: fitted free, its e_bw runs to the bound); both scored
SHIPPED_OVERLAP = 1.0
FORMS = {"overlap (max)": 1.0, "sum": 0.0}
REF_CLOCK = {"nvidia-hopper": 1.98e9, "nvidia-blackwell": 1.98e9, "nvidia-ada": 2.52e9}  # its fit device's


def arrays_of(consts: dict, hw: dict, family: str) -> dict:
    """``kernel_time`` arrays for the elementwise class on one device: the per-SM rate from ``bpc``
    and the device's clock; the floor ``floor_cycles / clock`` with the device's own clock, else
    the family set's floor in seconds (``floor_cycles / REF_CLOCK``, as the library reads it)."""
    arr = {p: np.zeros(len(OP_CLASSES)) for p in CLASS_PARAMS}
    arr["e_compute"][:], arr["e_bw"][:], arr["trans_weight"] = 1.0, 1.0, 11.0
    i = CLASS_CODE["elementwise"]
    clock = hw["clock_hz"] if hw["own_clock"] else REF_CLOCK[family]
    arr["e_compute"][i], arr["e_bw"][i] = E_COMPUTE, consts["e_bw"]
    arr["b_half_bytes"][i], arr["floor_s"][i] = consts["b_half_bytes"], consts["floor_cycles"] / clock
    arr["bpc"][i], arr["l2_hit"][i] = consts["bpc"], consts["l2_hit"]
    arr["sm_overlap"][i] = consts.get("sm_overlap", SHIPPED_OVERLAP)
    arr["sm_bw"] = arr["bpc"] * hw["clock_hz"]
    return arr


def predict(df, consts: dict) -> np.ndarray:
    """Kernel time (s) of the rows of ``df`` (any systems) with one constants set."""
    out = np.empty(len(df))
    for system, idx in df.groupby("device_system").groups.items():
        idx = df.index.get_indexer(idx)
        d, hw = df.iloc[idx], hw_of(system)
        z = np.zeros(len(d))
        feats = {"op_class": np.full(len(d), CLASS_CODE["elementwise"]), "mac_flops": z,
                 "vec_flops": d.vec.to_numpy(), "trans_flops": z, "bytes": d.bytes.to_numpy()}
        out[idx] = kernel_time(np, feats, hw, arrays_of(consts, hw, SYSTEMS[system][1]))["time_s"]
    return out


def metrics(pred, meas) -> dict:
    rel = pred / meas - 1.0
    ape = np.abs(rel)
    return {"rows": int(len(meas)), "mape": float(100 * ape.mean()), "median_ape": float(100 * np.median(ape)),
            "bias": float(100 * np.median(rel)), "within10": float(100 * (ape <= 0.10).mean()),
            "within25": float(100 * (ape <= 0.25).mean())}


def fit(df, free: dict | None = None, fixed: dict | None = None) -> dict:
    """One least squares on log(pred/measured) over ``free`` (default ``FREE``); ``fixed`` values
    held.  Each (system, framework, version) table weighs the same (rows / table size)."""
    from scipy.optimize import least_squares

    free = FREE if free is None else free
    fixed = dict(fixed or {})
    names = list(free)
    lt = np.log(df.t.to_numpy())
    w = np.sqrt(1.0 / df.groupby("table").t.transform("size").to_numpy())

    def resid(x):
        return w * (np.log(predict(df, dict(fixed, **dict(zip(names, np.exp(x)))))) - lt)

    r = least_squares(resid, np.log([free[n][0] for n in names]),
                      bounds=(np.log([free[n][1] for n in names]), np.log([free[n][2] for n in names])),
                      loss="soft_l1", f_scale=0.1 * float(w.mean()), max_nfev=400, method="trf")
    return dict(fixed, **{n: float(v) for n, v in zip(names, np.exp(r.x))})


# ----------------------------------------------------------------------------- evaluation


def per_system(df, pred) -> dict:
    """system -> metrics of ``pred`` on that system's rows of ``df``."""
    out = {}
    for system, idx in df.groupby("device_system").groups.items():
        i = df.index.get_indexer(idx)
        out[system] = metrics(pred[i], df.t.to_numpy()[i])
    return out


FAMILY_LEVEL = ("e_bw", "bpc")  # the constants the two-level scheme fits per family
BIG_BYTES = 1.6e9  # rows at or above this size measure the large-size DRAM fraction (every L2 is far below)


def dram_fraction(df) -> float:
    """The large-size DRAM fraction: over the systems in ``df``, the median of each system's median
    ``bytes / t / mem_bw`` on its rows of at least ``BIG_BYTES``."""
    per = [float(np.median(e.bytes / e.t / hw_of(s)["mem_bw"]))
           for s, e in df[df.bytes >= BIG_BYTES].groupby("device_system")]
    return float(np.median(per))


def pooled_floor_cycles(directory: str | None = None) -> float:
    """The elementwise floor in cycles the library pooled (``constants.floor_cycles``) before this
    fit: the median over the NVIDIA families' elementwise sets fitted on PyTorch's kernels (vidur's
    add on A100 and A40; this script's sets excluded)."""
    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

    directory = directory or EFFICIENCY_DIR
    per = []
    for name in sorted(os.listdir(directory)):
        if not name.startswith("nvidia-") or not name.endswith(".json") or "-pytorch" in name:
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            e = json.load(f)["sets"].get("elementwise")
        if e and e["provenance"].get("fit_script") != SCRIPT and e["constants"].get("floor_clock_hz", 0.0) > 0:
            per.append(e["constants"]["floor_s"] * e["constants"]["floor_clock_hz"])
    return float(np.median(per))


def fit_form(df, overlap: float, floor_cycles: float | None = None) -> dict:
    """The fit of a memory form (the floor held at ``floor_cycles`` where given): the overlap form
    staged (``e_bw`` = ``dram_fraction`` of ``df``, then floor, ramp, bpc and l2_hit by least
    squares), the sum form with ``e_bw`` free too (its best: held at the measured fraction it
    scores worse)."""
    fixed = {"sm_overlap": overlap}
    if floor_cycles is not None:
        fixed["floor_cycles"] = floor_cycles
    if overlap > 0:
        fixed["e_bw"] = dram_fraction(df)
    return fit(df, {k: v for k, v in FREE.items() if k not in fixed}, fixed)


def fit_shipped(df) -> dict:
    """The shipped constants: the overlap form with all five pooled (``fit_form``).  They are
    shipped as the ``quantize`` class (its floor in cycles pools only with other quantize sets);
    the report scores the alternative, PyTorch's elementwise floor (``pooled_floor_cycles``) with
    the rest kept."""
    return fit_form(df, SHIPPED_OVERLAP)


def fit_two_level(df, overlap: float) -> dict:
    """Family -> constants: the pooled fit's floor, ramp and L2 share for every family, ``e_bw``
    (the family's ``dram_fraction``) and ``bpc`` (fitted) from the family's own systems in ``df``
    (the pooled ones where it has none)."""
    pooled = fit_form(df, overlap)
    held = {k: v for k, v in pooled.items() if k not in FAMILY_LEVEL}
    out = {}
    for fam in FAMILIES:
        f = df[df.device_system.map(lambda s: SYSTEMS[s][1]) == fam].reset_index(drop=True)
        out[fam] = (fit(f, {"bpc": FREE["bpc"]}, dict(held, e_bw=dram_fraction(f))) if len(f)
                    else dict(pooled))
    return out


def predict_families(df, by_family: dict) -> np.ndarray:
    """``predict`` with each system's family constants."""
    out = np.empty(len(df))
    for fam, idx in df.groupby(df.device_system.map(lambda s: SYSTEMS[s][1])).groups.items():
        i = df.index.get_indexer(idx)
        out[i] = predict(df.iloc[i], by_family[fam])
    return out


def evaluate(q, overlap: float = SHIPPED_OVERLAP, full: bool = True) -> dict:
    """The pooled fit (all seven systems) in the memory form ``overlap``, its in-sample and
    leave-one-system-out scores (fit on six, score the seventh), both per size regime too; with
    ``full``, also the per-family and per-system in-sample fits, the two-level variant and the
    other unflagged versions."""
    d = q[q.fit].reset_index(drop=True)
    shipped = fit_shipped if overlap == SHIPPED_OVERLAP else (lambda x: fit_form(x, overlap))
    pooled = shipped(d)
    p = predict(d, pooled)
    t, reg = d.t.to_numpy(), regime(d)
    res = {"pooled": pooled, "in_sample": per_system(d, p), "loso": {}, "loso_consts": {}, "regimes": {},
           "loso_regimes": {}}
    for system in SYSTEMS:
        i = (d.device_system == system).to_numpy()
        held = d[i].reset_index(drop=True)
        c = shipped(d[~i].reset_index(drop=True))
        ph = predict(held, c)
        res["loso_consts"][system], res["loso"][system] = c, metrics(ph, held.t.to_numpy())
        for key, pred in (("regimes", p[i]), ("loso_regimes", ph)):
            res[key][system] = {r: metrics(pred[reg[i] == r], t[i][reg[i] == r])
                                for r in ("tiny", "L2-resident", "transition", "DRAM") if (reg[i] == r).any()}
    if full:
        _evaluate_more(q, d, overlap, res)
    return res


def _evaluate_more(q, d, overlap: float, res: dict) -> None:
    """The comparisons of ``evaluate(full=True)``, into ``res``."""
    rest = q[~q.fit].reset_index(drop=True)
    res["pytorch_floor"] = dict(res["pooled"], floor_cycles=pooled_floor_cycles())
    res["pytorch_floor_in_sample"] = per_system(d, predict(d, res["pytorch_floor"]))
    res["check_versions"] = per_system(rest, predict(rest, res["pooled"]))
    res["two_level"] = fit_two_level(d, overlap)
    res["loso_two_level"], res["per_system"], res["family"] = {}, {}, {}
    for system in SYSTEMS:
        i = (d.device_system == system).to_numpy()
        held = d[i].reset_index(drop=True)
        own = fit_form(held, overlap)
        res["per_system"][system] = (own, metrics(predict(held, own), held.t.to_numpy()))
        two = fit_two_level(d[~i].reset_index(drop=True), overlap)
        res["loso_two_level"][system] = metrics(predict_families(held, two), held.t.to_numpy())
    for fam in FAMILIES:
        f = d[d.device_system.map(lambda s: SYSTEMS[s][1]) == fam].reset_index(drop=True)
        c = fit_form(f, overlap)
        res["family"][fam] = (c, per_system(f, predict(f, c)))


# ----------------------------------------------------------------------------- the family sets


def _round(x: float) -> float:
    return float(f"{x:.4g}")


def set_of(consts: dict, family: str, q) -> tuple[dict, dict]:
    """(constants, provenance) of a family's quantize set from the pooled fit ``consts``."""
    d = q[q.fit].reset_index(drop=True)
    ref = REF_CLOCK[family]
    c = {"e_compute": E_COMPUTE, "e_bw": _round(consts["e_bw"]), "b_half_bytes": _round(consts["b_half_bytes"]),
         "floor_s": _round(consts["floor_cycles"] / ref), "tile_m": 0.0, "tile_n": 0.0, "wave_alpha": 0.0,
         "l2_gain": 0.0, "bpc": _round(consts["bpc"]), "l2_hit": _round(consts["l2_hit"]), "floor_clock_hz": ref,
         "sm_overlap": consts["sm_overlap"]}
    own = d[d.device_system.map(lambda s: SYSTEMS[s][1]) == family].reset_index(drop=True)
    err = metrics(predict(own, consts), own.t.to_numpy())
    tables = ", ".join(f"{f} {v}" for f, v in FIT_TABLES.items())
    prov = {
        "kind": "fit", "measurement_file": FILE,
        "device_system": ", ".join(sorted(SYSTEMS)) + " (pooled)",
        "hardware": ", ".join(sorted({p for p, _ in SYSTEMS.values()})),
        "filter": (f"aic_elementwise flag empty, (framework, version) in {{{tables}}} (the newest unflagged table of "
                   "each framework per system), every m x k; kernels: " + "; ".join(KERNELS.values())),
        "timing": "graph (mean of 30 back-to-back executions in CUDA-graph replays; no host launch, no L2 flush)",
        "rows": int(len(d)), "rows_used_in_fit": int(len(d)),
        "fit_method": ("pooled over the seven systems, kernel_time's per-SM form with sm_overlap 1 (memory time = "
                       "the larger of the DRAM and per-SM terms): e_bw = the large-size DRAM fraction (median over "
                       "the systems of each one's median bytes / t / mem_bw at >= 1.6 GB); b_half_bytes, floor "
                       "(cycles; floor_s = cycles / floor_clock_hz: it enters the class floor the library pools "
                       "over the NVIDIA families), bpc and l2_hit by one least squares on log(pred/measured) (soft "
                       "L1, each (system, framework) table weighted equally); e_compute held at "
                       f"{E_COMPUTE} (not identified). Leave-one-system-out scores, the sum-form, family-level "
                       "and PyTorch-floor variants: bench/results/aic_elementwise_fit.md"),
        "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND,
        "fit_error": {"systems": ", ".join(sorted(own.device_system.unique())),
                      **{k: round(v, 2) if isinstance(v, float) else v for k, v in err.items()}},
        "kernel_note": ("vendor CUDA kernels, not PyTorch's elementwise kernel: both load 16 bytes per thread "
                        "(vectorized) and write fp8 (1 byte per element), one launch; PyTorch's own kernels "
                        "(vidur's add on A100/A40) are the nvidia-ampere sets")}
    return c, prov


def family_sets(meas_dir: str) -> dict:
    """family -> {"quantize": (constants, provenance)} from the pooled fit (for
    ``bench/fit_efficiency.py``, which writes the family files)."""
    q = load(meas_dir)
    consts = fit_shipped(q[q.fit].reset_index(drop=True))
    return {fam: {"quantize": set_of(consts, fam, q)} for fam in FAMILIES}


def write_sets(sets: dict, directory: str) -> None:
    """Replace the quantize set of each family file in ``directory`` (other sets kept)."""
    for fam, fsets in sets.items():
        path = os.path.join(directory, f"{fam}.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for cls, (c, p) in fsets.items():
            doc["sets"][cls] = {"constants": c, "provenance": p}
        doc["sets"] = dict(sorted(doc["sets"].items()))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measurements", nargs="?", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--no-write", action="store_true", help="fit and report; leave the family files alone")
    ap.add_argument("--results", default=RESULTS)
    args = ap.parse_args(argv)
    t0 = time.time()
    verify = verify_counts()
    if any(v.startswith("BAD") for v in verify):
        print("\n".join(verify))
        return 1
    q = load(args.measurements)
    res = evaluate(q)
    alt = evaluate(q, overlap=next(v for v in FORMS.values() if v != SHIPPED_OVERLAP), full=False)
    text = render(res, alt, q, verify, time.time() - t0)
    print(text)
    os.makedirs(os.path.dirname(args.results), exist_ok=True)
    with open(args.results + ".md", "w", encoding="utf-8") as f:
        f.write(text)
    with open(args.results + ".json", "w", encoding="utf-8") as f:
        json.dump({"command": COMMAND, "fit_date": FIT_DATE, "shipped": res, "sum_form": alt}, f, indent=1,
                  default=float)
    if not args.no_write:
        from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

        write_sets({fam: {"quantize": set_of(res["pooled"], fam, q)} for fam in FAMILIES}, EFFICIENCY_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(main())
