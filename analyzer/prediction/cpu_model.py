"""The fit of the CPU kernel-time model (``calibrate``); predictions are the product's own path.

Pure functions of opcost's counts (no onnxruntime here). The form is ``efficiency.kernel_time``
(the jitted kernel's), evaluated here with one class's constants; a calibrated profile's
predictions go through ``analyzer.analyze(model, hw=profile)`` -> ``predict`` ->
``lowering.lower`` (which reads the ``[calibration.tables]``) -> ``kernels.run``.

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

``dispatch_s`` is separate from ``floor_s``: the calibration rows are wall-clock per node less
``dispatch_s``, so ``floor_s`` is what a kernel costs beyond the executor's per-node dispatch
(a calibrated profile's per-kernel fixed cost is ``floor_s + dispatch_s``: ``lowering``).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from analyzer.prediction import efficiency as eff

PARAMS = ("floor_s", "e_c", "e_bw", "b_half")
# a row's kernel time is a difference of wall-clocks (row model - baseline - dispatch) whose
# run-to-run jitter is a few tenths of a microsecond: rows below this are fitted as this (a
# 0.01 us row would otherwise dominate the log-error fit of a class)
NOISE_FLOOR_S = 0.25e-6


def node_features(nodes: Iterable[Any]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(op class per node, flops [N], bytes [N]) from opcost ``NodeCost``s: the class, FLOPs
    (mac + vector + transcendentals) and bytes lowering gives the same node."""
    from analyzer.prediction.lowering import node_op_class

    classes, F, B = [], [], []
    for n in nodes:
        c = n.cost
        classes.append(node_op_class(n))
        F.append(float(c.mac_flops + c.vector_flops + c.transcendentals))
        B.append(float(c.bytes_moved))
    return classes, np.asarray(F, dtype=np.float64), np.asarray(B, dtype=np.float64)


def kernel_time(F, B, floor_s, e_c, e_bw, b_half, peak, bw):
    """The per-kernel form (seconds) for one class, numpy-broadcasting over ``F``/``B``: the
    product's ``efficiency.kernel_time`` with the class's constants (vector peak = matrix peak,
    transcendentals weighted 1, no tiles), as the predictions evaluate it."""
    F = np.atleast_1d(np.asarray(F, dtype=np.float64))
    B = np.atleast_1d(np.asarray(B, dtype=np.float64))
    z = np.zeros(1)
    consts = {"e_compute": z + e_c, "e_bw": z + e_bw, "b_half_bytes": z + b_half, "floor_s": z + floor_s,
              "tile_m": z, "tile_n": z, "wave_alpha": z, "trans_weight": 1.0}
    feats = {"op_class": np.zeros(np.broadcast(F, B).shape, np.int32), "mac_flops": F + 0 * B,
             "bytes": B + 0 * F}
    return eff.kernel_time(np, feats, {"matrix_peak": peak, "vector_peak": peak, "mem_bw": bw}, consts)["time_s"]


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
    F, B, t = F[ok], B[ok], np.maximum(t[ok], NOISE_FLOOR_S)
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
