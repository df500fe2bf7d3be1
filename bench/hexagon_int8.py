"""Where the shipped Hexagon NPU fit misses on its fitted W8A8 (int8) rows: each row's prediction
split by term, and what the graph holds (fitted models only: hexagon_model.HELD_OUT never enters).

    PYTHONPATH=$PWD python bench/hexagon_int8.py [MEASUREMENTS_DIR] [--out bench/results/hexagon_int8.md]

The constants are bench/fit_accelerators.py's fit of its ``FORM`` on the fitted rows (the same
call); each W8A8 row is predicted with them at its deployment (in-sample) and split, in us, as
hexagon_model.times sums it: the per-inference fixed cost (+/- half the W8A8 deployment offset),
the per-kernel cost (launches x kfix), and per kernel the larger of its compute (a depthwise kernel's:
its output elements at the form's depthwise rate) and memory times,
charged to compute, to its weight bytes, to its activation bytes streamed from DRAM or to its
activation bytes kept on chip (c_act), by which bound wins and each byte kind's share of the
memory time. Per graph (the opcost graph is the float ONNX export; ``--precision int8`` charges 1
byte per element, it is not a QDQ graph): launches, Concats (elided by the qnn plan), the largest
kernel's activation MB at 1 byte per element against the 8 MB VTCM budget, and AI Hub's layer
counts (``layers_total``) of the model's fp16 and W8A8 rows, whose difference is what the W8A8
compile adds (a Quantize at the input, a Dequantize at the output, and what else it inserts).

Needs pandas and scipy (bench only).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402
from fit_accelerators import FORM  # noqa: E402

from analyzer.prediction.accelerators.qnn import HVX_FP16_SHARE  # noqa: E402


def split(rows, feats, P: dict, r: float) -> list[dict]:
    """Per row of ``rows``: its prediction's terms in seconds (module docstring)."""
    out = []
    for _, row in rows.iterrows():
        key = (row.model_id, row.opcost_profile, row.precision)
        g, w, m, runs, o, s = feats[key]
        d = H.DEVS.index(row.opcost_profile)
        fp = row.precision == "fp16"
        e = np.where(g == 1, P["e_dw"][d], P["e_mat"][d])   # group 1: depthwise
        bw = np.choose(g, [P["bw_mat"][d], P["bw_mat"][d], P["bw_ew"][d], P["bw_move"][d]])
        s_prec = np.where(s > 0, s, r if fp else 1.0)
        tc = w / (H.peak_int8(row.opcost_profile) * s_prec * e)
        if FORM.dwt:   # the depthwise kernels' work is their unit, at the form's rate (hexagon_model.dw_seconds)
            rate = H.dw_int8_rates(P, FORM.dwt)[d] * (1.0 if not fp else HVX_FP16_SHARE if FORM.dwt[1] == "w"
                                                      else P["dwr_fp16"][0] / P["dwr_int8"][0])
            tc = np.where(g == 1, w / rate, tc)
        onchip = P["c_act"][d] * o / bw
        dram = m / bw
        tm = dram + onchip
        mem = tm > tc
        sign = H.DEPLOY_SIGN.get(row.runtime, 0.0)
        fixed = P["t0_fp16" if fp else "t0_int8"][d] + sign * P["d_fp16" if fp else "d_int8"][d] / 2
        out.append({"fixed": fixed, "kernel": float(runs.sum() * P["kfix"][d]),
                    "compute": float(tc[~mem].sum()), "dram": float(dram[mem].sum()),
                    "onchip": float(onchip[mem].sum()), "launches": int(runs.sum())})
    return out


def graph_facts(model_id: str) -> dict:
    """Concats, and the largest kernel activation bytes per launch at 1 byte per element (the
    qnn plan on the 8 Gen 2's datasheet profile with its budget)."""
    from analyzer.prediction.predict import predict

    rep = H.report(model_id)
    (pred,) = predict(rep, [H.datasheet("hexagon-sd8gen2", True)], precision="int8", runtime="qnn")
    kt = pred.kernel_table
    act = np.maximum(np.asarray(kt.nbytes, float) - np.asarray(kt.onchip[1], float), 0.0)
    ops = [nd.op for nd in rep.nodes]
    return {"concat": ops.count("Concat"), "max_act_mb": float(act.max()) / 1e6,
            "over": int((act > float(kt.onchip[2])).sum()), "weights_mb": float((np.asarray(kt.onchip[1]) * kt.runs).sum()) / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "hexagon_int8.md"))
    a = ap.parse_args()
    import pandas as pd

    rows = H.hexagon_rows(a.measurements)
    train = H.fitted_rows(rows)
    feats = H.features(train, FORM.runtime, FORM.onchip, FORM.hvx, dw_unit=FORM.dwt[:1])
    P, r = H.fit(H.Rows(train, feats), FORM)
    pred = H.times(H.Rows(train, feats), P, r, FORM.dwt)
    hx = pd.read_csv(os.path.join(a.measurements, "aihub_hexagon.csv"))
    layers = hx.groupby(["model_id", "opcost_profile", "runtime", "precision"]).layers_total.first()
    q = train[train.precision == "int8"]
    parts = split(q, feats, P, r)
    facts = {m: graph_facts(m) for m in sorted(set(q.model_id))}
    lines = ["# Hexagon NPU: the fitted W8A8 rows, split by term", "",
             "Command: `PYTHONPATH=$PWD python bench/hexagon_int8.py ../shared/measurements/accelerators` "
             "(in-sample: the shipped form fitted on the 153 fitted rows; held-out models never read). Times in us; "
             "'fp16 / W8A8 measured': the same model, device and deployment's fp16 row over this one; "
             "'layers': AI Hub's layers_total fp16 -> W8A8; 'act MB': the largest kernel's activation bytes at "
             "1 byte per element (8 MB VTCM budget; 'over': kernels above it).", "",
             "| model | device | runtime | measured | predicted | error % | fixed | per-kernel | compute | DRAM "
             "bytes | on-chip | launches | fp16 / W8A8 measured | fp16 / W8A8 predicted | layers | concats | "
             "act MB (over) | weights MB |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    fp_pred = {(m, dv, rt): p for m, dv, rt, pr, p in zip(train.model_id, train.opcost_profile, train.runtime,
                                                          train.precision, pred) if pr == "fp16"}
    fp_meas = {(m, dv, rt): t for m, dv, rt, pr, t in zip(train.model_id, train.opcost_profile, train.runtime,
                                                          train.precision, train.inference_time_ms) if pr == "fp16"}
    qi = np.flatnonzero(train.precision.values == "int8")
    for i, (_, row), t in zip(qi, q.iterrows(), parts):
        k = (row.model_id, row.opcost_profile, row.runtime)
        f = facts[row.model_id]
        ratio_m = f"{fp_meas[k] / row.inference_time_ms:.2f}" if k in fp_meas else ""
        ratio_p = f"{fp_pred[k] / pred[i]:.2f}" if k in fp_pred else ""
        lf = layers.get((*k, "fp16"), np.nan)
        lq = layers.get((*k, "int8"), np.nan)
        lines.append(
            f"| {row.model_id} | {row.opcost_profile.removeprefix('hexagon-')} | {row.runtime} | "
            f"{row.inference_time_ms * 1e3:.0f} | {pred[i] * 1e6:.0f} | {(pred[i] * 1e3 / row.inference_time_ms - 1) * 100:+.1f} | "
            + " | ".join(f"{t[c] * 1e6:.0f}" for c in ("fixed", "kernel", "compute", "dram", "onchip"))
            + f" | {t['launches']} | {ratio_m} | {ratio_p} | "
            f"{'' if np.isnan(lf) else int(lf)} -> {'' if np.isnan(lq) else int(lq)} | {f['concat']} | "
            f"{f['max_act_mb']:.2f} ({f['over']}) | {f['weights_mb']:.1f} |")
    s = H.stats(pred[qi], q.inference_time_ms.values * 1e-3)
    lines += ["", f"W8A8 rows: {s['rows']}, MAPE {s['mape']} %, largest {s['max_ape']} %, bias {s['bias']} %.", ""]
    print("\n".join(lines))
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
