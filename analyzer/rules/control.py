"""ONNX control flow: If, Loop, Scan. Each returns a ``Plan`` over the node's sub-graphs,
whose nodes the engine lists as ``parent/child`` rows scaled by how often they run.

- ``If``: a constant condition (folded from constants) runs its branch; otherwise the
  costlier branch (more FLOPs, then more bytes) is costed and the report says so.
- ``Loop``: the trip count ``M`` when it is a constant; a constant-false initial
  condition runs 0 times; otherwise ``loop_trips`` (``--loop-trips N``) or a clear error.
  A loop that may stop early on its condition is costed at ``M`` trips (an upper bound).
- ``Scan``: the length of the scanned axis of the first scan input (opset 9+); opset 8's
  batched form runs the body batch x sequence times.
"""

from __future__ import annotations

from ..cost import Plan, register
from ..errors import ShapeError


def _const(values, i):
    if values is None or i >= len(values) or values[i] is None:
        return None
    v = values[i]
    try:
        return v.reshape(-1)[0].item() if v.size == 1 else None
    except AttributeError:
        return None


@register("If", io="control")
def if_(ins, outs, *, _values=(), **_):
    cond = _const(_values, 0)
    if cond is None:
        return Plan(costlier_of=("then_branch", "else_branch"))
    branch = "then_branch" if cond else "else_branch"
    return Plan(run=((branch, 1),), note=f"condition is constant ({bool(cond)}): costed '{branch}'")


@register("Loop", io="control")
def loop(ins, outs, *, _values=(), _options=None, **_):
    m = _const(_values, 0)
    cond = _const(_values, 1)
    if cond is not None and not cond:
        return Plan(note="initial condition is constant false: the body never runs")
    if m is not None:
        note = f"trip count {int(m)} (constant M)"
        if len(ins) > 1 and ins[1] is not None and cond is None:
            note += "; the loop may stop earlier on its condition: an upper bound"
        return Plan(run=(("body", int(m)),), note=note)
    trips = getattr(_options, "loop_trips", None)
    if trips is not None:
        return Plan(run=(("body", int(trips)),), note=f"trip count {trips} from --loop-trips")
    raise ShapeError("the Loop's trip count is not a constant; pass --loop-trips N "
                     "(library: loop_trips=N) to cost its body N times")


@register("Scan", io="control")
def scan(ins, outs, *, num_scan_inputs, scan_input_axes=None, directions=None, **_):
    n = int(num_scan_inputs)
    first = ins[len(ins) - n]
    if first is None:
        raise ShapeError("Scan has no scan input")
    if directions is not None:  # opset 8: [batch, sequence, ...] inputs, optional sequence_lens first
        trips = first.dim(0) * first.dim(1)
        return Plan(run=(("body", trips),), note=f"batch x sequence = {trips} iterations")
    axis = int((scan_input_axes or [0])[0])
    trips = first.dim(axis)
    return Plan(run=(("body", trips),), note=f"{trips} iterations (scan axis {axis})")
