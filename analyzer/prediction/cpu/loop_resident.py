"""Loop-resident weights on a CPU: what a loop body's kernels save when their weights stay cached.

A kernel inside a ``scan``/``while`` body launches once per trip (``runs`` = T trips).  Its weight
operands there are the body's loop-invariant inputs: constants closed over, or consts the loop
passes unchanged to every trip (a carry that changes is an activation, never a weight), so every
trip reads the same buffers.  When all of the body's weights fit the cache the calibration
names (``calibration.cache_bytes``: the L2 of the cores it ran on, the cache its ``l2_gain``
terms were fitted against), the first trip brings them in and the other T - 1 trips find them
there.  A calibration row is one program called again and again with a runtime's dispatch and
Python in between, so its kernels read their weights at the calibrated memory rate (``bw *
e_bw``, the L2/L3-to-core stream after the caller's own traffic); a loop's later trips run back
to back and read them from L1/L2 at the core's load rate.  That rate is taken as not binding:
an x86 core loads 2 x 32 B per cycle from L1 and ~32 B per cycle from L2, at least the 16 fp32
FMA lanes' one weight per multiply-add (64 B per cycle at full rate, less at the calibrated
``e_compute``), so the resident bytes leave the memory term and the kernel is held by its
compute term and its other bytes.  Per kernel, with ``w`` resident bytes per launch::

    t_stream   = max(compute, memory(bytes))          the first trip (the calibrated rate)
    t_resident = max(compute, memory(bytes - w))      each of the other T - 1 trips
    all trips  = T * fixed + t_stream + (T - 1) * t_resident

``resident_s`` returns the per-launch difference ``(T - 1) / T * (t_resident - t_stream)`` (<= 0),
which lowering adds to the kernel's fixed cost.  A body whose weights exceed the cache (summed
over the loop kernels of the same trip count: the loop that runs them), a kernel outside a loop
or launched once, and a profile without ``cache_bytes`` (unknown) are unchanged.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from analyzer.prediction.efficiency import kernel_time as eff


def cache_bytes(calibration: Mapping[str, Any] | None) -> float:
    """The cache a loop's weights must fit: ``calibration.cache_bytes``; 0 where unknown."""
    if not calibration:
        return 0.0
    return float(calibration.get("cache_bytes") or 0.0)


def resident_bytes(calibration: Mapping[str, Any] | None, in_loop: Sequence[bool], runs: np.ndarray,
                   weight_bytes: np.ndarray) -> np.ndarray:
    """[K] weight bytes per launch each kernel finds in the cache after its first trip: its
    weight bytes where it runs more than once in a loop body and the weights of all loop
    kernels of its trip count fit ``cache_bytes``; else 0."""
    cap = cache_bytes(calibration)
    w = np.asarray(weight_bytes, dtype=np.float64)
    runs = np.asarray(runs, dtype=np.float64)
    loop = np.asarray(in_loop, dtype=bool) & (runs > 1) & (w > 0)
    out = np.zeros_like(w)
    if cap <= 0.0 or not loop.any():
        return out
    for trips in np.unique(runs[loop]):
        body = loop & (runs == trips)
        if float(w[body].sum()) <= cap:
            out[body] = w[body]
    return out


def resident_s(calibration: Mapping[str, Any] | None, in_loop: Sequence[bool], runs: np.ndarray,
               feats: Mapping[str, Any], weight_bytes: np.ndarray, hw: Mapping[str, Any],
               consts: Mapping[str, Any]) -> np.ndarray:
    """[K] seconds per launch each kernel's time changes by when its loop-resident weights
    (``resident_bytes``) are read from the cache on trips 2..T (the module docstring's
    formula); zeros where nothing is resident.  ``feats``, ``hw``, ``consts``:
    ``efficiency.kernel_time``'s arguments for one profile."""
    w = resident_bytes(calibration, in_loop, runs, weight_bytes)
    if not (w > 0).any():
        return np.zeros_like(w)
    stream = eff.kernel_time(np, feats, hw, consts)
    less = dict(feats)
    less["bytes"] = np.maximum(np.asarray(feats["bytes"], dtype=np.float64) - w, 0.0)
    res = eff.kernel_time(np, less, hw, consts)
    per_trip = (np.maximum(res["compute_s"], res["memory_s"])
                - np.maximum(stream["compute_s"], stream["memory_s"]))
    runs = np.asarray(runs, dtype=np.float64)
    return np.where(w > 0, (runs - 1) / np.maximum(runs, 1) * per_trip, 0.0)


def note(calibration: Mapping[str, Any] | None, profile_id: str, resident: np.ndarray,
         delta_s: np.ndarray, runs: np.ndarray) -> str:
    """The prediction's note: how many bytes stay cached and what the trips after the first save."""
    kernels = int(np.count_nonzero(resident))
    saved = -float(np.sum(np.asarray(delta_s) * np.asarray(runs)))
    return (f"loop-resident weights: {kernels} loop-body kernel(s) read {float(np.sum(resident)) / 1e3:.4g} KB "
            f"of loop-invariant weights per trip from {profile_id}'s cache (cache_bytes "
            f"{cache_bytes(calibration) / 2 ** 20:.3g} MiB) after the first trip, not at the calibrated "
            f"memory rate: {max(saved, 0.0) * 1e6:.3g} µs less")
