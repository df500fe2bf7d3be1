"""A candidate's structure as the search fast path needs it, or None where it cannot vouch.

``read(candidate)`` turns an ONNX candidate (``ModelProto`` or serialized bytes) into a
``Structure``: the opset header, the graph input specs, the initializers (specs and, where a
value can steer shapes, a key of the value), the nodes (names, op, attributes as serialized
bytes) and the declared graph outputs.  Weight bytes are never read (``protobuf_walk``).

It returns None (the caller then runs the full frontend, which decides and reports) for
anything outside the plain case it can vouch for: function ops, sub-graphs, sparse tensors,
value_info, training info, symbolic or unknown input dims, external data, duplicate or empty
names, names that are not UTF-8, nodes out of topological order, a tensor defined twice, an
undefined input, non-standard domains, a graph input that is also an initializer, or a node
whose inputs are all constants (the frontend folds those).
"""

from __future__ import annotations

import os
from operator import itemgetter
from typing import Any, NamedTuple

from analyzer.frontends.onnx.types import DTYPES
from analyzer.ir.graph import TensorSpec
from analyzer.search.fastpath import protobuf_walk

# no initializer above this many elements has its value read by the frontend (fold._SMALL)
VALUE_ELEMENTS = 4096
# ops whose float constant inputs are data only (their values never steer an output shape):
# a float weight of these is keyed by its spec alone; any other op's small constants by value
FLOAT_DATA_OPS = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm", "Conv", "ConvTranspose",
    "LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
    "PRelu", "Where", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater", "Concat",
})
FLOAT_CODES = frozenset(c for c, d in DTYPES.items() if d.startswith(("float", "bfloat")))
_STANDARD = ("", "ai.onnx")
_GRAPH_ATTRS = frozenset({5, 10, 11, 12, 13, 14})  # GRAPH, GRAPHS, SPARSE_TENSOR(S), TYPE_PROTO(S)


class LeanNode(NamedTuple):
    name: str
    op: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attr_key: tuple[bytes, ...]
    # a small int per distinct (op, domain, attr_key, which outputs exist): the part of a
    # node's signature that does not depend on its inputs (``signatures``), cheap to hash
    kind: int = -1
    repeats: bool = False   # a tensor name appears among its inputs more than once
    named_in: frozenset = frozenset()    # its input names, '' (an omitted input) left out
    named_out: tuple = ()                # its output names, '' left out
    data_op: bool = False                # its op is in FLOAT_DATA_OPS
    single: str | None = None            # its output's name when it has exactly one, named


class Structure(NamedTuple):
    header: tuple                      # (ir_version, ((domain, version), ...))
    opsets: dict                       # domain -> version, as the frontend records them
    inputs: dict                       # graph input name -> TensorSpec
    constants: dict                    # initializer name -> its protobuf_walk.Init (``spec``)
    nodes: list                        # LeanNode, file order (= topological order)
    outputs: dict                      # graph output name -> its declared TypeProto bytes
    node_bytes: list                   # each node's serialized NodeProto (``learn_node``)
    ordered: bool = True               # the nodes' order was checked (``ordered``)


def spec(c: protobuf_walk.Init) -> TensorSpec:
    """An initializer's spec (``read`` checked its dtype code; specs are interned: a search's
    candidates repeat weight shapes)."""
    k = (c.dims, c.dtype)
    s = _SPECS.get(k)
    if s is None:
        if len(_SPECS) >= _NODES_CAP:
            _SPECS.clear()
        s = _SPECS[k] = TensorSpec(c.dims, DTYPES[c.dtype])
    return s


def value(c: protobuf_walk.Init) -> bytes:
    """The key of an initializer's value (equal keys: equal tensors)."""
    if c.span is not None:
        return c.value_key()
    import onnx

    t = onnx.TensorProto()
    t.CopyFrom(c.data)
    t.ClearField("name")
    t.ClearField("doc_string")
    return t.SerializeToString()


def tensor(c: protobuf_walk.Init) -> bytes:
    """An initializer's serialized TensorProto (read for small ones only: weights are big)."""
    if c.span is not None:
        return c.data[c.span[0]:c.span[3]]
    return c.data.SerializeToString()


_new = tuple.__new__
_NAME = itemgetter(0)   # a LeanNode's name
_DTYPE, _EXTERNAL = itemgetter(1), itemgetter(3)   # a protobuf_walk.Init's dtype, external
_CODES = frozenset(DTYPES)


def read(candidate: Any, ordered: bool = True) -> Structure | None:
    """The candidate's ``Structure``, or None (the module docstring).  ``ordered=False``
    leaves the per-node order check (every input defined before its node, not every input a
    constant) to the caller: ``FastCounter.keys`` meets an input defined later as an unknown
    name and no learned signature has only constant inputs, and ``ordered`` checks it for the
    full path."""
    import onnx

    if isinstance(candidate, onnx.ModelProto):
        m, inits = candidate, None
        node_bytes = [n.SerializeToString() for n in candidate.graph.node]
    elif isinstance(candidate, (bytes, bytearray, memoryview)):
        sk = protobuf_walk.skeleton(candidate)
        if sk is None:
            return None
        try:
            m = onnx.ModelProto.FromString(sk[0])
        except Exception:  # noqa: BLE001  (the full frontend reports a bad file)
            return None
        node_bytes, inits = sk[1], sk[2]
    else:
        return None
    try:
        return _structure(m, node_bytes, inits, ordered)
    except TypeError:  # a name protobuf handed back as bytes (not UTF-8)
        return None


def _proto_inits(g):
    out = []
    for t in g.initializer:
        if t.data_location or t.external_data:
            return None
        # (the TensorProto as its data, no span: ``value`` and ``tensor`` serialize it)
        out.append(_new(protobuf_walk.Init, (t.name, t.data_type, tuple(t.dims), False, t, None)))
    return out


def ordered(st: Structure | None) -> Structure | None:
    """``st`` with its nodes' order checked (``read``), or None where it fails."""
    if st is None or st.ordered:
        return st
    return st._replace(ordered=True) if _in_order(st.inputs, st.constants, st.nodes) else None


def _in_order(inputs: dict, constants: dict, nodes: list) -> bool:
    """Every node's inputs defined before it (topological order) and not all of them
    constants (the frontend folds such a node; no input at all is the empty set, inside the
    constants)."""
    defined = set(inputs)
    defined.update(constants)
    consts = constants.keys()
    for n in nodes:
        if not defined.issuperset(n.named_in) or consts >= n.named_in:
            return False
        defined.update(n.named_out)
    return True


def _structure(m, node_bytes, inits, ordered: bool) -> Structure | None:
    g = m.graph
    if (m.functions or m.training_info or g.sparse_initializer or g.value_info
            or m.ir_version <= 0 or not m.opset_import):
        return None
    proto = inits is None
    if proto:
        inits = _proto_inits(g)
        if inits is None:
            return None
    opsets = tuple((d.domain, d.version) for d in m.opset_import)
    if len({d for d, _ in opsets}) != len(opsets):
        return None
    inputs: dict[str, TensorSpec] = {}
    for vi in g.input:
        tp = vi.type
        if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
            return None
        t = tp.tensor_type
        dims = []
        for d in t.shape.dim:
            if d.WhichOneof("value") != "dim_value":
                return None
            dims.append(d.dim_value)
        dtype = DTYPES.get(t.elem_type)
        if dtype is None or vi.name in inputs or not vi.name:
            return None
        inputs[vi.name] = TensorSpec(tuple(dims), dtype)
    constants: dict[str, protobuf_walk.Init] = {t.name: t for t in inits}
    if len(constants) != len(inits) or "" in constants or not constants.keys().isdisjoint(inputs):
        return None   # a name twice, an empty name, an initializer that is also an input
    if not _CODES.issuperset(map(_DTYPE, inits)) or any(map(_EXTERNAL, inits)):
        return None   # a dtype the frontend does not know, external data
    try:
        nodes: list[LeanNode] = [_NODES[b] for b in node_bytes]
    except KeyError:   # (a node not read before, or one refused)
        nodes = list(map(_lean_node, node_bytes))
        if any(n is False for n in nodes):
            return None
    # no tensor defined twice (an output of two nodes, or an output that is a graph input or
    # a constant): then every output adds one name
    defined = set(inputs)
    defined.update(constants)
    n = len(defined)
    outs = [o for nd in nodes for o in nd.named_out]
    defined.update(outs)
    if len(defined) != n + len(outs) or ordered and not _in_order(inputs, constants, nodes):
        return None
    if len(set(map(_NAME, nodes))) != len(nodes):
        return None
    outputs = {}
    for vi in g.output:   # (a node's output: defined, and neither an input nor a constant)
        o = vi.name
        if o not in defined or o in inputs or o in constants or o in outputs:
            return None
        outputs[o] = vi.type.SerializeToString()
    "".join((*inputs, *constants, *outputs))   # TypeError: a name that is not text
    return Structure((m.ir_version, opsets), {d or "": v for d, v in opsets}, inputs, constants,
                     nodes, outputs, node_bytes, ordered)


# serialized NodeProto -> its LeanNode, and the nodes the fast path refuses; a search's
# candidates repeat nodes byte for byte (same names, same attributes), reading one is the cost
_NODES: dict[bytes, Any] = {}
_REFUSED: set[bytes] = set()
_NODES_CAP = 50_000   # (~50 MB at most; cleared when full)
_KINDS: dict[tuple, int] = {}   # (never cleared: ids must stay unique for the process)
# (dims, dtype) -> its TensorSpec (immutable): a search's candidates repeat weight shapes
_SPECS: dict[tuple, TensorSpec] = {}


def _lean_node(b: bytes):
    """``b``'s LeanNode (False: refused), read once (``_NODES``, ``_REFUSED``)."""
    n = _NODES.get(b)
    if n is None:
        if b in _REFUSED:
            return False
        n = _node(b)
        if len(_NODES) + len(_REFUSED) >= _NODES_CAP:
            _NODES.clear()
            _REFUSED.clear()
        if n is False:
            _REFUSED.add(b)
        else:
            _NODES[b] = n
    return n


def _node(b: bytes):
    import onnx

    n = onnx.NodeProto.FromString(b)
    dom = n.domain
    if dom not in _STANDARD or not n.name:
        return False
    ins, outs = tuple(n.input), tuple(n.output)
    try:
        "".join((n.name, n.op_type) + ins + outs)
    except TypeError:  # a name protobuf handed back as bytes (not UTF-8)
        return False
    keys = []
    for a in n.attribute:
        if a.type in _GRAPH_ATTRS or a.ref_attr_name:
            return False
        keys.append(a.SerializeToString())
    k = (n.op_type, dom, tuple(keys), tuple(map(bool, outs)))
    kind = _KINDS.get(k)
    if kind is None:
        kind = _KINDS[k] = len(_KINDS)
    named = [x for x in ins if x]
    named_out = tuple(x for x in outs if x)
    if len(set(named_out)) != len(named_out):
        return False   # an output name twice: the frontend decides
    return LeanNode(n.name, n.op_type, dom, ins, outs, k[2], kind, len(set(named)) != len(named),
                    frozenset(named), named_out, n.op_type in FLOAT_DATA_OPS,
                    outs[0] if len(outs) == 1 and outs[0] else None)


def onnx_source(candidate: Any) -> bool:
    """A candidate the fast path may read (a ModelProto or its bytes; a path is read by the
    full frontend, which checks the file)."""
    return isinstance(candidate, (bytes, bytearray, memoryview)) or \
        type(candidate).__name__ == "ModelProto" and not isinstance(candidate, (str, os.PathLike))
