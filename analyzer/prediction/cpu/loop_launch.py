"""In-loop launches on XLA's CPU runtime: a while body's thunks priced at the calibrated in-loop
launch cost instead of the single-program class floors.

A calibrated profile's class floor (``floor_us``) is a kernel's fixed cost as the one kernel of a
program called from Python (net of the run overhead); the class fits hold it at or above one link
of a chain of small dots (their noise floor). A ``while`` body's thunks run back to back in XLA's
thunk executor, with no call, argument or result handling between them. The calibration times a
scan over a tiny body (``measure.xla.rows.scan_program``: a 1x8x8 dot, a fused tanh, the scanned
input's slice, the stacked output's update, the trip counter) at two trip counts::

    loop_launch_s = (t(T_hi) - t(T_lo)) / (T_hi - T_lo) / n_trip

``n_trip`` = the launches per trip opcost plans for that body (``xla_cpu_fusion``'s kernels and
per-trip slices, updates and counter ops), so the scan's per-trip time is reproduced by the
prediction of the same program; the body's work (a few hundred FLOPs) is left in the figure.
With ``calibration.loop_launch_us`` present, a kernel inside a loop body (and each launch it
carries: ``FusionPlan.extra_ops``) costs ``loop_launch_s`` in place of its class floor;
its work terms and the class's other fixed terms are unchanged. A profile without the figure,
any runtime but ``xla`` on a CPU are unchanged.

Outside a loop (``calibration.program_launch_us`` present): a class floor fitted on single-kernel
programs holds what the program's call costs beyond ``run_overhead_us`` (its result and arguments,
a class's library woken once a run) besides the kernel's own launch; the calibration's chain of
``TINY_CHAIN`` dependent small dots + tanh gives the marginal cost of one more kernel in a program,
``program_launch_s`` = the chain's time per link / the launches opcost plans a link. So (``straight_fixed``)::

    t_run = run_overhead + max_k max(floor_k - program_launch_s, 0)
            + sum over kernels outside loops (fixed_k - floor_k + program_launch_s + work_k)
            + sum over loop-body launches (fixed_k - floor_k + loop_launch_s + work_k)

A one-kernel program (every single-kernel calibration row) is priced as before; a program of n
equal kernels costs ``(n - 1) * (floor - program_launch_s)`` less than n class floors. A profile
without the figure prices every kernel outside a loop at its class floor.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np


def loop_launch_s(calibration: Mapping[str, Any] | None) -> float | None:
    """Seconds of one launch inside a loop body (``calibration.loop_launch_us``); None: not measured."""
    if not calibration or calibration.get("loop_launch_us") is None:
        return None
    return float(calibration["loop_launch_us"]) * 1e-6


def in_loop(nodes: Sequence[Any], members: Sequence[Sequence[int]]) -> np.ndarray:
    """[K] True where a kernel's first member sits in a loop body (its graph level is not the model's)."""
    return np.array([nodes[m[0]].level != "" for m in members], dtype=bool)


def replace_floor(fixed: np.ndarray, floors: np.ndarray, loop: np.ndarray, launch_s: float) -> np.ndarray:
    """``fixed`` with ``floors`` replaced by ``launch_s`` where ``loop`` (all [K] or [E])."""
    return np.where(loop, fixed - floors + launch_s, fixed)


def inserted_fixed(fixed: np.ndarray, floors: np.ndarray, loop: np.ndarray, loop_s: float | None,
                   prog_s: float | None) -> np.ndarray:
    """The fixed seconds [E] of the launches a plan inserted (``FusionPlan.extra_ops``) with their
    class ``floors`` replaced by ``loop_s`` where ``loop`` (a loop body's) and by ``prog_s``
    elsewhere; a figure that is None leaves its launches at their floors."""
    if loop_s is not None:
        fixed = replace_floor(fixed, floors, loop, loop_s)
    if prog_s is not None:
        fixed = replace_floor(fixed, floors, ~loop, prog_s)
    return fixed


def note(profile_id: str, launch_s: float, kernels: int, launches: float) -> str:
    return (f"in-loop launches: {kernels} loop-body kernel(s), {launches:.0f} launches a run, each "
            f"{launch_s * 1e6:.3g} µs ({profile_id}'s calibrated in-loop launch cost) in place of its "
            "class floor")


def xla_loop_launch_s(prof, calibrated: bool, fusion_policy: str) -> float | None:
    """``loop_launch_s`` where XLA's CPU kernels are planned (``xla_cpu_fusion.POLICY``) on a
    calibrated profile that has the figure, else None (class floors everywhere)."""
    from analyzer.prediction import xla_cpu_fusion

    if not calibrated or fusion_policy != xla_cpu_fusion.POLICY:
        return None
    return loop_launch_s(prof.calibration)


def in_loop_fixed(fixed_p, floors, nodes, plan, runs, loop_s: float, prof_id: str, notes: list[str]):
    """``fixed_p`` (one profile's fixed seconds per kernel) with a loop body's kernels' class
    floors replaced by the calibrated in-loop launch cost ``loop_s``; the note says how many."""
    loop = in_loop(nodes, plan.members)
    if loop.any():
        extra = sum(len(e) * float(r) for e, r, lp in zip(plan.extra_ops, runs, loop) if lp)
        notes.append(note(prof_id, loop_s, int(loop.sum()), float(runs[loop].sum()) + extra))
    return replace_floor(fixed_p, floors, loop, loop_s)


def program_launch_s(prof, calibrated: bool, fusion_policy: str) -> float | None:
    """Seconds of one more kernel in a program outside a loop (``calibration.program_launch_us``)
    where XLA's CPU kernels are planned on a calibrated profile that has it, else None."""
    from analyzer.prediction import xla_cpu_fusion

    cal = prof.calibration
    if not calibrated or fusion_policy != xla_cpu_fusion.POLICY or not cal or cal.get("program_launch_us") is None:
        return None
    return float(cal["program_launch_us"]) * 1e-6


def straight_fixed(fixed: np.ndarray, floors: np.ndarray, loop: np.ndarray, launch_s: float,
                   notes: list[str]) -> tuple[np.ndarray, float]:
    """(``fixed`` [K] seconds with each kernel outside a loop (``loop`` False) at ``launch_s`` in
    place of its class floor, the seconds once a run: the largest ``floors - launch_s`` (at
    least 0; 0 with no kernel)); the note says both."""
    once = float(max(np.max(floors, initial=0.0) - launch_s, 0.0))
    out = replace_floor(fixed, floors, ~loop, launch_s)
    if (~loop).any():
        notes.append(f"program launches: {int((~loop).sum())} kernel(s) outside loops, each "
                     f"{launch_s * 1e6:.3g} µs in place of its class floor; {once * 1e6:.3g} µs once a run "
                     "(the largest class floor's excess)")
    return out, once


def xla_fixed(fixed_p, floors, nodes, plan, runs, prof, calibrated: bool, fusion_policy: str, notes: list[str]):
    """(one profile's fixed seconds per kernel with ``straight_fixed`` and ``in_loop_fixed`` applied
    where the profile has their figures, ``loop_launch_s`` or None, the seconds once a run)."""
    loop_s = xla_loop_launch_s(prof, calibrated, fusion_policy)
    prog_s, once = program_launch_s(prof, calibrated, fusion_policy), 0.0
    if prog_s is not None:
        fixed_p, once = straight_fixed(fixed_p, floors, in_loop(nodes, plan.members), prog_s, notes)
    if loop_s is not None:
        fixed_p = in_loop_fixed(fixed_p, floors, nodes, plan, runs, loop_s, prof.id, notes)
    return fixed_p, loop_s, once
