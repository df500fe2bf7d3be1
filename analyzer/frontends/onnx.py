"""The ONNX frontend: a model file, bytes or ModelProto -> ``ir.Graph``.

Weight bytes are never read (``load_external_data=False``; a model whose ``.data``
file is absent still analyses).  Steps: parse, check the structure (dangling
inputs, cycles), bind user dims, run ONNX shape inference with data propagation,
fold constant-only subgraphs, and re-infer once when folding revealed values that
shapes depend on.
"""

from __future__ import annotations

import operator
import os
from pathlib import Path
from typing import Any, Mapping

import onnx
from onnx import numpy_helper

from ..errors import GraphError, InputSpecError, ModelLoadError, ShapeError
from ..ir import Graph, Node, TensorSpec, unresolved
from . import bodies, fold, functions, sequences
from .onnx_types import DTYPES

# ----------------------------------------------------------------------------- loading

def read_model(model: Any) -> tuple[onnx.ModelProto, str, bytes | None]:
    """Parse ``model`` (path, bytes or ModelProto) without reading external weight data.

    Returns the proto (a private copy that may be modified), a display path, and the
    serialized bytes it was parsed from (None for a ModelProto)."""
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return _checked(m, "<ModelProto>"), "<ModelProto>", None
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        return _checked(_parse(data, "<bytes>"), "<bytes>"), "<bytes>", data
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        if not path.exists():
            raise ModelLoadError(f"{path}: no such file")
        if path.is_dir():
            raise ModelLoadError(f"{path}: is a directory, not an ONNX file")
        try:
            data = path.read_bytes()
        except OSError as e:
            raise ModelLoadError(f"{path}: cannot read ({e.strerror})") from None
        return _checked(_parse(data, str(path)), str(path)), str(path), data
    raise ModelLoadError(
        f"cannot analyse a {type(model).__name__}: pass a path, bytes or an onnx.ModelProto")


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    if not data:
        raise ModelLoadError(f"{where}: file is empty")
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise ModelLoadError(
            f"{where}: not an ONNX model (protobuf parse failed: {e}); truncated or another format?"
        ) from None
    return m


def _checked(m: onnx.ModelProto, where: str) -> onnx.ModelProto:
    # Random bytes can parse as a protobuf; a real model has an IR version, an opset and a graph.
    if m.ir_version <= 0 or not m.HasField("graph") or not m.opset_import:
        raise ModelLoadError(f"{where}: not an ONNX model (no IR version, opset or graph found)")
    if not m.graph.node:
        raise ModelLoadError(f"{where}: the graph has no nodes")
    return m


# ----------------------------------------------------------------------------- binding

def parse_shape(text: str, name: str = "") -> tuple[int | str, ...]:
    """'1x3x224x224' -> (1, 3, 224, 224); a non-numeric part stays a symbol."""
    parts = [p for p in text.strip().lower().replace(",", "x").split("x")]
    if not text.strip() or any(not p for p in parts):
        raise InputSpecError(f"bad shape '{text}' for input '{name}': expected e.g. 1x3x224x224")
    out: list[int | str] = []
    for p in parts:
        if p.lstrip("-").isdigit():
            v = int(p)
            if v < 0:
                raise InputSpecError(f"negative dim {v} in shape '{text}' for input '{name}'")
            out.append(v)
        else:
            out.append(p)
    return tuple(out)


def _dims_of(vi: onnx.ValueInfoProto) -> list:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return []
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]


def bind_inputs(m: onnx.ModelProto, inputs: Mapping[str, Any] | None,
                dims: Mapping[str, int] | None) -> dict[str, int]:
    """Write user shapes and dim values into the graph inputs before inference.

    Returns the dims that were bound (for the report)."""
    g = m.graph
    for vi in g.input:
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value < 0:
                raise ShapeError(f"input '{vi.name}' has a negative dim {d.dim_value} at axis {i}")
    bound: dict[str, int] = {}
    if not inputs and not dims:
        return bound
    init_names = {t.name for t in g.initializer}
    real = [vi for vi in g.input if vi.name not in init_names]
    by_name = {vi.name: vi for vi in real}
    for name, shape in (inputs or {}).items():
        if name not in by_name:
            raise InputSpecError(
                f"--input names '{name}', but the model's inputs are: {', '.join(by_name) or 'none'}")
        if isinstance(shape, str):
            shape = parse_shape(shape, name)
        shape = tuple(shape)
        t = by_name[name].type.tensor_type
        old = t.shape.dim
        if len(old) and len(old) != len(shape):
            raise InputSpecError(
                f"input '{name}' has rank {len(old)} {_dims_of(by_name[name])}, "
                f"but --input gives {len(shape)} dims {list(shape)}")
        for d_old, v in zip(old, shape):
            if isinstance(v, int) and d_old.HasField("dim_param") and d_old.dim_param:
                bound[d_old.dim_param] = v
        t.shape.ClearField("dim")
        for v in shape:
            d = t.shape.dim.add()
            if isinstance(v, int):
                if v < 0:
                    raise InputSpecError(f"negative dim {v} for input '{name}'")
                d.dim_value = v
            else:
                d.dim_param = v
    if dims:
        known = {d.dim_param for vi in real for d in vi.type.tensor_type.shape.dim if d.dim_param}
        for k, v in dims.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InputSpecError(f"--dim {k}={v}: the value must be a non-negative integer")
            if k not in known:
                raise InputSpecError(
                    f"--dim names '{k}', but the model's symbolic dims are: "
                    f"{', '.join(sorted(known)) or 'none (all input dims are fixed)'}")
        for vi in real:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param in dims:
                    v = dims[d.dim_param]
                    bound[d.dim_param] = v
                    d.dim_value = v
    return bound


# ----------------------------------------------------------------------------- structure

def _attrs(n: onnx.NodeProto, cache: dict[bytes, tuple[str, Any]]) -> tuple[dict[str, Any], Any]:
    """A node's attributes as Python values, parsed once per distinct attribute, and a
    hashable key of them (None when a sub-graph attribute makes the node unique)."""
    out = {}
    keys = []
    for a in n.attribute:
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            out[a.name] = _attr_value(a)
            keys = None
            continue
        key = a.SerializeToString()
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = (a.name, _attr_value(a))
        out[hit[0]] = hit[1]
        if keys is not None:
            keys.append(key)
    return out, (tuple(keys) if keys is not None else None)


def _attr_value(a: onnx.AttributeProto):
    if a.type == onnx.AttributeProto.GRAPH:
        return a.g
    if a.type == onnx.AttributeProto.GRAPHS:
        return list(a.graphs)
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, list) and v and isinstance(v[0], bytes):
        return [x.decode("utf-8", "replace") for x in v]
    return v


def _read_nodes(g: onnx.GraphProto, cache: dict, available=None, available_constants=()):
    """Every NodeProto read once into a ``Node``: the file's names (stable generated names
    ``op_index`` for unnamed nodes, ``#k`` suffixes for duplicates) and parsed attributes.

    With ``available`` (names defined before the graph runs; the initializers among them in
    ``available_constants``), returns ``(nodes, in_order, defined, fold_candidates)``: whether
    the nodes are already in a valid topological order with no tensor produced twice (the
    common case, checked in the same pass; otherwise ``_topo_order`` sorts or explains),
    every name the graph defines, and the nodes that might fold (a foldable op whose inputs
    might all be constant: a superset of what ``fold.fold_graph`` folds, in file order)."""
    nodes: list[Node] = []
    seen: set[str] = set()
    check = available is not None
    defined = set(available) if check else None
    maybe_const = set(available_constants) if check else None
    candidates: list[Node] = []
    foldable = fold.FOLDABLE
    always = ("Constant", "Shape", "Size")  # fold on their own (Shape/Size: a static input)
    ok = True
    new = tuple.__new__
    for i, n in enumerate(g.node):
        op = n.op_type
        name = n.name or f"{op}_{i}"
        if name in seen:
            base, k = name, 1
            while name in seen:
                k += 1
                name = f"{base}#{k}"
        seen.add(name)
        dom = n.domain
        if dom == "ai.onnx":
            dom = ""
        attrs, akey = _attrs(n, cache) if len(n.attribute) else (_EMPTY_MAP, ())
        ins, outs = tuple(n.input), tuple(n.output)
        node = new(Node, (name, op, dom, ins, outs, attrs, _EMPTY_MAP, akey))
        nodes.append(node)
        if check:
            if ok:
                for x in ins:
                    if x and x not in defined:
                        ok = False
                        break
            for o in outs:
                if o:
                    if o in defined:
                        ok = False
                    defined.add(o)
            if op in foldable and not dom and (op in always or all(
                    not x or x in maybe_const for x in ins)):
                candidates.append(node)
                maybe_const.update(outs)
    return (nodes, ok, defined, candidates) if check else nodes


def _topo_order(nodes: list[Node], available) -> list[Node]:
    """The nodes in topological order; raises ``GraphError`` naming a dangling input or a cycle.

    ``available``: names defined before the graph runs (inputs, initializers, outer scope)."""
    produced_by: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for o in n.outputs:
            if not o:
                continue
            if o in produced_by or o in available:
                raise GraphError(f"tensor '{o}' is produced twice (again by node '{n.name}' ({n.op}))")
            produced_by[o] = i
    # One pass checks for dangling inputs and whether the file is already in topological
    # order (the ONNX spec requires it); only an unordered file pays for a sort.
    in_order = True
    for i, n in enumerate(nodes):
        for x in n.inputs:
            if not x or x in available:
                continue
            j = produced_by.get(x)
            if j is None:
                raise GraphError(
                    f"node '{n.name}' ({n.op}) reads '{x}', which no node, graph input or "
                    f"initializer produces")
            if j >= i:
                in_order = False
    if in_order:
        return nodes
    import networkx as nx

    dg = nx.DiGraph()
    dg.add_nodes_from(range(len(nodes)))
    dg.add_edges_from((produced_by[x], i) for i, n in enumerate(nodes) for x in n.inputs
                      if x in produced_by)
    try:
        return [nodes[i] for i in nx.lexicographical_topological_sort(dg)]
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(dg)
        path = " -> ".join(f"'{nodes[a].name}'" for a, _ in cycle) + f" -> '{nodes[cycle[0][0]].name}'"
        raise GraphError(f"the graph has a cycle: {path}") from None


# ----------------------------------------------------------------------------- specs

_MISSING = object()
_DOMAIN = operator.attrgetter("domain")
_OP = operator.attrgetter("op")
_EMPTY_MAP: Mapping[str, Any] = {}


def _spec_of_type(tp: onnx.TypeProto) -> TensorSpec | None:
    if tp.WhichOneof("value") != "tensor_type":
        return None
    t = tp.tensor_type
    dtype = DTYPES.get(t.elem_type, "?")
    if not t.HasField("shape"):
        return TensorSpec(None, dtype)
    return TensorSpec(tuple(d.dim_value if d.WhichOneof("value") == "dim_value" else (d.dim_param or "?")
                            for d in t.shape.dim), dtype)


def _collect_specs(g: onnx.GraphProto) -> dict[str, TensorSpec]:
    """Specs of the graph's inputs, value_info and outputs (initializers: ``_initializers``)."""
    specs: dict[str, TensorSpec] = {}
    # Large graphs repeat a few hundred distinct types many thousand times: parse each
    # distinct serialized TypeProto once (field access from Python is the slow part).
    seen: dict[bytes, TensorSpec | None] = {}
    for part in (g.input, g.value_info, g.output):
        for vi in part:
            tp = vi.type
            key = tp.SerializeToString()
            s = seen.get(key, _MISSING)
            if s is _MISSING:
                s = seen[key] = _spec_of_type(tp)
            if s is not None:
                specs[vi.name] = s
    return specs


def _initializers(g: onnx.GraphProto) -> tuple[dict[str, TensorSpec], dict]:
    """One pass over the initializers: {name: spec} and the values of the small ones that
    can steer shapes (``fold.small_value``); weight data is never converted."""
    specs: dict[str, TensorSpec] = {}
    values: dict = {}
    interned: dict[tuple, TensorSpec] = {}
    small = fold.small_value
    for t in g.initializer:
        k = (tuple(t.dims), t.data_type)
        s = interned.get(k)
        if s is None:
            s = interned[k] = TensorSpec(k[0], DTYPES.get(k[1], "?"))
        specs[t.name] = s
        if s._numel <= fold.SMALL_ELEMENTS:
            v = small(t)
            if v is not None:
                values[t.name] = v
    for st in g.sparse_initializer:
        t = st.values
        specs[t.name] = TensorSpec(tuple(t.dims), DTYPES.get(t.data_type, "?"))
    return specs, values


def _infer(m: onnx.ModelProto, data: bytes | None = None) -> onnx.ModelProto:
    """ONNX shape inference with data propagation. ``data``: ``m`` already serialized (the
    file's own bytes), handed to the C++ inference as they are instead of serializing again.
    Only the graph structure travels: weights stay external and are never read, so a model
    whose external data is far above protobuf's 2 GB limit infers like any other."""
    try:
        return onnx.shape_inference.infer_shapes(m if data is None else data, check_type=False,
                                                 strict_mode=False, data_prop=True)
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ShapeError(f"ONNX shape inference failed: {msg}") from None


def load(model: Any, *, inputs: Mapping[str, Any] | None = None,
         dims: Mapping[str, int] | None = None) -> tuple[Graph, dict]:
    """Load, bind, infer and fold an ONNX model. Returns the graph and model info."""
    m, path, data = read_model(model)
    bound = bind_inputs(m, inputs, dims)
    # binding edits the graph inputs: then inference must see the edited proto
    graph = _build(m, path, None if (inputs or dims) else data)
    real = set(graph.inputs)  # graph inputs that are not initializers
    info = {
        "path": path,
        "format": "onnx",
        "inputs": {vi.name: list(graph.tensors[vi.name].shape or ()) if vi.name in graph.tensors
                   else _dims_of(vi) for vi in m.graph.input if vi.name in real},
        "outputs": [vi.name for vi in m.graph.output],
        "dims": bound,
        "opset": {d.domain or "ai.onnx": d.version for d in m.opset_import},
        "producer": m.producer_name,
    }
    return graph, info


def _build(m: onnx.ModelProto, path: str, data: bytes | None = None, expanded: bool = False) -> Graph:
    """The Graph of ``m``; ``data``: ``m`` serialized, when the caller has it already.
    ``expanded``: function ops were already decomposed (``functions``), or must not be."""
    g = m.graph
    cache: dict[bytes, tuple[str, Any]] = {}
    init_specs, init_values = _initializers(g)
    init_names = init_specs.keys()
    available = {vi.name for vi in g.input} | init_names
    nodes, in_order, defined, candidates = _read_nodes(g, cache, available, init_names)
    ops = set(map(_OP, nodes))  # every op name of the graph: decides the rare passes below
    if not expanded and functions.wanted(m, nodes, ops):  # function ops without a rule (rare)
        return functions.build_decomposed(m, lambda x: _build(x, path, data if x is m else None, True))
    file_nodes = nodes  # file order (the re-inference copy keeps it)
    if not in_order:
        nodes = _topo_order(nodes, available)
        candidates = nodes  # file-order candidates would miss a constant produced later

    inferred = _infer(m, data)
    specs = _collect_specs(inferred.graph)
    specs.update(init_specs)
    _contrib_shapes(inferred, nodes, specs, ops)
    constants, values, folded, sources = fold.fold_graph(candidates, specs, (set(init_names), init_values))

    # Folding may have computed values (Reshape targets, Expand shapes) that inference
    # could not see; give them to inference as initializers and infer once more.
    unknown = {id(v) for v in {id(v): v for v in specs.values()}.values() if v.unresolved}
    missing = bool(defined.difference(specs.keys()))  # a node output with no spec at all
    if (missing or unknown) and any(o and (o not in specs or id(specs[o]) in unknown)
                                    for n in nodes if n.name not in folded for o in n.outputs):
        extra = [numpy_helper.from_array(v, name=k) for k, v in values.items() if k not in init_names]
        if extra:
            m2 = onnx.ModelProto()
            m2.CopyFrom(m)
            # drop only folded nodes whose outputs all became initializers; a folded node
            # without a known value (a Gather from a weight table) must still produce its output
            gone = {n.name for n in nodes if n.name in folded and all(o in values for o in n.outputs if o)}
            keep = [p for p, n in zip(m2.graph.node, file_nodes) if n.name not in gone]
            del m2.graph.node[:]
            m2.graph.node.extend(keep)
            m2.graph.initializer.extend(extra)
            inferred = _infer(m2)
            for k, s in _collect_specs(inferred.graph).items():
                old = specs.get(k)
                if old is None or old.unknowns > s.unknowns:
                    specs[k] = s

    # after re-inference: adds SequenceLength values
    seqs = {} if sequences.OPS.isdisjoint(ops) else sequences.follow(nodes, specs, values)
    graph = Graph(
        name=g.name or Path(path).stem,
        nodes=nodes,
        tensors=specs,
        inputs=tuple(vi.name for vi in g.input if vi.name not in init_names),
        outputs=tuple(vi.name for vi in g.output),
        constants=frozenset(constants),
        values=values,
        folded=frozenset(folded),
        opsets={d.domain or "": d.version for d in m.opset_import},
        sources=sources,
        sequences=seqs,
    )
    if any(n.attr_key is None for n in nodes):  # only control-flow nodes have graph attributes
        _attach_subgraphs(graph, _subgraph_protos(inferred.graph), cache)
        again = _control_outputs(graph, inferred)
        if again is not None:  # outer specs changed: bodies reading them are typed again
            _attach_subgraphs(graph, _subgraph_protos(again.graph), cache)
    return graph


def _contrib_shapes(inferred: onnx.ModelProto, nodes: list[Node], specs: dict, ops: set[str]) -> None:
    """Shapes for the outputs of onnxruntime contrib ops (and everything downstream), which
    ONNX inference leaves unknown: inference over a copy with shape surrogates, repeated
    while it resolves more (a surrogate may need a rank only the previous round found)."""
    from .contrib_shapes import MS, ORT_DEFAULT_DOMAIN, is_ort_op, surrogate_copy

    # the common case (no onnxruntime op at all) decided by two C-level passes
    if MS not in set(map(_DOMAIN, nodes)) and ORT_DEFAULT_DOMAIN.isdisjoint(ops):
        return
    contrib_outs = [o for n in nodes if is_ort_op(n.domain, n.op) for o in n.outputs if o]
    base = inferred
    for _ in range(4):
        needs = {o for o in contrib_outs if o not in specs}
        if not needs:
            return
        sub = surrogate_copy(base, needs)
        if sub is None:
            return
        m2, dtypes = sub
        base = _infer(m2)
        for k, s in _collect_specs(base.graph).items():
            if k in dtypes:
                s = TensorSpec(s.shape, DTYPES.get(dtypes[k], s.dtype))
            old = specs.get(k)
            if old is None or old.unknowns > s.unknowns:
                specs[k] = s
        if {o for o in contrib_outs if o not in specs} == needs:
            return  # no progress


def _subgraph_protos(g: onnx.GraphProto) -> dict[str, dict[str, onnx.GraphProto]]:
    """Sub-graphs of the control-flow nodes of ``g`` (the shape-inferred copy, whose
    sub-graphs carry value_info), keyed by node output name (stable across copies)."""
    out: dict[str, dict[str, onnx.GraphProto]] = {}
    for n in g.node:
        subs = {a.name: a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH}
        if subs:
            out[n.output[0] if n.output else n.name] = subs
    return out


def _attach_subgraphs(graph: Graph, protos: dict[str, dict[str, onnx.GraphProto]], cache,
                      scope=None) -> None:
    """Give every control-flow node its sub-graphs as ``Graph``s that see the outer scope.

    ``scope``: every name the sub-graphs may read from outside (default: the graph's tensors,
    inputs and node outputs; a sequence or optional has no spec but is visible all the same).
    A body's formal inputs get the specs its node implies (``bodies.implied_inputs``)."""
    if not protos:
        return
    if scope is None:
        scope = set(graph.tensors.keys()) | set(graph.inputs) | {
            o for n in graph.nodes for o in n.outputs if o}
    for i, n in enumerate(graph.nodes):
        key = n.outputs[0] if n.outputs else n.name
        subs = protos.get(key)
        if not subs:
            continue
        implied = bodies.implied_inputs(n, graph)
        built = {attr: _sub_graph(sg, graph, cache, f"{n.name}/{attr}", scope, n,
                                  implied if attr == "body" else None)
                 for attr, sg in subs.items()}
        graph.nodes[i] = n._replace(subgraphs=built)


def _sub_graph(sg: onnx.GraphProto, outer: Graph, cache, where: str, scope=None, node=None,
               implied=None) -> Graph:
    from collections import ChainMap

    local = _collect_specs(sg)
    init_specs, init_values = _initializers(sg)
    local.update(init_specs)
    nested = _typed_body(sg, local, outer, node, implied) or sg
    specs = ChainMap(local, outer.tensors)
    nodes = _read_nodes(sg, cache)
    available = set(outer.tensors.keys() if scope is None else scope) | {
        vi.name for vi in sg.input} | init_specs.keys()
    nodes = _topo_order(nodes, available)
    consts = set(init_specs) | outer.constants
    vals = {**outer.values, **init_values}
    constants, values, folded, sources = fold.fold_graph(nodes, local, (consts, vals), specs)
    seqs = sequences.follow(nodes, local, values, outer.sequences, specs)
    graph = Graph(name=where, nodes=nodes, tensors=specs,
                  inputs=tuple(vi.name for vi in sg.input), outputs=tuple(vi.name for vi in sg.output),
                  constants=frozenset(constants), values=values, folded=frozenset(folded),
                  opsets=outer.opsets, sources={**outer.sources, **sources},
                  sequences=ChainMap(seqs, outer.sequences) if seqs else outer.sequences)
    if any(n.attr_key is None for n in nodes):
        _attach_subgraphs(graph, _subgraph_protos(nested), cache,
                          available | {o for n in nodes for o in n.outputs if o})
    return graph


def _control_outputs(graph: Graph, inferred: onnx.ModelProto):
    """Outputs of Loop/Scan nodes that outer inference left unresolved (it typed the body
    less well than ``_typed_body`` did) get the specs their body implies; when any did, the
    outer graph is inferred once more with them, so the nodes downstream resolve too.
    Returns that inferred model, or None when nothing changed."""
    specs = graph.tensors
    hints: dict[str, TensorSpec] = {}
    for n in graph.nodes:
        if not n.subgraphs:
            continue
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
        again = _infer(m)
    except ShapeError:
        return None
    for k, s in _collect_specs(again.graph).items():
        old = specs.get(k)
        if old is None or old.unknowns > s.unknowns:
            specs[k] = s
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
        new = _collect_specs(inferred)
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
    for k, s in new.items():
        if k in own:
            old = local.get(k)
            if old is None or old.unknowns > s.unknowns:
                local[k] = s
    for k, s in declared.items():  # an input typed once but given back (drift)
        if k not in typed and s is not None:
            local[k] = s
    return inferred




