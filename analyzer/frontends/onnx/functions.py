"""Decomposition of function ops: ONNX ops defined by a function body, and model-local functions.

A node is *decomposed* (replaced in place by the nodes of its function body) when opcost does
not count its ``(domain, op)`` directly (``counted``, handed in by the caller: the cost
registry's ``has_rule``; the frontend does not import the registry) and a body exists: a model-local ``FunctionProto`` (``ModelProto.functions``, matched by domain, name and
overload), or the op schema's function body at the model's opset for the node's domain (the
newest function version not above it; a context-dependent body is built from the input types
of a shape-inferred copy). Ops that have a rule are never expanded, even when a body exists
(``LayerNormalization``, ``Attention``): the rule counts the fused kernel a runtime runs.
Expansion is recursive (a body may call function ops, up to ``_MAX_DEPTH`` levels) and reaches
into control-flow sub-graphs (If/Loop/Scan bodies).

Names (stable across runs):

- before anything is expanded, every node of every graph gets an explicit name equal to the one
  the frontend would generate (``op_index``; ``~k`` for duplicates), so expanding one node never
  renames another;
- a body node is named ``<parent>/<body node name, or op_index in the body>``;
- a body-internal tensor becomes ``<scope><parent>/<tensor>``, where ``scope`` is the path of the
  enclosing control-flow nodes and attributes: unique across the whole model. The parent's own
  inputs and outputs keep their names.

``origin`` maps the full name of every node that came from a body (as the engine names rows:
``ctrl/child`` inside sub-graphs) to ``(full name, op)`` of the file's node it replaced, ``op``
spelled ``domain::op`` outside the default domain. A decomposition whose body leaves shapes
unresolved (sizes computed from input data) is undone: the file's node stays, uncosted, rather
than failing the whole analysis. The common case (no function op) costs one C-level pass over
the op names (``wanted``).
"""

from __future__ import annotations

from typing import Callable

import onnx
from onnx import AttributeProto, FunctionProto, ModelProto, NodeProto, TypeProto

from analyzer.errors import AnalyzerError
from analyzer.ir.graph import Graph, unresolved
from analyzer.ir.ops import canonical_domain
from analyzer.frontends.onnx.read import unique_name
from analyzer.frontends.onnx.types import DTYPES

_MAX_DEPTH = 8
_CONTROL = frozenset({"If", "Loop", "Scan"})
_GRAPH_TYPES = (AttributeProto.GRAPH, AttributeProto.GRAPHS)
Counted = Callable[[str, str], bool]  # (domain, op) -> whether opcost counts it directly
_candidates: tuple[Counted | None, frozenset[str]] = (None, frozenset())


def _schema_candidates(counted: Counted) -> frozenset[str]:
    """Op names with a schema function body (some version) whose (domain, op) is not counted
    directly (computed once per ``counted``)."""
    global _candidates
    if _candidates[0] is not counted:
        names = {s.name for s in onnx.defs.get_all_schemas_with_history()
                 if (s.has_function or s.has_context_dependent_function)
                 and not counted(canonical_domain(s.domain), s.name)}
        _candidates = (counted, frozenset(names))
    return _candidates[1]


def wanted(m: ModelProto, nodes, names: set[str], counted: Counted) -> bool:
    """Whether ``m`` may hold a node to decompose (top-level ``nodes`` as the frontend read them,
    ``names`` their op names).

    False positives only cost a second look (``build_decomposed`` then builds the file as is)."""
    cand = _schema_candidates(counted)
    if len(m.functions):
        cand = cand | {f.name for f in m.functions if not counted(canonical_domain(f.domain), f.name)}
    if not names.isdisjoint(cand):
        return True
    if names.isdisjoint(_CONTROL):
        return False
    found: set[str] = set()
    for n in nodes:
        if n.attr_key is None:  # a node with sub-graph attributes
            for v in n.attrs.values():
                for sg in (v if isinstance(v, list) else [v]):
                    if isinstance(sg, onnx.GraphProto):
                        _proto_ops(sg, found)
    return not found.isdisjoint(cand)


def _proto_ops(g: onnx.GraphProto, acc: set[str]) -> None:
    for n in g.node:
        acc.add(n.op_type)
        for a in n.attribute:
            for sg in _subgraphs(a):
                _proto_ops(sg, acc)


def _subgraphs(a: AttributeProto):
    if a.type == AttributeProto.GRAPH:
        return (a.g,)
    if a.type == AttributeProto.GRAPHS:
        return tuple(a.graphs)
    return ()


def build_decomposed(m: ModelProto, build: Callable[[ModelProto], Graph], counted: Counted) -> Graph:
    """``build`` (the frontend's graph builder) over ``m`` with its function ops decomposed.

    Sets ``Graph.decomposed``. Falls back to the file's nodes for a decomposition whose shapes
    stay unresolved, and to the file as is when the decomposed model cannot be analysed."""
    skip: set[str] = set()
    for _ in range(3):
        x = expand(m, counted, skip)
        if x is None:
            break
        model, origin = x
        try:
            graph = build(model)
            bad = _unresolved_roots(graph, origin)
            if bad and _learn_specs(model, graph, origin):
                graph = build(model)  # once more, knowing the shapes the first build found
                bad = _unresolved_roots(graph, origin)
        except AnalyzerError:
            break  # e.g. a body that shape inference rejects: the nodes stay uncosted
        if not bad:
            graph.decomposed = origin
            return graph
        skip |= bad
    return build(m)


# ----------------------------------------------------------------------------- expansion

class _Ctx:
    def __init__(self, m: ModelProto, skip: set[str], counted: Counted):
        self.model = m
        self.counted = counted
        self.opsets = {canonical_domain(d.domain): d.version for d in m.opset_import}
        self.local = {(f.domain, f.name, f.overload): f for f in m.functions}
        self.skip = skip
        self.origin: dict[str, tuple[str, str]] = {}
        self.types: dict[str, TypeProto] | None = None
        self.imports: dict[str, int] = {}
        self.changed = False


def expand(m: ModelProto, counted: Counted, skip: set[str] = frozenset()
           ) -> tuple[ModelProto, dict] | None:
    """A copy of ``m`` with every function op decomposed (except the file nodes named in
    ``skip``), and the ``origin`` map; None when there is nothing to decompose."""
    out = ModelProto()
    out.CopyFrom(m)
    _name_nodes(out.graph)
    ctx = _Ctx(out, skip, counted)
    for _ in range(_MAX_DEPTH):
        ctx.types = None
        ctx.changed = False
        _expand_graph(ctx, out.graph, "", "")
        if not ctx.changed:
            break
    if not ctx.origin:
        return None
    for dom, ver in ctx.imports.items():
        if dom not in ctx.opsets:
            out.opset_import.add(domain=dom, version=ver)
    return out, ctx.origin


def _name_nodes(g: onnx.GraphProto) -> None:
    """Give every node of ``g`` (and its sub-graphs) the name the frontend would generate."""
    seen: set[str] = set()
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        if name in seen:
            name = unique_name(name, seen)
        seen.add(name)
        if n.name != name:
            n.name = name
        for a in n.attribute:
            for sg in _subgraphs(a):
                _name_nodes(sg)


def _expand_graph(ctx: _Ctx, g: onnx.GraphProto, prefix: str, scope: str) -> None:
    """One level of expansion over ``g``; ``prefix``: the engine's row prefix of this graph,
    ``scope``: the unique tensor-name prefix of this graph."""
    new: list[NodeProto] = []
    taken = {n.name for n in g.node}
    touched = False
    for n in g.node:
        full = prefix + n.name
        root = ctx.origin.get(full, (full, ""))[0]
        body = None if root in ctx.skip else _body(ctx, n)
        if body is None:
            c = NodeProto()
            c.CopyFrom(n)
            for a in c.attribute:
                for k, sg in enumerate(_subgraphs(a)):
                    _expand_graph(ctx, sg, full + "/", f"{scope}{n.name}/{a.name}{k or ''}/")
            new.append(c)
            continue
        f, attrs = body
        touched = ctx.changed = True
        parent = ctx.origin.pop(full, None) or (full, _op_key(n))
        for b in _instantiate(n, f, attrs, f"{scope}{n.name}/", taken):
            new.append(b)
            _record(ctx.origin, prefix + b.name, b, parent)
        for d in f.opset_import:
            ctx.imports.setdefault(canonical_domain(d.domain), d.version)
    if touched:
        del g.node[:]
        g.node.extend(new)
    else:  # the copies carry the expansions inside sub-graphs
        for i, c in enumerate(new):
            if any(a.type in _GRAPH_TYPES for a in c.attribute):
                g.node[i].CopyFrom(c)


def _record(origin: dict, full: str, n: NodeProto, parent: tuple[str, str]) -> None:
    origin[full] = parent
    for a in n.attribute:
        for sg in _subgraphs(a):
            for s in sg.node:
                _record(origin, f"{full}/{s.name}", s, parent)


def _op_key(n: NodeProto) -> str:
    dom = canonical_domain(n.domain)
    return f"{dom}::{n.op_type}" if dom else n.op_type


def _body(ctx: _Ctx, n: NodeProto) -> tuple[FunctionProto, dict[str, AttributeProto]] | None:
    """The function body of ``n`` and its attribute values (defaults included), or None."""
    dom = canonical_domain(n.domain)
    if ctx.counted(dom, n.op_type):
        return None
    given = {a.name: a for a in n.attribute}
    f = ctx.local.get((n.domain, n.op_type, n.overload))
    if f is not None:
        return f, {**{a.name: a for a in f.attribute_proto}, **given}
    ver = ctx.opsets.get(dom)
    if ver is None or n.op_type not in _schema_candidates(ctx.counted) or not onnx.defs.has(n.op_type, dom):
        return None
    try:
        s = onnx.defs.get_schema(n.op_type, ver, dom)
    except onnx.defs.SchemaError:
        return None
    attrs = {k: v.default_value for k, v in s.attributes.items() if v.default_value.type}
    attrs.update(given)
    plain = [v for v in s.function_opset_versions if v <= ver]
    try:
        if plain:
            data = s.get_function_with_opset_version(max(plain))
        else:
            cdv = [v for v in s.context_dependent_function_opset_versions if v <= ver]
            if not cdv:
                return None
            types = _input_types(ctx)
            tps = [types.get(x) or TypeProto() for x in n.input]
            data = s.get_context_dependent_function_with_opset_version(
                max(cdv), n.SerializeToString(), [t.SerializeToString() for t in tps])
    except Exception:  # the schema's builder rejects the node or its (unknown) types
        return None
    f = FunctionProto()
    f.ParseFromString(data)
    return (f, attrs) if len(f.node) else None


def _input_types(ctx: _Ctx) -> dict[str, TypeProto]:
    """Tensor name -> TypeProto over every graph of a shape-inferred copy (once per round)."""
    if ctx.types is None:
        ctx.types = {}
        try:
            inferred = onnx.shape_inference.infer_shapes(ctx.model, check_type=False,
                                                         strict_mode=False, data_prop=True)
        except Exception:
            return ctx.types
        _collect_types(inferred.graph, ctx.types)
    return ctx.types


def _collect_types(g: onnx.GraphProto, out: dict[str, TypeProto]) -> None:
    for t in g.initializer:
        out[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    for part in (g.input, g.value_info, g.output):
        for vi in part:
            if vi.HasField("type"):
                out[vi.name] = vi.type
    for n in g.node:
        for a in n.attribute:
            for sg in _subgraphs(a):
                _collect_types(sg, out)


def _instantiate(n: NodeProto, f: FunctionProto, attrs: dict, tprefix: str,
                 taken: set[str]) -> list[NodeProto]:
    """The body of ``f`` bound to node ``n``: formal inputs/outputs -> the node's tensors,
    internal tensors prefixed with ``tprefix``, attribute references resolved."""
    io: dict[str, str] = {}
    for i, formal in enumerate(f.input):
        io[formal] = n.input[i] if i < len(n.input) else ""
    for i, formal in enumerate(f.output):
        if i < len(n.output) and n.output[i]:
            io[formal] = n.output[i]

    def rn(x: str) -> str:
        if not x:
            return x
        v = io.get(x)
        return tprefix + x if v is None else v

    out = []
    for i, b in enumerate(f.node):
        c = NodeProto()
        c.CopyFrom(b)
        name = f"{n.name}/{b.name or f'{b.op_type}_{i}'}"
        base, k = name, 1
        while name in taken:
            k += 1
            name = f"{base}#{k}"
        taken.add(name)
        c.name = name
        _bind_node(c, rn, attrs)
        for a in c.attribute:
            for sg in _subgraphs(a):
                _name_nodes(sg)
        out.append(c)
    return out


def _bind_node(c: NodeProto, rn: Callable[[str], str], attrs: dict) -> None:
    c.input[:] = [rn(x) for x in c.input]
    c.output[:] = [rn(x) for x in c.output]
    new = []
    for a in c.attribute:
        if a.ref_attr_name:
            v = attrs.get(a.ref_attr_name)
            if v is None:
                continue  # the caller did not set it and it has no default: omitted
            x = AttributeProto()
            x.CopyFrom(v)
            x.name = a.name
            new.append(x)
            continue
        x = AttributeProto()
        x.CopyFrom(a)
        for sg in _subgraphs(x):
            _bind_graph(sg, rn, attrs)
        new.append(x)
    del c.attribute[:]
    c.attribute.extend(new)


def _bind_graph(g: onnx.GraphProto, rn, attrs) -> None:
    """Rename every tensor of a sub-graph inside a body (outer references and locals alike)."""
    for part in (g.input, g.output, g.value_info):
        for vi in part:
            vi.name = rn(vi.name)
    for t in g.initializer:
        t.name = rn(t.name)
    for t in g.sparse_initializer:
        t.values.name = rn(t.values.name)
    for c in g.node:
        _bind_node(c, rn, attrs)


# ----------------------------------------------------------------------------- checking

def _learn_specs(model: ModelProto, graph: Graph, origin: dict) -> bool:
    """Write the resolved specs of body tensors (top level) that the first build found only
    after folding and re-inference into ``model`` as value_info, so that the next build's
    first inference and folding start from them (a body's shape arithmetic often reads the
    shape of a tensor whose own shape came from folded values: CenterCropPad's Pad, then
    Shape). True when anything was added."""
    g = model.graph
    have = {vi.name for part in (g.input, g.output, g.value_info) for vi in part}
    elem = {v: k for k, v in DTYPES.items()}
    added = False
    for node in graph.nodes:
        if node.name not in origin:
            continue
        for o in node.outputs:
            s = graph.tensors.get(o) if o else None
            if o in have or s is None or unresolved(s) or s.dtype not in elem:
                continue
            g.value_info.append(onnx.helper.make_tensor_value_info(o, elem[s.dtype], list(s.shape)))
            added = True
    return added


def _unresolved_roots(graph: Graph, origin: dict, prefix: str = "") -> set[str]:
    """File nodes (full names) whose decomposed body has a runtime node with an unresolved spec."""
    bad: set[str] = set()
    get = graph.tensors.get
    for node in graph.nodes:
        full = prefix + node.name
        root = origin.get(full)
        if root is not None and root[0] not in bad and node.name not in graph.folded:
            if any(unresolved(get(x)) for x in (*node.inputs, *node.outputs) if x):
                bad.add(root[0])
        for sub in node.subgraphs.values():
            bad |= _unresolved_roots(sub, origin, full + "/")
    return bad
