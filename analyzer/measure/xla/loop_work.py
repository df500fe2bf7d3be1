"""A loop body's vector work (``prediction.cpu.loop_work``), fitted on the calibration's scans over
elementwise-only bodies (``rows.ew_scan_program`` for ``rows.EW_SCAN_KERNELS`` x ``rows.EW_SCAN_ROWS``
at ``rows.EW_SCAN_TRIPS``; their times: ``loop_scan.ew_scan_times``).

With the profile's tables and launch figures fitted, each scan ``i`` is predicted at the scale 0
(``a_i``: its launches, run overhead and whatever is not a loop body's vector work), the work that
scale took off read from the prediction (``W_i``: the body's vector work at its classes' rates), so
that at the scale ``r`` it is ``a_i + r W_i`` (the kernel-time formula is linear in the scale: ``cpu.loop_work``). ``r`` is the
least-squares fit of the relative error::

    minimise sum_i ((a_i + r W_i - t_i) / t_i) ** 2
    r = sum_i (W_i / t_i) (t_i - a_i) / t_i  /  sum_i (W_i / t_i) ** 2,   clipped to [R_MIN, 1]

(no scale above 1: a loop body's kernel is not priced slower than its class's one-shot rows)."""

from __future__ import annotations

from typing import Any

import numpy as np

R_MIN = 1e-3


def fit_scale(predicted_0, predicted_1, measured) -> float:
    """``r`` of the module's formula: ``predicted_0`` = ``a``, ``predicted_1`` = ``a + W``."""
    a, p1, t = (np.asarray(x, np.float64) for x in (predicted_0, predicted_1, measured))
    w = (p1 - a) / t
    den = float(np.sum(w * w))
    if den <= 0.0:
        return 1.0
    r = float(np.sum(w * (t - a) / t)) / den
    return float(min(max(r, R_MIN), 1.0))


def predicted_scans(doc: dict, times: dict[tuple[int, int, int], float]) -> dict[tuple[int, int, int], tuple[float, float]]:
    """``{(kernels, m, trips): (a, W)}`` seconds of each scan under the profile document ``doc``
    (``calibrate.profile_doc``'s, its tables and launch figures fitted): its prediction at
    ``loop_work_scale`` 0 (``a``) and the loop body's vector work that scale took off (``W``: the
    kernels' ``cpu.loop_work`` seconds, ``-W`` at 0, times their launches), one prediction each."""
    import jax

    from analyzer.api import analyze_jax
    from analyzer.measure.xla import rows as xr
    from hardware_db.profile import from_document

    cal = {**doc["calibration"], "loop_work_scale": 0.0}
    prof = from_document({**{k: v for k, v in doc.items() if not k.startswith("_")}, "calibration": cal})
    out = {}
    for k, m, t in times:
        fn, args = xr.ew_scan_program(t, m, k)
        sds = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), args)
        p = analyze_jax(fn, *sds, hw=prof, runtime="xla").predictions[0]
        tab = p.kernel_table
        w = 0.0 if tab.loop_work is None else -float(np.sum(np.asarray(tab.loop_work) * np.asarray(tab.runs)))
        out[(k, m, t)] = (p.latency_s, w)
    return out


def set_loop_work_scale(doc: dict, measured: dict[str, Any], head: str) -> None:
    """Set ``doc``'s ``calibration.loop_work_scale`` (``fit_scale`` over the elementwise scans of
    ``measured``) and its source; rows without the scans leave it out."""
    from analyzer.measure.xla.loop_scan import ew_scan_times

    times = ew_scan_times(measured)
    if not times:
        return
    keys = sorted(times)
    pred = predicted_scans(doc, times)
    r = fit_scale([pred[k][0] for k in keys], [sum(pred[k]) for k in keys], [times[k] for k in keys])
    doc["calibration"]["loop_work_scale"] = r
    ks = ", ".join(str(k) for k in sorted({k[0] for k in keys}))
    ms = ", ".join(str(k) for k in sorted({k[1] for k in keys}))
    ts = " and ".join(str(k) for k in sorted({k[2] for k in keys}))
    doc["sources"]["calibration.loop_work_scale"] = (
        f"{head}: least squares on relative error, in closed form (analyzer.measure.xla.loop_work), over "
        f"{len(keys)} scans of {ks} elementwise kernels tanh(h + x_t), h [m, 64], m = {ms}, at {ts} trips "
        f"(rows.ew_scan_program{'; ' + measured['ew_scan_measured_on'] if measured.get('ew_scan_measured_on') else ''}): "
        "a loop body's vector kernel's work over its class's (analyzer/prediction/cpu/loop_work.py)")
