"""Fit the Apple Neural Engine constants of the ``coreml`` runtime on Apple's public Core ML
latencies, write them as data (hardware_db/efficiency/apple-ane.json), and score them in-sample,
on the held-out model family, leaving each fitted model out, and on the A17 Pro with the A16's
constants at the A17 Pro's own figures.

    PYTHONPATH=$PWD python bench/fit_ane.py [MEASUREMENTS_DIR] [--no-write]

MEASUREMENTS_DIR defaults to ../shared/measurements/accelerators (coreml_ane.csv: coremltools
guide tables, iPhone 14 Pro = A16 -> ane-a16, iPhone 15 Pro = A17 Pro -> ane-a17pro; median of
Xcode's Performance tab, compute units all, batch 1).  Graphs: tests/fixtures/torch/mobilenet_v2
(torchvision, 224), tests/fixtures/accel/{mobilenet_v3_small,resnet50} (224) and
mobilevitv2_100 (timm's MobileViTv2-1.0, 256: cvnets' ImageNet side; the tables do not print
the input size).  CenterNet (ResNet34 backbone) has no graph here and is left out.

Rows fitted: compute_precision fp16 rows of config Float16 and int8 rows of config "Weight &
activation" (W8A8).  Weight-only compressed rows (int8 weights, palettized, sparse; fp16
compute) are not fitted: opcost has no weight-only precision; they are listed as a check of how
much weight bytes matter (the fp16 prediction beside each).  Duplicated rows (the same model and
precision in several tables, same value) count once.

Hold-out, fixed before any score was seen: the transformer family, MobileViTv2-1.0 (every A16
and A17 Pro row of it).  The A17 Pro has no other rows, so its check is entirely held out.

Model (opcost's kernel-time form with the terms these rows can identify), per kernel ``k`` of
the ``coreml`` runtime (Core ML's fusion, ``accelerators/coreml.py``):

    t_k = runs_k * (floor + max(W_k / (P_dtype * e_c), B_k / (BW * e_bw)))

``W_k`` FLOPs, ``B_k`` bytes at the precision, ``P_dtype`` the profile's fp16 or int8 figure,
``BW`` its memory bandwidth.  Three constants shared by every op class (five fitted rows do not
identify more): ``e_c`` (at most 1), ``e_bw`` (free: above 1 means the ANE keeps that traffic in
its own cache) and ``floor`` (the ANE's per-op cost).  One least squares on log(pred/measured)
(scipy), a weak prior toward the start, deterministic.  One family (``apple-ane``) for every ANE
profile: the constants fitted on the A16 are what the A17 Pro and M4 profiles predict with, at
their own peaks and bandwidth.

Needs pandas and scipy (this script only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from fit_accelerators import stats  # noqa: E402  (MAPE, max APE, geometric-mean bias: one definition)

SCRIPT = "bench/fit_ane.py"
COMMAND = "PYTHONPATH=$PWD python bench/fit_ane.py ../shared/measurements/accelerators"
FIT_DATE = "2026-12-02"
FAMILY = "apple-ane"
EFF = os.path.join(ROOT, "hardware_db", "efficiency", f"{FAMILY}.json")
RESULT = os.path.join(ROOT, "bench", "results", "fit_ane.md")
FX = os.path.join(ROOT, "tests", "fixtures")
GRAPHS = {"MobileNetv2-1.0": "torch/mobilenet_v2.onnx", "MobileNetv3-small": "accel/mobilenet_v3_small.onnx",
          "ResNet50": "accel/resnet50.onnx", "MobileViTv2-1.0": "accel/mobilevitv2_100.onnx"}
CHIP = {"A16": "ane-a16", "A17 Pro": "ane-a17pro"}
# fixed before any score was looked at: the transformer family (every chip's rows)
HELD_OUT = {"MobileViTv2-1.0"}
FITTED_CONFIGS = {"Float16": "fp16", "Weight & activation": "int8"}
X0 = {"e_c": 0.5, "e_dw": 0.5, "e_bw": 1.0, "floor": 5e-6}
# the model variants, chosen between by leave-one-model-out cross-validation on the fitted models
# only (held-out rows never enter the choice): one compute efficiency for every class, or a
# depthwise convolution's own
VARIANTS = {"shared": ("e_c", "e_bw", "floor"), "depthwise apart": ("e_c", "e_dw", "e_bw", "floor")}
PARAMS = VARIANTS["shared"]


def rows_of(mdir: str):
    import pandas as pd

    d = pd.read_csv(os.path.join(mdir, "coreml_ane.csv"))
    d = d[d.model.isin(list(GRAPHS))].copy()
    d["pid"] = d.chip.map(CHIP)
    d["precision"] = d.compute_precision
    fitted = d[d.config.isin(list(FITTED_CONFIGS))].drop_duplicates(["pid", "model", "config", "latency_ms"])
    compressed = d[~d.config.isin(list(FITTED_CONFIGS))].drop_duplicates(["pid", "model", "config", "latency_ms"])
    return fitted.reset_index(drop=True), compressed.reset_index(drop=True)


_REPORTS: dict = {}


def _report(model: str):
    import analyzer

    if model not in _REPORTS:
        _REPORTS[model] = analyzer.analyze(os.path.join(FX, GRAPHS[model]))
    return _REPORTS[model]


def features(model: str, pid: str, precision: str) -> dict:
    """Per kernel of the coreml runtime: work (FLOPs at the peak used), memory seconds at the
    datasheet bandwidth, launches."""
    import hardware_db
    from analyzer.prediction.predict import predict

    prof = dataclasses.replace(hardware_db.get(pid), family="datasheet")
    (pred,) = predict(_report(model), [prof], precision=precision, runtime="coreml")
    kt = pred.kernel_table
    return {"dw": np.array([c == "conv_dw" for c in kt.op_class]),
            "compute": np.asarray(kt.compute, float) / np.maximum(np.asarray(kt.runs, float), 1),
            "memory": np.asarray(kt.memory, float) / np.maximum(np.asarray(kt.runs, float), 1),
            "runs": np.asarray(kt.runs, float)}


def model_ms(f: dict, p: dict) -> float:
    e = np.where(f["dw"], p.get("e_dw", p["e_c"]), p["e_c"])
    return 1e3 * float(np.sum(f["runs"] * (p["floor"] + np.maximum(f["compute"] / e, f["memory"] / p["e_bw"]))))


def fit(rows, feats) -> dict:
    from scipy.optimize import least_squares

    x0 = np.log([X0[k] for k in PARAMS])

    def unpack(x):
        return dict(zip(PARAMS, np.exp(x)))

    def resid(x):
        p = unpack(x)
        out = [np.log(model_ms(feats[(r.model, r.pid, r.precision)], p) / r.latency_ms) for r in rows.itertuples()]
        return np.array(out + list(0.01 * (x - x0)))

    upper = np.array([0.0 if k.startswith("e_c") or k == "e_dw" else np.inf for k in PARAMS])
    best = None
    for start_bw in (1.0, 10.0):
        start = np.minimum(np.log([start_bw if k == "e_bw" else X0[k] for k in PARAMS]), upper - 1e-3)
        sol = least_squares(resid, start, bounds=(-np.inf, upper), method="trf")
        if best is None or sol.cost < best.cost:
            best = sol
    return unpack(best.x)


def loo(train, feats) -> list:
    """(row, prediction) of each fitted row with constants fitted on the other models."""
    out = []
    for m in sorted(set(train.model)):
        q = fit(train[train.model != m].reset_index(drop=True), feats)
        out += [(r, model_ms(feats[(r.model, r.pid, r.precision)], q)) for r in train[train.model == m].itertuples()]
    return out


def choose_variant(train, feats) -> tuple[str, dict]:
    """The VARIANTS entry with the lowest leave-one-model-out MAPE over the fitted rows."""
    global PARAMS
    scores = {}
    for name, params in VARIANTS.items():
        PARAMS = params
        got = loo(train, feats)
        scores[name] = stats([v for _, v in got], [r.latency_ms for r, _ in got])["mape"]
    best = min(scores, key=scores.get)
    PARAMS = VARIANTS[best]
    return best, scores


def table(title: str, rows, pred) -> list[str]:
    out = [f"**{title}**", "", "| chip | model | config | precision | measured ms | predicted ms | error % |",
           "|---|---|---|---|---:|---:|---:|"]
    for r, p in zip(rows.itertuples(), pred):
        out.append(f"| {r.chip} | {r.model} | {r.config} | {r.precision} | {r.latency_ms:.2f} | {p:.3f} | "
                   f"{(p / r.latency_ms - 1) * 100:+.1f} |")
    s = stats(pred, rows.latency_ms)
    out += ["", f"MAPE {s['mape']} %, max {s['max_ape']} %, bias {s['bias']} % over {s['rows']} rows", ""]
    return out


def opcost_ms(model: str, pid: str, precision: str) -> float:
    from analyzer.prediction.predict import predict

    (pred,) = predict(_report(model), [pid], precision=precision)
    return pred.latency_s * 1e3


def write_family(p: dict, rows, err: dict) -> None:
    from analyzer.prediction.efficiency.op_classes import OP_CLASSES

    prov = {"kind": "fit", "measurement_file": "coreml_ane.csv", "device_system": "iPhone 14 Pro (A16 Bionic)",
            "hardware": "ane-a16",
            "filter": ("chip == A16, config in (Float16, Weight & activation = W8A8), model in "
                       f"({', '.join(sorted(set(rows.model)))}); held out (never fitted): "
                       f"{', '.join(sorted(HELD_OUT))} (every chip); CenterNet has no graph"),
            "timing": "coremltools guide tables: median of Xcode's Performance tab, compute units all, iOS 17, batch 1",
            "rows": int(len(rows)),
            "fit_method": ("one least squares on log(pred/measured) over the whole-model rows: e_c (at most 1), "
                           "e_bw and a per-op floor shared by every op class (a depthwise efficiency of its own tied under "
                           "leave-one-model-out cross-validation on the fitted models: the shared form kept); "
                           "predictions are opcost's coreml "
                           "runtime (Core ML's fusion) with these sets; an e_bw above 1 means the ANE keeps "
                           "that traffic in its own cache"),
            "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND, "fit_error": err}
    sets = {c: {"constants": {"e_compute": float(p["e_dw"] if c == "conv_dw" and "e_dw" in p else p["e_c"]), "e_bw": float(p["e_bw"]), "b_half_bytes": 0.0,
                              "floor_s": float(p["floor"]), "tile_m": 0.0, "tile_n": 0.0, "wave_alpha": 0.0,
                              "l2_gain": 0.0}, "provenance": prov} for c in OP_CLASSES}
    doc = {"schema_version": 1, "family": FAMILY,
           "description": ("Apple Neural Engine constants under Core ML (runtime coreml), fitted on the A16's public "
                           "whole-model latencies: one compute efficiency, one memory-bandwidth factor and one "
                           "per-op floor for every op class; the A17 Pro and M4 profiles use them at their own "
                           "peaks and bandwidth"),
           "devices": ["ane-a16", "ane-a17pro", "ane-m4"],
           "scalars": {"trans_weight": 1.0, "provenance": {"kind": "prior", "source": "a transcendental counts as one vector operation (not identified by whole-model rows)"}},
           "sets": sets}
    with open(EFF, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=os.path.join(ROOT, "..", "shared", "measurements", "accelerators"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows, compressed = rows_of(a.measurements)
    feats = {k: features(*k) for k in sorted(set(zip(rows.model, rows.pid, rows.precision)))}
    held = rows.model.isin(HELD_OUT)
    train = rows[~held & (rows.pid == "ane-a16")].reset_index(drop=True)
    test = rows[held].reset_index(drop=True)
    variant, cv = choose_variant(train, feats)
    p = fit(train, feats)
    rep = ["# Apple Neural Engine (Core ML): fitted constants and their scores", "", f"Command: `{COMMAND}`", "",
           f"Rows: {len(rows)} (fitted {len(train)}: A16 {', '.join(sorted(set(train.model)))}; held out "
           f"{len(test)}: {', '.join(sorted(HELD_OUT))} on every chip, fixed before any score was seen)", "",
           f"Variant chosen by leave-one-model-out cross-validation on the fitted rows: {variant} (CV MAPE: "
           + ", ".join(f"{k} {v} %" for k, v in cv.items()) + ")", "",
           "Constants: " + ", ".join(f"{k} = {v:.4g}" for k, v in p.items()), ""]
    rep += table("in-sample (A16, fitted rows)", train, [model_ms(feats[(r.model, r.pid, r.precision)], p)
                                                         for r in train.itertuples()])
    rep += table("held out (MobileViTv2-1.0; A16 rows, and A17 Pro rows = A16 constants at the A17 Pro's own "
                 "figures: the cross-device check)", test,
                 [model_ms(feats[(r.model, r.pid, r.precision)], p) for r in test.itertuples()])
    got = loo(train, feats)
    lrows = train.iloc[[r.Index for r, _ in got]].reset_index(drop=True)
    rep += table("leave one fitted model out (each scored with constants fitted on the other two)", lrows,
                 [v for _, v in got])
    if not a.no_write:
        err = stats([model_ms(feats[(r.model, r.pid, r.precision)], p) for r in train.itertuples()], train.latency_ms)
        write_family(p, train, err)
        op = [opcost_ms(r.model, r.pid, r.precision) for r in rows.itertuples()]
        rep += table("opcost as shipped (analyzer.prediction.predict, profile defaults: runtime coreml), every "
                     "fitted-config row", rows, op)
        cfeat = [opcost_ms(r.model, r.pid, "fp16") for r in compressed.itertuples()]
        rep += table("weight-compressed rows (fp16 compute; not fitted): opcost's fp16 prediction beside each",
                     compressed, cfeat)
    os.makedirs(os.path.dirname(RESULT), exist_ok=True)
    with open(RESULT, "w", encoding="utf-8") as fh:
        fh.write("\n".join(rep) + "\n")
    print("\n".join(rep))


if __name__ == "__main__":
    main()
