"""The NCHWc layout reorders onnxruntime runs around a calibration row, taken out of the row
before its class is fitted (``calibrate``): each reorder charged the executor's dispatch plus the
reorder class's fit (``class_fit.kernel_time``)."""

from __future__ import annotations

import numpy as np

from analyzer.measure.fit.class_fit import kernel_time

# a row left with less than this share of its time once its reorders are out was all reorders: it
# leaves its class's fit (kept, 0.1-0.2 us 1x1 convs and pools of 16x16 images put the 1-thread
# conv_1x1 fit at 21-25 % MAPE, its tile at 4, 8 or 16 over runs w-z; without them 7.2 %, tile 8)
REORDER_KEEP = 0.1


def without_reorders(rows, view, per_row, fit: dict, dispatch: float, peak: float, bw: float,
                     l2_bytes: float):
    """A layout class's calibration ``rows`` (F, B, seconds, ops) and ``view`` less the NCHWc
    reorders onnxruntime ran around each row (``per_row``: ``[(bytes, profiled seconds), ...]``
    per row), each charged ``dispatch`` plus the reorder class's ``fit``. A row left with
    ``REORDER_KEEP`` of its time or less is dropped, while 6 rows remain (else every row is kept
    at that share)."""
    F, B, t, ops = rows
    r = np.array([sum(dispatch + float(kernel_time(0.0, b, fit["floor_s"], fit["e_c"], fit["e_bw"], fit["b_half"],
                                                   peak, bw, fit["l2_gain"], l2_bytes)[0]) for b, _ in rs)
                  for rs in per_row])
    ok = t - r > REORDER_KEEP * t
    ok = ok if ok.sum() >= 6 else np.ones_like(ok)
    left = np.maximum(t - r, REORDER_KEEP * t)
    return (F[ok], B[ok], left[ok], [o for o, k in zip(ops, ok) if k]), (None if view is None else view[:, ok])
