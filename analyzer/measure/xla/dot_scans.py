"""The in-loop costs of a YNNPACK dot (``prediction.cpu.ynn_dot``) and a loop body's compute rate
(``prediction.cpu.loop_rate``), fitted on the calibration's scans whose body holds one such dot and
a fused add + tanh (``rows.dot_scan_program`` at ``rows.DOT_SCAN_TRIPS`` for each of
``rows.DOT_SCAN_ROWS``; their times: ``loop_scan.dot_scan_times``).

With the profile's tables and launch figures fitted, ``loop_rate`` = ``s`` and both dot figures at
0, each scan ``i`` of ``T_i`` trips is predicted ``p_i(s)``; for one ``s`` the dot figures are the
least-squares fit of the relative error::

    t_i = p_i(s) + dot_loop_s + T_i * dot_trip_s,   dot_loop_s >= 0, dot_trip_s >= 0
    minimise sum_i ((p_i(s) + dot_loop_s + T_i * dot_trip_s - t_i) / t_i) ** 2

(two unknowns, each scan one dot: the once-a-loop cost and the per-trip cost are told apart by the
two trip counts). The bounded minimum is the best of the unconstrained solution (where both are
>= 0) and the solutions with one or both held at 0. ``s`` (>= 1: the body's work scales with the
scans' rows m, the dot figures do not) is the grid value of ``RATES`` whose fit has the least
loss, refined on a grid ten times finer around it (``REFINE``)."""

from __future__ import annotations

from typing import Any

import numpy as np

# the coarse grid of loop_rate (1 / s from 1 to 0.05 in steps of 0.05), and the refined one's steps of
# 1 / s around the best coarse value
RATES = tuple(1.0 / u for u in np.round(np.arange(1.0, 0.0499, -0.05), 4))
REFINE = 0.005


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


def predicted_scans(doc: dict, times: dict[tuple[int, int], float],
                    rates: tuple[float, ...] = (1.0,)) -> dict[float, dict[tuple[int, int], float]]:
    """``{loop_rate: {(m, trips): seconds}}`` of each scan predicted under the profile document
    ``doc`` (``calibrate.profile_doc``'s, its tables and launch figures fitted) with ``dot_trip_us``
    and ``dot_loop_us`` at 0 and ``loop_rate`` each of ``rates`` (each scan traced once)."""
    import jax

    from analyzer.api import analyze_jax
    from analyzer.measure.xla import rows as xr
    from hardware_db.profile import from_document

    base = {k: v for k, v in doc.items() if not k.startswith("_")}
    sources = {**doc["sources"], "calibration.loop_rate": "a value of the fit's grid (dot_scans.fit_rate)"}
    profs = [from_document({**base, "id": f"{base.get('id', 'scan')}-rate-{i}", "sources": sources, "calibration": {
        **doc["calibration"], "dot_trip_us": 0.0, "dot_loop_us": 0.0, "loop_rate": float(r)}})
        for i, r in enumerate(rates)]
    out: dict[float, dict[tuple[int, int], float]] = {float(r): {} for r in rates}
    for m, t in times:
        fn, args = xr.dot_scan_program(t, m)
        sds = tuple(jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args)
        preds = analyze_jax(fn, *sds, hw=profs, runtime="xla").predictions
        for r, p in zip(rates, preds):
            out[float(r)][(m, t)] = p.latency_s
    return out


def _loss(trips, predicted, measured, once: float, per_trip: float) -> float:
    T, p, t = (np.asarray(x, np.float64) for x in (trips, predicted, measured))
    return float(np.sum(((p + once + T * per_trip - t) / t) ** 2))


def fit_rate(doc: dict, times: dict[tuple[int, int], float]) -> tuple[float, float, float]:
    """(loop_rate, once, per_trip) of the module's fit (once, per_trip in seconds) over ``times``
    (``{(m, trips): measured seconds}``), the scans predicted under ``doc``."""
    keys = sorted(times)
    trips, meas = [k[1] for k in keys], [times[k] for k in keys]

    def best(rates):
        pred = predicted_scans(doc, times, tuple(rates))
        fits = {r: (r, *fit_once_and_per_trip(trips, [pred[r][k] for k in keys], meas)) for r in pred}
        # the least loss; of equal losses the lowest rate
        return min(sorted(fits.values()), key=lambda f: _loss(trips, [pred[f[0]][k] for k in keys], meas, f[1], f[2]))

    s = best(RATES)[0]
    u = np.round(1.0 / s + REFINE * np.arange(-10, 11), 6)
    return best(tuple(1.0 / x for x in u if 0.0 < x <= 1.0))


def set_dot_loop_figures(doc: dict, measured: dict[str, Any], head: str) -> None:
    """Set ``doc``'s ``calibration.dot_trip_us``, ``dot_loop_us`` and ``loop_rate`` (``fit_rate``
    over the scans of ``measured``) and their sources; rows without the scans leave all three out."""
    from analyzer.measure.xla.loop_scan import dot_scan_times

    times = dot_scan_times(measured)
    if not times:
        return
    keys = sorted(times)
    rate, once, trip = fit_rate(doc, times)
    cal = doc["calibration"]
    cal["dot_trip_us"], cal["dot_loop_us"], cal["loop_rate"] = trip * 1e6, once * 1e6, rate
    ms = ", ".join(str(m) for m in sorted({k[0] for k in keys}))
    ts = " and ".join(str(t) for t in sorted({k[1] for k in keys}))
    what = (f"{head}: least squares on relative error (analyzer.measure.xla.dot_scans) over {len(keys)} scans "
            f"of h = tanh(h @ w + x_t), h [m, 64], w 64x64, m = {ms}, at {ts} trips "
            f"(rows.dot_scan_program{'; ' + measured['dot_scan_measured_on'] if measured.get('dot_scan_measured_on') else ''}): ")
    doc["sources"]["calibration.dot_trip_us"] = what + "a YNNPACK dot's cost per trip inside a loop body"
    doc["sources"]["calibration.dot_loop_us"] = what + "a YNNPACK dot's cost once per execution of its loop"
    doc["sources"]["calibration.loop_rate"] = what + ("a loop body's compute rate over the class rates, fitted "
                                                      "with dot_trip_us and dot_loop_us (grid over 1 / loop_rate)")
