"""Shape surrogates of the onnxruntime contrib ops other than attention (see
``contrib_shapes``): activations and normalizations, matmul / gemm / conv, quantized ops."""

from __future__ import annotations

from typing import Callable

from onnx import TensorProto

from analyzer.frontends.onnx.surrogates.emit import F32, I32, input_dtype, Emit, outs_like


# ----------------------------------------------------------------------------- elementwise / norms


def identity_surrogate(e: Emit):
    e.like(e.out(0), e.inp(0))
    return [input_dtype(e, 0)]


def _bias_dropout(e: Emit):
    e.like(e.out(0), e.inp(0))
    if e.n.op_type == "BiasDropout":
        e.like(e.out(1), e.inp(0))  # a bool mask of the data's shape
        return [input_dtype(e, 0), TensorProto.BOOL]
    return [input_dtype(e, 0)]  # BitmaskBiasDropout's uint32 bitmask: left unresolved


def _skip_ln(e: Emit):
    x, skip = e.inp(0), e.inp(1)
    e.op("Add", [x, skip], e.out(0))
    if e.out(3):
        e.op("Add", [x, skip], e.out(3))
    for i in (1, 2):  # mean / inverse std: the input's shape with the last axis kept as 1
        e.reduce_keep(x, e.out(i), [-1])
    t = input_dtype(e, 0)
    return [t, F32, F32, t]


def _simplified_ln(e: Emit):
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
    return [input_dtype(e, 0), F32]


def _skip_group_norm(e: Emit):
    e.like(e.out(0), e.inp(0))
    e.like(e.out(1), e.inp(0))
    return outs_like(e, input_dtype(e, 0))


def _embed_layer_norm(e: Emit):
    ids, word = e.inp(0), e.inp(2)
    e.fill(e.out(0), e.dims(ids), e.dim(word, 1))
    e.fill(e.out(1), e.dim(ids, 0))
    e.fill(e.out(2), e.dims(ids), e.dim(word, 1))
    t = input_dtype(e, 2)
    return [t, I32, t]


def _qembed_layer_norm(e: Emit):
    # QEmbedLayerNormalization: the same shapes; the output takes the dtype of the scales
    # (input 8, word_embedding_scale), the mask index is int32; no embedding-sum output
    ids, word = e.inp(0), e.inp(2)
    e.fill(e.out(0), e.dims(ids), e.dim(word, 1))
    e.fill(e.out(1), e.dim(ids, 0))
    return [input_dtype(e, 8), I32]


def _bias_split_gelu(e: Emit):
    x, bias = e.inp(0), e.inp(1)
    e.fill(e.out(0), e.dims(x, 0, -1), e.div(e.dim(bias, 0), 2))
    return [input_dtype(e, 0)]


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


def _fused_matmul(e: Emit):
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
    return [input_dtype(e, 0)]


def _gemm_fast_gelu(e: Emit):
    e.op("MatMul", [e.inp(0), e.inp(1)], e.out(0))
    return [input_dtype(e, 0)]


def _fused_gemm(e: Emit):
    kw = {k: e.attr(k) for k in ("alpha", "beta", "transA", "transB") if k in e.attrs}
    e.op("Gemm", [x for x in (e.inp(0), e.inp(1), e.inp(2)) if x], e.out(0), **kw)
    return [input_dtype(e, 0)]


_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")
_POOL_ATTRS = ("auto_pad", "kernel_shape", "pads", "strides", "ceil_mode", "count_include_pad", "dilations",
               "storage_order")


def _spatial(e: Emit, op: str, ins: list[str], keep: tuple, channels_last: bool):
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
    def make(e: Emit):
        ins = [x for x in (e.inp(0), e.inp(1), e.inp(2)) if x]
        if not _spatial(e, "Conv", ins, _CONV_ATTRS, channels_last):
            return None
        return [input_dtype(e, 0)]
    return make


def max_pool_surrogate(channels_last: bool):
    def make(e: Emit):
        if not _spatial(e, "MaxPool", [e.inp(0)], _POOL_ATTRS, channels_last):
            return None
        return [input_dtype(e, 0)]
    return make


def _qlinear_conv(e: Emit):
    ins = [e.inp(0), e.inp(3)]
    if not _spatial(e, "Conv", ins, _CONV_ATTRS, bool(e.attr("channels_last", 0))):
        return None
    return [input_dtype(e, 7) or input_dtype(e, 0)]


def _qlinear_average_pool(e: Emit):
    keep = tuple(a for a in _POOL_ATTRS if a not in ("dilations", "storage_order"))
    if not _spatial(e, "AveragePool", [e.inp(0)], keep, bool(e.attr("channels_last", 0))):
        return None
    return [input_dtype(e, 0)]


def _qlinear_gap(e: Emit):
    x = e.inp(0)
    if not e.attr("channels_last", 0):
        e.op("GlobalAveragePool", [x], e.out(0))
        return [input_dtype(e, 0)]
    r = e.info.rank(x)
    if r is None:
        return None
    e.reduce_keep(x, e.out(0), list(range(1, r - 1)))
    return [input_dtype(e, 0)]


def _qlinear_reduce_mean(e: Emit):
    axes, keep = e.attr("axes"), e.attr("keepdims", 1)
    x = e.inp(0)
    if e.opset >= 18:
        ins = [x] + ([e.const(list(axes))] if axes else [])
        e.op("ReduceMean", ins, e.out(0), keepdims=keep)
    else:
        kw = {"axes": list(axes)} if axes else {}
        e.op("ReduceMean", [x], e.out(0), keepdims=keep, **kw)
    return [input_dtype(e, 0)]


def _qgemm(e: Emit):
    a, b = e.inp(0), e.inp(3)
    if e.attr("transA", 0):
        a = e.transpose(a, [1, 0])
    if e.attr("transB", 0):
        b = e.transpose(b, [1, 0])
    e.op("MatMulInteger", [a, b], e.out(0))
    # a quantized output when y_scale/y_zero_point are given, else float32
    return [(input_dtype(e, 8) or TensorProto.UINT8) if e.inp(7) else F32]


def _matmul_integer(a: int, b: int, dtype: Callable):
    def make(e: Emit):
        e.op("MatMulInteger", [e.inp(a), e.inp(b)], e.out(0))
        return [dtype(e)]
    return make


def _matmul_nbits(e: Emit):
    # A [..., K] -> Y [..., N] (MatMulBnb4 with transB=0: A [..., N] -> Y [..., K])
    last = e.attr("N") if e.n.op_type == "MatMulNBits" or e.attr("transB", 1) else e.attr("K")
    if last is None:
        return None
    e.fill(e.out(0), e.dims(e.inp(0), 0, -1), int(last))
    return [input_dtype(e, 0)]


def _gather_block_quantized(e: Emit):
    data, idx = e.inp(0), e.inp(1)
    axis = e.attr("gather_axis", 0)
    bits = e.attr("bits", 4)
    if e.info.dtype(data) == TensorProto.UINT8 and bits < 8:
        # uint8 data packs 8/bits values along the last axis (gather_axis is 0 then)
        g = e.op("Gather", [data, idx], axis=axis)
        e.fill(e.out(0), e.dims(g, 0, -1), e.mul(e.dim(g, -1), 8 // bits))
    else:
        e.op("Gather", [data, idx], e.out(0), axis=axis)
    return [input_dtype(e, 2)]


# ----------------------------------------------------------------------------- quantized elementwise


def _qbinary(op):
    def make(e: Emit):  # QLinearAdd(A, As, Az, B, Bs, Bz, Cs, Cz): shape of A (+) B
        e.op(op, [e.inp(0), e.inp(3)], e.out(0))
        return [input_dtype(e, 0)]
    return make


def _qlinear_concat(e: Emit):
    xs = list(e.n.input[2::3])
    if not xs or not all(xs):
        return None
    e.op("Concat", xs, e.out(0), axis=e.attr("axis", 0))
    return [input_dtype(e, 1) or input_dtype(e, 2)]


def _qlinear_where(e: Emit):
    e.op("Where", [e.inp(0), e.inp(1), e.inp(4)], e.out(0))
    return [input_dtype(e, 8) or input_dtype(e, 1)]


def _quantize(e: Emit):
    e.like(e.out(0), e.inp(0))
    return [input_dtype(e, 2) or TensorProto.UINT8]


def _dequantize(e: Emit):
    e.like(e.out(0), e.inp(0))
    return [input_dtype(e, 1)]


SURROGATES: dict[str, Callable] = {
    # activations and normalizations
    "Gelu": identity_surrogate, "FastGelu": identity_surrogate, "QuickGelu": identity_surrogate, "BiasGelu": identity_surrogate,
    "BiasAdd": identity_surrogate, "BiasSoftmax": identity_surrogate, "GroupNorm": identity_surrogate,
    "BiasDropout": _bias_dropout, "BitmaskBiasDropout": _bias_dropout,
    "BiasSplitGelu": _bias_split_gelu,
    "SkipLayerNormalization": _skip_ln, "SkipSimplifiedLayerNormalization": _skip_ln,
    "SimplifiedLayerNormalization": _simplified_ln, "SkipGroupNorm": _skip_group_norm,
    "EmbedLayerNormalization": _embed_layer_norm, "QEmbedLayerNormalization": _qembed_layer_norm,
    "RotaryEmbedding": identity_surrogate, "MRotaryEmbedding": identity_surrogate,
    # matmul / gemm / conv
    "FusedMatMul": _fused_matmul, "TransposeMatMul": _fused_matmul, "FusedMatMulActivation": _fused_matmul,
    "GemmFastGelu": _gemm_fast_gelu, "FusedGemm": _fused_gemm,
    "FusedConv": _conv(False), "NhwcConv": _conv(True), "NhwcFusedConv": _conv(True),
    "MatMulNBits": _matmul_nbits, "MatMulBnb4": _matmul_nbits,
    "MatMulIntegerToFloat": _matmul_integer(0, 1, lambda e: input_dtype(e, 2)),
    "DynamicQuantizeMatMul": _matmul_integer(0, 1, lambda e: input_dtype(e, 0)),
    "MatMulInteger16": _matmul_integer(0, 1, lambda e: I32),
    "GatherBlockQuantized": _gather_block_quantized,
    # quantized
    "QuantizeLinear": _quantize, "DequantizeLinear": _dequantize,
    "QLinearSigmoid": identity_surrogate, "QLinearLeakyRelu": identity_surrogate, "QLinearSoftmax": identity_surrogate,
    "QLinearAdd": _qbinary("Add"), "QLinearMul": _qbinary("Mul"),
    "QLinearGlobalAveragePool": _qlinear_gap, "QLinearAveragePool": _qlinear_average_pool,
    "QLinearReduceMean": _qlinear_reduce_mean, "QLinearConcat": _qlinear_concat,
    "QLinearWhere": _qlinear_where, "QLinearConv": _qlinear_conv, "QGemm": _qgemm,
}


def _dynamic_quantize_lstm(e: Emit):
    # X [S, B, I], W [D, I, 4H] (int8), R [D, H, 4H]: Y [S, D, B, H], Y_h and Y_c [D, B, H]
    # (no layout attribute: always sequence-major)
    x, w, r = e.inp(0), e.inp(1), e.inp(2)
    hidden = e.attr("hidden_size") or e.dim(r, 1)
    seq, batch, dirs = e.dim(x, 0), e.dim(x, 1), e.dim(w, 0)
    e.fill(e.out(0), seq, dirs, batch, hidden)
    e.fill(e.out(1), dirs, batch, hidden)
    e.fill(e.out(2), dirs, batch, hidden)
    return outs_like(e, input_dtype(e, 0))


SURROGATES["DynamicQuantizeLSTM"] = _dynamic_quantize_lstm
