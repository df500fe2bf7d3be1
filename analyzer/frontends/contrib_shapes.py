"""Output shapes of onnxruntime contrib ops, which ONNX shape inference does not know.

Each supported op is replaced, in a private copy of the model, by standard ops whose
outputs have the same names and shapes (a *surrogate*: SkipLayerNormalization -> Add,
QLinearAdd -> Add, QGemm -> MatMulInteger, ...); ONNX inference then runs once over the
copy and resolves everything downstream too.  Surrogates decide shapes only; each
output's dtype comes from ``DTYPE_OF`` (the op's real output type).  Costs still come
from the contrib rules in ``analyzer/rules/contrib.py`` and ``quantized.py``.
"""

from __future__ import annotations

from typing import Callable

import onnx
from onnx import helper

MS = "com.microsoft"


def _identity(n, rank, opset):
    return [helper.make_node("Identity", [n.input[0]], [n.output[0]])]


def _skip_ln(n, rank, opset):
    x, skip = n.input[0], n.input[1]
    out = [helper.make_node("Add", [x, skip], [n.output[0]])]
    if len(n.output) > 3 and n.output[3]:
        out.append(helper.make_node("Add", [x, skip], [n.output[3]]))
    for o in n.output[1:3]:
        if o:  # mean / inverse std: the input's shape with the last axis kept as 1
            out += _reduce("ReduceMean", x, o, [-1], opset)
    return out


def _binary(op):
    def make(n, rank, opset):  # QLinearAdd(A, As, Az, B, Bs, Bz, Cs, Cz): shape of A (+) B
        return [helper.make_node(op, [n.input[0], n.input[3]], [n.output[0]])]
    return make


def _reduce(op, x, y, axes, opset):
    if opset >= 18:
        name = f"{y}__axes"
        return [helper.make_node("Constant", [], [name],
                                 value=helper.make_tensor(name, onnx.TensorProto.INT64, [len(axes)], axes)),
                helper.make_node(op, [x, name], [y], keepdims=1)]
    return [helper.make_node(op, [x], [y], axes=axes, keepdims=1)]


def _qlinear_gap(n, rank, opset):
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    r = rank(n.input[0])
    if r is None:
        return None
    axes = list(range(1, r - 1)) if attrs.get("channels_last", 0) else list(range(2, r))
    return _reduce("ReduceMax", n.input[0], n.output[0], axes, opset)


def _qgemm(n, rank, opset):
    attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
    a, b = n.input[0], n.input[3]
    out = []
    if attrs.get("transA", 0):
        out.append(helper.make_node("Transpose", [a], [f"{n.output[0]}__a"]))
        a = f"{n.output[0]}__a"
    if attrs.get("transB", 0):
        out.append(helper.make_node("Transpose", [b], [f"{n.output[0]}__b"]))
        b = f"{n.output[0]}__b"
    return out + [helper.make_node("MatMulInteger", [a, b], [n.output[0]])]


SURROGATES: dict[str, Callable] = {
    "SkipLayerNormalization": _skip_ln, "SkipSimplifiedLayerNormalization": _skip_ln,
    "Gelu": _identity, "FastGelu": _identity, "QuickGelu": _identity, "BiasGelu": _identity,
    "QLinearSigmoid": _identity, "QLinearLeakyRelu": _identity,
    "QLinearAdd": _binary("Add"), "QLinearMul": _binary("Mul"),
    "QLinearGlobalAveragePool": _qlinear_gap, "QGemm": _qgemm,
}


def _input_dtype(i):
    return lambda n, dtype_of: dtype_of(n.input[i])


def _qgemm_dtype(n, dtype_of):
    # a quantized output when y_scale/y_zero_point are given, else float32
    if len(n.input) > 8 and n.input[8]:
        return dtype_of(n.input[8])
    return onnx.TensorProto.FLOAT


# op -> the real elem_type of output 0 (others keep what the surrogate infers)
DTYPE_OF: dict[str, Callable] = {op: _input_dtype(0) for op in SURROGATES}
DTYPE_OF["QGemm"] = _qgemm_dtype


def surrogate_copy(m: onnx.ModelProto, needs: set[str]) -> tuple[onnx.ModelProto, dict] | None:
    """A copy of ``m`` with the contrib nodes producing any of ``needs`` replaced by their
    surrogates, and {output name: real elem_type}; None when no such node has one."""
    opset = next((d.version for d in m.opset_import if d.domain in ("", "ai.onnx")), 17)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output)}
    types.update({t.name: t.data_type for t in m.graph.initializer})
    ranks = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in
             list(m.graph.input) + list(m.graph.value_info) if vi.type.tensor_type.HasField("shape")}
    ranks.update({t.name: len(t.dims) for t in m.graph.initializer})
    new_nodes, dtypes, changed = [], {}, False
    for n in m.graph.node:
        make = SURROGATES.get(n.op_type) if n.domain == MS else None
        repl = make(n, ranks.get, opset) if make and any(o in needs for o in n.output) else None
        if repl is None:
            new_nodes.append(n)
            continue
        changed = True
        new_nodes.extend(repl)
        # later surrogates may need these ranks (a contrib op fed by another)
        r_in = ranks.get(n.input[0])
        for o in n.output:
            if o and o not in ranks:
                ranks[o] = 2 if n.op_type == "QGemm" else r_in
        dt = DTYPE_OF[n.op_type](n, types.get)
        if dt:
            dtypes[n.output[0]] = dt
    if not changed:
        return None
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    del m2.graph.node[:]
    m2.graph.node.extend(new_nodes)
    return m2, dtypes
