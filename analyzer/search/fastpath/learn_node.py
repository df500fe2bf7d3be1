"""One node of a candidate as a model of its own, for the fast path to learn its signature.

When a candidate misses the memo at one node (``signatures.FastCounter.count``), the full frontend
and engine run on a model holding that node alone: the same opset header, the node's own
serialized bytes, each input that is an activation declared as a graph input of its (memoised,
static) spec, each constant input as the candidate's initializer (its bytes where its value can
be read, else only its dims and dtype, marked external as the frontend itself marks inline
weights), and, where the node writes a graph output, that output with its declared type.  The
node's signature there is the one it has in the candidate; a full count of the small model
costs a fraction of the candidate's.
"""

from __future__ import annotations

from analyzer.search.fastpath import structure

_ELEM = None


def _elem(dtype: str) -> int:
    global _ELEM
    if _ELEM is None:
        from analyzer.frontends.onnx.types import DTYPES

        _ELEM = {v: k for k, v in DTYPES.items()}
    return _ELEM[dtype]


def model(st: structure.Structure, index: int, specs) -> bytes:
    """The serialized one-node model of ``st.nodes[index]``; ``specs``: tensor name -> spec of
    everything defined before it."""
    import onnx
    from onnx import helper

    node = st.nodes[index]
    g = onnx.GraphProto(name="node")
    g.node.add().ParseFromString(st.node_bytes[index])
    seen = set()
    for x in node.inputs:
        if not x or x in seen:
            continue
        seen.add(x)
        c = st.constants.get(x)
        if c is None:
            s = specs[x]
            g.input.append(helper.make_tensor_value_info(x, _elem(s.dtype), list(s.shape)))
        elif structure.spec(c).numel() <= structure.VALUE_ELEMENTS:
            g.initializer.add().ParseFromString(structure.tensor(c))
        else:
            t = g.initializer.add()
            t.name, t.data_type = x, c.dtype
            t.dims.extend(c.dims)
            t.data_location = onnx.TensorProto.EXTERNAL
            e = t.external_data.add()
            e.key, e.value = "location", "(weights inline in the candidate; not read by opcost)"
    for o in node.outputs:
        decl = st.outputs.get(o)
        if o and decl is not None:
            vi = g.output.add()
            vi.name = o
            vi.type.ParseFromString(decl)
    ir_version, opsets = st.header
    m = onnx.ModelProto(ir_version=ir_version, graph=g)
    for domain, version in opsets:
        m.opset_import.add(domain=domain, version=version)
    return m.SerializeToString()
