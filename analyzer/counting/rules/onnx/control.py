"""ONNX control flow: If, Loop, Scan. Each returns a ``Plan`` over the node's sub-graphs,
whose nodes the engine lists as ``parent/child`` rows scaled by how often they run.

- ``If``: a constant condition (folded from constants) runs its branch; otherwise the
  costlier branch (more FLOPs, then more bytes) is costed and the report says so.
- ``Loop``: the trip count ``M`` when it is a constant; a constant-false initial
  condition runs 0 times; otherwise the ``loop_trips`` option or a clear error.
  A loop that may stop early on its condition is costed at ``M`` trips (an upper bound).
- ``Scan``: the length of the scanned axis of the first scan input (opset 9+); opset 8's
  batched form runs the body batch x sequence times.
- ``SequenceMap``: once per element of its first input sequence, when the frontend could
  follow that sequence's elements (``Graph.sequences``); otherwise ``loop_trips`` or an error
  that says where the sequence comes from.
- ``Gradient`` (ai.onnx.preview.training): the backward pass of the forward nodes on the
  paths from its ``xs`` to its ``y`` in the same graph, counted with the rule of thumb that
  the backward pass does about twice the work of the forward pass (reference digest 001:
  "about twice as much for the backward pass"): 2 x those nodes' counts, every class
  (MAC, vector, transcendental FLOPs, weight and activation bytes), params excepted (the
  weights are the forward nodes').  The forward nodes keep their own rows; the Gradient row
  holds the backward work and its note names the nodes it differentiates.
"""

from __future__ import annotations

from dataclasses import replace

from analyzer.counting.cost import Plan, register
from analyzer.errors import Hint, ShapeError
from analyzer.counting.provenance import describe_value

_TRIPS = (Hint("loop_trips", "N"),)  # what a loop whose trip count is not a constant asks for

# backward pass ~= this many times the forward work (digest 001, rule of thumb)
BACKWARD_OVER_FORWARD = 2


def _const(values, i):
    if values is None or i >= len(values) or values[i] is None:
        return None
    v = values[i]
    try:
        return v.reshape(-1)[0].item() if v.size == 1 else None
    except AttributeError:
        return None


@register("If")
def if_(ins, outs, ctx):
    cond = _const(ctx.values, 0)
    if cond is None:
        return Plan(costlier_of=("then_branch", "else_branch"))
    branch = "then_branch" if cond else "else_branch"
    return Plan(run=((branch, 1),), note=f"condition is constant ({bool(cond)}): costed '{branch}'")


@register("Loop")
def loop(ins, outs, ctx):
    m = _const(ctx.values, 0)
    cond = _const(ctx.values, 1)
    if cond is not None and not cond:
        return Plan(note="initial condition is constant false: the body never runs")
    if m is not None:
        note = f"trip count {int(m)} (constant M)"
        early = len(ins) > 1 and ins[1] is not None and cond is None
        if early:
            note += "; the loop may stop earlier on its condition: an upper bound"
        return Plan(run=(("body", int(m)),), note=note, estimate=early)
    # a scan output stacks one slice per iteration run: a static leading dim is the count
    k = max(len(ins) - 2, 0)
    for i, s in enumerate(outs[k:]):
        if s is not None and s.shape and type(s.shape[0]) is int:
            name = ctx.node.outputs[k + i] if ctx.node is not None else f"#{k + i}"
            return Plan(run=(("body", s.shape[0]),),
                        note=f"trip count {s.shape[0]}: the leading dim of scan output '{name}' "
                             f"(one slice per iteration; M is not a constant)")
    trips = getattr(ctx.options, "loop_trips", None)
    if trips is not None:
        return Plan(run=(("body", int(trips)),), note=f"trip count {trips} from loop_trips")
    if ctx.node is not None and ctx.node.inputs and ctx.node.inputs[0]:
        m_name = describe_value(ctx.graph, ctx.node.inputs[0])
        what = f"the Loop's trip count M = {m_name} is not a constant"
    else:
        what = "the Loop has no trip count M: it runs until its condition turns false at run time"
    raise ShapeError(f"{what}; pass {{loop_trips}} to cost its body N times", hints=_TRIPS)


@register("SequenceMap")
def sequence_map(ins, outs, ctx):
    seq = ctx.node.inputs[0]
    el = ctx.graph.sequences.get(seq)
    if el is not None:
        return Plan(run=(("body", len(el)),), note=f"{len(el)} iterations (one per element of '{seq}')")
    trips = getattr(ctx.options, "loop_trips", None)
    if trips is not None:
        return Plan(run=(("body", int(trips)),), note=f"{trips} iterations from loop_trips")
    raise ShapeError(f"the number of elements of sequence {describe_value(ctx.graph, seq)} is only "
                     f"known at run time; pass {{loop_trips}} to cost the body N times",
                     hints=_TRIPS)


def forward_nodes(graph, xs, y: str) -> list:
    """The nodes of ``graph`` on a path from any of ``xs`` to ``y`` (graph order)."""
    prod = {o: n for n in graph.nodes for o in n.outputs if o}
    if y not in prod:
        return []
    up: set[str] = set()  # ancestors of y (node names)
    stack = [y]
    seen: set[str] = set()
    while stack:
        t = stack.pop()
        p = prod.get(t)
        if p is None or p.name in up or t in seen:
            continue
        seen.add(t)
        up.add(p.name)
        stack.extend(x for x in p.inputs if x)
    reach = set(xs)  # tensors that depend on some x
    on_path = []
    for n in graph.nodes:  # topological order
        if any(x in reach for x in n.inputs):
            reach.update(o for o in n.outputs if o)
            if n.name in up:
                on_path.append(n)
    return on_path


@register("Gradient", domain="ai.onnx.preview.training")
def gradient(ins, outs, ctx, *, xs, y):
    known = {o for n in ctx.graph.nodes for o in n.outputs if o}
    if y not in known and y not in ctx.graph.inputs:
        raise ShapeError(f"Gradient differentiates y = '{y}', which this graph does not compute")
    fwd = forward_nodes(ctx.graph, list(xs), y)
    names = ", ".join(n.name for n in fwd[:4]) + (", ..." if len(fwd) > 4 else "")
    note = (f"backward pass of {len(fwd)} forward node(s) from {list(xs)} to '{y}' ({names}): "
            f"{BACKWARD_OVER_FORWARD} x their forward counts (rule of thumb: the backward pass "
            f"does about twice the forward work)")
    if not fwd:
        return Plan(note=f"'{y}' does not depend on {list(xs)}: the gradients are zeros, no backward work")
    return Plan(note=note, work_of=((replace(ctx.graph, nodes=fwd), BACKWARD_OVER_FORWARD),),
                estimate=True)  # a rule of thumb, not the backward graph's own counts


@register("Scan")
def scan(ins, outs, ctx, *, num_scan_inputs, scan_input_axes=None, directions=None):
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
