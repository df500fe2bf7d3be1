"""JAX control flow (domain ``"jax"``): ``scan``, ``while`` and ``cond`` return a ``Plan`` over the
sub-graphs the frontend built from their jaxprs (``body``; ``cond`` and ``body``; ``branch0``...).

- ``scan`` runs its body ``length`` times.
- ``while`` runs ``body`` N times and ``cond`` N+1 times, N being the trip count the frontend
  recognised (a counter stepped by a constant and compared with a known bound, as ``fori_loop``
  builds), else ``analyze_jax(..., loop_trips=N)``, else a ``ShapeError`` naming the equation.
- ``cond`` runs the branch its index selects when the index is known at trace time (a literal or
  a constant-folded ``lax.switch`` index), else the costlier branch (``Plan.costlier_of``).
"""

from __future__ import annotations

from analyzer.counting.cost import Plan, register
from analyzer.errors import Hint, ShapeError

D = "jax"


@register("scan", domain=D)
def scan(ins, outs, ctx, *, length):
    return Plan(run=(("body", int(length)),), note=f"scan: body runs {int(length)} times")


@register("while", domain=D)
def while_(ins, outs, ctx, *, trip_count=None, trip_source=""):
    if trip_count is not None:
        n, how = int(trip_count), f"trip count {trip_count} ({trip_source})"
    elif ctx.options is not None and ctx.options.loop_trips is not None:
        n, how = int(ctx.options.loop_trips), f"trip count {ctx.options.loop_trips} from loop_trips"
    else:
        raise ShapeError(f"while loop trip count is not static ({trip_source}); pass "
                         f"{{loop_trips}} to cost its body N times",
                         hints=(Hint("loop_trips", "N"),))
    return Plan(run=(("cond", n + 1), ("body", n)), note=f"while: {how}")


@register("cond", domain=D)
def cond(ins, outs, ctx, *, num_branches):
    index = ctx.values[0] if ctx.values else None
    if index is not None:
        i = min(max(int(index), 0), num_branches - 1)   # lax.switch clamps its index
        return Plan(run=((f"branch{i}", 1),), note=f"index is the constant {int(index)}: branch{i}")
    return Plan(costlier_of=tuple(f"branch{i}" for i in range(num_branches)))
