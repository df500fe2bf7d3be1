"""Output shapes of onnxruntime contrib ops, which ONNX shape inference does not know.

Each supported op is replaced, in a private copy of the model, by standard ops whose
outputs have the same names and shapes (a *surrogate*: SkipLayerNormalization -> Add,
QLinearConv -> Conv, MatMulNBits -> ConstantOfShape of ``A.shape[:-1] + [N]``, ...); ONNX
inference (with data propagation) then runs once over the copy and resolves everything
downstream too.  Shapes computed from other shapes are built in the graph from
Shape/Slice/Concat/Add/Mul, which ONNX data propagation evaluates, so a contrib op fed by
another contrib op resolves in the same round; a division (head size = hidden / heads) is
a Reshape to ``[k, -1]``.  Surrogates decide shapes only; each surrogate returns the real
elem_type of every output (None: keep what inference found).  Costs still come from the
contrib rules in ``analyzer/counting/rules/onnxruntime/`` and ``rules/onnx/attention.py``.

Modules: ``contrib_emit`` (what a surrogate may ask of the model and the nodes it emits),
``contrib_surrogates`` (activations, norms, matmul / conv, quantized ops),
``contrib_attention_shapes`` (the attention family); this one holds the copies of standard
ops, the table and the pass.

Shapes follow onnxruntime's operator schemas (docs/ContribOperators.md).  Choices where the
schema leaves a dim to runtime values:

- Attention / MultiHeadAttention / DecoderMaskedMultiHeadAttention present K/V: past length +
  new length, or the past buffer's shape when past and present share a buffer.
- GroupQueryAttention present K/V: ``max(past length, total_sequence_length)`` when
  total_sequence_length is a constant, else past length + new length (a shared buffer whose
  past is already the capacity gives that capacity only when the total is a constant).
- A surrogate that needs a rank it cannot know yet returns None (the op stays unresolved this
  round; the caller repeats while rounds make progress).
"""
from __future__ import annotations

from typing import Callable

import onnx
from onnx import TensorProto, helper

from analyzer.frontends.onnx.types import DTYPES

from analyzer.frontends.onnx.surrogates import attention as contrib_attention_shapes
from analyzer.frontends.onnx.surrogates import contrib_ops as contrib_surrogates
from analyzer.frontends.onnx.surrogates.emit import (I64, MS, ORT_DEFAULT_DOMAIN, UNINFERRED, input_dtype, Emit,
                                                     SurrogateModel, is_ort_op, needs_surrogate)
from analyzer.frontends.onnx.surrogates.contrib_ops import identity_surrogate, max_pool_surrogate

__all__ = ["MS", "ORT_DEFAULT_DOMAIN", "SURROGATES", "UNINFERRED", "is_ort_op", "needs_surrogate", "surrogate_copy"]

_ONNX_TYPE = {name: code for code, name in DTYPES.items()}


# ----------------------------------------------------------------------------- copies of standard ops


def _standard(op):
    def make(e: Emit):
        e.op(op, list(e.n.input), e.out(0))
        return [input_dtype(e, 0)]
    return make


def _unique(e: Emit):
    y, idx, inv, counts = (e.tmp() for _ in range(4))
    e.nodes.append(helper.make_node("Unique", [e.inp(0)], [y, idx, inv, counts]))
    e.like(e.out(0), y)
    e.op("Reshape", [e.inp(0), e.const([-1])], e.out(1))  # one index per input element
    e.like(e.out(2), counts)
    return [input_dtype(e, 0), I64, I64]


def _expand_dims(e: Emit):
    axis = e.info.scalar(e.inp(1))
    if axis is None:
        return None
    if e.opset >= 13:
        e.op("Unsqueeze", [e.inp(0), e.const([axis])], e.out(0))
    else:
        e.op("Unsqueeze", [e.inp(0)], e.out(0), axes=[axis])
    return [input_dtype(e, 0)]


def _range(e: Emit):
    delta = e.inp(2) or e.const([1], input_dtype(e, 0) or I64)
    e.op("Range", [e.inp(0), e.inp(1), delta], e.out(0))
    return [input_dtype(e, 0)]


def _pad(e: Emit):
    known = e.info.values.get(e.inp(1))
    pads = e.const(known.reshape(-1)) if known is not None else e.op("Reshape", [e.inp(1), e.const([-1])])
    ins = [e.inp(0), pads] + ([e.inp(2)] if e.inp(2) else [])
    kw = {"mode": e.attr("mode")} if "mode" in e.attrs else {}
    e.op("Pad", ins, e.out(0), **kw)
    return [input_dtype(e, 0)]


def _grid_sample(e: Emit):
    e.fill(e.out(0), e.dims(e.inp(0), 0, 2), e.dims(e.inp(1), 1, -1))
    return [input_dtype(e, 0)]


def _causal_conv(e: Emit):
    x, w, past = e.inp(0), e.inp(1), e.inp(3)
    e.like(e.out(0), x)
    if e.out(1):
        if past:
            e.like(e.out(1), past)
        elif e.attr("ndim", 1) == 1 and not e.attr("channels_last", 0) and not e.attr("state_window", 0):
            length = e.mul(e.add(e.dim(w, 2), -1), e.attr("dilation", 1))
            e.fill(e.out(1), e.dims(x, 0, 2), length)
    return [input_dtype(e, 0), input_dtype(e, 0), None]


SURROGATES: dict[str, Callable] = {
    **contrib_surrogates.SURROGATES,
    **contrib_attention_shapes.SURROGATES,
    # copies of standard ops
    "GatherND": _standard("GatherND"), "Trilu": identity_surrogate, "Unique": _unique,
    "ExpandDims": _expand_dims, "Range": _range, "Pad": _pad, "GridSample": _grid_sample,
    "MaxpoolWithMask": max_pool_surrogate(False), "NhwcMaxPool": max_pool_surrogate(True),
    "CausalConvWithState": _causal_conv,
    # standard ops ONNX inference cannot type (``UNINFERRED``): the output has the input's shape
    "GroupNormalization": identity_surrogate,
}


def surrogate_copy(m: onnx.ModelProto, needs: set[str], known=None) -> tuple[onnx.ModelProto, dict] | None:
    """A copy of ``m`` with the onnxruntime nodes producing any of ``needs`` replaced by their
    surrogates, and {output name: real elem_type}; None when no such node has one.

    ``known``: {tensor: TensorSpec} learned in earlier rounds (ONNX inference of ``m`` did not
    see them): surrogates read them, and the outputs among them that are not in ``needs`` are
    declared to inference, so the nodes they feed see them too."""
    from analyzer.frontends.onnx.surrogates.ml import ML, SURROGATES as ML_SURROGATES

    info = SurrogateModel(m)
    for name, s in (known or {}).items():
        if s.shape is not None:
            info.shapes[name] = tuple(d if type(d) is int else None for d in s.shape)
        if s.dtype in _ONNX_TYPE:
            info.types.setdefault(name, _ONNX_TYPE[s.dtype])
    new_nodes, dtypes, changed = [], {}, False
    declared: dict[str, tuple[int, ...]] = {}
    for n in m.graph.node:
        if n.domain == ML:
            make = ML_SURROGATES.get(n.op_type)
        else:
            make = SURROGATES.get(n.op_type) if needs_surrogate(n.domain, n.op_type) else None
        if make is None or not any(o in needs for o in n.output):
            new_nodes.append(n)
            continue
        e = Emit(n, info)
        try:
            types = make(e)
        except (KeyError, TypeError, ValueError):  # a malformed node: no surrogate, the rule will say why
            types = None
        if types is None:
            new_nodes.append(n)
            continue
        changed = True
        new_nodes.extend(e.nodes)
        for o, t in zip(n.output, types):
            if o and t:
                dtypes[o] = t
        declared.update(e.declared)
    if not changed:
        return None
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    del m2.graph.node[:]
    m2.graph.node.extend(new_nodes)
    # an earlier declaration of a replaced output (a converter's int64[?] label) would win over
    # the surrogate's shape: let inference derive those outputs again
    outputs = {o for n in m.graph.node for o in n.output}
    for name, s in (known or {}).items():
        if name not in needs and name in outputs and s.shape is not None and s.dtype in _ONNX_TYPE \
                and all(type(d) is int for d in s.shape) and name not in declared:
            declared[name] = s.shape
            dtypes.setdefault(name, _ONNX_TYPE[s.dtype])
    vis = [vi for vi in m2.graph.value_info if vi.name not in dtypes and vi.name not in declared]
    vis += [onnx.helper.make_tensor_value_info(o, dtypes.get(o) or TensorProto.FLOAT, list(s))
            for o, s in declared.items()]
    del m2.graph.value_info[:]
    m2.graph.value_info.extend(vis)
    for o in m2.graph.output:  # a graph output's own declaration ([None, 1]) would win too
        if o.name in declared:
            t = o.type.tensor_type
            t.elem_type = dtypes.get(o.name) or t.elem_type or TensorProto.FLOAT
            t.shape.Clear()
            for d in declared[o.name]:
                t.shape.dim.add().dim_value = d
    return m2, dtypes
