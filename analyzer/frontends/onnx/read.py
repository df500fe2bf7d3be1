"""Reading ONNX protos into the IR: nodes (names, parsed attributes, order checks), tensor
specs from (inferred) value_info and initializers, and ONNX shape inference itself.

Python-level protobuf access is the slow part of loading a large graph: every field is
read once, distinct attributes and types are parsed once (keyed by their serialized bytes),
and the checks the frontend needs (topological order, fold candidates) ride on the same pass.
"""

from __future__ import annotations

import operator
from typing import Any, Mapping

import onnx

from analyzer.errors import GraphError, ShapeError
from analyzer.ir.graph import Node, TensorSpec
from analyzer.frontends.onnx import fold
from analyzer.frontends.onnx.types import DTYPES

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


def unique_name(name: str, seen) -> str:
    """``name`` made unique among ``seen``: the file's k-th node of one name is ``name~k``.
    (Unnamed nodes are ``op_index``: with this, the names every part of opcost gives.)"""
    base, k = name, 1
    while name in seen:
        k += 1
        name = f"{base}~{k}"
    return name


def strip_constant(n: onnx.NodeProto) -> bool:
    """Drop the bytes of a Constant node's ``value`` too big to steer shapes (over
    ``fold.SMALL_ELEMENTS`` elements; dims and dtype stay), in place, as ``read_initializers``
    does for initializers: neither attribute parsing nor shape inference then copies a
    100 MB constant.  True when it stripped something."""
    for a in n.attribute:
        if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
            t = a.t
            numel = 1
            for d in t.dims:
                numel *= d
            if numel > fold.SMALL_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL:
                _strip(t)
                return True
        elif a.name in _LIST_VALUES and a.type == _LIST_VALUES[a.name][0]:
            # value_floats / value_ints / value_strings: a 1-D tensor written as a list
            # (25 million floats were 2.4 GB as Python floats): the same tensor, stripped
            _, field, dtype = _LIST_VALUES[a.name]
            numel = len(getattr(a, field))
            if numel > fold.SMALL_ELEMENTS:
                a.Clear()
                a.name, a.type = "value", onnx.AttributeProto.TENSOR
                a.t.dims.append(numel)
                a.t.data_type = dtype
                _strip(a.t)
                return True
    return False


_LIST_VALUES = {"value_floats": (onnx.AttributeProto.FLOATS, "floats", onnx.TensorProto.FLOAT),
                "value_ints": (onnx.AttributeProto.INTS, "ints", onnx.TensorProto.INT64),
                "value_strings": (onnx.AttributeProto.STRINGS, "strings", onnx.TensorProto.STRING)}


def strip_bodies(n: onnx.NodeProto) -> bool:
    """``strip_constant`` and the initializer stripping of ``read_initializers`` for every
    sub-graph of ``n`` (If branches, Loop/Scan bodies, at any depth), in place, before shape
    inference copies them.  True when anything was stripped."""
    stripped = False
    for a in n.attribute:
        subs = [a.g] if a.type == onnx.AttributeProto.GRAPH else (
            list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else [])
        for g in subs:
            for t in g.initializer:
                numel = 1
                for d in t.dims:
                    numel *= d
                if numel > fold.SMALL_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL:
                    _strip(t)
                    stripped = True
            for m in g.node:
                if m.op_type == "Constant":
                    stripped |= strip_constant(m)
                elif len(m.attribute):
                    stripped |= strip_bodies(m)
    return stripped


def _strip(t: onnx.TensorProto) -> None:
    for f in _DATA_FIELDS:
        t.ClearField(f)
    t.data_location = onnx.TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "(weights inline in the file; not read by opcost)"


def read_nodes(g: onnx.GraphProto, cache: dict, available=None, available_constants=(),
               stripped: list | None = None, renamed: dict | None = None):
    """Every NodeProto read once into a ``Node``: the file's names (stable generated names
    ``op_index`` for unnamed nodes, ``~k`` suffixes for duplicates) and parsed attributes.

    With ``available`` (names defined before the graph runs; the initializers among them in
    ``available_constants``), returns ``(nodes, in_order, defined, fold_candidates)``: whether
    the nodes are already in a valid topological order with no tensor produced twice (the
    common case, checked in the same pass; otherwise ``topo_order`` sorts or explains),
    every name the graph defines, and the nodes that might fold (a foldable op whose inputs
    might all be constant: a superset of what ``fold.fold_graph`` folds, in file order).
    Big Constant values are stripped in place (``strip_constant``); ``stripped`` receives the
    names of their outputs; ``renamed`` receives {unique name: file name} for the nodes whose
    file name another node has already."""
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
            name = unique_name(name, seen)
            if renamed is not None:
                renamed[name] = n.name
        seen.add(name)
        dom = n.domain
        if dom == "ai.onnx":
            dom = ""
        if op == "Constant" and strip_constant(n) and stripped is not None:
            stripped.extend(n.output)
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
            if op in foldable and not dom and (op in always or (
                    # the first input rejects most runtime nodes before the generator starts
                    (not ins or not ins[0] or ins[0] in maybe_const)
                    and all(not x or x in maybe_const for x in ins))):
                candidates.append(node)
                maybe_const.update(outs)
    return (nodes, ok, defined, candidates) if check else nodes


def topo_order(nodes: list[Node], available, own=None) -> list[Node]:
    """The nodes in topological order; raises ``GraphError`` naming a dangling input or a cycle.

    ``available``: names defined before the graph runs (inputs, initializers, outer scope);
    ``own``: those of them the graph defines itself (default: all), which no node may produce
    again: a control-flow body may produce a name of its outer scope (it shadows it, as the
    ONNX checker and onnxruntime accept)."""
    own = available if own is None else own
    produced_by: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for o in n.outputs:
            if not o:
                continue
            if o in produced_by or o in own:
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
DOMAIN_OF = operator.attrgetter("domain")
OP_OF = operator.attrgetter("op")
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


def collect_specs(g: onnx.GraphProto) -> dict[str, TensorSpec]:
    """Specs of the graph's inputs, value_info and outputs (initializers: ``read_initializers``)."""
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


def read_initializers(g: onnx.GraphProto, strip: bool = False):
    """One pass over the initializers: {name: spec} and the values of the small ones that
    can steer shapes (``fold.small_value``); weight data is never converted.

    ``strip``: also drop the bytes of every initializer too big to steer shapes that the file
    holds inline (it is marked external instead), so that shape inference does not copy a
    file's weights into C++ and back; returns ``(specs, values, stripped)``."""
    specs: dict[str, TensorSpec] = {}
    values: dict = {}
    interned: dict[tuple, TensorSpec] = {}
    small = fold.small_value
    stripped = 0
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
        elif strip and t.data_location != onnx.TensorProto.EXTERNAL:
            _strip(t)
            stripped += 1
    for st in g.sparse_initializer:
        t = st.values
        specs[t.name] = TensorSpec(tuple(t.dims), DTYPES.get(t.data_type, "?"))
    return (specs, values, stripped) if strip else (specs, values)


_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "int64_data", "double_data",
                "uint64_data", "string_data")


def infer_model(m: onnx.ModelProto, data: bytes | None = None, data_prop: bool = True) -> onnx.ModelProto:
    """ONNX shape inference with data propagation (unless ``data_prop`` is False: a graph with
    a huge integer vector, see ``shapes.may_propagate``). ``data``: ``m`` already serialized (the
    file's own bytes), handed to the C++ inference as they are instead of serializing again.
    Only the graph structure travels: weights stay external and are never read, so a model
    whose external data is far above protobuf's 2 GB limit infers like any other."""
    try:
        return onnx.shape_inference.infer_shapes(m if data is None else data, check_type=False,
                                                 strict_mode=False, data_prop=data_prop)
    except Exception as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ShapeError(f"ONNX shape inference failed: {msg}") from None


def newer_ops(nodes, opsets: Mapping[str, int]) -> dict[str, int]:
    """Default-domain op -> the first opset that defines it, for each op of ``nodes`` that the
    model's opset (``opsets[""]``) does not define yet ('Erf' in an opset-7 model); usually {}."""
    if not opsets:
        return {}
    opset = opsets.get("", 0)
    out: dict[str, int] = {}
    for op in {n.op for n in nodes if not n.domain}:
        if onnx.defs.has(op, opset, ""):
            continue
        first = [s.since_version for s in onnx.defs.get_all_schemas_with_history()
                 if s.name == op and s.domain == ""]
        if first:
            out[op] = min(first)
    return out
