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
    and the depthwise output rate too).  A ``qnn`` runtime's rows are made first and its placement
    then overrides the kernels it moves to the CPU (their peaks, nothing kept on chip, no depthwise
    rate).  Returns (bandwidth B/s, per-call seconds, on-chip rows or None, the placement's
    ``accelerators.Placed`` per kernel moved: a dict, empty where none)."""
    plan, fnodes, rows, fixed_p, bw = placed
    onchip, p, P, mpeak_p, vpeak_p = qnn_rows[:5]
    moved: dict = {}
    is_qnn = runtime.name in qnn.DEPLOYMENTS
    rows_note: list[str] = []   # (said after the placement's and the per-call notes)
    if is_qnn:
        onchip = qnn.profile_rows(onchip, p, P, prof, arrays, mpeak_p, vpeak_p, *qnn_rows[5:9], rows_note,
                                  dw_work=(qnn_rows[9], plan, rows))
    if runtime.placement is not None:
        bw = place(runtime, prof, plan, fnodes, rows, bw, (mpeak_p, vpeak_p, fixed_p), note,
                   (arrays, qnn_rows[5], label, qnn_rows[9], moved))
    if is_qnn and moved:
        for k in moved:   # a kernel on the CPU keeps nothing in the NPU's VTCM and has no HTP depthwise rate
            onchip[0][p][k] = 0.0
            onchip[4][p][k] = 0.0
    per_call = (qnn.run_fixed_s(runtime.name, arrays, label, note)
                + xla_tpu.call_launch_s(runtime.name, prof.kind, arrays, prof.id, note))
    note.extend(rows_note)
    return bw, per_call, onchip, moved


def place(runtime, prof, plan, fnodes, rows, bw: float, rows_p: tuple, note: list[str], extra: tuple) -> float:
    """Apply ``runtime``'s placement to one profile's rows (in place: ``rows_p`` = the matrix and
    vector peaks and fixed seconds of the kernels it moves off the accelerator, ``accelerators``;
    ``extra`` = the family's constants, class codes, the precision, the report's nodes and the dict
    the placement records its moved kernels in); returns the memory bandwidth the kernels see (the
    profile's, unless the runtime says otherwise)."""
    from analyzer.prediction.accelerators import Kernels

    mac, vec, trans, _, wbytes, runs, _, _, dtype = zip(*rows) if rows else ((),) * 9
    arrays, classes, label, nodes, moved = extra
    kern = Kernels(members=plan.members, fnodes=fnodes, dtype=tuple(dtype), mac=np.asarray(mac, np.float64),
                   flops=np.asarray(mac, np.float64) + np.asarray(vec, np.float64) + np.asarray(trans, np.float64),
                   weight_bytes=np.asarray(wbytes, np.float64), runs=np.asarray(runs, np.float64), mem_bw=bw,
                   matrix_peak=rows_p[0], vector_peak=rows_p[1], fixed=rows_p[2], arrays=arrays, classes=classes,
                   precision=label or "", nodes=nodes, placed=moved)
    override, said = runtime.placement(prof, kern)
    note.extend(said)
    return bw if override is None else float(override)
