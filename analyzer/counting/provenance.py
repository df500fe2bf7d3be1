"""Where an unknown value or shape comes from, for error messages that say what to fix.

A count can fail because a dim is a symbol the user has not bound (``dims=`` fixes it) or
because a shape depends on a *value* only known when the model runs: reduce axes, a Range
limit, pads or a crop size fed by a graph input, a Loop's trip count.  No ``dims=`` can fix
the second kind, and the message must say so and name the value and the graph input it comes
from.  Only error paths call this module (it walks producers backwards; cost is no concern).
"""

from __future__ import annotations

from analyzer.errors import Hint, Message
from analyzer.ir.graph import Graph, Node, unresolved
from analyzer.ir.ops import facts

_SMALL = 64  # a tensor this small that steers a shape is an argument (axes, pads, a limit)
# ops whose output size is decided by the values of these (data) inputs, beyond the shape-like
# inputs their rules declare: a condition, the elements themselves, boxes and scores
_SIZE_FROM_DATA = {"Compress": (1,), "NonZero": (0,), "Unique": (0,), "NonMaxSuppression": (0, 1),
                   "StringSplit": (0,), "RegexFullMatch": (0,), "StringNormalizer": (0,),
                   "Tokenizer": (0,)}


def _producers(graph: Graph) -> dict[str, Node]:
    return {o: n for n in graph.nodes for o in n.outputs if o}


def _outer_reads(g: Graph) -> set[str]:
    """Names the sub-graph ``g`` (and its own sub-graphs) read from its enclosing scope."""
    own = set(g.inputs) | {o for n in g.nodes for o in n.outputs if o}
    reads = {x for n in g.nodes for x in n.inputs if x}
    for n in g.nodes:
        for sub in n.subgraphs.values():
            reads |= _outer_reads(sub)
    return {x for x in reads - own if x not in g.constants}


def sources(graph: Graph, name: str, prod: dict[str, Node] | None = None):
    """(inputs whose values flow into ``name``, inputs whose dims flow into it through
    Shape/Size): graph inputs (or, in a sub-graph, its formal inputs and outer-scope values)."""
    prod = _producers(graph) if prod is None else prod
    values: list[str] = []
    dims: list[str] = []
    seen: set[str] = set()
    stack = [(name, False)]
    inputs = set(graph.inputs)
    while stack:
        t, via_shape = stack.pop()
        if not t or (t, via_shape) in seen:
            continue
        seen.add((t, via_shape))
        p = prod.get(t)
        if p is None:
            if t in inputs or t not in graph.constants:
                acc = dims if via_shape else values
                if t not in acc:
                    acc.append(t)
            continue
        if p.op in ("Shape", "Size") and not p.domain:
            stack.extend((x, True) for x in p.inputs if x)
        else:
            stack.extend((x, via_shape) for x in p.inputs if x)
            for sub in p.subgraphs.values():  # a body also reads the outer scope directly
                stack.extend((x, via_shape) for x in _outer_reads(sub))
    return values, dims


def _names(xs: list[str], graph: Graph) -> str:
    inputs = set(graph.inputs)
    top = "/" not in graph.name  # a sub-graph is named 'node/attr'
    kinds = {(("graph input" if top else "body input") if x in inputs else "outer-scope value")
             for x in xs}
    kind = kinds.pop() if len(kinds) == 1 else "inputs"
    return f"{kind}{'s' if len(xs) > 1 else ''} " + ", ".join(f"'{x}'" for x in sorted(xs))


def describe_value(graph: Graph, name: str) -> str:
    """'trip_count' (graph input 'trip_count') or ''x' (computed at run time from graph
    inputs 'start', 'limit')'."""
    if name in graph.inputs:
        return f"'{name}' (a {_names([name], graph)[:-len(name) - 3]})"
    values, dims = sources(graph, name)
    if values:
        return f"'{name}' (computed at run time from {_names(values, graph)})"
    if dims:
        return f"'{name}' (computed from the unbound dims of {_names(dims, graph)})"
    return f"'{name}'"


def failed_fold(graph: Graph, node: Node) -> Message | None:
    """When an unknown shape reaching ``node`` comes from a constant computation that failed
    on its known values (``Graph.fold_errors``: e.g. an Expand that cannot broadcast a
    position table to a longer sequence), a sentence saying so; else None."""
    errors = graph.fold_errors
    if not errors:
        return None
    prod = _producers(graph)
    get = graph.tensors.get
    seen: set[str] = set()
    stack = [x for x in node.inputs if x]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        if x in errors:
            return Message(f"its input shapes are unknown because {errors[x]}: the model may "
                           f"not support these input dims (check {{dims}}/{{inputs}})",
                           (Hint("dims"), Hint("inputs")))
        p = prod.get(x)
        if p is not None and unresolved(get(x)):
            stack.extend(i for i in p.inputs if i)
    return None


def data_dependent(graph: Graph, node: Node, unbindable_only: bool = False) -> Message | None:
    """When ``node`` fails on an unknown shape that comes from a run-time value (not from an
    unbound symbolic dim), a sentence naming that value, the node whose output shape it
    decides and the graph inputs it comes from; else None."""
    prod = _producers(graph)
    get = graph.tensors.get
    cur, hops = node, 0
    while hops < 10_000:
        nxt = None
        for x in cur.inputs:
            p = prod.get(x) if x else None
            if p is not None and p.name not in graph.folded and unresolved(get(x)):
                nxt = p
                break
        if nxt is None:
            break
        cur, hops = nxt, hops + 1
    from analyzer.counting.cost import lookup

    shape_inputs = facts(cur.domain, cur.op).shape_inputs
    cands = [(i, x) for i, x in enumerate(cur.inputs)
             if x and x not in graph.values and not unresolved(get(x)) and get(x).numel() <= _SMALL]
    if shape_inputs:  # the op's facts say which inputs steer shapes
        cands = [(i, x) for i, x in cands if i in shape_inputs]
    elif lookup(cur.domain, cur.op) is not None:  # only ops whose output size is data can be steered by a value
        steer = _SIZE_FROM_DATA.get(cur.op, ())
        cands = [(i, x) for i, x in cands if i in steer]
    found = []
    for _, x in cands:
        values, _dims = sources(graph, x, prod)
        if values:
            found.append((x, values))
    if not found:
        return None
    what = "; ".join(
        f"'{x}'" + ("" if vals == [x] else f" (computed at run time from {_names(vals, graph)})")
        if x not in graph.inputs else f"{_names([x], graph)}" for x, vals in found)
    at = ("its output shape" if cur is node else
          f"its input shape is unknown because the output shape of node '{cur.name}' ({cur.op})")
    roots = sorted({v for _, vals in found for v in vals})
    numeric = all((graph.tensors.get(v) is not None and graph.tensors[v].dtype != "string") for v in roots)
    if "/" not in graph.name and numeric and all(v in graph.inputs for v in roots):
        if unbindable_only:
            return None
        hints = (Hint("values", {v: "..." for v in roots}),)
        how = "a data-dependent shape: give the value with {values}"
    else:
        hints = (Hint("inputs"), Hint("dims"))
        how = "a data-dependent shape: {inputs}/{dims} cannot bind it"
    return Message(f"{at} depends on the value of {what}, known only when the model runs ({how})",
                   hints)
