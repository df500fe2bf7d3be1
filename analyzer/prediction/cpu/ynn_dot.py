"""XLA CPU's YNNPACK dots: the fixed costs of a dot XLA's CPU backend runs as a YNNPACK fusion.

XLA's CPU backend runs a dot of the ``gemm`` class whose matrix view has m > 1 and n > 1 (``x @ w``,
``g w^T``) as a YNNPACK fusion, and a matrix-vector product (m = 1 or n = 1) in Eigen; the class's
floor is held by its smallest rows (the GEMVs) and replaced by the launch figures inside programs
and loops (``loop_launch``). What such a dot pays beyond them, in seconds, on a calibrated profile
that has the figures::

    outside a loop body:  dot_call_s                       once per launch
    inside a loop body:   dot_trip_s + dot_loop_s * E / R  per launch

``dot_call_s`` is the gemm table's ``dot_call_us`` (fitted with the class's rate on the
calibration's one-dot programs: ``class_fit.fit_class(..., dot_call=True)``); ``dot_trip_s`` and
``dot_loop_s`` are ``calibration.dot_trip_us`` and ``dot_loop_us`` (fitted on scans whose body holds
one such dot at two trip counts: ``measure.xla.dot_scans``). ``R`` is the kernel's launches per run
and ``E`` the executions of its innermost loop per run (the runs of the level above its body: 1 for
a loop at the program's top level), so a loop of ``T`` trips pays ``T x dot_trip_s + dot_loop_s`` for
each such dot in its body. A profile without a figure charges none of that part; other runtimes
and uncalibrated profiles are unchanged."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np


def ynn_dots(cls: np.ndarray, m: np.ndarray, n: np.ndarray) -> np.ndarray:
    """[K] True where a kernel is a dot XLA runs as a YNNPACK fusion: the ``gemm`` class, its
    matrix view's m > 1 and n > 1."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    return (np.asarray(cls) == CLASS_CODE["gemm"]) & (np.asarray(m) > 1) & (np.asarray(n) > 1)


def loop_executions(nodes: Sequence[Any], members: Sequence[Sequence[int]]) -> np.ndarray:
    """[K] executions per run of the innermost loop holding each kernel's first member: the runs
    of a node at the level just above its body (``NodeCost.level``: ``''`` the program,
    ``'a/'`` a body, ``'a/b/'`` one inside it); 1 at the top level or where no such node is found."""
    runs_of: dict[str, int] = {}
    for nd in nodes:
        runs_of.setdefault(nd.level, int(nd.runs))
    out = []
    for mem in members:
        level = nodes[mem[0]].level
        parents = [lv for lv in runs_of if lv != level and level.startswith(lv)]
        out.append(float(runs_of[max(parents, key=len)]) if parents else 1.0)
    return np.asarray(out, np.float64)


def figures(calibration: Mapping[str, Any] | None, arrays: Mapping[str, Any]) -> tuple[float, float, float]:
    """(dot_call_s, dot_trip_s, dot_loop_s) of a calibrated profile (0 where absent)."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    cal = calibration or {}
    call = float(np.asarray(arrays.get("dot_call_s", np.zeros(len(CLASS_CODE))))[CLASS_CODE["gemm"]])
    return call, float(cal.get("dot_trip_us", 0.0)) * 1e-6, float(cal.get("dot_loop_us", 0.0)) * 1e-6


def dot_s(figs: tuple[float, float, float], dots: np.ndarray, loop: np.ndarray, runs: np.ndarray,
          executions: np.ndarray) -> np.ndarray:
    """[K] seconds per launch the YNNPACK dots add (the module's formula; 0 elsewhere)."""
    call, trip, once = figs
    runs = np.maximum(np.asarray(runs, np.float64), 1.0)
    inside = trip + once * np.asarray(executions, np.float64) / runs
    return np.where(dots, np.where(loop, inside, call), 0.0)


def add_fixed(ynn, p: int, fixed: np.ndarray, prof, calibrated: bool, fusion_policy: str, nodes, plan,
              feats: Mapping[str, Any], arrays: Mapping[str, Any], runs: np.ndarray, notes: list[str]):
    """Add the YNNPACK dots' seconds to ``fixed[p]`` ([P, K], in place) where XLA's CPU kernels are
    planned on a calibrated profile with any of the figures; returns ``ynn`` ([P, K] seconds per
    launch, created on the first profile with any dot charged) with row ``p`` set, the note said."""
    from analyzer.prediction import xla_cpu_fusion
    from analyzer.prediction.cpu.loop_launch import in_loop

    if not calibrated or fusion_policy != xla_cpu_fusion.POLICY:
        return ynn
    figs = figures(prof.calibration, arrays)
    dots = ynn_dots(feats["op_class"], feats["m"], feats["n"])
    if not any(figs) or not dots.any():
        return ynn
    loop = in_loop(nodes, plan.members)
    add = dot_s(figs, dots, loop, runs, loop_executions(nodes, plan.members))
    fixed[p] += add
    notes.append(note(prof.id, figs, int((dots & ~loop).sum()), int((dots & loop).sum()), float(np.sum(add * runs))))
    if ynn is None:
        ynn = np.zeros_like(fixed)
    ynn[p] = add
    return ynn


def note(profile_id: str, figs: tuple[float, float, float], outside: int, inside: int, total_s: float) -> str:
    call, trip, once = figs
    return (f"YNNPACK dots: {outside} outside loops at {call * 1e6:.3g} µs a launch, {inside} in loop bodies at "
            f"{trip * 1e6:.3g} µs a trip + {once * 1e6:.3g} µs once per loop execution ({profile_id}'s calibrated "
            f"dot_call_us, dot_trip_us, dot_loop_us): {total_s * 1e6:.3g} µs a run")
