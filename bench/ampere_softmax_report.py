"""The cross-source check, the family-file writing and the markdown report of
``bench/ampere_softmax.py``."""

from __future__ import annotations

import json
import os

import numpy as np

import ampere_softmax as am
import fit_neusight as fns
import neusight_data as nd
from neusight_report import _dump
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE, SOFTMAX_WARP_ROW, kernel_time, with_clock

REF_CLOCK = 1.41e9   # the clock a written floor_s is stated at (floor cycles / REF_CLOCK: not fitted)


# ----------------------------------------------------------------------------- cross-source

def vidur_a100(meas_dir: str):
    """vidur's A100 rows of the checked classes (``fit_efficiency``'s counts and selection, from
    ``efficiency_data``: its fp16 PyTorch kernels, at most 400 rows per op spread over sizes,
    serving kernels left out)."""
    import pandas as pd

    import efficiency_data as fe

    v = pd.read_csv(os.path.join(meas_dir, fe.FILES["vidur"]))
    v = v[(v.gpu == "a100_80gb") & v.op.isin(["add", "gelu_erf", "layernorm_affine"])]
    parts = []
    for op, e in v.groupby("op"):
        cls, mac, vec, tr, by, m, n, k = fe.counts_vidur(op, e.M, e.N, e.K.fillna(0))
        parts.append(fe._spread_rows(pd.DataFrame({
            "op": op, "op_class": cls, "mac": mac, "vec": vec, "trans": tr, "bytes": by, "m": m, "n": n, "k": k,
            "batch": 1.0, "t": e.measured_us.to_numpy() * 1e-6,
            "key": [f"{op}|{x}|{y}|{z}" for x, y, z in zip(e.M, e.N, e.K)]}), fe.VIDUR_ROWS_PER_OP))
    return pd.concat(parts, ignore_index=True), fe.hw_of("a100_80gb"), fe.feats_of


def vidur_pred(df, hw, feats_of, arr) -> np.ndarray:
    """Kernel time with the class floors at the pooled NVIDIA cycles over the clock (the product's
    ``hardware.pooled_floors``)."""
    a = with_clock(arr, hw["clock_hz"])
    cyc = fc.floor_cycles()
    a["floor_s"] = np.where(np.isfinite(cyc), cyc / hw["clock_hz"], a["floor_s"])
    return kernel_time(np, feats_of(df), hw, a)["time_s"]


def cross_source(meas_dir: str, fitted: dict, shipped: dict) -> dict:
    """class -> {set name: metrics on vidur's A100 rows}: the shipped (vidur-fitted, in-sample),
    the A40-fitted ga10x set (vidur's own cross-check) and the NeuSight-A100-fitted set."""
    df, hw, feats_of = vidur_a100(meas_dir)
    ga10x = fc.load_constants("nvidia-ampere-ga10x").arrays
    out = {}
    for cls in am.CHECKED:
        d = df[df.op_class == cls]
        out[cls] = {name: fns.metrics(vidur_pred(d, hw, feats_of, arr), d.t.to_numpy()) for name, arr in
                    (("vidur A100 (shipped, in-sample)", shipped), ("vidur A40 (ga10x, cross-check)", ga10x),
                     ("NeuSight A100 fit", am.with_sets(shipped, {cls: fitted[cls]})))}
    return out


# ----------------------------------------------------------------------------- writing

def constants_doc(vals: dict, cls: str) -> dict:
    cyc = fc.floor_cycles()[CLASS_CODE[cls]]
    c = {"e_compute": 0.5, "e_bw": 1.0, "b_half_bytes": 0.0, "floor_s": 0.0, "tile_m": 0.0, "tile_n": 0.0,
         "wave_alpha": 0.0, "l2_gain": 0.0, "bpc": 0.0, "l2_hit": 0.0}
    c.update({k: float(f"{float(v):.4g}") for k, v in vals.items()})
    c["floor_s"] = float(f"{float(cyc) / REF_CLOCK:.4g}")
    return c


def provenance(cls: str, how: str, rows, pred) -> dict:
    ker = rows[(rows.cls == cls) & ~rows.near_floor]
    sel = ((rows.cls == cls) & ~rows.near_floor).to_numpy()
    err = fns.metrics(pred[sel], rows.t.to_numpy()[sel])
    method = ("fit_neusight's memory-bound form: e_compute 0.5; e_bw, bpc (<= 64 bytes per SM-cycle), l2_hit, "
              "b_half (<= 1 MB) free" if how == "a100" else "")
    if how == "a100" and int(len(ker)) < am.MIN_ROWS:
        method = ("e_bw (the DRAM fraction) free; bpc, l2_hit, b_half held at the pooled five-GPU set's "
                  f"(fewer than {am.MIN_ROWS} kernel rows: the DRAM-streaming rows identify e_bw only)")
    if how == "pooled":
        method = ("the pooled five-GPU set of bench/fit_neusight.py (the Volta/Turing/Pascal files' set): the "
                  "A100-only fit did not beat it in two-fold cross-validation on the A100 rows")
    if cls in fns.PER_ELEMENT_ON:
        method += ("; per element (per_element = 1: bpc stated at 2 bytes an element, fitted on these fp32 rows at 4; "
                   "a kernel of another dtype is charged by its elements, not its bytes)")
    method = ("least squares on log(pred/measured) (soft L1), latency = host dispatch + kernel (eager-op), on the "
              "rows above 3x their class's smallest latency, the dispatch refitted in turn (median of latency - "
              f"kernel over the rows within 1.5x it); {method}; chosen over the pooled set by two-fold "
              "cross-validation on the A100 rows (fixed beforehand); floor not identified (inside the host "
              "dispatch): the pooled NVIDIA floor cycles apply (constants.floor_cycles), floor_s here is that "
              "floor at 1.41 GHz")
    filt = (f"op softmax; rows of at most {SOFTMAX_WARP_ROW} elements (the warp-per-row kernel)" if cls == "softmax"
            else f"op softmax; rows longer than {SOFTMAX_WARP_ROW} elements (the block-per-row kernel)")
    return {"kind": "fit", "measurement_file": nd.MEASUREMENT_FILE, "device_system": am.DEV,
            "hardware": "a100-40gb-pcie", "filter": filt,
            "timing": "eager single call (CUDA events around one PyTorch 2.1 call, fp32, mean of the fastest 5 of "
                      "25, no L2 flush; host dispatch included, fitted apart)",
            "rows": int((rows.cls == cls).sum()), "rows_used_in_fit": int(len(ker)), "fit_method": method,
            "fit_date": am.FIT_DATE, "fit_script": am.SCRIPT, "command": am.COMMAND,
            "fit_error": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in err.items()}}


def write_sets(chosen: dict, choice: dict, rows, preds: dict, directory: str) -> None:
    """The chosen softmax sets into nvidia-ampere.json (Hopper and Blackwell inherit it) and, as
    inherited sets, into nvidia-ampere-ga10x.json (Ada inherits it); nothing else changes."""
    amp_path = os.path.join(directory, "nvidia-ampere.json")
    with open(amp_path, encoding="utf-8") as f:
        amp = json.load(f)
    for cls in am.SOFTMAX:
        pred = preds["a100"] if choice[cls] == "a100" else preds["pooled"]
        amp["sets"][cls] = {"constants": constants_doc(chosen[cls], cls),
                            "provenance": provenance(cls, choice[cls], rows, pred)}
    if am.SCRIPT not in amp["description"]:
        amp["description"] += (" softmax and softmax_block (rows of at most / more than 1,024 elements) from NeuSight's "
                               f"fp32 A100 PCIe eager rows, host dispatch fitted apart ({am.SCRIPT}).")
    _dump(amp, amp_path)
    ga_path = os.path.join(directory, "nvidia-ampere-ga10x.json")
    with open(ga_path, encoding="utf-8") as f:
        ga = json.load(f)
    for cls in am.SOFTMAX:
        ga["sets"][cls] = {"constants": amp["sets"][cls]["constants"], "provenance": {
            "kind": "inherit", "source": (
                f"nvidia-ampere's {cls} set (PyTorch's fp32 softmax on NeuSight's A100 PCIe rows, {am.SCRIPT}): "
                "no softmax measurements on GA10x or Ada; the same PyTorch kernel, its rate per SM-cycle and "
                "floor cycles move with the device's SM count and clock, its DRAM fraction carries (NeuSight's "
                "softmax reached 0.60-0.64 of DRAM on the GDDR T4 and P4 as on the HBM A100 and V100)")}}
    if am.SCRIPT not in ga["description"]:
        ga["description"] += (f" softmax and softmax_block: nvidia-ampere's, inherited ({am.SCRIPT}; no softmax "
                              "measurements on GA10x).")
    _dump(ga, ga_path)


# ----------------------------------------------------------------------------- the report

def _m(m: dict) -> str:
    return f"{m['mape']:.1f} | {m['bias']:+.1f} | {m['within10']:.0f}"


def report(rows, preds: dict, fitted: dict, pooled: dict, cv: dict, choice: dict, src: dict,
           seconds: float) -> list[str]:
    t = rows.t.to_numpy()
    out = ["# The Ampere memory-bound sets on NeuSight's A100 PCIe rows; the Ampere softmax sets", "",
           f"Command: `{am.COMMAND}` ({seconds:.0f} s on this machine). Data: `{nd.MEASUREMENT_FILE}`, device "
           f"`{am.DEV}` (fp32, one eager PyTorch 2.1 call between CUDA events; no L2 flush), and vidur's A100 rows "
           "(`vidur_a100_a40.csv`, fp16 kernel sums) for the cross-source check. Scores are on the kernel rows "
           f"(above {nd.FLOOR_X:g}x their class's smallest latency), each set with its own host dispatch (median of "
           f"latency - kernel over the rows within {nd.DISPATCH_X:g}x the smallest latency, per dispatch class).", "",
           "## Per op group (A100 PCIe kernel rows)", "",
           "`shipped`: nvidia-ampere as it was (vidur fp16 kernel sums; a softmax takes its norm set): held out on "
           "every row here. `pooled`: the pooled five-GPU sets of bench/fit_neusight.py (in-sample: the A100 rows "
           "are among their fit's). `A100 fit`: each class fitted on these rows alone (in-sample).", "",
           "| group | class | kernel rows | shipped MAPE % | bias % | ±10 % | pooled MAPE % | bias % | ±10 % | "
           "A100 fit MAPE % | bias % | ±10 % |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, ops, cls in am.GROUPS:
        sel = (rows.op.isin(ops) & (rows.cls == cls) & ~rows.near_floor).to_numpy()
        if not sel.any():
            out.append(f"| {label} | {cls} | 0 | | | | | | | | | |")
            continue
        cells = " | ".join(_m(fns.metrics(preds[n][sel], t[sel])) for n in ("shipped", "pooled", "a100"))
        out.append(f"| {label} | {cls} | {int(sel.sum()):,} | {cells} |")
    out += ["", "## Softmax: fitted constants and the choice", "",
            f"A class with fewer than {am.MIN_ROWS} kernel rows frees e_bw only (bpc, l2_hit, b_half held at the "
            "pooled set's). Choice (fixed before any held-out score was seen): the A100 fit where its two-fold "
            "cross-validated MAPE (hash halves of the A100 rows) is below the pooled set's in-sample MAPE on the "
            "same rows.", "",
            "| class | set | e_bw | bpc | l2_hit | b_half bytes | A100 kernel rows MAPE % | bias % |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for cls in am.SOFTMAX:
        sel = ((rows.cls == cls) & ~rows.near_floor).to_numpy()
        p = np.concatenate([p for _, p, _ in cv[cls]])
        m = np.concatenate([k.t.to_numpy() for k, _, _ in cv[cls]])
        for name, vals, met in (("pooled (in-sample)", pooled[cls], fns.metrics(preds["pooled"][sel], t[sel])),
                                ("A100 fit (in-sample)", fitted[cls], fns.metrics(preds["a100"][sel], t[sel])),
                                ("A100 fit, two-fold (held out)", fitted[cls], fns.metrics(p, m))):
            out.append(f"| {cls} | {name} | {vals['e_bw']:.4g} | {vals['bpc']:.4g} | {vals['l2_hit']:.4g} | "
                       f"{vals['b_half_bytes']:.4g} | {met['mape']:.1f} | {met['bias']:+.1f} |")
        folds = " / ".join(f"{v['e_bw']:.4g}" for _, _, v in cv[cls])
        out.append(f"| {cls} | **shipped: {choice[cls]}** (the two folds' e_bw: {folds}) | | | | | | |")
    out += ["", "## Cross-source check of the other classes (vidur's A100 rows, kernel time)", "",
            "Rule fixed beforehand: a class changes only if the set fitted on NeuSight's A100 rows scores vidur's "
            "A100 rows better than vidur's own cross-check (the A40-fitted ga10x set). Floors at the pooled NVIDIA "
            "cycles for every set, as the product has them.", "",
            "| class | rows | set | MAPE % | bias % | ±10 % |", "|---|---:|---|---:|---:|---:|"]
    for cls, per in src.items():
        for name, met in per.items():
            out.append(f"| {cls} | {met['rows']} | {name} | {_m(met)} |")
    out += ["", "NeuSight A100 fits of the checked classes (in-sample on the A100 rows; not shipped unless the rule "
            "above says so):", "", "| class | e_bw | bpc | l2_hit | b_half bytes |", "|---|---:|---:|---:|---:|"]
    for cls in am.CHECKED:
        v = fitted[cls]
        out.append(f"| {cls} | {v['e_bw']:.4g} | {v['bpc']:.4g} | {v['l2_hit']:.4g} | {v['b_half_bytes']:.4g} |")
    return out + [""]
