"""The 8 Gen 3 / 8 Gen 2 latency ratio of the Hexagon NPU fit: which term of the prediction carries
the device difference, and how well the fitted rows' ratios come out (a non-held-out diagnostic).

    PYTHONPATH=$PWD python bench/hexagon_ratio.py [MEASUREMENTS_DIR] [--variant NAME]
        [--model MODEL:PRECISION ...] [--out FILE]

``--variant``: a name (or a unique part of one) of bench/hexagon_variants.py's VARIANTS whose
options are among the shipped form's (``vtcm``, ``dwr``, the loss) and the fixed-cost forms
(``t0s``, ``t0q``, ``t0cpu``, ``kfix1``); default: the fixed-cost form (the shipped form
without its deployment offset ``rt0i``, which adds the same d / 2 to both devices' W8A8 rows of a
deployment and is outside this split).  Its constants are fitted on
the fitted rows only (hexagon_variants.fit: the held-out models never enter the fit).  Prints:

- per ``--model`` (default: shufflenet_v2:int8 and shufflenet_v2:fp16), the prediction on each
  device split into its terms, in us: the per-inference fixed cost ``t0``, the per-kernel fixed
  cost (``kfix``; 0 where the form has none), and, over the kernels, the compute time of the
  compute-bound ones and the memory time of the memory-bound ones split into weight bytes, the
  activation bytes streamed from DRAM and the activation bytes kept on chip (at ``c_act``); then
  the measured latencies (each runtime) and each term's 8 Gen 3 / 8 Gen 2 ratio;
- the 8 Gen 3 / 8 Gen 2 ratio of every fitted (model, precision, runtime) pair measured on both:
  measured, predicted, how many are within 15 % of the measured ratio (in-sample).

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
import hexagon_variants as V  # noqa: E402

SHIPPED = next(k for k in V.VARIANTS if "(the fixed-cost form)" in k)
OPTIONS = {"loss", "fs", "vtcm", "dwr", "t0s", "t0q", "t0cpu", "kfix1"}
TERMS = ("t0", "kfix", "compute", "weights", "dram_act", "onchip_act")


def constants(x, o: dict) -> tuple[dict, float]:
    """({name: [8 Gen 2, 8 Gen 3]}, r_fp16) of hexagon_variants' parameter vector ``x``."""
    n = V.names(o)
    P = {nm: np.exp(np.array([x[d * len(n) + j] for d in range(2)])) for j, nm in enumerate(n)}
    P.update({nm: np.exp(np.full(2, x[2 * len(n) + j])) for j, nm in enumerate(V.shared(o))})
    return P, float(np.exp(x[-1]))


def terms(q: dict, P: dict, r: float, o: dict) -> dict:
    """Seconds of each term (``TERMS``) of one (model, device, precision) under variant ``o``: the
    same sum as hexagon_variants.key_time (checked by the caller), split by term."""
    d, S = q["dev"], q["S"]
    e = np.where(S == 1, P["e_dw"][d], P["e_mat"][d])
    bw = np.array([P["bw_mat"][d], P["bw_mat"][d], P["bw_ew"][d], *[P["bw_move"][d]] * 3])[S]
    s_prec = np.where(S == 1, o["dwr"], r) if (q["fp"] and o.get("dwr")) else (r if q["fp"] else 1.0)
    tc = q["W"] / (q["peak"] * s_prec * e)
    act = np.maximum(q["M"] - q["wk"], 0.0)
    on_chip = q["act"] <= o["vtcm"]
    tw, tda, toc = q["wk"] / bw, np.where(on_chip, 0.0, act) / bw, np.where(on_chip, P["c_act"][d] * act, 0.0) / bw
    mb = tw + tda + toc > tc
    if q["fp"]:
        t0 = P["t0_q"][d] * P["t0_int8"][d] if o.get("t0q") else P["t0_fp16"][d]
    else:
        t0 = P["t0_int8"][d]
    t0 *= V.CPU_GHZ[0] / V.CPU_GHZ[d] if o.get("t0cpu") else 1.0
    kfix = P["kfix"][d] * float((np.maximum(tc, tw + tda + toc) > 0).sum()) if o.get("kfix1") else 0.0
    return {"t0": t0, "kfix": kfix, "compute": float(tc[~mb].sum()), "weights": float(tw[mb].sum()),
            "dram_act": float(tda[mb].sum()), "onchip_act": float(toc[mb].sum())}


def breakdown(model: str, prec: str, rows, kd: dict, P: dict, r: float, o: dict) -> list[str]:
    out = [f"**{model} {prec}: terms of the prediction, us**", "",
           "| term | 8 Gen 2 | 8 Gen 3 | 8 Gen 3 / 8 Gen 2 |", "|---|---:|---:|---:|"]
    t = [terms(kd[(model, dev, prec)], P, r, o) for dev in H.DEVS]
    for d, dev in enumerate(H.DEVS):   # the split adds up to the variant's own time
        assert abs(sum(t[d].values()) - V.key_time(kd[(model, dev, prec)], P, r, o)) < 1e-12
    for name in (*TERMS, "total"):
        a, b = (sum(x.values()) if name == "total" else x[name] for x in t)
        out.append(f"| {name} | {a * 1e6:.1f} | {b * 1e6:.1f} | {b / a if a else float('nan'):.3f} |")
    g = rows[(rows.model_id == model) & (rows.precision == prec)]
    for rt, gr in g.groupby("runtime"):
        ms = gr.set_index("opcost_profile").inference_time_ms
        if len(ms) == 2:
            a, b = ms[H.DEVS[0]] * 1e3, ms[H.DEVS[1]] * 1e3
            out.append(f"| measured ({rt}) | {a:.1f} | {b:.1f} | {b / a:.3f} |")
    return out + [""]


def ratio_check(rows, pred) -> tuple[list[str], int, int]:
    """8 Gen 3 / 8 Gen 2 ratio of each (model, precision, runtime) measured on both devices."""
    out = ["| model | precision | runtime | measured | predicted | error % |", "|---|---|---|---:|---:|---:|"]
    pt = rows.assign(pred=np.asarray(pred))
    n = within = 0
    for (m, prec, rt), g in pt.groupby(["model_id", "precision", "runtime"]):
        if len(g) != 2:
            continue
        g = g.set_index("opcost_profile")
        mr = g.inference_time_ms[H.DEVS[1]] / g.inference_time_ms[H.DEVS[0]]
        pr = g.pred[H.DEVS[1]] / g.pred[H.DEVS[0]]
        n, within = n + 1, within + (abs(pr / mr - 1) <= 0.15)
        out.append(f"| {m} | {prec} | {rt} | {mr:.3f} | {pr:.3f} | {abs(pr / mr - 1) * 100:.1f} |")
    return out, n, within


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--variant", default=SHIPPED)
    ap.add_argument("--model", nargs="*", default=["shufflenet_v2:int8", "shufflenet_v2:fp16"])
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    (name,) = [k for k in V.VARIANTS if a.variant in k]
    o = V.VARIANTS[name]
    assert set(o) <= OPTIONS and o.get("vtcm"), f"{name}: options outside this script's split"
    rows = H.hexagon_rows(a.measurements)
    train = H.fitted_rows(rows)
    kd = V.kernel_data(rows)
    x = V.fit(train, o, kd)
    P, r = constants(x, o)
    lines = ["# Hexagon NPU: the 8 Gen 3 / 8 Gen 2 ratio, term by term", "",
             f"Command: `PYTHONPATH=$PWD python bench/hexagon_ratio.py ../shared/measurements/accelerators "
             f"--variant \"{a.variant}\"`; variant: {name}, fitted on the {len(train)} fitted rows "
             f"({train.model_id.nunique()} models; the held-out models never enter the fit).", "",
             f"r_fp16 = {r:.4f}; " + "; ".join(f"{dev}: " + ", ".join(f"{k}={P[k][d]:.4g}" for k in P)
                                                for d, dev in enumerate(H.DEVS)), ""]
    for spec in a.model:
        m, prec = spec.split(":")
        lines += breakdown(m, prec, rows, kd, P, r, o)
    tab, n, within = ratio_check(train, V.predict_rows(x, o, train, kd))
    lines += ["**8 Gen 3 / 8 Gen 2 ratio, fitted models (in-sample)**", "", *tab, "",
              f"Within 15 % of the measured ratio (in-sample): {within} of {n} pairs.", ""]
    print("\n".join(lines))
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
