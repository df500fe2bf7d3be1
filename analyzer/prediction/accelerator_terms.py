"""An accelerator runtime's terms of one profile's lowering (``lowering.lower``): the placement
of kernels off the accelerator (``accelerators``: the bandwidth the kernels see, peaks and fixed
seconds of the kernels moved), the seconds paid once per call (``qnn``'s per-inference fixed
cost; ``xla`` on a TPU, a jitted call's launch: ``xla_tpu``) and ``qnn``'s on-chip activation
rows."""

from __future__ import annotations

import numpy as np

from analyzer.prediction import xla_tpu
from analyzer.prediction.accelerators import qnn


def per_profile(runtime, prof, arrays, label: str, note: list, placed: tuple, qnn_rows: tuple):
    """An accelerator runtime's terms for one profile: the bandwidth its placement leaves
    (``placed`` = plan, fusion nodes, rows, fixed seconds, bandwidth; ``accelerators/``), the seconds
    paid once per call (``qnn``'s per-inference fixed cost, ``xla`` on a TPU: a jitted call's launch)
    and ``qnn``'s on-chip activation rows (``qnn_rows`` = the running rows, profile index, profile
    count, peaks, classes, dtypes, bytes and weight bytes per kernel, the nodes; HVX depthwise peaks
    and the depthwise output rate too).
    Returns (bandwidth B/s, per-call seconds, on-chip rows or None)."""
    plan, fnodes, rows, fixed_p, bw = placed
    onchip, p, P, mpeak_p, vpeak_p = qnn_rows[:5]
    if runtime.placement is not None:
        bw = place(runtime, prof, plan, fnodes, rows, bw, mpeak_p, vpeak_p, fixed_p, note)
    per_call = (qnn.run_fixed_s(runtime.name, arrays, label, note)
                + xla_tpu.call_launch_s(runtime.name, prof.kind, arrays, prof.id, note))
    if runtime.name in qnn.DEPLOYMENTS:
        onchip = qnn.profile_rows(onchip, p, P, prof, arrays, mpeak_p, vpeak_p, *qnn_rows[5:9], note,
                                  dw_work=(qnn_rows[9], plan, rows))
    return bw, per_call, onchip


def place(runtime, prof, plan, fnodes, rows, bw: float, mpeak_row, vpeak_row, fixed_row, note: list[str]) -> float:
    """Apply ``runtime``'s placement to one profile's rows (in place: peaks and fixed seconds of
    the kernels it moves off the accelerator, ``accelerators``); returns the memory bandwidth the
    kernels see (the profile's, unless the runtime says otherwise)."""
    from analyzer.prediction.accelerators import Kernels

    mac, vec, trans, _, wbytes, runs, _, _, dtype = zip(*rows) if rows else ((),) * 9
    kern = Kernels(members=plan.members, fnodes=fnodes, dtype=tuple(dtype), mac=np.asarray(mac, np.float64),
                   flops=np.asarray(mac, np.float64) + np.asarray(vec, np.float64) + np.asarray(trans, np.float64),
                   weight_bytes=np.asarray(wbytes, np.float64), runs=np.asarray(runs, np.float64), mem_bw=bw,
                   matrix_peak=mpeak_row, vector_peak=vpeak_row, fixed=fixed_row)
    override, said = runtime.placement(prof, kern)
    note.extend(said)
    return bw if override is None else float(override)
