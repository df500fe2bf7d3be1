"""The CPU kernel-time model: op classes, the per-class form, its fit, and ``predict_cpu``.

Pure functions of opcost's counts and a profile document (no onnxruntime here), so the same
numbers feed the fit (``calibrate``) and the prediction, and the lead can move ``kernel_time``
into the jitted kernels.

The form (one kernel, seconds)
------------------------------
::

    t_kernel = floor_s + max(F / (peak * e_c),  (B + b_half) / (bw * e_bw))
    t_model  = run_overhead_s + sum over kernels (dispatch_s + t_kernel)

``F`` = opcost's flops of the node (mac + vector + transcendentals), ``B`` = its bytes (weights +
activations read + written), ``peak`` = the profile's measured fp32 matrix FLOP/s, ``bw`` = its
measured DRAM bandwidth. Per op class: ``floor_s``, ``e_c``, ``e_bw``, ``b_half``.
``(B + b_half)/(bw e_bw)`` is the shared parameterisation's ``B / (bw e_bw b/(b + b_half))``
written without the division by B (identical for B > 0, defined at B = 0).

What the data on a 2-core EPYC (L2 1 MB/core, L3 32 MB) showed, and how the form absorbs it:
onnxruntime's elementwise kernels on a working set that fits the caches run *faster* than DRAM
bandwidth (calibration re-runs the same buffers, and a real network's activations are produced
just before they are read, so they are hot as well). So ``e_bw`` may exceed 1 (the fit bounds it
to [0.02, 8]) and ``b_half`` may be negative (bounded below by ``-B_min``, the smallest calibrated
size, so time stays positive): together they make the effective bandwidth of small/medium sizes
higher than DRAM's, which is the cache ramp of this machine. ``dispatch_s`` (the executor's
per-node cost outside the kernel, measured from a chain of N tiny ops) and ``run_overhead_s``
(one ``session.run``'s fixed cost) are machine constants, not per class.

``dispatch_s`` is separate from ``floor_s``: ``floor_s`` is fit to onnxruntime's profiled kernel
durations (what the per-node comparison uses); ``dispatch_s`` is the wall-clock cost per node
that the profiler does not see.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

CLASSES = ("gemm", "conv", "conv_dw", "conv_1x1", "elementwise", "activation", "norm", "softmax",
           "reduce", "gather", "pooling", "movement", "view", "rnn")

_GEMM = {"MatMul", "Gemm", "FusedMatMul", "FusedGemm", "Attention", "MultiHeadAttention",
         "MatMulNBits", "MatMulInteger", "DynamicQuantizeMatMul", "QLinearMatMul", "Einsum",
         "GroupQueryAttention", "MatMulIntegerToFloat", "QAttention"}
_CONV = {"Conv", "FusedConv", "ConvTranspose", "QLinearConv", "NhwcFusedConv", "ConvInteger"}
_ACT = {"Gelu", "FastGelu", "BiasGelu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Softplus",
        "HardSigmoid", "HardSwish", "QuickGelu", "Mish", "Elu", "Selu", "Sqrt", "Pow", "Sin",
        "Cos", "Swish", "SiLU", "Reciprocal", "BiasSplitGelu", "Softsign", "Celu", "Gemma"}
_NORM = {"LayerNormalization", "SkipLayerNormalization", "SimplifiedLayerNormalization",
         "SkipSimplifiedLayerNormalization", "BatchNormalization", "InstanceNormalization",
         "GroupNormalization", "EmbedLayerNormalization", "RMSNormalization", "LpNormalization",
         "MeanVarianceNormalization", "GroupNorm"}
_SOFTMAX = {"Softmax", "LogSoftmax"}
_REDUCE = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
           "ReduceL1", "ReduceSumSquare", "ReduceLogSumExp", "ArgMax", "ArgMin", "CumSum", "TopK"}
_GATHER = {"Gather", "GatherElements", "GatherND", "ScatterND", "ScatterElements", "OneHot",
           "NonZero"}
_POOL = {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool"}
_MOVE = {"Transpose", "Concat", "Slice", "Split", "Pad", "Expand", "Tile", "Resize", "Upsample",
         "DepthToSpace", "SpaceToDepth", "Cast", "Where", "Trilu", "ReverseSequence", "Range",
         "ConstantOfShape"}
_VIEW = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Shape", "Size", "Constant",
         "Dropout"}
_RNN = {"LSTM", "GRU", "RNN", "DynamicQuantizeLSTM"}

PARAMS = ("floor_s", "e_c", "e_bw", "b_half")


def op_class(op: str, in_specs: Sequence[Any] = (), groups: int | None = None) -> str:
    """The op class of a node (decides which calibrated constants it uses)."""
    if op in _CONV:
        w = in_specs[1] if len(in_specs) > 1 else None
        x = in_specs[0] if in_specs else None
        wshape = tuple(getattr(w, "shape", ()) or ())
        xshape = tuple(getattr(x, "shape", ()) or ())
        if len(wshape) >= 3 and len(xshape) >= 2 and wshape[1] == 1 and xshape[1] not in (1, None):
            return "conv_dw"
        if len(wshape) >= 3 and all(d == 1 for d in wshape[2:]):
            return "conv_1x1"
        return "conv"
    for cls, names in (("gemm", _GEMM), ("activation", _ACT), ("norm", _NORM),
                       ("softmax", _SOFTMAX), ("reduce", _REDUCE), ("gather", _GATHER),
                       ("pooling", _POOL), ("movement", _MOVE), ("view", _VIEW), ("rnn", _RNN)):
        if op in names:
            return cls
    return "elementwise"


def node_features(nodes: Iterable[Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(class per node, flops [N], bytes [N]) from opcost ``NodeCost``s."""
    classes, F, B = [], [], []
    for n in nodes:
        c = n.cost
        classes.append(op_class(n.op, n.in_specs))
        F.append(float(c.mac_flops + c.vector_flops + c.transcendentals))
        B.append(float(c.weight_bytes + c.activation_bytes_read + c.activation_bytes_written))
    return classes, np.asarray(F, dtype=np.float64), np.asarray(B, dtype=np.float64)


def kernel_time(F, B, floor_s, e_c, e_bw, b_half, peak, bw):
    """The per-kernel form (seconds), numpy-broadcasting over all arguments."""
    F = np.asarray(F, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    comp = F / (peak * e_c)
    mem = np.maximum(B + b_half, 0.0) / (bw * e_bw)
    return floor_s + np.maximum(comp, mem)


def machine(doc: Mapping[str, Any]) -> tuple[float, float, float, float]:
    """(peak FLOP/s, DRAM B/s, dispatch s, run overhead s) of a calibrated profile document."""
    peak = float(doc["matrix_tflops"]["fp32"]) * 1e12
    bw = float(doc["memory"]["mem_bw_gbs"]) * 1e9
    disp = float(doc.get("overhead", {}).get("launch_overhead_us", 0.0)) * 1e-6
    run = float(doc.get("calibration", {}).get("run_overhead_us", 0.0)) * 1e-6
    return peak, bw, disp, run


def class_table(doc: Mapping[str, Any], cls: str) -> dict[str, float]:
    tables = doc["calibration"]["tables"]
    t = tables.get(cls) or tables.get(_FALLBACK_CLASS.get(cls, "elementwise")) or tables["elementwise"]
    return {"floor_s": t["floor_us"] * 1e-6, "e_c": t["e_c"], "e_bw": t["e_bw"],
            "b_half": t["b_half_bytes"]}


_FALLBACK_CLASS = {"conv_dw": "conv", "conv_1x1": "conv", "rnn": "gemm", "view": "movement",
                   "pooling": "reduce", "softmax": "norm", "activation": "elementwise"}


def predict_cpu(nodes: Sequence[Any], profile_doc: Mapping[str, Any], *,
                include_dispatch: bool = True) -> np.ndarray:
    """Predicted seconds per kernel for opcost ``NodeCost``s of the graph onnxruntime runs
    (``ort_graph.fused_graph``), with a calibrated profile document (``calibrate``).

    Each entry is ``dispatch_s + floor_s + max(F/(peak e_c), (B + b_half)/(bw e_bw))`` of the
    node's class (``include_dispatch=False`` leaves ``dispatch_s`` out: comparable with
    onnxruntime's profiled kernel durations). The model's latency is
    ``predict_cpu_latency`` = the sum + the profile's ``run_overhead_us``.
    """
    peak, bw, disp, _ = machine(profile_doc)
    classes, F, B = node_features(nodes)
    out = np.empty(len(classes))
    for cls in set(classes):
        idx = np.array([i for i, c in enumerate(classes) if c == cls])
        p = class_table(profile_doc, cls)
        out[idx] = kernel_time(F[idx], B[idx], p["floor_s"], p["e_c"], p["e_bw"], p["b_half"], peak, bw)
    if include_dispatch:
        out = out + disp
    return out


def predict_cpu_latency(nodes: Sequence[Any], profile_doc: Mapping[str, Any]) -> float:
    """Predicted wall-clock seconds of one ``session.run``."""
    return float(predict_cpu(nodes, profile_doc).sum()) + machine(profile_doc)[3]


# ---------------------------------------------------------------------------------------------
# the fit

def _nelder_mead(f, x0, steps, iters=600, tol=1e-10):
    n = len(x0)
    pts = [np.asarray(x0, dtype=float)]
    for i in range(n):
        x = np.array(x0, dtype=float)
        x[i] += steps[i]
        pts.append(x)
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = np.argsort(vals)
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        c = np.mean(pts[:-1], axis=0)
        xr = c + (c - pts[-1])
        fr = f(xr)
        if fr < vals[0]:
            xe = c + 2 * (c - pts[-1])
            fe = f(xe)
            pts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = xr, fr
        else:
            xc = c + 0.5 * (pts[-1] - c)
            fc = f(xc)
            if fc < vals[-1]:
                pts[-1], vals[-1] = xc, fc
            else:
                pts = [pts[0] + 0.5 * (p - pts[0]) for p in pts]
                vals = [f(p) for p in pts]
    i = int(np.argmin(vals))
    return pts[i], vals[i]


def fit_class(F, B, t, peak: float, bw: float) -> dict[str, float]:
    """Fit ``floor_s, e_c, e_bw, b_half`` of the form to measured kernel times ``t`` (seconds),
    minimising the squared log error (relative error: small and large kernels count alike).
    Returns the constants plus ``fit_mape`` (%) and ``rows``."""
    F = np.asarray(F, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    ok = t > 0
    F, B, t = F[ok], B[ok], t[ok]
    bmin = float(B[B > 0].min()) if (B > 0).any() else 0.0
    tmin = float(t.min())

    def unpack(x):
        floor = tmin / (1 + math.exp(min(max(-x[0], -50.0), 50.0)))   # 0 .. smallest time
        e_c = min(max(math.exp(min(max(x[1], -20.0), 5.0)), 1e-4), 4.0)
        e_bw = min(max(math.exp(min(max(x[2], -20.0), 5.0)), 0.02), 8.0)
        b_half = bmin * math.tanh(x[3]) if x[3] < 0 else bmin * math.expm1(min(x[3], 12.0))
        return floor, e_c, e_bw, b_half

    def loss(x):
        pred = kernel_time(F, B, *unpack(x), peak, bw)
        if np.any(pred <= 0):
            return 1e9
        return float(np.mean((np.log(pred) - np.log(t)) ** 2))

    # starting points: the best compute and bandwidth efficiencies seen
    with np.errstate(divide="ignore", invalid="ignore"):
        ec0 = np.nanmax(np.where(F > 0, F / (t * peak), np.nan)) if (F > 0).any() else 1.0
        eb0 = np.nanmax(np.where(B > 0, B / (t * bw), np.nan)) if (B > 0).any() else 1.0
    ec0 = float(ec0) if np.isfinite(ec0) and ec0 > 0 else 1.0
    eb0 = float(eb0) if np.isfinite(eb0) and eb0 > 0 else 1.0
    best = None
    for f0 in (-2.0, 0.0, 2.0):
        for bh in (-1.0, 0.0, 1.5, 4.0):
            x0 = [f0, math.log(ec0), math.log(eb0), bh]
            x, v = _nelder_mead(loss, x0, [1.0, 0.5, 0.5, 1.0])
            x, v = _nelder_mead(loss, x, [0.3, 0.2, 0.2, 0.3])
            if best is None or v < best[1]:
                best = (x, v)
    floor, e_c, e_bw, b_half = unpack(best[0])
    pred = kernel_time(F, B, floor, e_c, e_bw, b_half, peak, bw)
    mape = float(np.mean(np.abs(pred - t) / t) * 100)
    return {"floor_s": floor, "e_c": e_c, "e_bw": e_bw, "b_half": b_half, "rows": int(len(t)),
            "fit_mape": mape}


def spearman(a, b) -> float:
    """Spearman rank correlation (average ranks for ties)."""
    def ranks(x):
        x = np.asarray(x, dtype=float)
        order = np.argsort(x, kind="mergesort")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        for v in np.unique(x):
            m = x == v
            if m.sum() > 1:
                r[m] = r[m].mean()
        return r
    ra, rb = ranks(a), ranks(b)
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])
