"""The product path, the constants files and the markdown report of ``bench/fit_neusight.py``.

- the product path: NeuSight rows as one-op ONNX models (``onnx_of``) predicted through
  ``analyzer.analyze`` with a fit's constants (``product_times``, ``product_check``);
- writing: a fit's pooled sets into ``hardware_db/efficiency`` (``write_constants``: the FMA-unit
  matrix classes into ``generic.json``, the memory-bound classes into the Volta, Turing and Pascal
  family files, each with its provenance) and the capped cards' sustained clocks into their
  profiles (``write_sustained``);
- the report's tables (constants, sgemm tiles, host dispatch, the Ampere check, the scores).

Reads the fit's switches (``fit_neusight.WHOLE_BGEMM``, ``FIT_K_FILL``) when it writes a provenance.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile

import numpy as np

import fit_neusight as fns
from fit_neusight import (  # (the fit's names the tables and files use)
    MEMORY, MATRIX, Fit, fc, kernel_s, predict, fit_dispatch, dclass, metrics, PRODUCT_PER, TILES, SCRIPT, COMMAND, FIT_DATE, CLASS_CODE)
from neusight_data import FLOOR_X, GPUS, MEASUREMENT_FILE, PROFILE, subsample
from analyzer.prediction.efficiency.kernel_time import SOFTMAX_WARP_ROW

# ----------------------------------------------------------------------------- the product path

def onnx_of(r):
    """The one-op ONNX model of a NeuSight row (fp32; every tensor a graph input)."""
    from onnx import TensorProto, helper

    vi = helper.make_tensor_value_info
    T = TensorProto.FLOAT

    def model(op, ins, outs, opset=17, **attrs):
        n = helper.make_node(op, [a for a, _ in ins], [a for a, _ in outs], name=r.op, **attrs)
        g = helper.make_graph([n], r.op, [vi(a, T, s) for a, s in ins], [vi(a, T, s) for a, s in outs])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)

    def num(x):
        return int(x) if x == x and x is not None else 0   # (NaN: the column does not apply)

    B, H = num(r.B), num(r.H)
    if r.op in ("add", "mul", "div", "pow", "addu", "mulu", "divu", "powu"):
        name = {"add": "Add", "mul": "Mul", "div": "Div", "pow": "Pow"}[r.op.rstrip("u")]
        other = ("c", []) if r.op.endswith("u") else ("b", [B, H])
        return model(name, [("a", [B, H]), other], [("y", [B, H])])
    if r.op in ("relu", "tanh"):
        return model(r.op.capitalize(), [("a", [B, H])], [("y", [B, H])])
    if r.op == "gelu":
        return model("Gelu", [("a", [B, H])], [("y", [B, H])], opset=20)
    if r.op == "softmax":
        return model("Softmax", [("a", [B, H])], [("y", [B, H])], axis=1)
    if r.op == "ln":
        return model("LayerNormalization", [("a", [B, H]), ("g", [H]), ("b", [H])], [("y", [B, H])], axis=-1,
                     epsilon=1e-5)
    M, N, K = num(r.M), num(r.N), num(r.K)
    if r.op == "bmm":
        return model("MatMul", [("a", [B, M, N]), ("b", [B, N, K])], [("y", [B, M, K])])
    if r.op == "linear":
        return model("Gemm", [("x", [B * M, N]), ("w", [K, N]), ("b", [K])], [("y", [B * M, K])], transB=1)
    ci, co, i, p = int(r.in_channels), int(r.out_channels), int(r.input_size), int(r.padding)
    k, s = int(r.kernel_size), int(r.stride)
    o = (i + 2 * p - k) // s + 1
    return model("Conv", [("x", [B, ci, i, i]), ("w", [co, ci, k, k])], [("y", [B, co, o, o])],
                 pads=[p] * 4, strides=[s, s])


def product_rows(full, per: int = PRODUCT_PER):
    """``per`` rows per (op, device) of the kernel rows (above ``FLOOR_X`` x the floor)."""
    return subsample(full[~full.near_floor], cap=per, salt="product").query("not at_floor")


def product_times(rows, fit: Fit, directory: str, runtime: str) -> np.ndarray:
    """``analyzer.analyze`` latencies of ``rows`` with the constants in ``directory`` (a copy of
    hardware_db/efficiency holding ``fit``'s sets) and ``fit``'s sustained clocks."""
    import analyzer
    import hardware_db
    from analyzer.prediction import hardware as hwmod

    saved = fc.EFFICIENCY_DIR
    fc.EFFICIENCY_DIR = hwmod.fc.EFFICIENCY_DIR = directory
    try:
        out = []
        for r in rows.itertuples():
            share = fit.shares.get(r.device_system)
            prof = hardware_db.get(PROFILE[r.device_system])
            prof = dataclasses.replace(prof, sustained_clock_ghz=prof.clock_ghz * share if share else None)
            # NeuSight ran with TF32 off (cudnn.allow_tf32 = False): precision fp32 says so
            out.append(analyzer.analyze(onnx_of(r), hw=[prof], runtime=runtime,
                                        precision="fp32").predictions[0].latency_s)
        return np.array(out)
    finally:
        fc.EFFICIENCY_DIR = hwmod.fc.EFFICIENCY_DIR = saved


# ----------------------------------------------------------------------------- writing

FAMILIES = {"nvidia-volta": ("NVIDIA Volta (V100)", ["v100-sxm2-32gb", "v100-pcie-32gb"]),
            "nvidia-turing": ("NVIDIA Turing (T4)", ["t4"]),
            "nvidia-pascal": ("NVIDIA Pascal (P100, P4, TITAN X Pascal)", ["titanx-pascal", "p100-pcie-16gb", "p4"])}
REF_CLOCK = 1.41e9   # the clock a written floor_s is stated at (floor cycles / REF_CLOCK; not a fitted floor)
TRANS_PRIOR = {"kind": "prior", "source": "XLA GPU op profile (xla/service/gpu/model/hlo_op_profiles_data.h): "
               "f32 exp 79 cycles vs add 7, per shared/reference/digest_latency_modeling.md; not fitted"}


def _round(v: float) -> float:
    return float(f"{v:.4g}")


def provenance(cls: str, sub, err: dict) -> dict:
    """A fitted set's provenance (the schema's required keys)."""
    rows = sub[sub.cls == cls]
    ops = sorted(set(rows.op))
    method = ("one least squares on log(pred/measured) (soft L1) pooled over the GPUs, latency = host dispatch "
              "+ kernel (eager-op), on rows above 3x their device's and class's smallest latency; ")
    if cls in MEMORY:
        method += ("e_bw (DRAM fraction), bpc (bytes per SM-cycle), l2_hit, b_half_bytes free; e_compute held at "
                   "0.5 (memory-bound)")
        if cls in fns.PER_ELEMENT_ON:
            method += ("; per element (per_element = 1: bpc stated at 2 bytes an element, fitted on these fp32 rows "
                       "at 4; a kernel of another dtype is charged by its elements, not its bytes)")
    else:
        method += ("e_compute (of the FMA fp32 peak, at a power-capped card's fitted sustained clock) free, e_bw held "
                   "at generic.json's gemm set's (the thin shapes that identify it are few here); "
                   "the tile chosen of 128x128, 128x64, 64x64 by the fit's cost, waves over the SMs with split-K "
                   "(kernel_time.wave_split), b_half 0")
        if cls == "conv3_simt":
            method += "; mult_share (Winograd/FFT multiplies per direct multiply) free in [0.25, 1]"
        if cls == "bgemm_simt" and fns.WHOLE_BGEMM:
            method += (f"; then refitted alone (e_compute{' and k_fill' if fns.FIT_K_FILL else ''} free, the sustained clocks "
                       "held) with its tile run whole "
                       "(whole_tile: no smaller library tile, a narrow output padded to the tile), the tile "
                       "(rows x columns) chosen of 128x128, 64x128, 64x64 by the fit's cost")
    method += ("; floor not identified (inside the host dispatch): the pooled NVIDIA floor cycles apply "
               "(constants.floor_cycles), floor_s here is that floor at 1.41 GHz")
    return {"kind": "fit", "measurement_file": MEASUREMENT_FILE,
            "device_system": ", ".join(sorted(set(rows.device_system))) + " (pooled)",
            "hardware": ", ".join(sorted({PROFILE[d] for d in set(rows.device_system)})),
            "filter": f"op in {{{', '.join(ops)}}}" + ("; conv rows whose kernels_launched name no winograd/fft"
                                                         if cls == "conv_simt" else "")
            + ("; conv rows running winograd or fft kernels and the rest" if cls == "conv3_simt" else "")
            + (f"; rows of at most {SOFTMAX_WARP_ROW} elements (the warp-per-row kernel)" if cls == "softmax" else "")
            + (f"; rows longer than {SOFTMAX_WARP_ROW} elements (the block-per-row kernel)" if cls == "softmax_block"
               else ""),
            "timing": "eager single call (CUDA events around one PyTorch 2.1 call, mean of the fastest 5 of 25; "
                      "host dispatch included, fitted apart)",
            "rows": int(len(rows)), "rows_used_in_fit": int((~rows.near_floor).sum()),
            "fit_method": method, "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND,
            "fit_error": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in err.items()}}


def constants_doc(cls: str, vals: dict) -> dict:
    cyc = fc.floor_cycles()[CLASS_CODE[cls]]
    c = {"e_compute": 0.5, "e_bw": 1.0, "b_half_bytes": 0.0, "floor_s": 0.0, "tile_m": 0.0, "tile_n": 0.0,
         "wave_alpha": 0.0, "l2_gain": 0.0, "bpc": 0.0, "l2_hit": 0.0}
    c.update({k: _round(float(v)) for k, v in vals.items()})
    c["floor_s"] = _round(float(cyc) / REF_CLOCK) if np.isfinite(cyc) else 2e-6
    return c


def write_constants(fit: Fit, sub, errs: dict, directory: str) -> None:
    """The pooled matrix sets into generic.json; the pooled memory-bound sets into the Volta,
    Turing and Pascal family files (their other sets, the family's own FMA-unit sets of
    ``bench/family_simt.py``, and that script's note in the description kept; nothing else in
    the directory changes)."""
    path = os.path.join(directory, "generic.json")
    with open(path, encoding="utf-8") as f:
        gen = json.load(f)
    for cls in MATRIX:
        gen["sets"][cls] = {"constants": constants_doc(cls, fit.sets[cls]), "provenance": provenance(cls, sub, errs[cls])}
    _dump(gen, path)
    for fam, (what, devices) in FAMILIES.items():
        fam_path = os.path.join(directory, f"{fam}.json")
        old = {"sets": {}, "description": ""}
        if os.path.exists(fam_path):
            with open(fam_path, encoding="utf-8") as f:
                old = json.load(f)
        doc = {"schema_version": 1, "family": fam,
               "description": f"{what}: memory-bound classes (elementwise, activation, softmax and softmax_block by row length, norm) pooled over "
                              "NeuSight's five GPUs (A100 PCIe, V100 PCIe, T4, P100 PCIe, P4; fp32 PyTorch 2.1 "
                              "eager single calls, host dispatch fitted apart; bench/fit_neusight.py); the FMA-unit "
                              "matrix classes generic.json's pooled sets but where this file has its own; other "
                              "classes generic." + "".join(old["description"].partition(" FMA-unit GEMM sets (")[1:]),
               "devices": devices, "scalars": {"trans_weight": 11.0, "provenance": TRANS_PRIOR},
               "sets": {cls: {"constants": constants_doc(cls, fit.sets[cls]), "provenance": provenance(cls, sub, errs[cls])}
                        for cls in MEMORY}}
        # the family's own FMA-unit sets (bench/family_simt.py) stay
        doc["sets"].update({c: v for c, v in old["sets"].items() if c not in MEMORY})
        _dump(doc, fam_path)


def _dump(doc: dict, path: str) -> None:
    fc.validate(doc, path)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def write_sustained(shares: dict, profiles_dir: str) -> None:
    """``[power] sustained_clock_ghz`` (and its source) in the capped cards' profiles."""
    from profile_edit import set_sustained_clock

    for dev, share in shares.items():
        set_sustained_clock(PROFILE[dev], share, (
            f"the FMA peak's share this card held over NeuSight's fp32 nn.Linear and torch.bmm rows "
            f"({MEASUREMENT_FILE}, device_system {dev}), fitted jointly with the gemm_simt/bgemm_simt constants "
            f"pooled over the five GPUs; {SCRIPT}, {COMMAND}"), profiles_dir)


# ----------------------------------------------------------------------------- the report

def _fmt(m: dict) -> str:
    return f"{m['rows']:,} | {m['mape']:.1f} | {m['bias']:+.1f} | {m['within10']:.0f}"


def score_lines(test, col: str, title: str) -> list[str]:
    """Per GPU and class: MAPE, bias, within 10 % on every row and on the kernel rows."""
    out = [f"### {title}", "", "| GPU | class | rows | MAPE % | bias % | within 10 % | kernel rows | MAPE % | bias % "
           "| within 10 % |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (g, c), d in test.groupby(["gpu", "cls"]):
        k = d[~d.near_floor]
        out.append(f"| {g} | {c} | {_fmt(metrics(d[col], d.t))} | {_fmt(metrics(k[col], k.t))} |")
    out.append("")
    out += ["Per class over the five GPUs:", "", "| class | rows | MAPE % | bias % | within 10 % | kernel rows | "
            "MAPE % | bias % | within 10 % |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c, d in test.groupby("cls"):
        k = d[~d.near_floor]
        out.append(f"| {c} | {_fmt(metrics(d[col], d.t))} | {_fmt(metrics(k[col], k.t))} |")
    k = test[~test.near_floor]
    out.append(f"| all | {_fmt(metrics(test[col], test.t))} | {_fmt(metrics(k[col], k.t))} |")
    return out + [""]


def dispatch_lines(fit: Fit) -> list[str]:
    from analyzer.prediction import runtimes

    devs = sorted({d for d, _ in fit.dispatch})
    out = ["## Host dispatch per eager call (fitted, microseconds)", "",
           "A property of the host that measured (CPU, driver, PyTorch 2.1, CUDA events and synchronize), not "
           "of the GPU: NeuSight's five hosts differ. opcost's eager-op takes the five hosts' median per class "
           "(runtimes.EAGER_OP_CALL_US, checked by leaving one host out below); its eager stream runtime keeps "
           f"LLMCompass's A100 host (runtimes.EAGER_DISPATCH_US): {runtimes.EAGER_DISPATCH_US['gemm']:g} us per "
           f"matrix op, {runtimes.EAGER_DISPATCH_DEFAULT_US:g} us per other op; every profile's launch_overhead_us "
           "is 1.5 us (a kernel floor, not a dispatch).", "",
           "| class | " + " | ".join(devs) + " | median | opcost eager-op | opcost eager |",
           "|---|" + "---:|" * (len(devs) + 3)]
    for dc in sorted({c for _, c in fit.dispatch}):
        vals = [fit.dispatch.get((d, dc)) for d in devs]
        med = np.median([v for v in vals if v is not None])
        out.append(f"| {dc} | " + " | ".join("-" if v is None else f"{v * 1e6:.1f}" for v in vals)
                   + f" | {med * 1e6:.1f} | {runtimes.eager_op_call_us(dc):g} | {runtimes.eager_dispatch_us(dc):g} |")
    return out + [""]


def tile_lines(ns, fit: Fit) -> list[str]:
    """The sgemm tiles cuBLAS ran (the recorded kernel names' ``sgemm_<m>x<n>``) per GPU, beside
    the fitted tile: the model's set tile is the largest it runs, smaller ``LIBRARY_TILES`` for
    grids that do not fill the SMs."""
    mm = ns[ns.cls.isin(["gemm_simt", "bgemm_simt"])]
    tile = mm.kernel_name.str.extract(r"sgemm_(\d+x\d+)")[0].fillna("other")
    share = (tile.groupby(mm.gpu).value_counts(normalize=True) * 100).round(0)
    tiles = sorted(set(tile))
    v = fit.sets["gemm_simt"]
    out = ["## sgemm tiles", "", f"The fit's tile (least cost of {', '.join(f'{a:g}x{b:g}' for a, b in TILES)}): "
           f"{v['tile_m']:g}x{v['tile_n']:g}. The tiles cuBLAS ran, % of the matmul rows of each GPU (its kernel "
           "names):", "", "| GPU | " + " | ".join(tiles) + " |", "|---|" + "---:|" * len(tiles)]
    for g in GPUS:
        out.append(f"| {g} | " + " | ".join(f"{share.get((g, t), 0):g}" for t in tiles) + " |")
    return out + [""]


def ampere_lines(ns, fit: Fit) -> list[str]:
    """The A100 PCIe 40GB's memory-bound rows with opcost's nvidia-ampere sets (fitted on vidur's
    A100 kernel sums, not on these rows) against the pooled sets fitted here, both with the fitted
    host dispatch: a check of the Ampere set on another A100 card and PyTorch release."""
    rows = ns[(ns.device_system == "a100_pcie_40gb") & ns.cls.isin(MEMORY)]
    amp = fc.load_constants("nvidia-ampere").arrays
    host = np.array([fit.dispatch.get(("a100_pcie_40gb", dclass(c)), 0.0) for c in rows.cls])
    rows = rows.assign(p_amp=host + kernel_s(rows, "a100_pcie_40gb", amp), p_pool=predict(rows, fit))
    out = ["## The Ampere set checked on the A100 PCIe rows", "", "| class | rows | nvidia-ampere MAPE % | bias % | "
           "within 10 % | pooled (in-sample) MAPE % | bias % |", "|---|---:|---:|---:|---:|---:|---:|"]
    for c, d in rows.groupby("cls"):
        k = d[~d.near_floor]
        a, b = metrics(k.p_amp, k.t), metrics(k.p_pool, k.t)
        out.append(f"| {c} (kernel rows) | {_fmt(a)} | {b['mape']:.1f} | {b['bias']:+.1f} |")
    return out + [""]


def constants_lines(fit: Fit) -> list[str]:
    keys = ("e_compute", "e_bw", "bpc", "l2_hit", "b_half_bytes", "tile_m", "tile_n", "mult_share")
    out = ["## Pooled constants (in-sample fit on the five GPUs)", "", "| class | " + " | ".join(keys) + " |",
           "|---|" + "---:|" * len(keys)]
    for c in MEMORY + MATRIX:
        v = fit.sets[c]
        out.append(f"| {c} | " + " | ".join(f"{v.get(k, 0.0):.4g}" for k in keys) + " |")
    out += ["", "Sustained clock of the power-capped cards (share of the boost clock the FMA peak is taken at):", ""]
    out += [f"- {PROFILE[d]}: {s:.3f} x boost" for d, s in sorted(fit.shares.items())]
    return out + [""]


def product_arrays(df, eff_dir: str) -> dict:
    """Per device of ``df``: the efficiency arrays ``analyzer.analyze`` predicts its rows with (its
    profile's family, the family files of ``eff_dir``)."""
    return {dev: fc.load_constants(fc.family_of(PROFILE[dev], eff_dir), eff_dir).arrays
            for dev in sorted(set(df.device_system))}


def product_check(folds: dict, extra=None) -> tuple[list, list[str]]:
    """Each fold's held-out rows (``product_rows``) through ``analyzer.analyze`` with the fold's
    constants: ``runtime="kernel"`` + the fold's dispatch of the held-out host (own floor rows),
    and ``runtime="eager-op"`` as opcost predicts it (its per-call table); the feature path's
    prediction of the same rows beside them.  ``extra(fit, rows, product_times, held, eff_dir)``:
    more columns of each fold's rows (a dict), with the fold's constants in place."""
    import pandas as pd

    parts = []
    for fit, test in folds.values():
        rows = product_rows(test)
        tmp = tempfile.mkdtemp(prefix="opcost-ns-")
        try:
            eff_dir = os.path.join(tmp, "efficiency")
            shutil.copytree(fc.EFFICIENCY_DIR, eff_dir)
            write_constants(fit, rows, {c: {} for c in MEMORY + MATRIX}, eff_dir)
            held = Fit(fit.sets, {}, fit.dispatch)
            # the held-out host's dispatch net of the kernels the product predicts for its rows (the
            # A100's memory-bound classes take nvidia-ampere's sets there, not the fold's pooled ones)
            own = fit_dispatch(test[test.at_floor], fit, product_arrays(test, eff_dir))
            host = np.array([own.get((d, dclass(c)), 0.0) for d, c in zip(rows.device_system, rows.cls)])
            rows = rows.assign(p_kernel=product_times(rows, held, eff_dir, "kernel") + host,
                               p_eager=product_times(rows, held, eff_dir, "eager-op"))
            if extra is not None:
                rows = rows.assign(**extra(fit, rows, product_times, held, eff_dir))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        parts.append(rows)
    rows = pd.concat(parts)
    agree = np.abs(rows.p_kernel / rows.p_own - 1.0)
    out = ["### Held out, through the product (analyzer.analyze on one-op ONNX models)", "",
           f"{PRODUCT_PER} kernel rows (above {FLOOR_X:g}x the floor) per op and device of each held-out GPU. "
           "`kernel + host`: runtime kernel plus the held-out host's fitted dispatch; `eager-op`: opcost's eager-op "
           "as shipped (its per-call table, runtimes.EAGER_OP_CALL_US: the five hosts' median, the held-out one's "
           "among them). The A100's memory-bound rows take "
           "opcost's nvidia-ampere sets (vidur-fitted), not the pooled ones: a check of the Ampere set. The "
           "FMA-unit matrix and convolution rows of a family with its own set of their class (bench/family_simt.py: "
           "fitted on these GPUs' rows; every convolution row runs conv3_simt there, its 3x3 stride-1 shape) take "
           "it: in-sample for those rows. "
           f"Feature path vs product (kernel + host): median |diff| {100 * np.median(agree):.2f} %, "
           f"max {100 * agree.max():.2f} % (those rows differ by design).", "",
           "| GPU | class | rows | kernel + host MAPE % | bias % | within 10 % | eager-op (as shipped) MAPE % "
           "| bias % |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (g, c), d in rows.groupby(["gpu", "cls"]):
        a, b = metrics(d.p_kernel, d.t), metrics(d.p_eager, d.t)
        out.append(f"| {g} | {c} | {_fmt(a)} | {b['mape']:.1f} | {b['bias']:+.1f} |")
    a, b = metrics(rows.p_kernel, rows.t), metrics(rows.p_eager, rows.t)
    out.append(f"| all | all | {_fmt(a)} | {b['mape']:.1f} | {b['bias']:+.1f} |")
    return rows, out + [""]
