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
contrib rules in ``analyzer/rules/contrib.py``, ``attention.py`` and ``quantized.py``.

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

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
BIG = (1 << 62)

# onnxruntime ops registered in the default domain that ONNX itself does not define
ORT_DEFAULT_DOMAIN = frozenset({"SimplifiedLayerNormalization"})


def is_ort_op(domain: str, op: str) -> bool:
    return domain == MS or (domain in ("", "ai.onnx") and op in ORT_DEFAULT_DOMAIN)


class _Model:
    """What surrogates may ask about the (inferred) model: ranks, shapes, dtypes, constants."""

    def __init__(self, m: onnx.ModelProto):
        g = m.graph
        self.opset = next((d.version for d in m.opset_import if d.domain in ("", "ai.onnx")), 17)
        self.types: dict[str, int] = {}
        self.shapes: dict[str, tuple] = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            t = vi.type.tensor_type
            if t.elem_type:
                self.types[vi.name] = t.elem_type
            if t.HasField("shape"):
                self.shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        self.values: dict[str, np.ndarray] = {}
        for t in g.initializer:
            self.types[t.name] = t.data_type
            self.shapes[t.name] = tuple(t.dims)
            if t.data_location != TensorProto.EXTERNAL and int(np.prod(t.dims)) <= 64:
                try:
                    self.values[t.name] = numpy_helper.to_array(t)
                except Exception:  # an unreadable constant is just not known
                    pass
        for n in g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output:
                a = next((a for a in n.attribute if a.name == "value"), None)
                if a is not None and a.t.data_location != TensorProto.EXTERNAL:
                    self.values[n.output[0]] = numpy_helper.to_array(a.t)

    def rank(self, x: str) -> int | None:
        s = self.shapes.get(x)
        return None if s is None else len(s)

    def dim(self, x: str, i: int) -> int | None:
        s = self.shapes.get(x)
        return None if s is None or not -len(s) <= i < len(s) else s[i]

    def dtype(self, x: str) -> int | None:
        return self.types.get(x) or None

    def scalar(self, x: str) -> int | None:
        v = self.values.get(x)
        return None if v is None or v.size != 1 else int(v.reshape(-1)[0])


class _Emit:
    """Builds the surrogate nodes of one contrib node ``n``."""

    def __init__(self, n: onnx.NodeProto, info: _Model):
        self.n, self.info, self.opset = n, info, info.opset
        self.nodes: list[onnx.NodeProto] = []
        self.attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        self._k = 0
        self._tag = next((o for o in n.output if o), n.name or n.op_type)

    # inputs / outputs
    def inp(self, i: int) -> str | None:
        return self.n.input[i] if len(self.n.input) > i and self.n.input[i] else None

    def out(self, i: int) -> str | None:
        return self.n.output[i] if len(self.n.output) > i and self.n.output[i] else None

    def attr(self, name, default=None):
        v = self.attrs.get(name, default)
        return v.decode() if isinstance(v, bytes) else v

    # node emission
    def tmp(self) -> str:
        self._k += 1
        return f"{self._tag}__sg{self._k}"

    def op(self, op: str, ins: list[str], out: str | None = None, **attrs) -> str:
        out = out or self.tmp()
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def const(self, vals, dtype=I64) -> str:
        name = self.tmp()
        arr = np.asarray(vals, dtype=helper.tensor_dtype_to_np_dtype(dtype)).reshape(-1)
        self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
        return name

    # shape arithmetic on 1-D int64 tensors (ONNX data propagation evaluates these)
    def dims(self, x: str, start: int = 0, end: int | None = None) -> str:
        shape = self.op("Shape", [x])
        if start == 0 and end is None:
            return shape
        return self.op("Slice", [shape, self.const([start]), self.const([BIG if end is None else end])])

    def dim(self, x: str, i: int) -> str:
        return self.dims(x, i, i + 1 if i != -1 else None)

    def _part(self, p) -> str:
        return self.const([p]) if isinstance(p, (int, np.integer)) else p

    def cat(self, *parts) -> str:
        return self.op("Concat", [self._part(p) for p in parts], axis=0)

    def add(self, a, b) -> str:
        return self.op("Add", [self._part(a), self._part(b)])

    def mul(self, a, b) -> str:
        return self.op("Mul", [self._part(a), self._part(b)])

    def div(self, d, k: int) -> str:
        """``d // k`` for a one-element dim tensor: a [d] tensor reshaped to [k, -1]."""
        if k == 1:
            return self._part(d)
        flat = self.op("ConstantOfShape", [self._part(d)])
        return self.dim(self.op("Reshape", [flat, self.const([k, -1])]), 1)

    def fill(self, out: str | None, *parts) -> None:
        """``out`` := a tensor whose shape is the concatenation of ``parts``."""
        if out:
            self.op("ConstantOfShape", [self.cat(*parts) if len(parts) > 1 else self._part(parts[0])], out)

    def like(self, out: str | None, x: str) -> None:
        if out:
            self.op("Identity", [x], out)

    def reduce_keep(self, x: str, y: str | None, axes: list[int]) -> None:
        if not y:
            return
        if self.opset >= 18:
            self.op("ReduceMean", [x, self.const(axes)], y, keepdims=1)
        else:
            self.op("ReduceMean", [x], y, axes=axes, keepdims=1)

    def transpose(self, x: str, perm: list[int], out: str | None = None) -> str:
        return self.op("Transpose", [x], out, perm=perm)


def _dt(e: _Emit, i: int) -> int | None:
    x = e.inp(i)
    return e.info.dtype(x) if x else None


def _outs_like(e: _Emit, dtype) -> list:
    return [dtype] * len(e.n.output)


# ----------------------------------------------------------------------------- elementwise / norms


def _identity(e: _Emit):
    e.like(e.out(0), e.inp(0))
    return [_dt(e, 0)]


def _bias_dropout(e: _Emit):
    e.like(e.out(0), e.inp(0))
    if e.n.op_type == "BiasDropout":
        e.like(e.out(1), e.inp(0))  # a bool mask of the data's shape
        return [_dt(e, 0), TensorProto.BOOL]
    return [_dt(e, 0)]  # BitmaskBiasDropout's uint32 bitmask: left unresolved


def _skip_ln(e: _Emit):
    x, skip = e.inp(0), e.inp(1)
    e.op("Add", [x, skip], e.out(0))
    if e.out(3):
        e.op("Add", [x, skip], e.out(3))
    for i in (1, 2):  # mean / inverse std: the input's shape with the last axis kept as 1
        e.reduce_keep(x, e.out(i), [-1])
    t = _dt(e, 0)
    return [t, F32, F32, t]


def _simplified_ln(e: _Emit):
    x = e.inp(0)
    e.like(e.out(0), x)
    axis = e.attr("axis", -1)
    if e.out(1):
        if axis < 0:
            axes = list(range(axis, 0))
        else:
            r = e.info.rank(x)
            if r is None:
                return None
            axes = list(range(axis, r))
        e.reduce_keep(x, e.out(1), axes)
    return [_dt(e, 0), F32]


def _skip_group_norm(e: _Emit):
    e.like(e.out(0), e.inp(0))
    e.like(e.out(1), e.inp(0))
    return _outs_like(e, _dt(e, 0))


def _embed_layer_norm(e: _Emit):
    ids, word = e.inp(0), e.inp(2)
    e.fill(e.out(0), e.dims(ids), e.dim(word, 1))
    e.fill(e.out(1), e.dim(ids, 0))
    e.fill(e.out(2), e.dims(ids), e.dim(word, 1))
    t = _dt(e, 2)
    return [t, I32, t]


def _bias_split_gelu(e: _Emit):
    x, bias = e.inp(0), e.inp(1)
    e.fill(e.out(0), e.dims(x, 0, -1), e.div(e.dim(bias, 0), 2))
    return [_dt(e, 0)]


# ----------------------------------------------------------------------------- matmul / gemm / conv


def _matmul_perm(rank: int, trans: int, trans_batch: int) -> list[int] | None:
    """FusedMatMul's operand layout: transBatch moves dim 0 behind the batch dims
    (``[1..r-2, 0, r-1]``), trans swaps the last two."""
    perm = list(range(rank))
    if trans_batch and rank > 2:
        perm = list(range(1, rank - 1)) + [0, rank - 1]
    if trans and rank >= 2:
        perm[-1], perm[-2] = perm[-2], perm[-1]
    return None if perm == list(range(rank)) else perm


def _fused_matmul(e: _Emit):
    ab = []
    for i, (t, tb) in enumerate((("transA", "transBatchA"), ("transB", "transBatchB"))):
        x = e.inp(i)
        trans, batch = e.attr(t, 0), e.attr(tb, 0)
        if trans or batch:
            r = e.info.rank(x)
            if r is None:
                return None
            perm = _matmul_perm(r, trans, batch)
            if perm:
                x = e.transpose(x, perm)
        ab.append(x)
    e.op("MatMul", ab, e.out(0))
    return [_dt(e, 0)]


def _gemm_fast_gelu(e: _Emit):
    e.op("MatMul", [e.inp(0), e.inp(1)], e.out(0))
    return [_dt(e, 0)]


def _fused_gemm(e: _Emit):
    kw = {k: e.attr(k) for k in ("alpha", "beta", "transA", "transB") if k in e.attrs}
    e.op("Gemm", [x for x in (e.inp(0), e.inp(1), e.inp(2)) if x], e.out(0), **kw)
    return [_dt(e, 0)]


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
_POOL_ATTRS = ("auto_pad", "kernel_shape", "pads", "strides", "ceil_mode", "count_include_pad", "dilations",
               "storage_order")


def _spatial(e: _Emit, op: str, ins: list[str], keep: tuple, channels_last: bool):
    """``op`` over NCHW inputs; NHWC inputs are transposed there and the result back."""
    kw = {k: e.attr(k) for k in keep if k in e.attrs}
    x = ins[0]
    if not channels_last:
        e.op(op, ins, e.out(0), **kw)
        return True
    r = e.info.rank(x)
    if r is None or r < 3:
        return False
    to_first = [0, r - 1] + list(range(1, r - 1))
    to_last = [0] + list(range(2, r)) + [1]
    y = e.op(op, [e.transpose(x, to_first)] + ins[1:], **kw)
    e.transpose(y, to_last, e.out(0))
    return True


def _conv(channels_last: bool):
    def make(e: _Emit):
        ins = [x for x in (e.inp(0), e.inp(1), e.inp(2)) if x]
        if not _spatial(e, "Conv", ins, _CONV_ATTRS, channels_last):
            return None
        return [_dt(e, 0)]
    return make


def _max_pool(channels_last: bool):
    def make(e: _Emit):
        if not _spatial(e, "MaxPool", [e.inp(0)], _POOL_ATTRS, channels_last):
            return None
        return [_dt(e, 0)]
    return make


def _qlinear_conv(e: _Emit):
    ins = [e.inp(0), e.inp(3)]
    if not _spatial(e, "Conv", ins, _CONV_ATTRS, bool(e.attr("channels_last", 0))):
        return None
    return [_dt(e, 7) or _dt(e, 0)]


def _qlinear_average_pool(e: _Emit):
    keep = tuple(a for a in _POOL_ATTRS if a not in ("dilations", "storage_order"))
    if not _spatial(e, "AveragePool", [e.inp(0)], keep, bool(e.attr("channels_last", 0))):
        return None
    return [_dt(e, 0)]


def _qlinear_gap(e: _Emit):
    x = e.inp(0)
    if not e.attr("channels_last", 0):
        e.op("GlobalAveragePool", [x], e.out(0))
        return [_dt(e, 0)]
    r = e.info.rank(x)
    if r is None:
        return None
    e.reduce_keep(x, e.out(0), list(range(1, r - 1)))
    return [_dt(e, 0)]


def _qlinear_reduce_mean(e: _Emit):
    axes, keep = e.attr("axes"), e.attr("keepdims", 1)
    x = e.inp(0)
    if e.opset >= 18:
        ins = [x] + ([e.const(list(axes))] if axes else [])
        e.op("ReduceMean", ins, e.out(0), keepdims=keep)
    else:
        kw = {"axes": list(axes)} if axes else {}
        e.op("ReduceMean", [x], e.out(0), keepdims=keep, **kw)
    return [_dt(e, 0)]


def _qgemm(e: _Emit):
    a, b = e.inp(0), e.inp(3)
    if e.attr("transA", 0):
        a = e.transpose(a, [1, 0])
    if e.attr("transB", 0):
        b = e.transpose(b, [1, 0])
    e.op("MatMulInteger", [a, b], e.out(0))
    # a quantized output when y_scale/y_zero_point are given, else float32
    return [(_dt(e, 8) or TensorProto.UINT8) if e.inp(7) else F32]


def _matmul_integer(a: int, b: int, dtype: Callable):
    def make(e: _Emit):
        e.op("MatMulInteger", [e.inp(a), e.inp(b)], e.out(0))
        return [dtype(e)]
    return make


def _matmul_nbits(e: _Emit):
    # A [..., K] -> Y [..., N] (MatMulBnb4 with transB=0: A [..., N] -> Y [..., K])
    last = e.attr("N") if e.n.op_type == "MatMulNBits" or e.attr("transB", 1) else e.attr("K")
    if last is None:
        return None
    e.fill(e.out(0), e.dims(e.inp(0), 0, -1), int(last))
    return [_dt(e, 0)]


def _gather_block_quantized(e: _Emit):
    data, idx = e.inp(0), e.inp(1)
    axis = e.attr("gather_axis", 0)
    bits = e.attr("bits", 4)
    if e.info.dtype(data) == TensorProto.UINT8 and bits < 8:
        # uint8 data packs 8/bits values along the last axis (gather_axis is 0 then)
        g = e.op("Gather", [data, idx], axis=axis)
        e.fill(e.out(0), e.dims(g, 0, -1), e.mul(e.dim(g, -1), 8 // bits))
    else:
        e.op("Gather", [data, idx], e.out(0), axis=axis)
    return [_dt(e, 2)]


# ----------------------------------------------------------------------------- quantized elementwise


def _qbinary(op):
    def make(e: _Emit):  # QLinearAdd(A, As, Az, B, Bs, Bz, Cs, Cz): shape of A (+) B
        e.op(op, [e.inp(0), e.inp(3)], e.out(0))
        return [_dt(e, 0)]
    return make


def _qlinear_concat(e: _Emit):
    xs = list(e.n.input[2::3])
    if not xs or not all(xs):
        return None
    e.op("Concat", xs, e.out(0), axis=e.attr("axis", 0))
    return [_dt(e, 1) or _dt(e, 2)]


def _qlinear_where(e: _Emit):
    e.op("Where", [e.inp(0), e.inp(1), e.inp(4)], e.out(0))
    return [_dt(e, 8) or _dt(e, 1)]


def _quantize(e: _Emit):
    e.like(e.out(0), e.inp(0))
    return [_dt(e, 2) or TensorProto.UINT8]


def _dequantize(e: _Emit):
    e.like(e.out(0), e.inp(0))
    return [_dt(e, 1)]


# ----------------------------------------------------------------------------- attention


def _attention(e: _Emit):
    # input (B, S, D_in), weights (D_in, Hq + Hk + Hv), bias?, mask_index?, past (2, B, N, P, Dk)?
    x, w = e.inp(0), e.inp(1)
    past = e.inp(8) if e.n.op_type == "QAttention" else e.inp(4)
    heads = e.attr("num_heads")
    sizes = e.attr("qkv_hidden_sizes")
    if sizes:
        hk, hv = int(sizes[1]), int(sizes[2])
        head_k = e.const([hk // heads])
    else:
        hv = e.div(e.dim(w, 1), 3)
        head_k = e.div(hv, heads)
    e.fill(e.out(0), e.dims(x, 0, 2), hv)
    if e.out(1):
        if past and e.attr("past_present_share_buffer", 0):
            e.like(e.out(1), past)
        elif past:
            e.fill(e.out(1), e.dims(past, 0, 3), e.add(e.dim(past, 3), e.dim(x, 1)), e.dim(past, 4))
        else:
            e.fill(e.out(1), 2, e.dim(x, 0), heads, e.dim(x, 1), head_k)
    t = _dt(e, 2) if e.n.op_type == "QAttention" else _dt(e, 0)
    return _outs_like(e, t)


def _mha(e: _Emit):
    q, k, v, past = e.inp(0), e.inp(1), e.inp(2), e.inp(6)
    heads = e.attr("num_heads")
    rq = e.info.rank(q)
    rk = e.info.rank(k) if k else None
    if rq is None or (k and rk is None):
        return None
    if rq == 5:  # packed QKV (B, S, N, 3, D)
        head = head_v = e.dim(q, 4)
        kv_len = e.dim(q, 1)
    else:
        head = e.div(e.dim(q, 2), heads)
        if rk == 5:  # packed KV (B, L, N, 2, D)
            head_v, kv_len = e.dim(k, 4), e.dim(k, 1)
        elif rk == 4:  # K/V already in BNSH (B, N, L, D)
            head, head_v, kv_len = e.dim(k, 3), e.dim(v, 3), e.dim(k, 2)
        elif rk == 3:
            head_v, kv_len = e.div(e.dim(v, 2), heads), e.dim(k, 1)
        else:
            return None
    e.fill(e.out(0), e.dims(q, 0, 2), e.mul(head_v, heads))
    if rk == 4 or not past:
        total = kv_len
    elif e.inp(8):  # past_sequence_length given: past and present share a buffer
        total = e.dim(past, 2)
    else:
        total = e.add(e.dim(past, 2), kv_len)
    b = e.dim(q, 0)
    e.fill(e.out(1), b, heads, total, head)
    e.fill(e.out(2), b, heads, total, head_v)
    e.fill(e.out(3), b, heads, e.dim(q, 1), total)
    return _outs_like(e, _dt(e, 0))


def _decoder_masked_mha(e: _Emit):
    q, k, v, past = e.inp(0), e.inp(1), e.inp(2), e.inp(5)
    heads = e.attr("num_heads")
    rk = e.info.rank(k) if k else None
    if k and rk is None:
        return None
    if rk == 4:  # cross attention over cached K/V (B, N, L, D)
        head, hv, total = e.dim(k, 3), e.mul(e.dim(v, 3), heads), e.dim(k, 2)
    else:
        hv = e.dim(v, 2) if k else e.div(e.dim(q, 2), 3)  # packed QKV: equal Q/K/V widths
        head = e.div(e.dim(q, 2) if k else hv, heads)
        if past and e.attr("past_present_share_buffer", 0):
            total = e.dim(past, 2)
        elif past:
            total = e.add(e.dim(past, 2), e.dim(q, 1))
        else:
            total = e.dim(q, 1)
    e.fill(e.out(0), e.dims(q, 0, 2), hv)
    b = e.dim(q, 0)
    if rk != 4:
        e.fill(e.out(1), b, heads, total, head)
        e.fill(e.out(2), b, heads, total, e.div(hv, heads))
    e.fill(e.out(3), b, heads, e.dim(q, 1), total)
    return _outs_like(e, _dt(e, 0))


def _gqa(e: _Emit):
    q, k, past = e.inp(0), e.inp(1), e.inp(3)
    heads, kv_heads = e.attr("num_heads"), e.attr("kv_num_heads")
    if k:
        head = e.div(e.dim(k, 2), kv_heads)
        e.like(e.out(0), q)
        kv_len = e.dim(k, 1)
    else:  # packed QKV: (heads + 2 * kv_heads) * head_size
        head = e.div(e.dim(q, 2), heads + 2 * kv_heads)
        e.fill(e.out(0), e.dims(q, 0, 2), e.mul(head, heads))
        kv_len = e.dim(q, 1)
    total_value = e.info.scalar(e.inp(6)) if e.inp(6) else None
    past_len = e.info.dim(past, 2) if past else 0
    if total_value is not None and past_len is not None:
        total = max(past_len, total_value)
    elif past:
        total = e.add(e.dim(past, 2), kv_len)
    else:
        total = kv_len
    b = e.dim(q, 0)
    e.fill(e.out(1), b, kv_heads, total, head)
    e.fill(e.out(2), b, kv_heads, total, head)
    e.fill(e.out(3), b, heads, e.dim(q, 1), total)
    t = _dt(e, 0)
    cache = _dt(e, 3) or t
    return [t, cache, cache, t]


def _linear_attention(e: _Emit):
    q, v, past = e.inp(0), e.inp(2), e.inp(3)
    hq, hkv = e.attr("q_num_heads"), e.attr("kv_num_heads")
    if not hq or not hkv:
        return None
    dv = e.div(e.dim(v, 2), hkv)
    e.fill(e.out(0), e.dims(q, 0, 2), e.mul(dv, max(hq, hkv)))
    if past:
        e.like(e.out(1), past)
    else:
        e.fill(e.out(1), e.dim(q, 0), hkv, e.div(e.dim(q, 2), hq), dv)
    return _outs_like(e, _dt(e, 0))


# ----------------------------------------------------------------------------- copies of standard ops


def _standard(op):
    def make(e: _Emit):
        e.op(op, list(e.n.input), e.out(0))
        return [_dt(e, 0)]
    return make


def _unique(e: _Emit):
    y, idx, inv, counts = (e.tmp() for _ in range(4))
    e.nodes.append(helper.make_node("Unique", [e.inp(0)], [y, idx, inv, counts]))
    e.like(e.out(0), y)
    e.op("Reshape", [e.inp(0), e.const([-1])], e.out(1))  # one index per input element
    e.like(e.out(2), counts)
    return [_dt(e, 0), I64, I64]


def _expand_dims(e: _Emit):
    axis = e.info.scalar(e.inp(1))
    if axis is None:
        return None
    if e.opset >= 13:
        e.op("Unsqueeze", [e.inp(0), e.const([axis])], e.out(0))
    else:
        e.op("Unsqueeze", [e.inp(0)], e.out(0), axes=[axis])
    return [_dt(e, 0)]


def _range(e: _Emit):
    delta = e.inp(2) or e.const([1], _dt(e, 0) or I64)
    e.op("Range", [e.inp(0), e.inp(1), delta], e.out(0))
    return [_dt(e, 0)]


def _pad(e: _Emit):
    known = e.info.values.get(e.inp(1))
    pads = e.const(known.reshape(-1)) if known is not None else e.op("Reshape", [e.inp(1), e.const([-1])])
    ins = [e.inp(0), pads] + ([e.inp(2)] if e.inp(2) else [])
    kw = {"mode": e.attr("mode")} if "mode" in e.attrs else {}
    e.op("Pad", ins, e.out(0), **kw)
    return [_dt(e, 0)]


def _grid_sample(e: _Emit):
    e.fill(e.out(0), e.dims(e.inp(0), 0, 2), e.dims(e.inp(1), 1, -1))
    return [_dt(e, 0)]


def _causal_conv(e: _Emit):
    x, w, past = e.inp(0), e.inp(1), e.inp(3)
    e.like(e.out(0), x)
    if e.out(1):
        if past:
            e.like(e.out(1), past)
        elif e.attr("ndim", 1) == 1 and not e.attr("channels_last", 0) and not e.attr("state_window", 0):
            length = e.mul(e.add(e.dim(w, 2), -1), e.attr("dilation", 1))
            e.fill(e.out(1), e.dims(x, 0, 2), length)
    return [_dt(e, 0), _dt(e, 0), None]


SURROGATES: dict[str, Callable] = {
    # activations and normalizations
    "Gelu": _identity, "FastGelu": _identity, "QuickGelu": _identity, "BiasGelu": _identity,
    "BiasAdd": _identity, "BiasSoftmax": _identity, "GroupNorm": _identity,
    "BiasDropout": _bias_dropout, "BitmaskBiasDropout": _bias_dropout,
    "BiasSplitGelu": _bias_split_gelu,
    "SkipLayerNormalization": _skip_ln, "SkipSimplifiedLayerNormalization": _skip_ln,
    "SimplifiedLayerNormalization": _simplified_ln, "SkipGroupNorm": _skip_group_norm,
    "EmbedLayerNormalization": _embed_layer_norm,
    # attention
    "Attention": _attention, "QAttention": _attention, "MultiHeadAttention": _mha,
    "DecoderMaskedMultiHeadAttention": _decoder_masked_mha, "GroupQueryAttention": _gqa,
    "RotaryEmbedding": _identity, "MRotaryEmbedding": _identity, "LinearAttention": _linear_attention,
    # matmul / gemm / conv
    "FusedMatMul": _fused_matmul, "TransposeMatMul": _fused_matmul, "FusedMatMulActivation": _fused_matmul,
    "GemmFastGelu": _gemm_fast_gelu, "FusedGemm": _fused_gemm,
    "FusedConv": _conv(False), "NhwcConv": _conv(True), "NhwcFusedConv": _conv(True),
    "MatMulNBits": _matmul_nbits, "MatMulBnb4": _matmul_nbits,
    "MatMulIntegerToFloat": _matmul_integer(0, 1, lambda e: _dt(e, 2)),
    "DynamicQuantizeMatMul": _matmul_integer(0, 1, lambda e: _dt(e, 0)),
    "MatMulInteger16": _matmul_integer(0, 1, lambda e: I32),
    "GatherBlockQuantized": _gather_block_quantized,
    # quantized
    "QuantizeLinear": _quantize, "DequantizeLinear": _dequantize,
    "QLinearSigmoid": _identity, "QLinearLeakyRelu": _identity, "QLinearSoftmax": _identity,
    "QLinearAdd": _qbinary("Add"), "QLinearMul": _qbinary("Mul"),
    "QLinearGlobalAveragePool": _qlinear_gap, "QLinearAveragePool": _qlinear_average_pool,
    "QLinearReduceMean": _qlinear_reduce_mean, "QLinearConcat": _qlinear_concat,
    "QLinearWhere": _qlinear_where, "QLinearConv": _qlinear_conv, "QGemm": _qgemm,
    # copies of standard ops
    "GatherND": _standard("GatherND"), "Trilu": _identity, "Unique": _unique,
    "ExpandDims": _expand_dims, "Range": _range, "Pad": _pad, "GridSample": _grid_sample,
    "MaxpoolWithMask": _max_pool(False), "NhwcMaxPool": _max_pool(True),
    "CausalConvWithState": _causal_conv,
}


def surrogate_copy(m: onnx.ModelProto, needs: set[str]) -> tuple[onnx.ModelProto, dict] | None:
    """A copy of ``m`` with the onnxruntime nodes producing any of ``needs`` replaced by their
    surrogates, and {output name: real elem_type}; None when no such node has one."""
    info = _Model(m)
    new_nodes, dtypes, changed = [], {}, False
    for n in m.graph.node:
        make = SURROGATES.get(n.op_type) if is_ort_op(n.domain, n.op_type) else None
        if make is None or not any(o in needs for o in n.output):
            new_nodes.append(n)
            continue
        e = _Emit(n, info)
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
    if not changed:
        return None
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    del m2.graph.node[:]
    m2.graph.node.extend(new_nodes)
    return m2, dtypes
