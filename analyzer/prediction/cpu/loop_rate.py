"""A loop body's compute rate on XLA's CPU backend: kernels inside a ``scan``/``while`` body run
their arithmetic faster than the class rates fitted on one-shot programs.

A calibration row is one jitted program called again and again from Python, with dispatch and
Python between calls: each call starts with its operands, its code and its branch history to
bring in and the runtime's worker threads asleep, and the class's compute efficiency ``e_c`` is
fitted on those calls. A loop body's trips run back to back inside one call: the carry, the
loop-invariant operands and the body's code stay in L1/L2 and the threads stay awake, so each
trip after the first runs at a steady-state rate. On a calibrated profile with
``calibration.loop_rate`` = ``s`` (>= 1; fitted on scans whose body holds a YNNPACK dot and a
fused add + tanh: ``measure.xla.dot_scans``), a kernel in a loop body has its compute term
divided by ``s``. With ``T`` its launches per run, ``C`` and ``M`` its compute and memory terms
per launch (``efficiency.kernel_time``; the time is their max) and ``M_w`` the memory term
without its loop-resident weight bytes (``cpu.loop_resident``: read from the cache on trips
2..T), the seconds per launch added to its fixed cost are::

    (1 / T) x (max(C / s, M) - max(C, M)) + ((T - 1) / T) x (max(C / s, M_w) - max(C, M_w))   (<= 0)

A kernel outside loops, one XLA splits over the cores (``cpu.xla_partition``, whose own term
prices it), other runtimes and a profile without the figure are unchanged."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from analyzer.prediction.efficiency import kernel_time as eff


def loop_rate(calibration: Mapping[str, Any] | None) -> float:
    """``calibration.loop_rate`` (the loop body's compute rate over the class rate); 1 where absent."""
    return float((calibration or {}).get("loop_rate") or 1.0)


def rate_s(s: float, loop: np.ndarray, runs: np.ndarray, resident: np.ndarray, feats: Mapping[str, Any],
           hw: Mapping[str, Any], consts: Mapping[str, Any]) -> np.ndarray:
    """[K] seconds per launch the loop rate ``s`` adds to each kernel where ``loop`` is True (the
    module's formula; 0 elsewhere). ``resident``: loop-resident weight bytes per launch;
    ``feats``, ``hw``, ``consts``: ``efficiency.kernel_time``'s arguments for one profile."""
    loop = np.asarray(loop, dtype=bool)
    if s == 1.0 or not loop.any():
        return np.zeros(len(loop))
    full = eff.kernel_time(np, feats, hw, consts)
    less = dict(feats)
    less["bytes"] = np.maximum(np.asarray(feats["bytes"], dtype=np.float64) - resident, 0.0)
    mem_w = eff.kernel_time(np, less, hw, consts)["memory_s"]
    c, m = full["compute_s"], full["memory_s"]
    T = np.maximum(np.asarray(runs, dtype=np.float64), 1.0)
    first = np.maximum(c / s, m) - np.maximum(c, m)
    later = np.maximum(c / s, mem_w) - np.maximum(c, mem_w)
    return np.where(loop, first / T + (T - 1) / T * later, 0.0)


def add_fixed(rated, p: int, fixed: np.ndarray, prof, fusion_policy: str, nodes, plan, feats,
              resident_w: np.ndarray | None, parts: np.ndarray | None, runs: np.ndarray, hw_p: Mapping[str, Any],
              consts_p: Mapping[str, Any], notes: list[str]):
    """Add ``rate_s`` to ``fixed[p]`` ([P, K], in place) where XLA's CPU kernels are planned on a
    profile calibrated with ``loop_rate`` (``resident_w``: profile ``p``'s loop-resident bytes,
    ``parts``: its split parts, None: none); returns ``rated`` ([P, K] seconds per launch, created
    on the first profile with any) with row ``p`` set, the note said."""
    from analyzer.prediction import xla_cpu_fusion
    from analyzer.prediction.cpu.loop_launch import in_loop

    s = loop_rate(prof.calibration)
    if fusion_policy != xla_cpu_fusion.POLICY or s == 1.0:
        return rated
    loop = in_loop(nodes, plan.members)
    if parts is not None:
        loop &= np.asarray(parts) <= 1
    if not loop.any():
        return rated
    w = np.zeros(len(loop)) if resident_w is None else np.asarray(resident_w, dtype=np.float64)
    add = rate_s(s, loop, runs, w, feats, hw_p, consts_p)
    fixed[p] += add
    notes.append(f"loop rate: {int(loop.sum())} loop-body kernel(s) compute at {s:.3g}x their class's rate "
                 f"({prof.id}'s calibrated loop_rate: trips run back to back, operands and code cached): "
                 f"{float(np.sum(add * runs)) * 1e6:.3g} us a run")
    if rated is None:
        rated = np.zeros_like(fixed)
    rated[p] = add
    return rated
