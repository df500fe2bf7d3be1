"""The in-loop costs of a YNNPACK dot (``prediction.cpu.ynn_dot``), fitted on the calibration's scans
whose body holds one such dot (``rows.dot_scan_program`` at ``rows.DOT_SCAN_TRIPS`` for each of
``rows.DOT_SCAN_ROWS``; their times: ``loop_scan.dot_scan_times``).

With the profile's tables and launch figures fitted and both figures at 0, each scan ``i`` of
``T_i`` trips is predicted ``p_i``; the figures are the least-squares fit of the relative error::

    t_i = p_i + dot_loop_s + T_i * dot_trip_s,   dot_loop_s >= 0, dot_trip_s >= 0
    minimise sum_i ((p_i + dot_loop_s + T_i * dot_trip_s - t_i) / t_i) ** 2

(two unknowns, each scan one dot: the once-a-loop cost and the per-trip cost are told apart by the
two trip counts). The bounded minimum is the best of the unconstrained solution (where both are
>= 0) and the solutions with one or both held at 0."""

from __future__ import annotations

from typing import Any

import numpy as np


def fit_once_and_per_trip(trips, predicted, measured) -> tuple[float, float]:
    """(once, per_trip) seconds, both >= 0, minimising ``sum(((predicted + once + trips * per_trip
    - measured) / measured) ** 2)`` (the module's formula)."""
    T, p, t = (np.asarray(x, np.float64) for x in (trips, predicted, measured))
    A = np.vstack([1.0 / t, T / t]).T        # unknowns (once, per_trip)
    y = (t - p) / t

    def loss(x):
        return float(np.sum((A @ x - y) ** 2))

    cands = [np.zeros(2)]
    full = np.linalg.lstsq(A, y, rcond=None)[0]
    if (full >= 0).all():
        cands.append(full)
    for j in (0, 1):   # one held at 0, the other's one-variable least squares, at least 0
        x = np.zeros(2)
        x[j] = max(float(A[:, j] @ y) / float(A[:, j] @ A[:, j]), 0.0)
        cands.append(x)
    best = min(cands, key=loss)
    return float(best[0]), float(best[1])


def predicted_scans(doc: dict, times: dict[tuple[int, int], float]) -> dict[tuple[int, int], float]:
    """``{(m, trips): seconds}`` of each scan predicted under the profile document ``doc``
    (``calibrate.profile_doc``'s, its tables and launch figures fitted) with ``dot_trip_us`` and
    ``dot_loop_us`` at 0."""
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.loop_scan import _latency
    from hardware_db.profile import from_document

    cal = {**doc["calibration"], "dot_trip_us": 0.0, "dot_loop_us": 0.0}
    prof = from_document({**{k: v for k, v in doc.items() if not k.startswith("_")}, "calibration": cal})
    return {(m, t): _latency(prof, *xr.dot_scan_program(t, m)) for m, t in times}


def set_dot_loop_figures(doc: dict, measured: dict[str, Any], head: str) -> None:
    """Set ``doc``'s ``calibration.dot_trip_us`` and ``dot_loop_us`` (``fit_once_and_per_trip`` over
    the scans of ``measured``) and their sources; rows without the scans leave both out."""
    from analyzer.measure.xla.loop_scan import dot_scan_times

    times = dot_scan_times(measured)
    if not times:
        return
    pred = predicted_scans(doc, times)
    keys = sorted(times)
    once, trip = fit_once_and_per_trip([k[1] for k in keys], [pred[k] for k in keys], [times[k] for k in keys])
    cal = doc["calibration"]
    cal["dot_trip_us"], cal["dot_loop_us"] = trip * 1e6, once * 1e6
    ms = ", ".join(str(m) for m in sorted({k[0] for k in keys}))
    ts = " and ".join(str(t) for t in sorted({k[1] for k in keys}))
    what = (f"{head}: least squares on relative error (analyzer.measure.xla.dot_scans) over {len(keys)} scans "
            f"of h = tanh(h @ w + x_t), h [m, 64], w 64x64, m = {ms}, at {ts} trips "
            f"(rows.dot_scan_program{'; ' + measured['dot_scan_measured_on'] if measured.get('dot_scan_measured_on') else ''}): ")
    doc["sources"]["calibration.dot_trip_us"] = what + "a YNNPACK dot's cost per trip inside a loop body"
    doc["sources"]["calibration.dot_loop_us"] = what + "a YNNPACK dot's cost once per execution of its loop"
