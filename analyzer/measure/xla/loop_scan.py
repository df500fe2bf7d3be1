"""The in-loop scans of ``calibrate --runtime xla`` (``rows.scan_program`` at ``rows.SCAN_TRIPS``
trips): their timings merged over timings and passes, and the launches opcost plans a trip of
their body (what ``fit.loop_launch_s`` divides the time per trip by), and the launches it plans a
link of the chain of small dots (what ``fit.program_launch_s`` divides the time per link by)."""

from __future__ import annotations

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
