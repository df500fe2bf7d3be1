"""A candidate's structure as the search fast path needs it, or None where it cannot vouch.

``read(candidate)`` turns an ONNX candidate (``ModelProto`` or serialized bytes) into a
``Structure``: the opset header, the graph input specs, the initializers (specs and, where a
value can steer shapes, a key of the value), the nodes (names, op, attributes as serialized
bytes) and the declared graph outputs.  Weight bytes are never read (``wire``).

It returns None (the caller then runs the full frontend, which decides and reports) for
anything outside the plain case it can vouch for: function ops, sub-graphs, sparse tensors,
value_info, training info, symbolic or unknown input dims, external data, duplicate or empty
names, names that are not UTF-8, nodes out of topological order, a tensor defined twice, an
undefined input, non-standard domains, a graph input that is also an initializer, or a node
whose inputs are all constants (the frontend folds those).
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from analyzer.frontends.onnx.types import DTYPES
from analyzer.ir.graph import TensorSpec
from analyzer.search import wire

# no initializer above this many elements has its value read by the frontend (fold._SMALL)
VALUE_ELEMENTS = 4096
# ops whose float constant inputs are data only (their values never steer an output shape):
# a float weight of these is keyed by its spec alone; any other op's small constants by value
FLOAT_DATA_OPS = frozenset({
    "Add", "Sub", "Mul", "Div", "Pow", "MatMul", "Gemm", "Conv", "ConvTranspose",
    "LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
    "PRelu", "Where", "Max", "Min", "Sum", "Mean", "Equal", "Less", "Greater", "Concat",
})
_FLOAT_CODES = frozenset(c for c, d in DTYPES.items() if d.startswith(("float", "bfloat")))
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
    # node's signature that does not depend on its inputs (``fast``), cheap to hash
    kind: int = -1


class Structure(NamedTuple):
    header: tuple                      # (ir_version, ((domain, version), ...))
    opsets: dict                       # domain -> version, as the frontend records them
    inputs: dict                       # graph input name -> TensorSpec
    constants: dict                    # initializer name -> (TensorSpec, dtype code, value key fn)
    nodes: list                        # LeanNode, file order (= topological order)
    outputs: dict                      # graph output name -> its declared TypeProto bytes
    node_bytes: list                   # each node's serialized NodeProto (``mini``)


class _Init(NamedTuple):
    spec: TensorSpec
    code: int
    value: Any          # () -> bytes, the key of its value
    tensor: Any         # () -> its serialized TensorProto (small ones only: weights are big)


def read(candidate: Any) -> Structure | None:
    import onnx

    if isinstance(candidate, onnx.ModelProto):
        m, inits = candidate, None
        node_bytes = [n.SerializeToString() for n in candidate.graph.node]
    elif isinstance(candidate, (bytes, bytearray, memoryview)):
        sk = wire.skeleton(candidate)
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
        return _structure(m, node_bytes, inits)
    except TypeError:  # a name protobuf handed back as bytes (not UTF-8)
        return None


def _proto_inits(g):
    out = []
    for t in g.initializer:
        if t.data_location != 0 or t.external_data:
            return None
        out.append(wire.Init(t.name, t.data_type, tuple(t.dims), False, b"", (0, 0, 0, 0)))
    return out


def _structure(m, node_bytes, inits) -> Structure | None:
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
    constants: dict[str, _Init] = {}
    interned = _SPECS
    if len(interned) >= _NODES_CAP:
        interned.clear()
    for i, t in enumerate(inits):
        dtype = DTYPES.get(t.dtype)
        if dtype is None or t.external or t.name in constants or t.name in inputs or not t.name:
            return None
        k = (t.dims, dtype)
        s = interned.get(k)
        if s is None:
            s = interned[k] = TensorSpec(t.dims, dtype)
        if proto:
            constants[t.name] = _Init(s, t.dtype, _value_of(g.initializer[i]),
                                      g.initializer[i].SerializeToString)
        else:
            constants[t.name] = _Init(s, t.dtype, t.value_key, _span_of(t))
    defined = set(inputs) | constants.keys()
    nodes: list[LeanNode] = []
    names: set[str] = set()
    for b in node_bytes:
        n = _NODES.get(b)
        if n is None:
            n = _node(b)
            if len(_NODES) >= _NODES_CAP:
                _NODES.clear()
            _NODES[b] = n
        if n is False or n.name in names:
            return None
        const = True
        for x in n.inputs:
            if x:
                if x not in defined:
                    return None
                if x not in constants:
                    const = False
        if const:
            return None
        for x in n.outputs:
            if x:
                if x in defined:
                    return None
                defined.add(x)
        names.add(n.name)
        nodes.append(n)
    produced = defined - inputs.keys() - constants.keys()
    outputs = {}
    for vi in g.output:
        if vi.name not in produced or vi.name in outputs:
            return None
        outputs[vi.name] = vi.type.SerializeToString()
    "".join((*inputs, *constants, *outputs))   # TypeError: a name that is not text
    return Structure((m.ir_version, opsets), {d or "": v for d, v in opsets}, inputs, constants,
                     nodes, outputs, node_bytes)


# serialized NodeProto -> its LeanNode (False: a node the fast path refuses); a search's
# candidates repeat nodes byte for byte (same names, same attributes), reading one is the cost
_NODES: dict[bytes, Any] = {}
_NODES_CAP = 50_000   # (~50 MB at most; cleared when full)
_KINDS: dict[tuple, int] = {}   # (never cleared: ids must stay unique for the process)
# (dims, dtype) -> its TensorSpec (immutable): a search's candidates repeat weight shapes
_SPECS: dict[tuple, TensorSpec] = {}


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
    return LeanNode(n.name, n.op_type, dom, ins, outs, k[2], kind)


def _span_of(t):
    return lambda: t.data[t.span[0]:t.span[3]]


def _value_of(t):
    def key() -> bytes:
        import onnx

        c = onnx.TensorProto()
        c.CopyFrom(t)
        c.ClearField("name")
        c.ClearField("doc_string")
        return c.SerializeToString()
    return key


def is_float(code: int) -> bool:
    return code in _FLOAT_CODES


def onnx_source(candidate: Any) -> bool:
    """A candidate the fast path may read (a ModelProto or its bytes; a path is read by the
    full frontend, which checks the file)."""
    return isinstance(candidate, (bytes, bytearray, memoryview)) or \
        type(candidate).__name__ == "ModelProto" and not isinstance(candidate, (str, os.PathLike))
