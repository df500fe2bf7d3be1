"""Control-flow sub-graphs (If/Loop/Scan bodies) as ``Graph``s that see their outer scope.

Body inputs take the specs their outer node implies (``bodies.implied_inputs``) where the
file leaves them untyped; a body is then re-inferred on its own, with the outer values it
reads given as initializers, and Loop/Scan outputs get the specs their body implies.
"""

from __future__ import annotations

import onnx

from analyzer.errors import ShapeError
from analyzer.ir.graph import Graph, TensorSpec, merge_specs, unresolved
from analyzer.frontends.onnx import bodies
from analyzer.frontends.onnx import fold
from analyzer.frontends.onnx import sequences
from analyzer.frontends.onnx.read import (collect_specs, infer_model, newer_ops, read_initializers, read_nodes,
                                          topo_order)

_FOLD_ROUNDS = 16  # fold -> infer rounds inside one body (each must resolve a spec)


def subgraph_protos(g: onnx.GraphProto) -> dict[str, dict[str, onnx.GraphProto]]:
    """Sub-graphs of the control-flow nodes of ``g`` (the shape-inferred copy, whose
    sub-graphs carry value_info), keyed by node output name (stable across copies)."""
    out: dict[str, dict[str, onnx.GraphProto]] = {}
    for n in g.node:
        subs = {a.name: a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH}
        if subs:
            out[n.output[0] if n.output else n.name] = subs
    return out


def _key(n) -> str:
    return n.outputs[0] if n.outputs else n.name


def unsettled(graph: Graph) -> set[str]:
    """The control-flow nodes (keys of ``subgraph_protos``) with an input or output that
    has no resolved spec, or whose bodies imply outputs that know more than the outer specs
    (an exporter's declared ``Ifout_dim_0`` where both branches give 1): typing their bodies
    again, or their outputs from their bodies, may still resolve something."""
    get = graph.tensors.get
    return {_key(n) for n in graph.nodes if n.subgraphs
            and (any(unresolved(get(x)) for x in (*n.inputs, *n.outputs) if x)
                 or _better_outputs(n, graph))}


def _better_outputs(n, graph: Graph) -> bool:
    get = graph.tensors.get
    return any(o and s is not None and (old := get(o)) is not None and old.unknowns > s.unknowns
               for o, s in zip(n.outputs, bodies.implied_outputs(n, graph) or ()))


def attach_subgraphs(graph: Graph, protos: dict[str, dict[str, onnx.GraphProto]], cache,
                      scope=None, only: set[str] | None = None) -> None:
    """Give every control-flow node (of ``only``, when given) its sub-graphs as ``Graph``s
    that see the outer scope.

    ``scope``: every name the sub-graphs may read from outside (default: the graph's tensors,
    inputs and node outputs; a sequence or optional has no spec but is visible all the same).
    A body's formal inputs get the specs its node implies (``bodies.implied_inputs``)."""
    if not protos:
        return
    if scope is None:
        scope = _scope(graph)
    for i, n in enumerate(graph.nodes):
        key = _key(n)
        subs = protos.get(key)
        if subs and (only is None or key in only):
            _attach_one(graph, i, subs, cache, scope)


def _scope(graph: Graph) -> set[str]:
    return set(graph.tensors.keys()) | set(graph.inputs) | {
        o for n in graph.nodes for o in n.outputs if o}


def _attach_one(graph: Graph, i: int, subs: dict[str, onnx.GraphProto], cache, scope) -> None:
    n = graph.nodes[i]
    implied = bodies.implied_inputs(n, graph)
    built = {attr: _sub_graph(sg, graph, cache, f"{n.name}/{attr}", scope, n,
                              implied if attr == "body" else None)
             for attr, sg in subs.items()}
    graph.nodes[i] = n._replace(subgraphs=built)


def _sub_graph(sg: onnx.GraphProto, outer: Graph, cache, where: str, scope=None, node=None,
               implied=None) -> Graph:
    from collections import ChainMap

    local = collect_specs(sg)
    init_specs, init_values = read_initializers(sg)
    local.update(init_specs)
    nested = _typed_body(sg, local, outer, node, implied) or sg
    specs = ChainMap(local, outer.tensors)
    nodes = read_nodes(sg, cache)
    available = set(outer.tensors.keys() if scope is None else scope) | {
        vi.name for vi in sg.input} | init_specs.keys()
    nodes = topo_order(nodes, available, {vi.name for vi in sg.input} | init_specs.keys())
    consts = set(init_specs) | outer.constants
    vals = {**outer.values, **init_values}
    control = any(n.attr_key is None for n in nodes)
    seen = available | {o for n in nodes for o in n.outputs if o}
    hints: dict[str, TensorSpec] = {}  # outputs of nested control nodes, typed from their bodies
    pending = None  # the nested control nodes to type again (None: all, the first round)
    for _ in range(_FOLD_ROUNDS):
        constants, values, folded, sources = fold.fold_graph(nodes, local, (consts, vals), specs)
        for _ in range(_FOLD_ROUNDS):  # folded values the body's inference could not see
            better = _infer_with_folded(sg, local, outer, nodes, values, init_values, hints)
            if better is None:
                break
            nested = better
            constants, values, folded, sources = fold.fold_graph(nodes, local, (consts, vals), specs)
        seqs = sequences.follow(nodes, local, values, outer.sequences, specs)
        graph = Graph(name=where, nodes=nodes, tensors=specs,
                      inputs=tuple(vi.name for vi in sg.input), outputs=tuple(vi.name for vi in sg.output),
                      constants=frozenset(constants), values=values, folded=frozenset(folded),
                      opsets=outer.opsets, sources={**outer.sources, **sources},
                      sequences=ChainMap(seqs, outer.sequences) if seqs else outer.sequences,
                      is_body=True, newer_ops=newer_ops(nodes, outer.opsets))
        if not control:
            break
        # after the first round, only the nested nodes whose bodies may now see more (those
        # after a settled If); the others keep the bodies built (``nodes`` is shared)
        if pending is None or (pending := unsettled(graph)):
            attach_subgraphs(graph, subgraph_protos(nested), cache, seen, only=pending)
        pending = set()
        # an If nested here whose condition folded (a rank or batch test of an exporter) has
        # its taken branch's outputs, which ONNX inference (merging both branches, of other
        # ranks) leaves unknown: give them to the body's inference, and the nodes after it
        # resolve (silero-VAD's LSTM behind 'If rank == 2: Unsqueeze')
        more = _nested_outputs(graph, local)
        if not more:
            break
        hints.update(more)
        local.update(more)
        again = _infer_with_folded(sg, local, outer, nodes, values, init_values, hints, force=True)
        if again is not None:
            nested = again
    return graph


def _nested_outputs(graph: Graph, local: dict) -> dict[str, TensorSpec]:
    """The outputs of the control-flow nodes of ``graph`` whose bodies imply more than
    ``local`` has (``bodies.implied_outputs``)."""
    out: dict[str, TensorSpec] = {}
    for n in graph.nodes:
        if not n.subgraphs:
            continue
        for o, s in zip(n.outputs, bodies.implied_outputs(n, graph) or ()):
            old = local.get(o)
            if o and s is not None and (old is None or old.unknowns > s.unknowns):
                out[o] = s
    return out


def _infer_with_folded(sg: onnx.GraphProto, local: dict, outer: Graph, nodes, values,
                       init_values, hints=None, force: bool = False) -> onnx.GraphProto | None:
    """While a tensor the body computes is unresolved, infer the body alone again with the
    values folding computed inside it (``bodies.infer``): an STFT's pads built from a shape,
    a Reshape target; ``hints``: specs of nested control-flow outputs, typed from their
    bodies.  Better specs go into ``local``; returns the inferred body, or None when nothing
    is open, there is nothing to give, or nothing improved (``force``: whenever inference
    ran, new ``hints`` being the improvement)."""
    own = {o for n in nodes for o in n.outputs if o}
    if not force and not any(unresolved(local.get(o)) for o in own):
        return None
    given = {k: v for k, v in values.items() if k in own and k not in init_values}
    if not given and not hints:
        return None
    typed = {vi.name: local[vi.name] for vi in sg.input if local.get(vi.name) is not None}
    inferred = bodies.infer(sg, typed, outer, given, hints)
    if inferred is None:
        return None
    if not merge_specs(local, collect_specs(inferred), own) and not force:
        return None
    return inferred


def control_outputs(graph: Graph, inferred: onnx.ModelProto, cache):
    """Outputs of Loop/Scan nodes that outer inference left unresolved (it typed the body
    less well than ``_typed_body`` did) get the specs their body implies, in topological
    order: a control node fed directly by one resolved earlier in the pass has its bodies
    typed again first, so a chain of them resolves in one pass.  When anything changed, the
    outer graph is inferred once more, so the plain nodes downstream resolve too.
    Returns that inferred model, or None when nothing changed."""
    specs = graph.tensors
    hints: dict[str, TensorSpec] = {}
    protos = scope = None
    for i, n in enumerate(graph.nodes):
        if not n.subgraphs:
            continue
        if hints and any(x in hints for x in n.inputs):
            if protos is None:
                protos, scope = subgraph_protos(inferred.graph), _scope(graph)
            _attach_one(graph, i, protos[_key(n)], cache, scope)
            n = graph.nodes[i]
        for o, s in zip(n.outputs, bodies.implied_outputs(n, graph) or ()):
            old = specs.get(o)
            if o and s is not None and old is not None and old.unknowns > s.unknowns:
                hints[o] = specs[o] = s
    if not hints:
        return None
    m = onnx.ModelProto()
    m.CopyFrom(inferred)
    for vi in list(m.graph.value_info) + list(m.graph.output):
        if vi.name in hints:
            vi.type.CopyFrom(bodies._type(hints[vi.name]))
    try:
        again = infer_model(m)
    except ShapeError:
        return None
    merge_specs(specs, collect_specs(again.graph))
    return again


def _typed_body(sg: onnx.GraphProto, local: dict, outer: Graph, node, implied):
    """Type the body's formal inputs as its node implies (where that is more resolved than
    the file's declaration) and, when that changed anything or a body tensor is unresolved,
    infer the body alone (``bodies.infer``); better specs go into ``local``. Returns the
    inferred body (whose nested sub-graphs carry the new types), or None."""
    typed: dict[str, TensorSpec] = {}
    for vi, s in zip(sg.input, implied or ()):
        old = local.get(vi.name)
        if s is not None and (old is None or old.unknowns > s.unknowns):
            typed[vi.name] = s
    if not typed and all(o in local and not unresolved(local[o])
                         for n in sg.node for o in n.output if o):
        return None
    declared = {k: local.get(k) for k in typed}
    for _ in range(2):
        inferred = bodies.infer(sg, typed, outer)
        if inferred is None:
            return None
        new = collect_specs(inferred)
        if node is not None and node.op == "Loop":
            # a carried value must come back with the spec it went in with; one that changes
            # from trip to trip has no single spec and keeps its declared one
            outs = list(sg.output)[1:]
            drift = [vi.name for vi, o in zip(list(sg.input)[2:], outs)
                     if vi.name in typed and (s := new.get(o.name)) is not None
                     and not s.unresolved and s.shape != typed[vi.name].shape]
            if drift:
                for k in drift:
                    del typed[k]
                continue
        break
    own = {vi.name for vi in sg.input} | {o for n in sg.node for o in n.output if o}
    merge_specs(local, new, own)
    for k, s in declared.items():  # an input typed once but given back (drift)
        if k not in typed and s is not None:
            local[k] = s
    return inferred
