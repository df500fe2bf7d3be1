"""In-loop vector work on XLA's CPU runtime: a loop body's vector kernels priced at a calibrated
share of their class's work.

A calibrated class's rates are fitted on programs of one kernel called from Python: each call
brings its operands and code in and hands its result back. A ``while`` body's kernels run back to
back in XLA's thunk executor on the same small buffers, hot in the core's caches. On the 2-core
calibration VM the scans over elementwise-only bodies (``measure.xla.rows.ew_scan_program``: a
fused ``tanh(h + x_t)`` per carry) run 0.32 ns an element a trip, where the ``elementwise`` class
prices the same kernel at 0.6-1.2 ns (its ``e_c`` of 0.05-0.09 against the tanh's 8 FLOPs); their
fixed cost a trip is what the in-loop launch figure already charges (``cpu.loop_launch``).

With ``calibration.loop_work_scale`` = ``r`` (0 < r <= 1) on a profile calibrated with ``xla``, a
kernel whose first member sits in a loop body and whose engine is the vector one (its MAC FLOPs
under its vector and transcendental FLOPs, as ``Prediction.explain`` names the engine) costs, per
launch::

    fixed + r x W,   W = max(compute, memory) + resident + split

``W`` its work as the other calibrated terms leave it (``cpu.loop_resident``'s seconds and
``cpu.xla_partition``'s, both <= 0); the difference ``(r - 1) x W`` is added to its fixed seconds
(shown by ``--explain``). A matrix kernel (a dot, a convolution), a launch the plan inserted, a
kernel outside a loop, a profile without the figure and any other runtime are unchanged. ``r`` is
fitted in closed form on the calibration's elementwise scans (``measure.xla.loop_work``)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np


def scale(calibration: Mapping[str, Any] | None) -> float | None:
    """``calibration.loop_work_scale`` (a loop body's vector work over its class's); None: absent."""
    if not calibration or calibration.get("loop_work_scale") is None:
        return None
    return float(calibration["loop_work_scale"])


def vector_engine(feats: Mapping[str, Any]) -> np.ndarray:
    """[K] True where a kernel runs on the vector engine: its MAC FLOPs under its vector and
    transcendental FLOPs, or none (``Prediction.explain``'s engine rule)."""
    mac = np.asarray(feats["mac_flops"], np.float64)
    other = np.asarray(feats["vec_flops"], np.float64) + np.asarray(feats["trans_flops"], np.float64)
    return ~((mac >= other) & (mac > 0))


def work_s(feats: Mapping[str, Any], hw_p: dict, consts_p: dict, resident: np.ndarray | None,
           split: np.ndarray | None) -> np.ndarray:
    """[K] seconds of work per launch: ``max(compute, memory)`` (``efficiency.kernel_time``) plus
    the loop-resident and split seconds per launch (None: 0)."""
    from analyzer.prediction.efficiency import kernel_time as eff

    t = eff.kernel_time(np, feats, hw_p, consts_p)
    w = np.maximum(t["compute_s"], t["memory_s"])
    for d in (resident, split):
        if d is not None:
            w = w + d
    return np.maximum(w, 0.0)


def delta_s(r: float, loop: np.ndarray, vector: np.ndarray, work: np.ndarray) -> np.ndarray:
    """[K] seconds per launch the scale adds: ``(r - 1) x work`` where ``loop & vector``, else 0."""
    return np.where(np.asarray(loop, bool) & np.asarray(vector, bool), (r - 1.0) * np.asarray(work, np.float64), 0.0)


def add_fixed(state, p: int, fixed: np.ndarray, prof, fusion_policy: str, nodes, plan, feats, runs,
              hw_p: dict, consts_p: dict, resident, split, notes: list[str]):
    """Add ``delta_s`` to ``fixed[p]`` ([P, K], in place) where XLA's CPU kernels are planned on a
    calibrated profile with the figure; returns ``state`` ([P, K] seconds per launch, created on
    the first profile with a scaled kernel) with row ``p`` set, the note said. ``resident`` and
    ``split``: that profile's rows of ``cpu.loop_resident`` and ``cpu.xla_partition`` (None: none)."""
    from analyzer.prediction import xla_cpu_fusion
    from analyzer.prediction.cpu.loop_launch import in_loop

    r = scale(prof.calibration)
    if r is None or fusion_policy != xla_cpu_fusion.POLICY:
        return state
    pick = in_loop(nodes, plan.members) & vector_engine(feats)
    if not pick.any():
        return state
    d = delta_s(r, pick, pick, work_s(feats, hw_p, consts_p, resident, split))
    fixed[p] += d
    notes.append(f"in-loop vector work: {int(pick.sum())} loop-body kernel(s) on the vector engine at "
                 f"{r:.3g} x their class's work ({prof.id}'s calibrated loop_work_scale): "
                 f"{float(np.sum(d * np.asarray(runs))) * 1e6:.3g} µs a run")
    if state is None:
        state = np.zeros_like(fixed)
    state[p] = d
    return state
