"""Structural variants of the Hexagon NPU form (bench/hexagon_model.py), scored by the same
leave-one-model-out (LOMO) and leave-one-family-out (LOFO) cross-validation on the fitted models
as bench/hexagon_forms.py, chosen by ``RULE_MARGIN``'s rule (the lowest mean of the two; a
variant with fewer per-device constants within 0.5 point of it instead): the one marked
``(shipped)`` is bench/fit_accelerators.py's FORM (the library's ``qnn`` runtime keeps on chip
the activations of a kernel whose activation bytes fit the profile's ``npu_onchip_mb``, runs
fp16 depthwise kernels at the HVX unit's 0.5 of the int8 rate, adds one per-kernel cost, the same
on both devices, a per-inference cost per device whose fp16 / W8A8 ratio both devices share, and
a W8A8 per-inference offset between AI Hub's two deployments, shared by both devices (``rt0i``;
the library's ``qnn-dlc`` and ``qnn-tflite`` runtimes), analyzer/prediction/accelerators/qnn.py);
the others are in docs/accuracy.md, "Tried and not kept".

    PYTHONPATH=$PWD python bench/hexagon_variants.py [MEASUREMENTS_DIR] [--out bench/results/hexagon_variants.md]

The base is the ``qnn`` plan with a per-inference fixed cost per precision, no floor, e_bw <= 1
(constants per device: e_mat, e_dw, bw_mat, bw_ew, bw_move, t0_fp16, t0_int8; r_fp16 shared).
Per kernel t = max(W / (P_int8 s_prec e), B / (BW e_bw)) as in hexagon_model.times, with the
data-movement kernels split by their ONNX ops: layout (Transpose, Reshape, Squeeze, Unsqueeze,
Flatten only), index/shape (any of Cast, ScatterND, Gather, GatherElements, Expand, Where,
Equal), other (Slice, Pad, Split, Resize, ...). A variant (VARIANTS) changes one thing:

- ``tr``: layout kernels ``free`` (cost 0: QNN's converter folds layout into NHWC) or ``own``
  (their own e_bw); ``gs``: the same for index/shape kernels (a static-shape compiler folds them);
- ``p``: t = (tc^p + tm^p)^(1/p) instead of max (p = 1: compute and memory do not overlap);
- ``kfix``: a fixed cost per kernel per device added to every kernel;
- ``s_ew``: a factor per device on the memory time of fp16 elementwise kernels (HVX fp16);
- ``wfloor``: the inference at least its weight bytes (at the row's precision) / datasheet BW;
- ``vtcm``: a kernel whose activation bytes (its bytes less its weights) are at most this many
  bytes (the HTP's VTCM: 8 MiB on v73 and v75, pytorch/executorch
  backends/qualcomm/serialization/qc_schema.py ``HtpInfo(V73, 8)``, ``HtpInfo(V75, 8)``) moves
  them at a fitted fraction ``c_act`` per device of their DRAM time (kept on chip; ``c0``: at
  no cost, c_act = 0, not fitted), its weights always from DRAM;
- ``l2``: the library's cache term (analyzer/prediction/efficiency/kernel_time.py ``l2_gain``):
  memory time / (1 + g s(bytes / l2)), s(x) = 1 / (1 + x^2), bytes the kernel's whole working
  set, l2 this many bytes, g fitted per device (``l2_gain``);
- ``dwr``: an fp16 depthwise kernel computes at this fixed fraction of its int8 rate instead of
  the matrix engine's fitted r_fp16 (depthwise convolutions run on the HVX vector unit, whose
  1024-bit registers hold 128 int8 or 64 fp16 lanes: 0.5; not fitted);
- ``t0s``: one per-inference fixed cost pair (t0_fp16, t0_int8) shared by both devices instead
  of one per device (the graph launch, a FastRPC call from the host CPU and QNN's graph execute,
  taken as the same on both chips: the profiles carry no sourced NPU or CPU clocks to scale it by);
- ``t0q``: the per-inference fixed cost's device factor shared by both precisions: t0_int8 per
  device, t0_fp16 = q x t0_int8 with one q for both devices (the same graph-execute path on each
  chip, sped up by one factor per device whatever the precision; 3 constants instead of 4);
- ``t0cpu``: one fixed-cost pair in host-CPU cycles, shared, divided by each device's prime-core
  clock (``CPU_GHZ``: the FastRPC call and QNN's graph execute are host-CPU work; written as
  seconds on the 8 Gen 2, scaled by 3.2 / 3.3 on the 8 Gen 3);
- ``kfix1``: a fixed cost per kernel shared by both devices (a per-layer dispatch on the NPU;
  no sourced NPU clock to scale it by, so the same seconds on both);
- ``rt0``: a per-inference offset per deployment runtime and precision, shared by both devices:
  a row deployed as QNN DLC (AI Hub ``qnn_dlc``) takes + d_prec / 2, one as TFLite with the QNN
  delegate (``tflite``) - d_prec / 2, so the form without it is their mean (``d_fp16``,
  ``d_int8``, signed, seconds; ``rt0i``: d_int8 only, d_fp16 = 0);
- ``rtk``: a per-kernel offset per deployment runtime, shared by both devices and precisions:
  + n_k dk / 2 (qnn_dlc), - n_k dk / 2 (tflite), n_k the kernels of the plan (``dk`` signed);
- ``rtp``: a proportional factor per deployment runtime: the row's time x f^(+1/2) (qnn_dlc) or
  x f^(-1/2) (tflite), one f for both devices and precisions;
- ``loss``, ``fs``: scipy least_squares' loss and f_scale on the log residual.

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

LAYOUT = frozenset({"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
INDEX = frozenset({"Cast", "ScatterND", "Gather", "GatherElements", "Expand", "Where", "Equal"})
X0 = dict(H.X0, bw_tr=0.5, bw_gs=0.5, s_ew=1.0, kfix=2e-6, c_act=0.5, l2_gain=1.0, t0_q=2.0)
FIXED_COST_FORM = {"loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "t0q": True, "kfix1": True}
VARIANTS = {
    "linear loss (the base as before)": {},
    "linear, layout kernels free": {"tr": "free"},
    "linear, layout and index kernels free": {"tr": "free", "gs": "free"},
    "linear, layout and index kernels own e_bw": {"tr": "own", "gs": "own"},
    "linear, no overlap (p = 1)": {"p": 1.0},
    "linear, weight-streaming floor": {"wfloor": True},
    "cauchy 0.2 (no on-chip activations)": {"loss": "cauchy", "fs": 0.2},
    "cauchy 0.2, layout kernels free": {"loss": "cauchy", "fs": 0.2, "tr": "free"},
    "cauchy 0.2, index kernels free": {"loss": "cauchy", "fs": 0.2, "gs": "free"},
    "cauchy 0.2, layout and index kernels free": {"loss": "cauchy", "fs": 0.2, "tr": "free", "gs": "free"},
    "cauchy 0.2, layout and index kernels own e_bw": {"loss": "cauchy", "fs": 0.2, "tr": "own", "gs": "own"},
    "cauchy 0.2, no overlap (p = 1)": {"loss": "cauchy", "fs": 0.2, "p": 1.0},
    "cauchy 0.2, fixed cost per kernel": {"loss": "cauchy", "fs": 0.2, "kfix": True},
    "cauchy 0.2, fp16 elementwise factor": {"loss": "cauchy", "fs": 0.2, "s_ew": True},
    "cauchy 0.2, weight-streaming floor": {"loss": "cauchy", "fs": 0.2, "wfloor": True},
    "cauchy 0.2, activations <= 8 MB on chip": {"loss": "cauchy", "fs": 0.2, "vtcm": 8e6},
    "cauchy 0.2, activations <= 8 MB on chip at no cost (c_act = 0)": {"loss": "cauchy", "fs": 0.2, "vtcm": 8e6,
                                                                       "c0": True},
    "cauchy 0.2, activations <= 8 MiB on chip": {"loss": "cauchy", "fs": 0.2, "vtcm": 8 * 2**20},
    "cauchy 0.2, activations <= 8 MiB on chip at no cost (c_act = 0)": {"loss": "cauchy", "fs": 0.2,
                                                                       "vtcm": 8 * 2**20, "c0": True},
    "cauchy 0.2, cache term l2_gain at 8 MB": {"loss": "cauchy", "fs": 0.2, "l2": 8e6},
    "cauchy 0.2, activations <= 8 MB on chip, fp16 depthwise at 0.5 of int8 (HVX lanes) (the HVX form)": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5},
    "cauchy 0.2, activations <= 8 MB on chip, fp16 depthwise at 0.5 of int8 (HVX lanes), t0 shared by both devices": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "t0s": True},
    "HVX form, t0 device factor shared by both precisions (t0_fp16 = q t0_int8)": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "t0q": True},
    "HVX form, t0 in host-CPU cycles shared, / each device's prime-core clock": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "t0cpu": True},
    "HVX form, t0 device factor shared by both precisions, a per-kernel cost shared by both devices (the fixed-cost form)": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "t0q": True, "kfix1": True},
    "HVX form, a per-kernel cost shared by both devices": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "kfix1": True},
    "HVX form, t0 device factor shared by both precisions, a per-kernel cost per device": {
        "loss": "cauchy", "fs": 0.2, "vtcm": 8e6, "dwr": 0.5, "t0q": True, "kfix": True},
    "fixed-cost form, a per-inference offset per deployment runtime and precision (shared by both devices)": {
        **FIXED_COST_FORM, "rt0": True},
    "fixed-cost form, a per-inference offset per deployment runtime, W8A8 only (shared by both devices) (shipped)": {
        **FIXED_COST_FORM, "rt0i": True},
    "fixed-cost form, a per-kernel offset per deployment runtime (shared by both devices)": {**FIXED_COST_FORM, "rtk": True},
    "fixed-cost form, a proportional factor per deployment runtime (shared by both devices)": {**FIXED_COST_FORM, "rtp": True},
}
# the host CPU's prime-core clock, GHz (8 Gen 2: Cortex-X3 3.2; 8 Gen 3: Cortex-X4 3.3): ref [65]
# DROID_SD8G3 of the project reference hardware_specs.md, https://droidholic.com/snapdragon-8-gen-3-launched/
CPU_GHZ = (3.2, 3.3)
# the rule (fixed before any held-out score): the lowest mean CV MAPE; a variant with fewer
# per-device constants within RULE_MARGIN points of it is taken instead (the fewest; ties to
# fewer constants in all, then to the lower mean: a shared constant, such as a deployment
# runtime's, must lower the mean by more than RULE_MARGIN to be kept)
RULE_MARGIN = 0.5
# the signed shared constants (a deployment runtime's offsets: rt0, rt0i, rtk) -> the seconds one
# unit of their fitted coordinate stands for (they are fitted linearly from 0, not in log space)
SIGNED = {"d_fp16": 1e-4, "d_int8": 1e-4, "dk": 1e-6}


def kernel_data(rows) -> dict:
    """(model, device, precision) -> per-kernel arrays: sub-group (0 matrix, 1 depthwise,
    2 elementwise, 3 layout, 4 other movement, 5 index/shape), W, datasheet memory seconds (every
    byte from DRAM: the profile without its on-chip budget), the weight seconds (the library's
    weight bytes per launch at the row's precision, ``accelerators.qnn``, / datasheet BW) and
    the activation bytes (bytes less weight bytes)."""
    from analyzer.prediction.predict import predict

    out = {}
    for key in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision))):
        rep = H.report(key[0])
        (pred,) = predict(rep, [H.datasheet(key[1])], precision=key[2], runtime="qnn")
        kt = pred.kernel_table
        ops = [set() for _ in kt.op_class]
        for i, k in enumerate(kt.kernel_of):
            if k >= 0:
                ops[k].add(rep.nodes[i].op)
        wb = np.asarray(kt.onchip[1], float)   # the library's weight bytes per launch, at the precision
        sub = []
        for cls, o in zip(kt.op_class, ops):
            g = H.group_of(cls)
            sub.append(H.GROUPS.index(g) if g != "move" else 3 if o <= LAYOUT else 5 if o & INDEX else 4)
        fp = key[2] == "fp16"
        out[key] = dict(S=np.array(sub), W=np.asarray(kt.compute) * np.asarray(kt.matrix_peak),
                        M=np.asarray(kt.memory, float), dev=H.DEVS.index(key[1]), fp=fp,
                        wsec=float(wb.sum()) / float(kt.mem_bw), wk=wb / float(kt.mem_bw),
                        nbytes=np.asarray(kt.nbytes, float),
                        act=np.maximum(np.asarray(kt.nbytes, float) - wb, 0.0),
                        peak=H.peak_int8(key[1]),
                        nk=int(np.count_nonzero((np.asarray(kt.compute) > 0) | (np.asarray(kt.memory) > 0))))
    return out


def names(o: dict) -> list[str]:
    """The constants fitted per device (a shared t0 pair, ``t0s``, follows them in the vector)."""
    n = ["e_mat", "e_dw", "bw_mat", "bw_ew", "bw_move"] + (
        [] if o.get("t0s") or o.get("t0cpu") else ["t0_int8"] if o.get("t0q") else ["t0_fp16", "t0_int8"])
    return n + [k for k, on in (("bw_tr", o.get("tr") == "own"), ("bw_gs", o.get("gs") == "own"),
                                 ("s_ew", o.get("s_ew")), ("kfix", o.get("kfix")), ("c_act", o.get("vtcm") and not o.get("c0")),
                                 ("l2_gain", o.get("l2")))
                         if on]


def key_time(q: dict, P: dict, r: float, o: dict) -> float:
    """Seconds of one (model, device, precision) under variant ``o`` (module docstring)."""
    d, S = q["dev"], q["S"]
    e = np.where(S == 1, P["e_dw"][d], P["e_mat"][d])
    bw = [P["bw_mat"][d], P["bw_mat"][d], P["bw_ew"][d], P["bw_move"][d], P["bw_move"][d], P["bw_move"][d]]
    bw[3] = P["bw_tr"][d] if o.get("tr") == "own" else bw[3]
    bw[5] = P["bw_gs"][d] if o.get("gs") == "own" else bw[5]
    s_prec = np.where(S == 1, o["dwr"], r) if (q["fp"] and o.get("dwr")) else (r if q["fp"] else 1.0)
    tc = q["W"] / (q["peak"] * s_prec * e)
    mem = q["M"]
    if o.get("vtcm"):   # activations that fit on chip at c_act of their DRAM time; weights from DRAM
        on_chip = q["act"] <= o["vtcm"]
        c_act = 0.0 if o.get("c0") else P["c_act"][d]
        mem = q["wk"] + np.where(on_chip, c_act, 1.0) * np.maximum(q["M"] - q["wk"], 0.0)
    tm = mem / np.array(bw)[S]
    if o.get("l2"):
        tm = tm / (1.0 + P["l2_gain"][d] / (1.0 + (q["nbytes"] / o["l2"]) ** 2))
    if o.get("s_ew") and q["fp"]:
        tm = np.where(S == 2, tm * P["s_ew"][d], tm)
    for flag, g in (("tr", 3), ("gs", 5)):
        if o.get(flag) == "free":
            tm = np.where(S == g, 0.0, tm)
    t = np.maximum(tc, tm) if "p" not in o else (tc ** o["p"] + tm ** o["p"]) ** (1 / o["p"])
    if o.get("kfix"):
        t = t + P["kfix"][d] * (t > 0)
    if o.get("kfix1"):
        t = t + P["kfix"][d] * (t > 0)
    if q["fp"]:
        t0 = P["t0_q"][d] * P["t0_int8"][d] if o.get("t0q") else P["t0_fp16"][d]
    else:
        t0 = P["t0_int8"][d]
    tot = float(t.sum()) + t0 * (CPU_GHZ[0] / CPU_GHZ[d] if o.get("t0cpu") else 1.0)
    return max(tot, q["wsec"]) if o.get("wfloor") else tot


def shared(o: dict) -> list[str]:
    """The constants shared by both devices, after the per-device ones (r_fp16 last, always)."""
    return (["t0_fp16", "t0_int8"] if o.get("t0s") or o.get("t0cpu") else ["t0_q"] if o.get("t0q") else []) + (
        ["kfix"] if o.get("kfix1") else []) + (["d_fp16", "d_int8"] if o.get("rt0") else []) + (
        ["d_int8"] if o.get("rt0i") else []) + (["dk"] if o.get("rtk") else []) + (["f_rt"] if o.get("rtp") else [])


def runtime_term(t: float, q: dict, P: dict, runtime: str) -> float:
    """A row's seconds under its deployment runtime (``rt0``, ``rt0i``, ``rtk``, ``rtp``; module
    docstring): s = +1 for qnn_dlc, -1 for tflite; t + s d_prec / 2 + s n_k dk / 2, then
    x f^(s / 2); at least 0.1 us (the log residual needs a positive time)."""
    s = 1.0 if runtime == "qnn_dlc" else -1.0
    d = P.get("d_fp16" if q["fp"] else "d_int8")
    t = t + (s * d[0] / 2 if d is not None else 0.0) + (s * q["nk"] * P["dk"][0] / 2 if "dk" in P else 0.0)
    return max(t * (P["f_rt"][0] ** (s / 2) if "f_rt" in P else 1.0), 1e-7)


def predict_rows(x, o: dict, rows, kd: dict) -> np.ndarray:
    n = names(o)
    P = {nm: np.exp(np.array([x[d * len(n) + j] for d in range(2)])) for j, nm in enumerate(n)}
    P.update({nm: np.full(2, x[2 * len(n) + j] * SIGNED[nm]) if nm in SIGNED else np.exp(np.full(2, x[2 * len(n) + j]))
              for j, nm in enumerate(shared(o))})
    r = float(np.exp(x[-1]))
    keys = list(zip(rows.model_id, rows.opcost_profile, rows.precision))
    memo = {k: key_time(kd[k], P, r, o) for k in set(keys)}
    if not any(o.get(f) for f in ("rt0", "rt0i", "rtk", "rtp")):
        return np.array([memo[k] for k in keys])
    return np.array([runtime_term(memo[k], kd[k], P, rt) for k, rt in zip(keys, rows.runtime)])


def fit(rows, o: dict, kd: dict) -> np.ndarray:
    """hexagon_model.fit's least squares (two starts, weak prior, efficiencies and e_bw <= 1,
    t0 >= 1 us) for variant ``o``; returns the log-space parameter vector."""
    from scipy.optimize import least_squares

    n = names(o)
    flat = [k for _ in range(2) for k in n] + shared(o)   # the vector's names, r_fp16 after them
    meas = rows.inference_time_ms.values * 1e-3
    x0 = np.array([0.0 if k in SIGNED or k == "f_rt" else np.log(X0[k]) for k in flat] + [np.log(0.25)])
    up = np.array([0.0 if k[:2] in ("e_", "bw", "c_") else np.inf for k in flat] + [0.0])
    lo = np.array([np.log(H.T0_MIN) if k.startswith("t0") else np.log(1e-8) if k == "kfix" else -np.inf
                   for k in flat] + [-np.inf])

    def res(x):
        return np.concatenate([np.log(predict_rows(x, o, rows, kd) / meas), 0.01 * (x - x0)])

    best = None
    for bw_scale in (1.0, 10.0):
        start = x0 + np.array([np.log(bw_scale) if k.startswith("bw") else 0.0 for k in flat] + [0.0])
        sol = least_squares(res, np.clip(start, lo + 1e-10, up - 1e-10), bounds=(lo, up), method="trf",
                            loss=o.get("loss", "linear"), f_scale=o.get("fs", 1.0))
        best = sol if best is None or sol.cost < best.cost else best
    return best.x


def cv(rows, o: dict, kd: dict, key) -> np.ndarray:
    keys = np.array([key(m) for m in rows.model_id])
    pred = np.zeros(len(rows))
    for k in sorted(set(keys)):
        out = keys == k
        pred[out] = predict_rows(fit(rows[~out], o, kd), o, rows[out], kd)
    return pred


def choose(scores: dict) -> str:
    """The rule over {name: (mean CV MAPE, per-device constants, constants in all)}: the lowest
    mean; within RULE_MARGIN points of it, the fewest per-device constants (ties to the fewest
    constants in all, then to the lower mean)."""
    best = min(v[0] for v in scores.values())
    near = [k for k, v in scores.items() if v[0] <= best + RULE_MARGIN]
    return min(near, key=lambda k: (scores[k][1], scores[k][2], scores[k][0]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "hexagon_variants.md"))
    ap.add_argument("--only", default="", help="run only the variants whose name contains this")
    a = ap.parse_args()
    rows = H.hexagon_rows(a.measurements)
    train = H.fitted_rows(rows)
    meas = train.inference_time_ms.values * 1e-3
    kd = kernel_data(train)
    scores: dict = {}
    lines = ["# Hexagon NPU: structural variants, cross-validated on the fitted models", "",
             "Command: `PYTHONPATH=$PWD python bench/hexagon_variants.py ../shared/measurements/accelerators`; "
             f"{len(train)} fitted rows, {train.model_id.nunique()} models; the held-out models never enter "
             "(bench/hexagon_variants.py's docstring says what each variant changes).", "",
             "| variant | in-sample MAPE (bias) | LOMO (bias) | LOFO (bias) | mean CV MAPE |", "|---|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    for name, o in VARIANTS.items():
        if a.only not in name:
            continue
        s_in = H.stats(predict_rows(fit(train, o, kd), o, train, kd), meas)
        s_mo = H.stats(cv(train, o, kd, lambda m: m), meas)
        s_fa = H.stats(cv(train, o, kd, H.FAMILIES.get), meas)
        lines.append(f"| {name} | {s_in['mape']:.1f} % ({s_in['bias']:+.1f} %) | {s_mo['mape']:.1f} % "
                     f"({s_mo['bias']:+.1f} %) | {s_fa['mape']:.1f} % ({s_fa['bias']:+.1f} %) | "
                     f"{(s_mo['mape'] + s_fa['mape']) / 2:.1f} % |")
        print(lines[-1], flush=True)
        scores[name] = ((s_mo["mape"] + s_fa["mape"]) / 2, len(names(o)), 2 * len(names(o)) + len(shared(o)) + 1)
    lines += ["", f"Chosen by the rule among the variants run: **{choose(scores)}**"]
    print(lines[-1])
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
