"""Fit the efficiency constants of the Hexagon NPU and Apple Neural Engine profiles on public
whole-model measurements, write them as data, and score them in-sample, held-out, leaving a
model family out, and across devices.

    PYTHONPATH=$PWD python bench/fit_accelerators.py [MEASUREMENTS_DIR] [--no-write]

``--no-write`` prints the scores and writes nothing (neither the constants and profiles nor
bench/results/fit_accelerators.md).

MEASUREMENTS_DIR defaults to ../shared/measurements/accelerators (its README says how each row was
timed). Graphs: tests/fixtures/torch and tests/fixtures/accel (graph-only ONNX exports of the
torchvision / timm models the rows time; tests/fixtures/accel/export.py makes them).

Model (the kernel-time form of analyzer/prediction/efficiency/kernel_time.py with the terms these
rows can identify), per kernel ``k`` of opcost's ``kernel`` runtime (no fusion) on the profile:

    t_k = runs_k * floor[c_k] + max(W_k / (P_int8 * s_prec * e[c_k]), B_k / (BW * e_bw))
    s_prec = 1 (int8 = W8A8), r_fp16 (fp16): the fp16 MAC rate as a fraction of the int8 one

``W_k`` FLOPs (opcost's exact counts), ``B_k`` bytes at the deploy precision, ``P_int8`` and ``BW``
the profile's figures. Classes: the matrix classes (GEMM, convolutions but depthwise, attention)
share ``e_mat`` and ``floor_mat`` (the NPU's per-layer dispatch); depthwise convolutions have
their own ``e_dw``; every other class (elementwise, norms, pooling, movement) ``floor_vec``. One
least squares on log(pred / measured) (scipy), deterministic. ``r_fp16`` is fitted once for the
family and written into each profile as its ``matrix_tflops.fp16`` (a fitted figure; its source
says so).

Rows: primary_compute_unit == NPU, runtimes tflite and qnn_dlc, precisions fp16 and int8 (W8A8),
models with a graph here. HELD_OUT models are never fitted on. Hexagon constants are per device
(8 Gen 2 = HTP v73, 8 Gen 3 = v75): the cross-device check scores one device with the other's
constants at its own datasheet figures.

Needs pandas and scipy (this script only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SCRIPT = "bench/fit_accelerators.py"
COMMAND = "PYTHONPATH=$PWD python bench/fit_accelerators.py ../shared/measurements/accelerators"
FIT_DATE = "2026-12-02"
EFF_DIR = os.path.join(ROOT, "hardware_db", "efficiency")
PROFILE_DIR = os.path.join(ROOT, "hardware_db", "profiles")
RESULT = os.path.join(ROOT, "bench", "results", "fit_accelerators.md")

FX = os.path.join(ROOT, "tests", "fixtures")
# AI Hub model_id -> graph (batch 1, the row's input resolution)
HEX_GRAPHS = {
    "resnet18": "torch/resnet18.onnx", "resnet101": "accel/resnet101.onnx",
    "resnext50": "accel/resnext50_32x4d.onnx", "resnext101": "accel/resnext101_32x8d.onnx",
    "wideresnet50": "accel/wide_resnet50_2.onnx", "googlenet": "accel/googlenet.onnx",
    "inception_v3": "accel/inception_v3.onnx", "densenet121": "accel/densenet121.onnx",
    "mobilenet_v3_large": "accel/mobilenet_v3_large.onnx",
    "mobilenet_v3_small": "accel/mobilenet_v3_small.onnx", "mnasnet05": "accel/mnasnet0_5.onnx",
    "shufflenet_v2": "accel/shufflenet_v2_x0_5.onnx", "squeezenet1_1": "accel/squeezenet1_1.onnx",
    "regnet": "accel/regnet_x_3_2gf.onnx", "efficientnet_b4": "accel/efficientnet_b4.onnx",
    "efficientnet_v2_s": "accel/efficientnet_v2_s.onnx", "convnext_base": "accel/convnext_base.onnx",
    "swin_tiny": "accel/swin_t.onnx", "swin_small": "accel/swin_s.onnx", "swin_base": "accel/swin_b.onnx",
}
TRANSFORMERS = {"swin_tiny", "swin_small", "swin_base", "mobilevitv2"}
# never fitted on: one of each kind of network (residual, inception, mobile, efficientnet,
# shuffle, windowed transformer)
HELD_OUT = {"resnet101", "inception_v3", "mobilenet_v3_large", "efficientnet_v2_s", "shufflenet_v2",
            "swin_small"}
HEXAGON = {"hexagon-sd8gen2": "qualcomm-hexagon-v73", "hexagon-sd8gen3": "qualcomm-hexagon-v75"}
DEVICE_NAME = {"hexagon-sd8gen2": "Samsung Galaxy S23 (Snapdragon 8 Gen 2)",
               "hexagon-sd8gen3": "Samsung Galaxy S24 (Snapdragon 8 Gen 3)"}

MATRIX = {"gemm", "gemm_tn", "bgemm", "conv", "conv_1x1", "conv1d", "conv_grouped",
          "conv_batch_grouped", "attention"}
RUNTIME = os.environ.get("FIT_RUNTIME", "kernel")
# candidate caps on the per-kernel floors (seconds): none, or 1 us (the NPU's per-layer cost then
# comes from the bandwidth terms, which scale with the precision's bytes); chosen by
# leave-one-model-out cross-validation on the training models only (select_floor_cap)
FLOOR_CAPS = (float("inf"), 1e-6)
FLOOR_MAX = FLOOR_CAPS[0]
MOVE = {"movement", "view", "reorder", "gather", "other"}
# class group -> (e_compute, e_bw, floor) parameter names; every class not listed is "ew"
# (elementwise, activations, norms, softmax, reductions, pooling)
GROUP_PARAMS = {"mat": ("e_mat", "bw_mat", "floor_mat"), "dw": ("e_dw", "bw_mat", "floor_mat"),
                "ew": ("e_mat", "bw_ew", "floor_ew"), "move": ("e_mat", "bw_move", "floor_move")}
PARAMS = ("e_mat", "e_dw", "bw_mat", "bw_ew", "bw_move", "floor_mat", "floor_ew", "floor_move")
X0 = {"e_mat": 0.3, "e_dw": 0.05, "bw_mat": 0.5, "bw_ew": 0.5, "bw_move": 0.5, "floor_mat": 5e-6,
      "floor_ew": 2e-6, "floor_move": 1e-6}


def group_of(cls: str) -> str:
    return "mat" if cls in MATRIX else "dw" if cls == "conv_dw" else "move" if cls in MOVE else "ew"


# ----------------------------------------------------------------------------- features

_REPORTS: dict = {}


def _report(path: str):
    import analyzer

    if path not in _REPORTS:
        _REPORTS[path] = analyzer.analyze(path)
    return _REPORTS[path]


def _datasheet(pid: str):
    import hardware_db

    return dataclasses.replace(hardware_db.get(pid), family="datasheet")


def features(path: str, pid: str, precision: str) -> dict:
    """Per-kernel terms of ``path`` on ``pid`` at ``precision`` under the datasheet set
    (e = 1, no floor): FLOPs-equivalent work (compute seconds x the peak used), memory seconds
    at the datasheet bandwidth, launches and class group."""
    from analyzer.prediction.predict import predict

    (pred,) = predict(_report(path), [_datasheet(pid)], precision=precision, runtime=RUNTIME)
    kt = pred.kernel_table
    return {"group": np.array([group_of(c) for c in kt.op_class]),
            "work": np.asarray(kt.compute) * np.asarray(kt.matrix_peak),
            "memory": np.asarray(kt.memory, float), "runs": np.asarray(kt.runs, float)}


def model_time(f: dict, p: dict, peak_int8: float, s_prec: float) -> float:
    g = f["group"]
    e = np.ones(len(g))
    bw = np.ones(len(g))
    floor = np.zeros(len(g))
    for name, (pe, pb, pf) in GROUP_PARAMS.items():
        m = g == name
        e[m], bw[m], floor[m] = p[pe], p[pb], p[pf]
    compute = f["work"] / (peak_int8 * s_prec * e)
    memory = f["memory"] / bw
    return float(np.sum(f["runs"] * floor + np.maximum(compute, memory)))


# ----------------------------------------------------------------------------- data


def hexagon_rows(mdir: str):
    import pandas as pd

    hx = pd.read_csv(os.path.join(mdir, "aihub_hexagon.csv"))
    hx = hx[(hx.primary_compute_unit == "NPU") & hx.runtime.isin(["tflite", "qnn_dlc"])
            & hx.precision.isin(["fp16", "int8"]) & hx.model_id.isin(list(HEX_GRAPHS))]
    return hx[["model_id", "opcost_profile", "precision", "runtime", "inference_time_ms"]].reset_index(drop=True)


def peak_int8(pid: str) -> float:
    import hardware_db

    return hardware_db.get(pid).peak_flops("matrix", "int8")


# ----------------------------------------------------------------------------- fit


def select_floor_cap(train, feats) -> tuple[float, dict]:
    """The FLOOR_CAPS entry with the lowest leave-one-model-out MAPE over ``train`` (held-out
    models never enter); returns (cap, {cap: cv MAPE})."""
    global FLOOR_MAX
    scores = {}
    for cap in FLOOR_CAPS:
        FLOOR_MAX = cap
        pred, meas = [], []
        for m in sorted(set(train.model_id)):
            inner, out = train[train.model_id != m].reset_index(drop=True), train[train.model_id == m]
            ps, r = fit(inner, feats)
            pred += list(predict_rows(out.reset_index(drop=True), feats, ps, r))
            meas += list(out.inference_time_ms)
        scores[cap] = stats(pred, meas)["mape"]
    FLOOR_MAX = min(scores, key=scores.get)
    return FLOOR_MAX, scores


def fit(rows, feats: dict, r_fixed: float | None = None):
    """Least squares on log(pred/measured) over ``rows``: per device PARAMS, one shared r_fp16
    (unless ``r_fixed``). Returns ({pid: params}, r_fp16)."""
    from scipy.optimize import least_squares

    pids = sorted(rows.opcost_profile.unique())
    x0 = []
    for _ in pids:
        x0 += [np.log(X0[k]) for k in PARAMS]
    if r_fixed is None:
        x0.append(np.log(0.4))

    def unpack(x):
        n = len(PARAMS)
        ps = {pid: dict(zip(PARAMS, np.exp(x[n * i:n * i + n]))) for i, pid in enumerate(pids)}
        r = r_fixed if r_fixed is not None else float(np.exp(x[-1]))
        return ps, r

    peaks = {pid: peak_int8(pid) for pid in pids}

    def resid(x):
        ps, r = unpack(x)
        out = []
        for row in rows.itertuples():
            f = feats[(row.model_id, row.opcost_profile, row.precision)]
            t = model_time(f, ps[row.opcost_profile], peaks[row.opcost_profile],
                           r if row.precision == "fp16" else 1.0)
            out.append(np.log(t * 1e3 / row.inference_time_ms))
        # weak prior keeping unidentified constants near physical values
        return np.array(out + list(0.01 * (x - np.array(x0))))

    # two starts (memory-bound and compute-bound readings of the rows); the lower cost is kept
    best = None
    for bw_scale in (1.0, 10.0):
        start = np.array(x0) + np.array([np.log(bw_scale) if k.startswith("bw_") else 0.0
                                         for _ in pids for k in PARAMS] + ([0.0] if r_fixed is None else []))
        # efficiencies at most 1 (a fraction of the datasheet figure); everything else free
        upper = np.array([0.0 if k.startswith("e_") else np.log(FLOOR_MAX) if k.startswith("floor_") else np.inf
                          for _ in pids for k in PARAMS]
                         + ([0.0] if r_fixed is None else []))
        sol = least_squares(resid, np.minimum(start, upper - 1e-3), bounds=(-np.inf, upper), method="trf")
        if best is None or sol.cost < best.cost:
            best = sol
    return unpack(best.x)


def predict_rows(rows, feats, params: dict, r: float, peaks: dict | None = None):
    out = []
    for row in rows.itertuples():
        pid = row.opcost_profile
        f = feats[(row.model_id, pid, row.precision)]
        pk = (peaks or {}).get(pid) or peak_int8(pid)
        out.append(model_time(f, params[pid], pk, r if row.precision == "fp16" else 1.0) * 1e3)
    return np.array(out)


def stats(pred, meas) -> dict:
    pred, meas = np.asarray(pred, float), np.asarray(meas, float)
    if len(pred) == 0:
        return {"rows": 0}
    ape = np.abs(pred / meas - 1) * 100
    return {"rows": int(len(pred)), "mape": round(float(ape.mean()), 1),
            "max_ape": round(float(ape.max()), 1),
            "bias": round(float((np.exp(np.mean(np.log(pred / meas))) - 1) * 100), 1)}


# ----------------------------------------------------------------------------- writing


def set_of(cls: str, p: dict, prov: dict) -> dict:
    pe, pb, pf = GROUP_PARAMS[group_of(cls)]
    return {"constants": {"e_compute": float(p[pe]), "e_bw": float(p[pb]), "b_half_bytes": 0.0,
                          "floor_s": float(p[pf]), "tile_m": 0.0, "tile_n": 0.0, "wave_alpha": 0.0,
                          "l2_gain": 0.0},
            "provenance": prov}


def write_family(family: str, pid: str, p: dict, r: float, rows, err: dict) -> None:
    from analyzer.prediction.efficiency.op_classes import OP_CLASSES

    train = sorted(set(rows.model_id))
    prov = {"kind": "fit", "measurement_file": "aihub_hexagon.csv", "device_system": DEVICE_NAME[pid],
            "hardware": pid,
            "filter": ("primary_compute_unit == NPU, runtime in (tflite, qnn_dlc), precision in (fp16, int8 "
                       f"= W8A8), opcost_profile == {pid}, model_id in ({', '.join(train)}); held out "
                       f"(never fitted): {', '.join(sorted(HELD_OUT))}"),
            "timing": "Qualcomm AI Hub v0.35.0 estimated_inference_time (QAIRT 2.37.0, TFLite 2.17.0), batch 1",
            "rows": int(len(rows)),
            "fit_method": ("one least squares on log(pred/measured) over the whole-model rows: "
                           f"{', '.join(PARAMS)} per device (efficiencies at most 1, floors at most "
                           f"{FLOOR_MAX:g} s, the cap chosen by leave-one-model-out cross-validation on the "
                           "fitted models), r_fp16 shared by both Hexagon devices; predictions are opcost's "
                           "kernel runtime (no fusion) with these sets; an e_bw above 1 means the NPU keeps "
                           "that class's traffic on chip (fused into its producer)"),
            "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND, "fit_error": err,
            "r_fp16": round(r, 4)}
    doc = {"schema_version": 1, "family": family,
           "description": (f"Qualcomm Hexagon NPU constants of {pid} fitted on public AI Hub whole-model "
                           "latencies: e_compute of the matrix classes (fraction of the int8 MAC peak; fp16 "
                           "runs at the profile's fitted fp16 figure), a per-layer dispatch floor, the "
                           "depthwise-convolution efficiency and one DRAM-streaming fraction"),
           "devices": [pid],
           "scalars": {"trans_weight": 1.0, "provenance": {"kind": "prior", "source": "a transcendental counts as one vector operation (not identified by whole-model rows)"}},
           "sets": {c: set_of(c, p, prov) for c in OP_CLASSES}}
    with open(os.path.join(EFF_DIR, f"{family}.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


def write_fp16(pid: str, r: float) -> float:
    """Set ``matrix_tflops.fp16 = r * int8`` in the profile's TOML (its source line says fitted)."""
    path = os.path.join(PROFILE_DIR, f"{pid}.toml")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    import hardware_db

    int8 = hardware_db.get(pid).matrix_tflops["int8"]
    fp16 = round(r * int8, 2)
    text = re.sub(r"(?m)^fp16 = .*$", f"fp16 = {fp16}", text)
    text = re.sub(r'(?m)^"matrix_tflops\.fp16" = .*$',
                  f'"matrix_tflops.fp16" = "fitted: r_fp16 = {r:.4f} x the int8 figure ({int8:g}), fitted on '
                  f'Qualcomm AI Hub v0.35.0 whole-model NPU latencies (fp16 vs W8A8 rows of the same models, both '
                  f'Hexagon devices; not a datasheet figure: Qualcomm publishes none); {SCRIPT}, command: {COMMAND}. '
                  f'Engine: the Hexagon tensor accelerator (matrix engine)."', text)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return fp16


# ----------------------------------------------------------------------------- scoring with opcost


def opcost_ms(model_id: str, pid: str, precision: str, family: str | None = None) -> float:
    """opcost's own prediction (analyzer.prediction.predict) of a row, with the shipped profile
    (``family``: the profile with another family's constants, for the cross-device check)."""
    import hardware_db
    from analyzer.prediction.predict import predict

    prof = hardware_db.get(pid)
    if family:
        prof = dataclasses.replace(prof, family=family)
    (pred,) = predict(_report(os.path.join(FX, HEX_GRAPHS[model_id])), [prof], precision=precision,
                      runtime=RUNTIME)
    return pred.latency_s * 1e3


def table(title: str, rows, pred, by=("opcost_profile", "precision")) -> list[str]:
    out = [f"**{title}**", "", "| device | precision | rows | MAPE % | max APE % | bias % |",
           "|---|---|---:|---:|---:|---:|"]
    rows = rows.assign(pred=pred)
    for key, g in rows.groupby(list(by)):
        s = stats(g.pred, g.inference_time_ms)
        out.append(f"| {key[0]} | {key[1]} | {s['rows']} | {s['mape']} | {s['max_ape']} | {s['bias']} |")
    s = stats(rows.pred, rows.inference_time_ms)
    out.append(f"| all | all | {s['rows']} | {s['mape']} | {s['max_ape']} | {s['bias']} |")
    return out + [""]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=os.path.join(ROOT, "..", "shared", "measurements",
                                                                      "accelerators"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = hexagon_rows(a.measurements)
    rows = rows[[os.path.exists(os.path.join(FX, HEX_GRAPHS[m])) for m in rows.model_id]].reset_index(drop=True)
    feats = {}
    for key in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision))):
        feats[key] = features(os.path.join(FX, HEX_GRAPHS[key[0]]), key[1], key[2])
    held = rows.model_id.isin(HELD_OUT)
    train, test = rows[~held].reset_index(drop=True), rows[held].reset_index(drop=True)
    report = ["# Hexagon NPU: fitted constants and their scores", "",
              f"Command: `{COMMAND}`", "",
              f"Rows: {len(rows)} (fitted {len(train)}, held out {len(test)}: models "
              f"{', '.join(sorted(HELD_OUT & set(rows.model_id)))})", ""]

    # datasheet (before): opcost as shipped before this fit (e = 1, 10 us per kernel)
    cap, cv = select_floor_cap(train, feats)
    report.append(f"Floor cap chosen by leave-one-model-out cross-validation on the fitted models: {cap:g} s "
                  f"(CV MAPE by cap: {', '.join(f'{k:g} s: {v}%' for k, v in cv.items())})")
    report.append("")
    params, r = fit(train, feats)
    report.append(f"r_fp16 = {r:.4f}; constants: " + "; ".join(
        f"{pid}: " + ", ".join(f"{k}={v:.4g}" for k, v in p.items()) for pid, p in params.items()))
    report.append("")
    report += table("in-sample (fitted rows)", train, predict_rows(train, feats, params, r))
    report += table("held-out models", test, predict_rows(test, feats, params, r))

    # leave a model family out: fit on CNNs, score transformers; fit on transformers, score CNNs
    is_tf = rows.model_id.isin(TRANSFORMERS)
    cnn_tr = rows[~is_tf & ~held].reset_index(drop=True)
    tf_all = rows[is_tf].reset_index(drop=True)
    p_c, r_c = fit(cnn_tr, feats)
    report += table("fit on CNNs (training models), score every transformer row", tf_all,
                    predict_rows(tf_all, feats, p_c, r_c))
    tf_tr = rows[is_tf & ~held].reset_index(drop=True)
    cnn_all = rows[~is_tf].reset_index(drop=True)
    p_t, r_t = fit(tf_tr, feats, r_fixed=r)
    report += table("fit on transformers (training models; r_fp16 from the full fit), score every CNN row",
                    cnn_all, predict_rows(cnn_all, feats, p_t, r_t))

    # cross-device: one device's constants on the other at its own datasheet figures
    for src, dst in (("hexagon-sd8gen2", "hexagon-sd8gen3"), ("hexagon-sd8gen3", "hexagon-sd8gen2")):
        sub = rows[rows.opcost_profile == dst].reset_index(drop=True)
        report += table(f"{dst} scored with {src}'s constants (datasheet-scaled: {dst}'s own peak and "
                        f"bandwidth)", sub, predict_rows(sub, feats, {dst: params[src]}, r))

    # the 8 Gen 3 / 8 Gen 2 ratio per held-out model
    report += ["**8 Gen 3 / 8 Gen 2 latency ratio, held-out models** (measured vs predicted, per "
               "precision and runtime)", "", "| model | precision | runtime | measured | predicted | "
               "datasheet-scaled 8 Gen 2 constants | error % | error % (scaled) |", "|---|---|---|---:|---:|---:|---:|---:|"]
    pt = test.assign(pred=predict_rows(test, feats, params, r))
    for (m, prec, rt), g in pt.groupby(["model_id", "precision", "runtime"]):
        if len(g) != 2:
            continue
        g = g.set_index("opcost_profile")
        mr = g.inference_time_ms["hexagon-sd8gen3"] / g.inference_time_ms["hexagon-sd8gen2"]
        pr = g.pred["hexagon-sd8gen3"] / g.pred["hexagon-sd8gen2"]
        f3 = feats[(m, "hexagon-sd8gen3", prec)]
        s = model_time(f3, params["hexagon-sd8gen2"], peak_int8("hexagon-sd8gen3"), r if prec == "fp16" else 1.0) * 1e3
        sr = s / g.pred["hexagon-sd8gen2"]
        report.append(f"| {m} | {prec} | {rt} | {mr:.3f} | {pr:.3f} | {sr:.3f} | {abs(pr / mr - 1) * 100:.1f} | "
                      f"{abs(sr / mr - 1) * 100:.1f} |")
    report.append("")

    if not a.no_write:
        fp16 = {pid: write_fp16(pid, r) for pid in HEXAGON}
        import hardware_db

        hardware_db.clear_cache() if hasattr(hardware_db, "clear_cache") else None
        for pid, fam in HEXAGON.items():
            sub = train[train.opcost_profile == pid].reset_index(drop=True)
            err = stats(predict_rows(sub, feats, params, r), sub.inference_time_ms)
            write_family(fam, pid, params[pid], r, sub, err)
        report.append(f"Written: fp16 figures {fp16}; families {', '.join(HEXAGON.values())}")
        # opcost's own predictions with the written data (what a user gets)
        op = np.array([opcost_ms(row.model_id, row.opcost_profile, row.precision) for row in rows.itertuples()])
        report += table("opcost (analyzer.prediction.predict, shipped profiles), in-sample rows", rows[~held],
                        op[~held.values])
        report += table("opcost (analyzer.prediction.predict, shipped profiles), held-out rows", rows[held],
                        op[held.values])
    if not a.no_write:   # --no-write: print only (the recorded results stay those of the written fit)
        os.makedirs(os.path.dirname(RESULT), exist_ok=True)
        with open(RESULT, "w", encoding="utf-8") as fh:
            fh.write("\n".join(report) + "\n")
    print("\n".join(report))


if __name__ == "__main__":
    main()
