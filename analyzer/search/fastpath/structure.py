"""A candidate's structure as the search fast path needs it, or None where it cannot vouch.

``read(candidate)`` turns an ONNX candidate (``ModelProto`` or serialized bytes) into a
``Structure``: the opset header, the graph input specs, the initializers (specs and, where a
value can steer shapes, a key of the value), the nodes (names, op, attributes as serialized
bytes) and the declared graph outputs.  Weight bytes are never read (``protobuf_walk``).

Nodes get the names the frontend gives them (``frontends.onnx.read.read_nodes``): an unnamed
node is ``<op>_<index in the file>``, and the k-th node of a name already taken is
``<name>~k`` (``read.unique_name``, the frontend's own function); ``Structure.renamed`` maps
such a unique name to the file's, as ``Graph.renamed`` does.

It returns None (the caller then runs the full frontend, which decides and reports) for
anything outside the plain case it can vouch for: function ops, sub-graphs, sparse tensors,
value_info, training info, symbolic or unknown input dims, external data, empty tensor names,
names that are not UTF-8, nodes out of topological order, a tensor defined twice, an undefined
input, non-standard domains, a graph input that is also an initializer, or a node whose inputs
are all constants (the frontend folds those).  ``read(..., why=[])`` appends the reason (a
short phrase, ``CostModel.stats()["slow"]``'s key).
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
    # node name given here -> the file's name (empty for an unnamed node), for the nodes whose
    # name another node had already (the frontend's ``Graph.renamed``); None when there is none
    renamed: dict | None = None


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


def read(candidate: Any, ordered: bool = True, why: list | None = None,
         external: bool = False) -> Structure | None:
    """The candidate's ``Structure``, or None (the module docstring; ``why``, a list, gets the
    reason appended).  ``ordered=False`` leaves the per-node order check (every input defined
    before its node, not every input a constant) to the caller: ``FastCounter.keys`` meets an
    input defined later as an unknown name and no learned signature has only constant inputs,
    and ``ordered`` checks it for the full path.  ``external``: initializers marked external
    are read as their specs (``learn_node``'s one-node models mark a candidate's large inline
    weights so, as the frontend marks inline weights itself; a candidate's own external data
    is refused)."""
    import onnx

    if isinstance(candidate, onnx.ModelProto):
        m, inits = candidate, None
        node_bytes = [n.SerializeToString() for n in candidate.graph.node]
    elif isinstance(candidate, (bytes, bytearray, memoryview)):
        sk = protobuf_walk.skeleton(candidate)
        if sk is None:
            return _refused(why, "protobuf encoding the wire walk does not read")
        try:
            m = onnx.ModelProto.FromString(sk[0])
        except Exception:  # noqa: BLE001  (the full frontend reports a bad file)
            return _refused(why, "not a parseable ModelProto")
        node_bytes, inits = sk[1], sk[2]
    else:
        return _refused(why, "not ONNX bytes or a ModelProto")
    try:
        got = _structure(m, node_bytes, inits, ordered, external)
    except TypeError:  # a name protobuf handed back as bytes (not UTF-8)
        got = NOT_TEXT
    return _refused(why, got) if type(got) is str else got


def _refused(why: list | None, reason: str) -> None:
    if why is not None:
        why.append(reason)
    return None


def _proto_inits(g):
    out = []
    for t in g.initializer:
        if t.data_location or t.external_data:
            return None
        # (the TensorProto as its data, no span: ``value`` and ``tensor`` serialize it)
        out.append(_new(protobuf_walk.Init, (t.name, t.data_type, tuple(t.dims), False, t, None)))
    return out


def ordered(st: Structure | None, why: list | None = None) -> Structure | None:
    """``st`` with its nodes' order checked (``read``), or None where it fails (``why`` gets
    the reason appended)."""
    if st is None or st.ordered:
        return st
    bad = _in_order(st.inputs, st.constants, st.nodes)
    return st._replace(ordered=True) if bad is None else _refused(why, bad)


def _in_order(inputs: dict, constants: dict, nodes: list) -> str | None:
    """None when every node's inputs are defined before it (topological order) and not all
    of them are constants (the frontend folds such a node; no input at all is the empty set,
    inside the constants), else the reason."""
    defined = set(inputs)
    defined.update(constants)
    consts = constants.keys()
    for n in nodes:
        if not defined.issuperset(n.named_in):
            return "a node before one of its inputs"
        if consts >= n.named_in:
            return "a node of constant inputs only (Constant, or folded)"
        defined.update(n.named_out)
    return None


def _named(nodes: list) -> tuple[list, dict | None]:
    """The nodes with the frontend's names (``read_nodes``: ``<op>_<index>`` for an unnamed
    node, ``read.unique_name`` for a name taken already) and {unique name: file name} of the
    renamed ones (None when none is)."""
    from analyzer.frontends.onnx.read import unique_name

    seen: set[str] = set()
    renamed: dict[str, str] = {}
    out = []
    for i, n in enumerate(nodes):
        name = n.name or f"{n.op}_{i}"
        if name in seen:
            name = unique_name(name, seen)
            renamed[name] = n.name
        seen.add(name)
        out.append(n if name == n.name else _new(LeanNode, (name,) + n[1:]))
    return out, renamed or None


NOT_TEXT = "a name that is not UTF-8 text"


def _structure(m, node_bytes, inits, ordered: bool, external: bool = False) -> Structure | str:
    """The ``Structure``, or the reason it cannot vouch for the model (``read``)."""
    g = m.graph
    if m.functions:
        return "model-local functions"
    if m.training_info or g.sparse_initializer:
        return "training info or sparse initializers"
    if g.value_info:
        return "value_info"
    if m.ir_version <= 0 or not m.opset_import:
        return "no IR version or opset"
    proto = inits is None
    if proto:
        inits = _proto_inits(g)
        if inits is None:
            return "external data"
    opsets = tuple((d.domain, d.version) for d in m.opset_import)
    if len({d for d, _ in opsets}) != len(opsets):
        return "a domain imported twice"
    inputs: dict[str, TensorSpec] = {}
    for vi in g.input:
        tp = vi.type
        if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
            return "an input that is no tensor of declared shape"
        t = tp.tensor_type
        dims = []
        for d in t.shape.dim:
            if d.WhichOneof("value") != "dim_value":
                return "symbolic or unknown input dims"
            dims.append(d.dim_value)
        dtype = DTYPES.get(t.elem_type)
        if dtype is None:
            return "an input dtype the frontend does not know"
        if vi.name in inputs or not vi.name:
            return "an input named twice or unnamed"
        inputs[vi.name] = TensorSpec(tuple(dims), dtype)
    constants: dict[str, protobuf_walk.Init] = {t.name: t for t in inits}
    if len(constants) != len(inits) or "" in constants or not constants.keys().isdisjoint(inputs):
        return "an initializer named twice, unnamed or also an input"
    if not external and any(map(_EXTERNAL, inits)):
        return "external data"
    if not _CODES.issuperset(map(_DTYPE, inits)):
        return "an initializer dtype the frontend does not know"
    try:
        nodes: list[LeanNode] = [_NODES[b] for b in node_bytes]
    except KeyError:   # (a node not read before, or one refused)
        nodes = list(map(_lean_node, node_bytes))
        for nd in nodes:
            if type(nd) is str:
                return nd
    # no tensor defined twice (an output of two nodes, or an output that is a graph input or
    # a constant): then every output adds one name
    defined = set(inputs)
    defined.update(constants)
    n = len(defined)
    outs = [o for nd in nodes for o in nd.named_out]
    defined.update(outs)
    if len(defined) != n + len(outs):
        return "a tensor defined twice"
    if ordered:
        bad = _in_order(inputs, constants, nodes)
        if bad is not None:
            return bad
    renamed = None
    names = set(map(_NAME, nodes))
    if len(names) != len(nodes) or "" in names:   # (unnamed nodes, a name used twice)
        nodes, renamed = _named(nodes)
    outputs = {}
    for vi in g.output:   # (a node's output: defined, and neither an input nor a constant)
        o = vi.name
        if o not in defined or o in inputs or o in constants or o in outputs:
            return "a graph output undefined, listed twice, an input or a constant"
        outputs[o] = vi.type.SerializeToString()
    "".join((*inputs, *constants, *outputs))   # TypeError: a name that is not text
    return Structure((m.ir_version, opsets), {d or "": v for d, v in opsets}, inputs, constants,
                     nodes, outputs, node_bytes, ordered, renamed)


# serialized NodeProto -> its LeanNode, and the nodes the fast path refuses (-> why); a search's
# candidates repeat nodes byte for byte (same names, same attributes), reading one is the cost
_NODES: dict[bytes, Any] = {}
_REFUSED: dict[bytes, str] = {}
_NODES_CAP = 50_000   # (~50 MB at most; cleared when full)
_KINDS: dict[tuple, int] = {}   # (never cleared: ids must stay unique for the process)
# (dims, dtype) -> its TensorSpec (immutable): a search's candidates repeat weight shapes
_SPECS: dict[tuple, TensorSpec] = {}


def _lean_node(b: bytes):
    """``b``'s LeanNode (a str: refused, why), read once (``_NODES``, ``_REFUSED``).  Its
    name is the file's (``_named`` gives unnamed and repeated names the frontend's)."""
    n = _NODES.get(b)
    if n is None:
        why = _REFUSED.get(b)
        if why is not None:
            return why
        n = _node(b)
        if len(_NODES) + len(_REFUSED) >= _NODES_CAP:
            _NODES.clear()
            _REFUSED.clear()
        if type(n) is str:
            _REFUSED[b] = n
        else:
            _NODES[b] = n
    return n


def _node(b: bytes):
    import onnx

    n = onnx.NodeProto.FromString(b)
    dom = n.domain
    if dom not in _STANDARD:
        return "an op of another domain than ai.onnx"
    ins, outs = tuple(n.input), tuple(n.output)
    try:
        "".join((n.name, n.op_type) + ins + outs)
    except TypeError:  # a name protobuf handed back as bytes (not UTF-8)
        return NOT_TEXT
    keys = []
    for a in n.attribute:
        if a.type in _GRAPH_ATTRS:
            return "a sub-graph, sparse-tensor or type attribute"
        if a.ref_attr_name:
            return "an attribute reference"
        keys.append(a.SerializeToString())
    k = (n.op_type, dom, tuple(keys), tuple(map(bool, outs)))
    kind = _KINDS.get(k)
    if kind is None:
        kind = _KINDS[k] = len(_KINDS)
    named = [x for x in ins if x]
    named_out = tuple(x for x in outs if x)
    if len(set(named_out)) != len(named_out):
        return "a node writing one name twice"   # (the frontend decides)
    return LeanNode(n.name, n.op_type, dom, ins, outs, k[2], kind, len(set(named)) != len(named),
                    frozenset(named), named_out, n.op_type in FLOAT_DATA_OPS,
                    outs[0] if len(outs) == 1 and outs[0] else None)


def onnx_source(candidate: Any) -> bool:
    """A candidate the fast path may read (a ModelProto or its bytes; a path is read by the
    full frontend, which checks the file)."""
    return isinstance(candidate, (bytes, bytearray, memoryview)) or \
        (type(candidate).__name__ == "ModelProto" and not isinstance(candidate, (str, os.PathLike)))
