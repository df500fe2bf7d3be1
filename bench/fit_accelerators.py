"""Fit the efficiency constants of the Hexagon NPU profiles on public whole-model measurements,
write them as data, and score them in-sample, held-out, across model kinds and across devices.

    PYTHONPATH=$PWD python bench/fit_accelerators.py [MEASUREMENTS_DIR] [--no-write]

``--no-write`` prints the scores and writes nothing (neither the constants and profiles nor
bench/results/fit_accelerators.md and .json). Writing records the figures the profiles' notes
quote (bench/results/fit_accelerators.json) and fills them, with bench/hexagon_transfer.py's
cross-validation record, into each Hexagon profile's notes and fp16 source (bench/hexagon_notes.py).

MEASUREMENTS_DIR defaults to ../shared/measurements/accelerators (its README says how each row was
timed). Rows: primary_compute_unit == NPU, runtimes tflite and qnn_dlc, precisions fp16 and int8
(W8A8), models with a graph (bench/hexagon_model.py HEX_GRAPHS: tests/fixtures/torch and
tests/fixtures/accel, made by tests/fixtures/accel/export.py and export_hub.py). hexagon_model's
HELD_OUT models are never fitted on.

Model: bench/hexagon_model.py's form ``FORM``, chosen by bench/hexagon_forms.py (leave one model
out and leave one family out on the fitted models only; bench/results/hexagon_forms.md) with the
on-chip activation rule its structural variants chose by the same criterion
(bench/hexagon_variants.py, bench/results/hexagon_variants.md): a kernel whose activation bytes
fit the profile's ``npu_onchip_mb`` keeps them on chip at ``c_act`` of a DRAM byte's time, written
as the family's ``onchip_cost`` scalar, and fp16 depthwise kernels at the HVX unit's fixed 0.5 of
the int8 rate (analyzer/prediction/accelerators/qnn.py), and, by the same criterion, a
per-kernel fixed cost shared by both devices (every class's ``floor_s``) and a per-inference
fixed cost per device whose fp16 / W8A8 ratio ``t0_q`` both devices share, one W8A8
per-inference offset ``d_int8`` between AI Hub's deployments (a row deployed as ``qnn_dlc`` takes
+ d_int8 / 2, one as ``tflite`` - d_int8 / 2; written as the families' ``qnn_deploy_int8_s``,
the library's ``qnn-dlc`` and ``qnn-tflite`` runtimes; ``qnn`` predicts their mean), and,
by bench/hexagon_transfer.py's cross-validation (bench/results/hexagon_transfer.md), a
depthwise kernel's compute at its output elements over a rate of its own (``dwt`` "ewm": one
W8A8 rate dwr_int8 fitted for the 8 Gen 2, fp16 at 0.5 of it, the 8 Gen 3's by the devices'
fitted matrix-rate ratio; written as each family's ``qnn_dw_output_rate``, conv_dw's e_compute
the matrix classes'). Constants
per device (8 Gen 2 = HTP v73, 8 Gen 3 = v75), ``r_fp16`` shared and written into each profile as
its ``matrix_tflops.fp16`` (a fitted figure; its source says so), the per-inference fixed cost as
the family's ``run_fixed_s`` / ``run_fixed_int8_s`` scalars, the profiles' ``default_runtime`` set
to the form's runtime. The cross-device check scores one device with the other's constants at its
own datasheet figures.

Needs pandas and scipy (this script only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402
import hexagon_notes  # noqa: E402
from hexagon_model import FX, HELD_OUT, HEX_GRAPHS, hexagon_rows, stats  # noqa: E402,F401  (accel_score_main, fit_ane)

SCRIPT = hexagon_notes.SCRIPT
COMMAND = hexagon_notes.COMMAND
FIT_DATE = "2026-12-03"
EFF_DIR = os.path.join(ROOT, "hardware_db", "efficiency")
PROFILE_DIR = os.path.join(ROOT, "hardware_db", "profiles")
RESULT = os.path.join(ROOT, "bench", "results", "fit_accelerators.md")
HEXAGON = {"hexagon-sd8gen2": "qualcomm-hexagon-v73", "hexagon-sd8gen3": "qualcomm-hexagon-v75"}
DEVICE_NAME = {"hexagon-sd8gen2": "Samsung Galaxy S23 (Snapdragon 8 Gen 2)",
               "hexagon-sd8gen3": "Samsung Galaxy S24 (Snapdragon 8 Gen 3)"}
# the form bench/hexagon_forms.py chose (bench/results/hexagon_forms.md) with the on-chip
# activations bench/hexagon_variants.py chose (bench/results/hexagon_variants.md)
FORM = H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss="cauchy", f_scale=0.2, onchip=True, hvx=True,
              t0q=True, kfix=True, deploy="int8", dwt="ewm")
FORM_NAME = ("qnn fusion, e_bw <= 1, cauchy loss f = 0.2, activations within the profile's npu_onchip_mb kept "
             "on chip at a fitted c_act, fp16 depthwise at 0.5 of int8 (HVX), a per-inference fixed cost per "
             "device and precision whose fp16 / W8A8 ratio both devices share, one per-kernel fixed cost shared "
             "by both devices, a per-inference offset between AI Hub's qnn_dlc and tflite deployments of a W8A8 graph "
             "shared by both devices, a depthwise kernel's compute at its output elements over a rate of its own "
             "(dwr_int8 at W8A8 on the 8 Gen 2, fp16 at 0.5 of it, the 8 Gen 3's by the devices' fitted matrix-rate "
             "ratio; bench/hexagon_transfer.py)")
# class group -> the (e_compute, e_bw, floor) constants its op classes take
GROUP_PARAMS = {"mat": ("e_mat", "bw_mat", "floor_mat"), "dw": ("e_dw", "bw_mat", "floor_mat"),
                "ew": ("e_mat", "bw_ew", "floor_ew"), "move": ("e_mat", "bw_move", "floor_move")}


# ----------------------------------------------------------------------------- writing


def set_of(cls: str, p: dict, d: int, prov: dict) -> dict:
    pe, pb, pf = GROUP_PARAMS[H.group_of(cls)]
    return {"constants": {"e_compute": float(p[pe][d]), "e_bw": float(p[pb][d]), "b_half_bytes": 0.0,
                          "floor_s": float(p[pf][d]), "tile_m": 0.0, "tile_n": 0.0, "wave_alpha": 0.0,
                          "l2_gain": 0.0},
            "provenance": prov}


def write_family(family: str, pid: str, p: dict, r: float, rows, err: dict) -> None:
    from analyzer.prediction.efficiency.op_classes import OP_CLASSES

    d = H.DEVS.index(pid)
    train = sorted(set(rows.model_id))
    prov = {"kind": "fit", "measurement_file": "aihub_hexagon.csv", "device_system": DEVICE_NAME[pid],
            "hardware": pid,
            "filter": ("primary_compute_unit == NPU, runtime in (tflite, qnn_dlc), precision in (fp16, int8 "
                       f"= W8A8), opcost_profile == {pid}, model_id in ({', '.join(train)}); held out "
                       f"(never fitted): {', '.join(sorted(HELD_OUT))}"),
            "timing": "Qualcomm AI Hub v0.35.0 estimated_inference_time (QAIRT 2.37.0, TFLite 2.17.0), batch 1",
            "rows": int(len(rows)),
            "fit_method": (f"one least squares ({FORM.loss} loss, scale {FORM.f_scale:g} log units) on "
                           f"log(pred/measured) over the whole-model rows, form '{FORM_NAME}' "
                           f"(bench/hexagon_model.py; chosen by leave-one-model-out and leave-one-family-out "
                           f"cross-validation on the fitted models, bench/hexagon_forms.py and "
                           f"bench/hexagon_variants.py): {', '.join(FORM.names())} "
                           f"per device (efficiencies at most 1, e_bw at most {FORM.bwmax:g}, floors at most "
                           f"{FORM.fcap:g} s), {', '.join([*FORM.shared(), 'r_fp16'])} shared by both Hexagon "
                           f"devices (t0_q: run_fixed_s / run_fixed_int8_s; kfix: every class's floor_s, a "
                           f"per-kernel cost; q_dw: conv_dw's e_compute / the matrix classes'); predictions are "
                           f"opcost's "
                           f"{FORM.runtime} runtime with these sets; an e_bw above 1 means the NPU keeps that "
                           "class's traffic on chip (fused into its producer)"),
            "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND, "fit_error": err,
            "r_fp16": round(r, 4), **({"q_dw": round(float(p["q_dw"][d]), 4)} if FORM.dwq else {}),
            **({"qnn_dw_output_rate": float(H.dw_int8_rates(p, FORM.dwt)[d])} if FORM.dwt else {})}
    scalars = {"trans_weight": 1.0, "provenance": {"kind": "prior", "source": (
        "a transcendental counts as one vector operation (not identified by whole-model rows)")}}
    if FORM.t0:
        scalars.update({"run_fixed_s": float(p["t0_fp16"][d]), "run_fixed_int8_s": float(p["t0_int8"][d])})
        scalars["provenance"] = {"kind": "fit", "source": (
            "trans_weight: prior, a transcendental counts as one vector operation; run_fixed_s / "
            "run_fixed_int8_s: the per-inference graph-execute cost outside the kernels (QNN HTP profile "
            "events GRAPH_EXECUTE_HOST_RPC_TIME, HTP_RPC_TIME, RESOURCE_POWER_UP_TIME, VTCM_ACQUIRE_TIME in "
            f"QnnHtpProfile.h), fitted with the sets ({SCRIPT}): fp16 graphs / W8A8 graphs"
            + ("; run_fixed_s = t0_q x run_fixed_int8_s, one t0_q for both Hexagon devices" if FORM.t0q else ""))}
    if FORM.deploy:
        for k, name in (("d_fp16", "qnn_deploy_s"), ("d_int8", "qnn_deploy_int8_s")):
            if k in FORM.shared():
                scalars[name] = float(p[k][d])
        scalars["provenance"]["source"] += (
            "; qnn_deploy_int8_s (qnn_deploy_s: fp16 graphs): the per-inference difference between AI Hub's "
            "deployments of a W8A8 graph, qnn_dlc (a QNN DLC on QAIRT) - tflite (TFLite + the QNN delegate), one "
            f"figure for both Hexagon devices, fitted with the sets on rows of both deployments ({SCRIPT}: a "
            "qnn_dlc row + d / 2, a tflite row - d / 2); the library's qnn-dlc and qnn-tflite runtimes add their "
            "half, qnn their mean (nothing)")
    if FORM.onchip:
        scalars["onchip_cost"] = float(p["c_act"][d])
        scalars["provenance"]["source"] += (
            "; onchip_cost: the time of an activation byte the qnn runtime keeps in the NPU's VTCM (a kernel "
            "whose activation bytes are at most the profile's npu_onchip_mb) as a fraction of a DRAM byte's, "
            f"fitted with the sets ({SCRIPT}; c_act at most 1)")
    if FORM.dwt:
        scalars["qnn_dw_output_rate"] = float(H.dw_int8_rates(p, FORM.dwt)[d])
        scalars["provenance"]["source"] += (
            "; qnn_dw_output_rate: a depthwise kernel's output elements per second at W8A8 (fp16 at 0.5 of it, "
            "w8a16 at qnn_w8a16_share of it), whatever its window; the 8 Gen 2's fitted with the sets "
            f"({SCRIPT}), the 8 Gen 3's that x the ratio of the devices' fitted matrix rates e_mat x P_int8 "
            "(bench/hexagon_transfer.py's dwe-wm, chosen by the transfer rule against q_dw x e_mat)")
    scalars.update(kept_w8a16(family))
    doc = {"schema_version": 1, "family": family,
           "description": (f"Qualcomm Hexagon NPU constants of {pid} fitted on public AI Hub whole-model "
                           "latencies: e_compute of the matrix classes (fraction of the int8 MAC peak; fp16 "
                           "runs at the profile's fitted fp16 figure), the depthwise-convolution efficiency, "
                           "the DRAM-streaming fractions, a per-layer floor (0 where the form has none) and "
                           "the per-inference fixed costs; fitted with the loss its provenance names"),
           "devices": [pid], "scalars": scalars,
           "sets": {c: set_of(c, p, d, prov) for c in OP_CLASSES}}
    with open(os.path.join(EFF_DIR, f"{family}.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def kept_w8a16(family: str) -> dict:
    """The family file's W8A16 scalars (``qnn_w8a16_share`` and its provenance), written by
    bench/hexagon_w8a16.py on top of this fit: kept as they are when this fit rewrites the file."""
    path = os.path.join(EFF_DIR, f"{family}.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as fh:
        old = json.load(fh).get("scalars", {})
    return {k: old[k] for k in ("qnn_w8a16_share", "qnn_w8a16_provenance") if k in old}


def write_profile(pid: str, r: float) -> float:
    """Set ``matrix_tflops.fp16 = r * int8`` and ``default_runtime`` (the form's runtime) in the
    profile's TOML (its fp16 source and notes: bench/hexagon_notes.py, from the fit record)."""
    import hardware_db

    path = os.path.join(PROFILE_DIR, f"{pid}.toml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    int8 = hardware_db.get(pid).matrix_tflops["int8"]
    fp16 = round(r * int8, 2)
    text = re.sub(r"(?m)^fp16 = .*$", f"fp16 = {fp16}", text)
    text = re.sub(r'(?m)^default_runtime = .*$', f'default_runtime = "{FORM.runtime}"', text)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return fp16


# ----------------------------------------------------------------------------- scoring


# AI Hub's deployment runtime of a row -> the library's runtime that predicts it
LIBRARY_RUNTIME = {"qnn_dlc": "qnn-dlc", "tflite": "qnn-tflite"}


def opcost_ms(model_id: str, pid: str, precision: str, runtime: str | None = None) -> float:
    """opcost's own prediction (analyzer.prediction.predict, the shipped profile; ``runtime``: the
    library's runtime, else the profile's default)."""
    import hardware_db
    from analyzer.prediction.predict import predict

    (pred,) = predict(H.report(model_id), [hardware_db.get(pid)], precision=precision, runtime=runtime)
    return pred.latency_s * 1e3


def table(title: str, rows, pred, by=("opcost_profile", "precision")) -> list[str]:
    out = [f"**{title}**", "", f"| device | {by[1]} | rows | MAPE % | max APE % | bias % |",
           "|---|---|---:|---:|---:|---:|"]
    rows = rows.assign(pred=np.asarray(pred))
    for key, g in rows.groupby(list(by)):
        s = stats(g.pred, g.inference_time_ms)
        out.append(f"| {key[0]} | {key[1]} | {s['rows']} | {s['mape']} | {s['max_ape']} | {s['bias']} |")
    for dev, g in rows.groupby(by[0]):
        s = stats(g.pred, g.inference_time_ms)
        out.append(f"| {dev} | all | {s['rows']} | {s['mape']} | {s['max_ape']} | {s['bias']} |")
    s = stats(rows.pred, rows.inference_time_ms)
    out.append(f"| all | all | {s['rows']} | {s['mape']} | {s['max_ape']} | {s['bias']} |")
    return out + [""]


def ms(rows, feats, P, r) -> np.ndarray:
    return H.times(H.Rows(rows, feats), P, r, FORM.dwt) * 1e3


def ratio_pairs(pt, cols=("pred",)) -> list[tuple]:
    """Per held-out model, precision and runtime with a row on both devices (``pt``: rows with a
    ``pred`` column, ms, and any other ``cols``): (model, precision, runtime, measured 8 Gen 3 / 8 Gen 2
    ratio, {col: the col's 8 Gen 3 figure / pred's 8 Gen 2 figure})."""
    out = []
    for (m, prec, rt), g in pt.groupby(["model_id", "precision", "runtime"]):
        if len(g) != 2:
            continue
        g = g.set_index("opcost_profile")
        mr = g.inference_time_ms["hexagon-sd8gen3"] / g.inference_time_ms["hexagon-sd8gen2"]
        out.append((m, prec, rt, mr, {c: g[c]["hexagon-sd8gen3"] / g.pred["hexagon-sd8gen2"] for c in cols}))
    return out


def ratio_table(test, feats, P, r) -> list[str]:
    """The 8 Gen 3 / 8 Gen 2 latency ratio per held-out model, precision and runtime: measured,
    predicted, and predicted with the 8 Gen 2's constants on both (datasheet-scaled)."""
    out = ["**8 Gen 3 / 8 Gen 2 latency ratio, held-out models**", "",
           "| model | precision | runtime | measured | predicted | datasheet-scaled 8 Gen 2 constants | "
           "error % | error % (scaled) |", "|---|---|---|---:|---:|---:|---:|---:|"]
    scaled = {k: np.array([v[0], v[0]]) for k, v in P.items()}
    pt = test.assign(pred=ms(test, feats, P, r), scaled=ms(test, feats, scaled, r))
    n = within = 0
    for m, prec, rt, mr, got in ratio_pairs(pt, ("pred", "scaled")):
        pr, sr = got["pred"], got["scaled"]
        n, within = n + 1, within + (abs(pr / mr - 1) <= 0.15)
        out.append(f"| {m} | {prec} | {rt} | {mr:.3f} | {pr:.3f} | {sr:.3f} | {abs(pr / mr - 1) * 100:.1f} | "
                   f"{abs(sr / mr - 1) * 100:.1f} |")
    return out + ["", f"Within 15 % of the measured ratio: {within} of {n} pairs.", ""]


def per_model(rows, pred, title: str = "held-out models") -> list[str]:
    """Mean signed error (predicted / measured - 1, in %) and the range of each model's rows, per precision."""
    out = [f"**{title}, per model and precision**", "", "| model | precision | rows | mean signed error % | "
           "range % |", "|---|---|---:|---:|---:|"]
    err = rows.assign(e=(np.asarray(pred) / rows.inference_time_ms.values - 1) * 100)
    for (m, prec), g in err.groupby(["model_id", "precision"]):
        out.append(f"| {m} | {prec} | {len(g)} | {g.e.mean():+.1f} | {g.e.min():+.1f} to {g.e.max():+.1f} |")
    return out + [""]


def fit_record(train, test, feats, P: dict, r: float) -> dict:
    """The fit's figures as data (bench/hexagon_notes.FIT_RECORD; MAPE, max APE and bias in %):
    r_fp16 (to 4 decimals, as the families' provenance), the W8A8 deployment offset d_int8 (us, to
    0.01), in-sample and held-out scores (held out: each row at its deployment's runtime, overall
    and per device x precision cell). Rounded so that the least squares' last digits, which move
    between runs, do not move the record."""
    held = test.assign(pred=ms(test, feats, P, r))
    return {"command": COMMAND, "fit_date": FIT_DATE, "r_fp16": round(float(r), 4),
            "d_int8_us": round(float(P["d_int8"][0]) * 1e6, 2),
            "fitted_rows": int(len(train)), "fitted_models": sorted(set(train.model_id)),
            "held_out_models": sorted(set(test.model_id)),
            "in_sample": stats(ms(train, feats, P, r), train.inference_time_ms),
            "held_out": stats(held.pred, held.inference_time_ms),
            "held_out_cells": {f"{dev} {prec}": stats(g.pred, g.inference_time_ms)
                               for (dev, prec), g in held.groupby(["opcost_profile", "precision"])}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = hexagon_rows(a.measurements)
    feats = H.features(rows, FORM.runtime, FORM.onchip, FORM.hvx, dw_unit=FORM.dwt[:1])
    held = rows.model_id.isin(HELD_OUT)
    train, test = rows[~held].reset_index(drop=True), rows[held].reset_index(drop=True)
    report = ["# Hexagon NPU: fitted constants and their scores", "", f"Command: `{COMMAND}`", "",
              f"Form: {FORM_NAME} ({FORM}; chosen by bench/hexagon_forms.py and bench/hexagon_variants.py, "
              "bench/results/hexagon_forms.md and hexagon_variants.md)", "",
              f"Rows: {len(rows)} (fitted {len(train)} of {train.model_id.nunique()} models; held out {len(test)}: "
              f"models {', '.join(sorted(HELD_OUT & set(rows.model_id)))})", ""]
    P, r = H.fit(H.Rows(train, feats), FORM)
    report.append(f"r_fp16 = {r:.4f}; " + "".join(f"{k} = {P[k][0]:.4g} (shared); " for k in FORM.shared())
                  + "constants: " + "; ".join(f"{pid}: " + ", ".join(f"{k}={P[k][d]:.4g}" for k in FORM.names())
                                              for d, pid in enumerate(H.DEVS)))
    report.append("")
    report += table("in-sample (fitted rows)", train, ms(train, feats, P, r))

    # transfer across model kinds (fitted models only): fit on the CNNs, score the transformers
    is_tf = train.model_id.isin(H.TRANSFORMERS)
    cnn, tf = train[~is_tf].reset_index(drop=True), train[is_tf].reset_index(drop=True)
    p_c, r_c = H.fit(H.Rows(cnn, feats), FORM)
    report += table("fit on the CNNs among the fitted models, score their transformers (and hybrids, DETRs)",
                    tf, ms(tf, feats, p_c, r_c))
    p_t, r_t = H.fit(H.Rows(tf, feats), FORM, r_fixed=r)
    report += table("fit on the transformers among the fitted models (r_fp16 from the full fit), score their CNNs",
                    cnn, ms(cnn, feats, p_t, r_t))
    # cross-device (fitted models): one device's constants on the other at its own datasheet figures
    for src, dst in ((0, 1), (1, 0)):
        sub = train[train.opcost_profile == H.DEVS[dst]].reset_index(drop=True)
        swapped = {k: np.array([v[src], v[src]]) for k, v in P.items()}
        report += table(f"{H.DEVS[dst]} scored with {H.DEVS[src]}'s constants (its own peak and bandwidth; "
                        "fitted models)", sub, ms(sub, feats, swapped, r))
    report += per_model(train, ms(train, feats, P, r), "fitted models (in-sample)")
    # held out, once
    report += table("held-out models (each row at its deployment runtime)", test, ms(test, feats, P, r))
    report += table("held-out models, per deployment runtime", test, ms(test, feats, P, r),
                    by=("opcost_profile", "runtime"))
    report += table("held-out models at the qnn runtime (the mean of the two deployments)", test,
                    ms(test.assign(runtime="qnn"), feats, P, r))
    report += ratio_table(test, feats, P, r)
    report += per_model(test, ms(test, feats, P, r))

    if not a.no_write:
        fp16 = {pid: write_profile(pid, r) for pid in HEXAGON}
        for pid, fam in HEXAGON.items():
            sub = train[train.opcost_profile == pid].reset_index(drop=True)
            write_family(fam, pid, P, r, sub, stats(ms(sub, feats, P, r), sub.inference_time_ms))
        rec = fit_record(train, test, feats, P, r)
        with open(hexagon_notes.FIT_RECORD, "w", encoding="utf-8") as fh:
            json.dump(rec, fh, indent=1)
            fh.write("\n")
        hexagon_notes.write_profiles(rec)   # the notes' figures and fp16 source, with the transfer record's
        report.append(f"Written: fp16 figures {fp16}; families {', '.join(HEXAGON.values())}")
        H._REPORTS.clear()   # fresh analyses: a report memoises the profile terms it was predicted with
        import hardware_db
        hardware_db.clear_cache()   # the profiles just written, not the ones read before
        op = np.array([opcost_ms(row.model_id, row.opcost_profile, row.precision, LIBRARY_RUNTIME[row.runtime])
                       for row in rows.itertuples()])
        report += table("opcost (analyzer.prediction.predict, shipped profiles), in-sample rows", train,
                        op[~held.values])
        report += table("opcost (analyzer.prediction.predict, shipped profiles), held-out rows", test,
                        op[held.values])
        report.append("(opcost rows: each at its deployment's runtime, qnn-dlc or qnn-tflite.)")
        report.append("")
        os.makedirs(os.path.dirname(RESULT), exist_ok=True)
        with open(RESULT, "w", encoding="utf-8") as fh:
            fh.write("\n".join(report) + "\n")
    print("\n".join(report))


if __name__ == "__main__":
    main()
