"""Host-only ops of an eager plan (views eager PyTorch runs as aten ops, no kernel): their host
time per run and the ``Lowered`` fields that carry them (``lowering.lower``)."""

from __future__ import annotations

import numpy as np

from analyzer.prediction import runtimes
from analyzer.prediction.hardware import host_dispatch


def fields(nodes, plan, per_run) -> dict:
    """``Lowered``'s host-only fields: node indices, runs of each (a loop body's: its trips),
    host seconds of all runs ``[P, H]`` from ``per_run`` (one run of each)."""
    runs = np.array([max(1, getattr(nodes[i], "runs", 1)) for i in plan.host_only], np.float64)
    return {"host_nodes": tuple(plan.host_only), "host_runs": runs, "host_only": per_run * runs}


def per_run_s(prof, runtime, calibrated: bool, launch: float, note: list[str], n: int) -> float:
    """Host seconds per run of one of ``n`` host-only ops: ``runtimes.HOST_ONLY_RATIO`` x the
    runtime's dispatch of a small elementwise op (a profile calibrated with the runtime: its
    measured per-op figure; else ``hardware.host_dispatch``'s, whose own note the kernels gave)."""
    if not n or not runtime.host_dispatch:
        return 0.0
    base = launch if calibrated else float(host_dispatch(prof, runtime, ["elementwise"], launch, [])[0])
    note.append(f"{n} host-only ops (views eager PyTorch runs as aten ops, no kernel): "
                f"{runtimes.HOST_ONLY_RATIO:g} x {base * 1e6:.3g} µs dispatch = "
                f"{runtimes.HOST_ONLY_RATIO * base * 1e6:.3g} µs host time each "
                f"({runtimes.HOST_ONLY_SOURCE})")
    return runtimes.HOST_ONLY_RATIO * base
