"""The ONNX frontend: a model file, bytes or ModelProto -> ``ir.Graph``.

Weight bytes are never read (``load_external_data=False``; a model whose ``.data``
file is absent still analyses).  Steps: parse, check the structure (dangling
inputs, cycles), bind user dims, run ONNX shape inference with data propagation,
fold constant-only subgraphs, and re-infer once when folding revealed values that
shapes depend on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import onnx
from onnx import numpy_helper

from ..errors import GraphError, InputSpecError, ModelLoadError, ShapeError
from ..ir import Graph, Node, TensorSpec
from . import fold
from .onnx_types import DTYPES

# ----------------------------------------------------------------------------- loading

def read_model(model: Any) -> tuple[onnx.ModelProto, str]:
    """Parse ``model`` (path, bytes or ModelProto) without reading external weight data.

    Returns the proto (a private copy that may be modified) and a display path."""
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return _checked(m, "<ModelProto>"), "<ModelProto>"
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _checked(_parse(bytes(model), "<bytes>"), "<bytes>"), "<bytes>"
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
        return _checked(_parse(data, str(path)), str(path)), str(path)
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
    init_names = {t.name for t in g.initializer}
    real = [vi for vi in g.input if vi.name not in init_names]
    by_name = {vi.name: vi for vi in real}
    for vi in real:
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value < 0:
                raise ShapeError(f"input '{vi.name}' has a negative dim {d.dim_value} at axis {i}")
    bound: dict[str, int] = {}
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


def _read_nodes(g: onnx.GraphProto, cache: dict, available=None):
    """Every NodeProto read once into a ``Node``: the file's names (stable generated names
    ``op_index`` for unnamed nodes, ``#k`` suffixes for duplicates) and parsed attributes.

    With ``available`` (names defined before the graph runs), returns ``(nodes, in_order,
    defined)``: whether the nodes are already in a valid topological order with no tensor
    produced twice (the common case, checked in the same pass; otherwise ``_topo_order``
    sorts or explains) and every name the graph defines."""
    nodes: list[Node] = []
    seen: set[str] = set()
    check = available is not None
    defined = set(available) if check else None
    ok = True
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
        attrs, akey = _attrs(n, cache) if len(n.attribute) else (_EMPTY_MAP, ())
        ins, outs = tuple(n.input), tuple(n.output)
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
        nodes.append(Node(name, op, "" if dom == "ai.onnx" else dom, ins, outs, attrs, _EMPTY_MAP, akey))
    return (nodes, ok, defined) if check else nodes


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
    interned: dict[tuple, TensorSpec] = {}
    for name, dims, dt in [(t.name, tuple(t.dims), t.data_type) for t in g.initializer] + [
            (t.values.name, tuple(t.dims), t.values.data_type) for t in g.sparse_initializer]:
        k = (dims, dt)
        s = interned.get(k)
        if s is None:
            s = interned[k] = TensorSpec(dims, DTYPES.get(dt, "?"))
        specs[name] = s
    return specs


def _infer(m: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ShapeError(f"ONNX shape inference failed: {msg}") from None


def load(model: Any, *, inputs: Mapping[str, Any] | None = None,
         dims: Mapping[str, int] | None = None) -> tuple[Graph, dict]:
    """Load, bind, infer and fold an ONNX model. Returns the graph and model info."""
    m, path = read_model(model)
    bound = bind_inputs(m, inputs, dims)
    graph = _build(m, path)
    init_names = {t.name for t in m.graph.initializer}
    info = {
        "path": path,
        "format": "onnx",
        "inputs": {vi.name: list(graph.tensors[vi.name].shape or ()) if vi.name in graph.tensors
                   else _dims_of(vi) for vi in m.graph.input if vi.name not in init_names},
        "outputs": [vi.name for vi in m.graph.output],
        "dims": bound,
        "opset": {d.domain or "ai.onnx": d.version for d in m.opset_import},
        "producer": m.producer_name,
    }
    return graph, info


def _build(m: onnx.ModelProto, path: str) -> Graph:
    g = m.graph
    cache: dict[bytes, tuple[str, Any]] = {}
    init_names = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
    available = {vi.name for vi in g.input} | init_names
    nodes, in_order, defined = _read_nodes(g, cache, available)
    file_names = [n.name for n in nodes]  # file order (the re-inference copy keeps it)
    if not in_order:
        nodes = _topo_order(nodes, available)

    inferred = _infer(m)
    specs = _collect_specs(inferred.graph)
    _contrib_shapes(inferred, nodes, specs)
    constants, values, folded, sources = fold.fold_graph(nodes, specs, fold.initial_constants(g))

    # Folding may have computed values (Reshape targets, Expand shapes) that inference
    # could not see; give them to inference as initializers and infer once more.
    unknown = {id(v) for v in {id(v): v for v in specs.values()}.values() if _unresolved(v)}
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
            keep = [p for p, n in zip(m2.graph.node, file_names) if n not in gone]
            del m2.graph.node[:]
            m2.graph.node.extend(keep)
            m2.graph.initializer.extend(extra)
            inferred = _infer(m2)
            for k, s in _collect_specs(inferred.graph).items():
                old = specs.get(k)
                if old is None or _unknowns(old) > _unknowns(s):
                    specs[k] = s

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
    )
    if any(n.attr_key is None for n in nodes):  # only control-flow nodes have graph attributes
        _attach_subgraphs(graph, _subgraph_protos(inferred.graph), cache)
    return graph


def _contrib_shapes(inferred: onnx.ModelProto, nodes: list[Node], specs: dict) -> None:
    """Shapes for the outputs of onnxruntime contrib ops (and everything downstream), which
    ONNX inference leaves unknown: inference over a copy with shape surrogates, repeated
    while it resolves more (a surrogate may need a rank only the previous round found)."""
    from .contrib_shapes import surrogate_copy

    contrib_outs = [o for n in nodes if n.domain == "com.microsoft" for o in n.outputs if o]
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
            if old is None or _unknowns(old) > _unknowns(s):
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


def _attach_subgraphs(graph: Graph, protos: dict[str, dict[str, onnx.GraphProto]], cache) -> None:
    """Give every control-flow node its sub-graphs as ``Graph``s that see the outer scope."""
    if not protos:
        return
    for i, n in enumerate(graph.nodes):
        key = n.outputs[0] if n.outputs else n.name
        subs = protos.get(key)
        if not subs:
            continue
        built = {attr: _sub_graph(sg, graph, cache, f"{n.name}/{attr}") for attr, sg in subs.items()}
        graph.nodes[i] = n._replace(subgraphs=built)


def _sub_graph(sg: onnx.GraphProto, outer: Graph, cache, where: str) -> Graph:
    from collections import ChainMap

    local = _collect_specs(sg)
    specs = ChainMap(local, outer.tensors)
    nodes = _read_nodes(sg, cache)
    init_names = {t.name for t in sg.initializer}
    available = set(outer.tensors.keys()) | {vi.name for vi in sg.input} | init_names
    nodes = _topo_order(nodes, available)
    consts, vals = fold.initial_constants(sg)
    consts |= set(outer.constants)
    vals = {**outer.values, **vals}
    constants, values, folded, sources = fold.fold_graph(nodes, local, (consts, vals), specs)
    graph = Graph(name=where, nodes=nodes, tensors=specs,
                  inputs=tuple(vi.name for vi in sg.input), outputs=tuple(vi.name for vi in sg.output),
                  constants=frozenset(constants), values=values, folded=frozenset(folded),
                  opsets=outer.opsets, sources={**outer.sources, **sources})
    if any(n.attr_key is None for n in nodes):
        _attach_subgraphs(graph, _subgraph_protos(sg), cache)
    return graph


def _unresolved(s: TensorSpec) -> bool:
    """A spec shape inference could not finish: unknown rank, '?' dims or derived symbols."""
    return s.shape is None or any(type(d) is str and (d == "?" or d.startswith("unk__"))
                                  for d in s.shape)


def _unknowns(s: TensorSpec) -> int:
    if s.shape is None:
        return 1 << 20
    return sum(1 for d in s.shape if type(d) is not int)


