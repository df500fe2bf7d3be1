"""Quantized ops: Quantize/DequantizeLinear, the integer matmul/conv family and ORT's quantized ops.

Counting convention (vector_flops per element unless said otherwise):

- quantize: divide by the scale (1), round (1), add the zero point (1, only when the node has a
  zero-point input), clamp to the integer range (2: a min and a max, as Clip with both bounds
  counts) = 5 (4 without a zero point).  Per-tensor, per-axis and blocked (``block_size``)
  quantization cost the same per element: the scale and zero point are broadcast; they are data
  inputs (params when constant) and are read whole.
- dequantize: subtract the zero point (1, when present), multiply by the scale (1) = 2 (1).
- requantize an integer accumulator to a quantized output (QLinearConv/QLinearMatMul/QGemm):
  multiply by the combined scale, round, add the zero point, clamp: the quantize count.
  Dequantize it to float (QGemm without y_scale, MatMulIntegerToFloat): 1 multiply.
- integer matmuls/convs: ``mac_flops`` exactly as ``linear.py`` counts MatMul/Gemm/Conv (its rules
  are called, not re-derived), tagged ``mac_dtype`` ``int8``/``int4`` from the operand dtype
  (uint8 -> int8) so lowering picks the integer peak.  A zero-point input of an operand costs one
  subtraction per operand element (a straightforward kernel; tuned kernels fold it into row and
  column sums, which costs about the same order).
- QLinear elementwise/pooling ops (com.microsoft): dequantize each operand element, do the float
  op by the convention of its float module, quantize each result element.
- DynamicQuantizeLinear: a min and a max reduction (2 x (n-1) compares), 9 scalar ops for the
  scale and zero point (its function body: Min/Max with 0, Sub, Div, Div, Sub, Clip (2), Round),
  then quantize with a zero point (5 per element).
- MatMulNBits / MatMulBnb4 (weight-only 4-bit): 2*M*N*K mac_flops with K and N from the
  attributes; the weights are dequantized once per call (2 ops per weight element, K*N).  The
  MAC array runs in the activation dtype (the weights are widened before the product), except
  with ``accuracy_level=4`` (int8 activations).  Their params are K*N weight elements (the packed
  uint8 ``B`` holds K*N*bits/8 bytes; its TensorSpec numel is not the weight count); weight bytes
  are the packed bytes plus scales and zero points (the engine's default reads).
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError
from analyzer.ir.graph import dtype_bits
from analyzer.counting.rules.onnx import linear
from analyzer.counting.rules.onnx import pooling
from analyzer.counting.rules.onnx.attention import ms_attention
from analyzer.counting.rules.onnx.misc import output

QUANTIZE, QUANTIZE_NO_ZP = 5, 4
DEQUANTIZE, DEQUANTIZE_NO_ZP = 2, 1
MS = "com.microsoft"


def _present(ins, i: int) -> bool:
    return len(ins) > i and ins[i] is not None


def quantize_ops(has_zero_point: bool) -> int:
    return QUANTIZE if has_zero_point else QUANTIZE_NO_ZP


def dequantize_ops(has_zero_point: bool) -> int:
    return DEQUANTIZE if has_zero_point else DEQUANTIZE_NO_ZP


def int_mac_dtype(dtype: str) -> str:
    """The MAC-array dtype of an integer operand: uint8 runs on the int8 path, uint4 on int4."""
    return {"uint8": "int8", "uint4": "int4", "uint16": "int16"}.get(dtype, dtype)


def _with_params(work: Work, params: dict[int, int]) -> Work:
    """``work`` with packed-weight param counts (``Work.params``: input index -> elements)."""
    return work._replace(params=params)


# ----------------------------------------------------------------------------- Q / DQ


@register("QuantizeLinear")
@register("QuantizeLinear", domain=MS)
def quantize_linear(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel() * quantize_ops(_present(ins, 2)))


@register("DequantizeLinear")
@register("DequantizeLinear", domain=MS)
def dequantize_linear(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel() * dequantize_ops(_present(ins, 2)))


DQL_SCALAR_OPS = 9  # Min(min,0), Max(max,0), Sub, Div(255) -> scale; Div, Sub, Clip (2), Round -> zp


def _dynamic_quantize(n: int) -> int:
    return 2 * (n - 1) + DQL_SCALAR_OPS + QUANTIZE * n


@register("DynamicQuantizeLinear")
def dynamic_quantize_linear(ins, outs, ctx):
    return Work(vector_flops=_dynamic_quantize(ins[0].numel()))


# ----------------------------------------------------------------------------- integer matmul / conv


def _zero_point_subtractions(ins, pairs) -> int:
    """One subtraction per operand element for each (operand index, zero-point index) present."""
    return sum(ins[x].numel() for x, zp in pairs if _present(ins, zp))


@register("MatMulInteger")
def matmul_integer(ins, outs, ctx):
    a, b = ins[0], ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    return Work(mac_flops=mm.mac_flops, vector_flops=_zero_point_subtractions(ins, ((0, 2), (1, 3))),
                mac_dtype=int_mac_dtype(a.dtype))


@register("MatMulInteger16", domain=MS)
def matmul_integer16(ins, outs, ctx):
    mm = linear.matmul((ins[0], ins[1]), (output(outs),), ctx)
    return Work(mac_flops=mm.mac_flops, mac_dtype=int_mac_dtype(ins[0].dtype))


@register("QLinearMatMul")
def qlinear_matmul(ins, outs, ctx):
    # a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
    a, b = ins[0], ins[3]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    vec = _zero_point_subtractions(ins, ((0, 2), (3, 5)))
    vec += output(outs).numel() * quantize_ops(_present(ins, 7))
    return Work(mac_flops=mm.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(a.dtype))


@register("ConvInteger")
def conv_integer(ins, outs, ctx):
    x, w = ins[0], ins[1]
    c = linear.conv((x, w), (output(outs),), ctx)
    return Work(mac_flops=c.mac_flops, vector_flops=_zero_point_subtractions(ins, ((0, 2), (1, 3))),
                mac_dtype=int_mac_dtype(x.dtype))


@register("QLinearConv")
@register("QLinearConv", domain=MS)
def qlinear_conv(ins, outs, ctx):
    # x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B (int32)
    x, w = ins[0], ins[3]
    bias = ins[8] if _present(ins, 8) else None
    c = linear.conv((x, w, bias), (output(outs),), ctx)  # mac + one bias add per output element
    vec = c.vector_flops + _zero_point_subtractions(ins, ((0, 2), (3, 5)))
    vec += output(outs).numel() * quantize_ops(_present(ins, 7))
    return Work(mac_flops=c.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(x.dtype))


@register("QGemm", domain=MS)
def qgemm(ins, outs, ctx, *, alpha=1.0, transA=0):
    # A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32)?, y_scale?, y_zero_point?
    a, b = ins[0], ins[3]
    c = ins[6] if _present(ins, 6) else None
    g = linear.gemm((a, b, c), (output(outs),), ctx, alpha=alpha, beta=1.0, transA=transA)
    mn = output(outs).numel()
    out_ops = mn * quantize_ops(_present(ins, 8)) if _present(ins, 7) else mn  # requantize or dequantize
    vec = g.vector_flops + _zero_point_subtractions(ins, ((0, 2), (3, 5))) + out_ops
    return Work(mac_flops=g.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(a.dtype))


@register("MatMulIntegerToFloat", domain=MS)
def matmul_integer_to_float(ins, outs, ctx):
    # A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?
    a, b = ins[0], ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    n = output(outs).numel()
    vec = _zero_point_subtractions(ins, ((0, 4), (1, 5))) + n  # dequantize: one multiply per output
    if _present(ins, 6):
        vec += n  # bias
    return Work(mac_flops=mm.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(a.dtype))


@register("DynamicQuantizeMatMul", domain=MS)
def dynamic_quantize_matmul(ins, outs, ctx):
    # A (float), B (int8/uint8), b_scale, b_zero_point?, bias?
    a, b = ins[0], ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    n_a, n = a.numel(), output(outs).numel()
    vec = _dynamic_quantize(n_a)  # quantize A to uint8 on the fly
    vec += n_a  # A's zero point (always present after dynamic quantization)
    vec += _zero_point_subtractions(ins, ((1, 3),))
    vec += n  # dequantize the int32 result
    if _present(ins, 4):
        vec += n  # bias
    return Work(mac_flops=mm.mac_flops, vector_flops=vec, mac_dtype="int8")


# ----------------------------------------------------------------------------- weight-only 4-bit


@register("MatMulNBits", domain=MS)
def matmul_nbits(ins, outs, ctx, *, K, N, bits=4, accuracy_level=0):
    a = ins[0]
    if a.dim(-1) != K:
        raise ShapeError(f"MatMulNBits: A's last dim {a.dim(-1)} is not K={K}")
    m = a.numel() // K
    vec = 2 * K * N  # dequantize each weight: subtract the zero point, multiply by the scale
    if _present(ins, 5):
        vec += m * N  # bias
    w = Work(mac_flops=2 * m * N * K, vector_flops=vec,
             mac_dtype="int8" if accuracy_level == 4 else a.dtype,
             note=f"{bits}-bit weights: {K}x{N} = {K * N} weight elements")
    return _with_params(w, {1: K * N})


@register("MatMulBnb4", domain=MS)
def matmul_bnb4(ins, outs, ctx, *, K, N, transB=1):
    a = ins[0]
    inner = K if transB else N  # transB=1: A [..., K] @ W^T; transB=0: A [..., N] @ W
    m = a.numel() // inner
    vec = 2 * K * N  # dequantize each weight: table lookup (FP4/NF4) and multiply by absmax
    w = Work(mac_flops=2 * m * K * N, vector_flops=vec, mac_dtype=a.dtype,
             note=f"4-bit weights: {K}x{N} = {K * N} weight elements")
    return _with_params(w, {1: K * N})


@register("GatherBlockQuantized", domain=MS)
def gather_block_quantized(ins, outs, ctx, *, bits=4, block_size=128):
    # data (quantized, constant), indices, scales, zero_points?: a Gather that dequantizes the rows
    data, scales = ins[0], ins[2]
    n = output(outs).numel()
    packed = data.dtype == "uint8" and bits < 8  # several elements per uint8
    elem_bits = bits if data.dtype == "uint8" else dtype_bits(data.dtype)
    n_scales = -(-n // block_size) if block_size else n
    reads = {0: min(data.nbytes(), (n * elem_bits + 7) // 8),       # the gathered rows only
             2: min(scales.nbytes(), (n_scales * dtype_bits(scales.dtype) + 7) // 8)}
    # uint8 data has an implicit zero point 2^(bits-1) when none is given
    has_zp = _present(ins, 3) or data.dtype == "uint8"
    w = Work(vector_flops=n * dequantize_ops(has_zp), reads=reads)
    return _with_params(w, {0: data.numel() * (8 // bits)}) if packed else w


# ----------------------------------------------------------------- QLinear elementwise (com.microsoft)


def _qbinary(op_ops: int):
    def rule(ins, outs, ctx):
        # A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, C_zero_point?
        n = output(outs).numel()
        per = (dequantize_ops(_present(ins, 2)) + dequantize_ops(_present(ins, 5)) + op_ops
               + quantize_ops(_present(ins, 7)))
        return Work(vector_flops=n * per)

    return rule


register("QLinearAdd", domain=MS)(_qbinary(1))
register("QLinearMul", domain=MS)(_qbinary(1))

# op: (float op vector, transcendental) per element; X, X_scale, X_zero_point?, Y_scale, Y_zero_point?
_QUNARY = {
    "QLinearSigmoid": (2, 1),     # as elementwise Sigmoid
    "QLinearLeakyRelu": (2, 0),   # as elementwise LeakyRelu
    "QLinearSoftmax": (4, 1),     # as normalization Softmax
}


def _qunary(op: str):
    v, t = _QUNARY[op]

    def rule(ins, outs, ctx):
        n = output(outs).numel()
        return Work(vector_flops=n * (dequantize_ops(_present(ins, 2)) + v + quantize_ops(_present(ins, 4))),
                    transcendentals=n * t)

    rule.__name__ = f"qunary_{op}"
    return rule


for _op in _QUNARY:
    register(_op, domain=MS)(_qunary(_op))


@register("QLinearGlobalAveragePool", domain=MS)
def qlinear_global_average_pool(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    dq, q = dequantize_ops(_present(ins, 2)), quantize_ops(_present(ins, 4))
    # dequantize every input; (n_in - n_out) adds + n_out divides (pooling.py); quantize outputs
    return Work(vector_flops=n_in * dq + (n_in - n_out) + n_out + n_out * q)


@register("QLinearAveragePool", domain=MS)
def qlinear_average_pool(ins, outs, ctx, *, kernel_shape):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    pool = pooling.average_pool(ins, (output(outs),), ctx, kernel_shape=kernel_shape).vector_flops
    return Work(vector_flops=n_in * dequantize_ops(_present(ins, 2)) + pool
                + n_out * quantize_ops(_present(ins, 4)))


@register("QLinearReduceMean", domain=MS)
def qlinear_reduce_mean(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    return Work(vector_flops=n_in * dequantize_ops(_present(ins, 2)) + (n_in - n_out) + n_out
                + n_out * quantize_ops(_present(ins, 4)))


@register("QLinearConcat", domain=MS)
def qlinear_concat(ins, outs, ctx):
    # Y_scale, Y_zero_point, then (tensor, scale, zero_point) per input: every element is
    # requantized to the output's scale (a runtime may copy when the scales match)
    n = output(outs).numel()
    return Work(vector_flops=n * (DEQUANTIZE + QUANTIZE))


@register("QLinearWhere", domain=MS)
def qlinear_where(ins, outs, ctx):
    # condition, X, x_scale, x_zero_point, Y, y_scale, y_zero_point, z_scale, z_zero_point
    n = output(outs).numel()
    return Work(vector_flops=n * (1 + DEQUANTIZE + QUANTIZE))  # select, requantize


@register("QAttention", domain=MS)
def qattention(ins, outs, ctx, *, num_heads, unidirectional=0, do_rotary=0,
               past_present_share_buffer=0):
    # input (int8), weight (int8), bias, input_scale, weight_scale, mask_index?, input_zp?, weight_zp?, past?
    x, w = ins[0], ins[1]
    base = ms_attention((x, w, ins[2], ins[5] if _present(ins, 5) else None,
                         ins[8] if _present(ins, 8) else None), outs, ctx, num_heads=num_heads,
                        unidirectional=unidirectional, do_rotary=do_rotary,
                        past_present_share_buffer=past_present_share_buffer)
    n_proj = x.numel() // x.dim(-1) * w.dim(-1)
    vec = base.vector_flops + n_proj  # dequantize the int32 projection
    vec += _zero_point_subtractions(ins, ((0, 6), (1, 7)))
    return Work(mac_flops=base.mac_flops, vector_flops=vec, transcendentals=base.transcendentals,
                mac_dtype=int_mac_dtype(x.dtype), note="mac_dtype: the int8 QKV projection dominates")

