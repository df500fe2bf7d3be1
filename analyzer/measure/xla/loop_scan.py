"""The in-loop scans of ``calibrate --runtime xla`` (``rows.scan_program`` at ``rows.SCAN_TRIPS``
trips): their timings merged over timings and passes, and the launches opcost plans a trip of
their body (what ``fit.loop_launch_s`` divides the time per trip by), and the launches it plans a
link of the chain of small dots (what ``fit.program_launch_s`` divides the time per link by);
``net_launch_figures`` sets a profile's launch figures of them."""

from __future__ import annotations

from typing import Any

import numpy as np

# any CPU profile: the plan's launches do not depend on it
REFERENCE_PROFILE = "epyc-9654"


def scan_s(lows: list[float], per_trip: list[float]) -> dict[str, float]:
    """``{trips: seconds}`` of the two scans (``rows.SCAN_TRIPS``): the median of the shorter's
    timings, and it plus the median per-trip difference times the trips between them."""
    from analyzer.measure.xla.rows import SCAN_TRIPS

    lo, hi = SCAN_TRIPS
    t_lo = float(np.median(lows))
    return {str(lo): t_lo, str(hi): t_lo + float(np.median(per_trip)) * (hi - lo)}


def launches_per_trip() -> float:
    """Launches per trip opcost's ``xla`` plan gives ``rows.scan_program`` (the difference of
    its planned launches at the two trip counts over the trips between them)."""
    import jax

    import hardware_db
    from analyzer.api import analyze_jax
    from analyzer.measure.xla import rows as xr

    n = []
    for t in xr.SCAN_TRIPS:
        fn, args = xr.scan_program(t)
        sds = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
        n.append(analyze_jax(fn, *sds, hw=hardware_db.get(REFERENCE_PROFILE), runtime="xla").predictions[0].launches)
    return (n[1] - n[0]) / (xr.SCAN_TRIPS[1] - xr.SCAN_TRIPS[0])


def launches_per_link() -> float:
    """Launches per link opcost's ``xla`` plan gives ``rows.dot_chain(n, m=1, k=8)`` (the
    difference of its planned launches at ``TINY_CHAIN`` links and 1 over the links between):
    2 with XLA CPU's kernels (the dot's thunk and the tanh's loop fusion)."""
    import jax

    import hardware_db
    from analyzer.api import analyze_jax
    from analyzer.measure.xla import rows as xr

    n = []
    for links in (1, xr.TINY_CHAIN):
        fn, args = xr.dot_chain(links, m=1, k=8)
        sds = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
        n.append(analyze_jax(fn, *sds, hw=hardware_db.get(REFERENCE_PROFILE), runtime="xla").predictions[0].launches)
    return (n[1] - n[0]) / (xr.TINY_CHAIN - 1)


def _latency(profile, fn, args) -> float:
    import jax

    from analyzer.api import analyze_jax

    sds = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), args)
    return analyze_jax(fn, *sds, hw=profile, runtime="xla").predictions[0].latency_s


def launch_work_s(doc: dict) -> dict[str, float]:
    """The work the launch figures' programs are predicted besides their launches, under the
    profile document ``doc`` (``calibrate.profile_doc``'s, its tables fitted) with both launch
    figures at 0: ``{"trip": seconds a trip of rows.scan_program, "link": seconds a link of the
    chain rows.dot_chain(n, m=1, k=8)}`` (the differences of two lengths' predictions over the
    lengths between: what is fixed once a run cancels). ``fit.loop_launch_s`` and
    ``fit.program_launch_s`` take them off the measured time per trip and per link, so that a
    body's FLOPs and bytes are not charged twice (once in the launch figure, once as work)."""
    from analyzer.measure.xla import rows as xr
    from hardware_db.profile import from_document

    cal = {**doc["calibration"], "loop_launch_us": 0.0, "program_launch_us": 0.0}
    prof = from_document({**{k: v for k, v in doc.items() if not k.startswith("_")}, "calibration": cal})
    lo, hi = xr.SCAN_TRIPS
    trip = (_latency(prof, *xr.scan_program(hi)) - _latency(prof, *xr.scan_program(lo))) / (hi - lo)
    link = ((_latency(prof, *xr.dot_chain(xr.TINY_CHAIN, m=1, k=8)) - _latency(prof, *xr.dot_chain(1, m=1, k=8)))
            / (xr.TINY_CHAIN - 1))
    return {"trip": max(trip, 0.0), "link": max(link, 0.0)}


def net_launch_figures(doc: dict, measured: dict[str, Any], head: str, per_trip_launches: float | None) -> None:
    """Set ``doc``'s ``program_launch_us`` (and ``loop_launch_us`` where the rows have the scans:
    ``per_trip_launches`` not None) net of their programs' work predicted with ``doc``'s fitted
    tables (``launch_work_s``), and the calibration's sources."""
    from analyzer.measure.xla.fit import loop_launch_s, program_launch_s
    from hardware_db.write import calibration_sources

    work = launch_work_s(doc)
    cal = doc["calibration"]
    cal["program_launch_us"] = program_launch_s(measured, launches_per_link(), work["link"]) * 1e6
    if per_trip_launches is not None:
        cal["loop_launch_us"] = loop_launch_s(measured, per_trip_launches, work["trip"]) * 1e6
    doc["sources"].update(calibration_sources(cal, head))
    if per_trip_launches is not None:
        lo, hi = sorted(measured["scan_s"], key=int)
        doc["sources"]["calibration.loop_launch_us"] = (
            f"{head}: ((a scan of {hi} trips - one of {lo}) / {int(hi) - int(lo)} - its predicted work a trip, "
            f"{work['trip'] * 1e6:.3g} µs) / {per_trip_launches:g} "
            f"launches a trip (analyzer.measure.xla.rows.scan_program; the trips' median over the "
            f"passes{'; scans ' + measured['scan_measured_on'] if measured.get('scan_measured_on') else ''}): "
            "one launch inside a loop body (analyzer/prediction/cpu/loop_launch.py)")


def time_dot_scans(q: float, time_program) -> dict[str, dict[str, float]]:
    """One timing (``time_program``'s ``q`` quantile, 0.05 s of runs: ``calibrate.time_program``) of
    each scan with a YNNPACK dot in its body (``rows.dot_scan_program`` at ``rows.DOT_SCAN_TRIPS`` for
    each of ``rows.DOT_SCAN_ROWS``): ``{m: {trips: seconds}}``. JAX's CPU async dispatch must be off."""
    from analyzer.measure.xla import rows as xr

    out: dict[str, dict[str, float]] = {}
    for m in xr.DOT_SCAN_ROWS:
        out[str(m)] = {}
        for t in xr.DOT_SCAN_TRIPS:
            fn, args = xr.dot_scan_program(t, m)
            out[str(m)][str(t)] = time_program(fn, xr.as_jax_args(args), q, min_s=0.05)
    return out


def merge_dot_scans(timings: list[dict[str, dict[str, float]]], stat=np.median) -> dict[str, dict[str, float]]:
    """``{m: {trips: seconds}}`` of several ``time_dot_scans`` (or of several merges): each program's
    ``stat`` (the median of one process's timings; the fastest over passes, as a row's)."""
    first = timings[0]
    return {m: {t: float(stat([x[m][t] for x in timings])) for t in d} for m, d in first.items()}


def dot_scan_times(measured: dict[str, Any]) -> dict[tuple[int, int], float]:
    """``{(m, trips): seconds}`` of the YNNPACK-dot scans of ``measured`` (``dot_scan_s``; none:
    empty), each as the calibration's rows stand: its excess over the run overhead timed with it
    (``dot_scan_run_overhead_s``, where the scans were timed apart from the rows) plus the rows'
    ``run_overhead_s``."""
    scans = measured.get("dot_scan_s") or {}
    shift = measured["run_overhead_s"] - measured.get("dot_scan_run_overhead_s", measured["run_overhead_s"])
    return {(int(m), int(t)): s + shift for m, d in scans.items() for t, s in d.items()}


def dot_scan_label(m: int, trips: int) -> str:
    return f"scan of h[{m},64] @ w[64,64] + tanh, {trips} trips"


def time_ew_scans(q: float, time_program) -> dict[str, dict[str, float]]:
    """One timing (``time_program``'s ``q`` quantile, 0.03 s of runs) of each scan over an
    elementwise-only body (``rows.ew_scan_program`` for each of ``rows.EW_SCAN_KERNELS`` x
    ``rows.EW_SCAN_ROWS`` at ``rows.EW_SCAN_TRIPS``): ``{"kernels/m": {trips: seconds}}``. JAX's CPU
    async dispatch must be off."""
    from analyzer.measure.xla import rows as xr

    out: dict[str, dict[str, float]] = {}
    for k in xr.EW_SCAN_KERNELS:
        for m in xr.EW_SCAN_ROWS:
            d = out.setdefault(f"{k}/{m}", {})
            for t in xr.EW_SCAN_TRIPS:
                fn, args = xr.ew_scan_program(t, m, k)
                d[str(t)] = time_program(fn, xr.as_jax_args(args), q, min_s=0.03)
    return out


def ew_scan_times(measured: dict[str, Any], key: str = "ew_scan_s") -> dict[tuple[int, int, int], float]:
    """``{(kernels, m, trips): seconds}`` of the elementwise-only scans of ``measured``
    (``key``: ``ew_scan_s``, the calibration's; none: empty), each at its excess over the run overhead timed with it
    (``ew_scan_run_overhead_s``, where timed apart from the rows) plus the rows' ``run_overhead_s``."""
    scans = measured.get(key) or {}
    shift = measured["run_overhead_s"] - measured.get("ew_scan_run_overhead_s", measured["run_overhead_s"])
    out = {}
    for key, d in scans.items():
        k, m = (int(x) for x in key.split("/"))
        out.update({(k, m, int(t)): s + shift for t, s in d.items()})
    return out


def ew_scan_label(kernels: int, m: int, trips: int) -> str:
    return f"scan of {kernels} x tanh(h[{m},64] + x_t), {trips} trips"
