"""Rules that read their constant inputs' values (``RuleContext.values``) besides control flow, and
what that changes in the engine: their memo key holds those values, their context carries them.

Slice names its steps (``Work.kernel`` "steps=...") for a runtime whose positive-step slice is a
view (``prediction.eager_layout``); its counts never depend on them.
"""

from __future__ import annotations

from analyzer.counting.cost import RuleContext
from analyzer.ir.graph import Graph, Node

VALUE_RULES = frozenset({("", "Slice"), ("ai.onnx", "Slice")})


def memo_key(graph: Graph, node: Node, ins, outs, is_const) -> tuple:
    """What a node's record depends on: op, attributes, the (shared) spec objects, which inputs
    are constants and, for ``VALUE_RULES``, the known constant values of its inputs."""
    key = (node.op, node.domain, node.attr_key, *map(id, ins), *map(id, outs), *map(is_const, node.inputs))
    if (node.domain, node.op) not in VALUE_RULES:
        return key
    vals = []
    for x in node.inputs:
        v = graph.values.get(x) if x else None
        vals.append(None if v is None else (str(getattr(v, "dtype", "")), getattr(v, "shape", ()),
                                            v.tobytes() if hasattr(v, "tobytes") else repr(v)))
    return key + tuple(vals)


def context(graph: Graph, node: Node, ctx: RuleContext) -> RuleContext:
    """``ctx`` (the domain's) for ``node``'s rule, with ``values`` (the known constant value of
    each input) for ``VALUE_RULES``."""
    if (node.domain, node.op) not in VALUE_RULES:
        return ctx
    return RuleContext(ctx.opset, ctx.options, tuple(graph.values.get(x) if x else None for x in node.inputs))
