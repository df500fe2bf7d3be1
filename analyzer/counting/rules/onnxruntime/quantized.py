"""onnxruntime's quantized ops (com.microsoft): the integer and 4-bit matmuls, GatherBlockQuantized,
the QLinear elementwise/pooling ops, QAttention and DynamicQuantizeLSTM; the conventions are those of the standard
quantized ops (``rules/onnx/quantized.py``), whose Quantize/DequantizeLinear and QLinearConv
rules are registered here for com.microsoft too.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.ir.graph import TensorSpec, dtype_bits
from analyzer.counting.rules.onnx import linear
from analyzer.counting.rules.onnx import pooling
from analyzer.counting.rules.onnx import quantized
from analyzer.counting.rules.onnx import recurrent
from analyzer.counting.rules.onnx.attention import ms_attention
from analyzer.counting.rules.onnx.common import output, present
from analyzer.counting.rules.onnx.quantized import (DEQUANTIZE, QUANTIZE, dequantize_ops,
                                                    dynamic_quantize_ops, int_mac_dtype,
                                                    quantize_ops, with_params,
                                                    zero_point_subtractions)
from analyzer.errors import ShapeError

MS = "com.microsoft"

register("QuantizeLinear", domain=MS)(quantized.quantize_linear)
register("DequantizeLinear", domain=MS)(quantized.dequantize_linear)
register("QLinearConv", domain=MS)(quantized.qlinear_conv)


@register("MatMulInteger16", domain=MS)
def matmul_integer16(ins, outs, ctx):
    mm = linear.matmul((ins[0], ins[1]), (output(outs),), ctx)
    return Work(mac_flops=mm.mac_flops, mac_dtype=int_mac_dtype(ins[0].dtype))


@register("QGemm", domain=MS)
def qgemm(ins, outs, ctx, *, alpha=1.0, transA=0):
    # A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (int32)?, y_scale?, y_zero_point?
    a, b = ins[0], ins[3]
    c = ins[6] if present(ins, 6) else None
    g = linear.gemm((a, b, c), (output(outs),), ctx, alpha=alpha, beta=1.0, transA=transA)
    mn = output(outs).numel()
    out_ops = mn * quantize_ops(present(ins, 8)) if present(ins, 7) else mn  # requantize or dequantize
    vec = g.vector_flops + zero_point_subtractions(ins, ((0, 2), (3, 5))) + out_ops
    return Work(mac_flops=g.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(a.dtype))


@register("MatMulIntegerToFloat", domain=MS)
def matmul_integer_to_float(ins, outs, ctx):
    # A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?
    a, b = ins[0], ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    n = output(outs).numel()
    vec = zero_point_subtractions(ins, ((0, 4), (1, 5))) + n  # dequantize: one multiply per output
    if present(ins, 6):
        vec += n  # bias
    return Work(mac_flops=mm.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(a.dtype))


@register("DynamicQuantizeMatMul", domain=MS)
def dynamic_quantize_matmul(ins, outs, ctx):
    # A (float), B (int8/uint8), b_scale, b_zero_point?, bias?
    a, b = ins[0], ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    n_a, n = a.numel(), output(outs).numel()
    vec = dynamic_quantize_ops(n_a)  # quantize A to uint8 on the fly
    vec += n_a  # A's zero point (always present after dynamic quantization)
    vec += zero_point_subtractions(ins, ((1, 3),))
    vec += n  # dequantize the int32 result
    if present(ins, 4):
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
    if present(ins, 5):
        vec += m * N  # bias
    w = Work(mac_flops=2 * m * N * K, vector_flops=vec,
             mac_dtype="int8" if accuracy_level == 4 else a.dtype,
             note=f"{bits}-bit weights: {K}x{N} = {K * N} weight elements")
    return with_params(w, {1: K * N})


@register("MatMulBnb4", domain=MS)
def matmul_bnb4(ins, outs, ctx, *, K, N, transB=1):
    a = ins[0]
    inner = K if transB else N  # transB=1: A [..., K] @ W^T; transB=0: A [..., N] @ W
    m = a.numel() // inner
    vec = 2 * K * N  # dequantize each weight: table lookup (FP4/NF4) and multiply by absmax
    w = Work(mac_flops=2 * m * K * N, vector_flops=vec, mac_dtype=a.dtype,
             note=f"4-bit weights: {K}x{N} = {K * N} weight elements")
    return with_params(w, {1: K * N})


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
    has_zp = present(ins, 3) or data.dtype == "uint8"
    w = Work(vector_flops=n * dequantize_ops(has_zp), reads=reads)
    return with_params(w, {0: data.numel() * (8 // bits)}) if packed else w


# ----------------------------------------------------------------- QLinear elementwise (com.microsoft)


def _qbinary(op_ops: int):
    def rule(ins, outs, ctx):
        # A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, C_zero_point?
        n = output(outs).numel()
        per = (dequantize_ops(present(ins, 2)) + dequantize_ops(present(ins, 5)) + op_ops
               + quantize_ops(present(ins, 7)))
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
        return Work(vector_flops=n * (dequantize_ops(present(ins, 2)) + v + quantize_ops(present(ins, 4))),
                    transcendentals=n * t)

    rule.__name__ = f"qunary_{op}"
    return rule


for _op in _QUNARY:
    register(_op, domain=MS)(_qunary(_op))


@register("QLinearGlobalAveragePool", domain=MS)
def qlinear_global_average_pool(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    dq, q = dequantize_ops(present(ins, 2)), quantize_ops(present(ins, 4))
    # dequantize every input; (n_in - n_out) adds + n_out divides (pooling.py); quantize outputs
    return Work(vector_flops=n_in * dq + (n_in - n_out) + n_out + n_out * q)


@register("QLinearAveragePool", domain=MS)
def qlinear_average_pool(ins, outs, ctx, *, kernel_shape):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    pool = pooling.average_pool(ins, (output(outs),), ctx, kernel_shape=kernel_shape).vector_flops
    return Work(vector_flops=n_in * dequantize_ops(present(ins, 2)) + pool
                + n_out * quantize_ops(present(ins, 4)))


@register("QLinearReduceMean", domain=MS)
def qlinear_reduce_mean(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), output(outs).numel()
    return Work(vector_flops=n_in * dequantize_ops(present(ins, 2)) + (n_in - n_out) + n_out
                + n_out * quantize_ops(present(ins, 4)))


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
    base = ms_attention((x, w, ins[2], ins[5] if present(ins, 5) else None,
                         ins[8] if present(ins, 8) else None), outs, ctx, num_heads=num_heads,
                        unidirectional=unidirectional, do_rotary=do_rotary,
                        past_present_share_buffer=past_present_share_buffer)
    n_proj = x.numel() // x.dim(-1) * w.dim(-1)
    vec = base.vector_flops + n_proj  # dequantize the int32 projection
    vec += zero_point_subtractions(ins, ((0, 6), (1, 7)))
    return Work(mac_flops=base.mac_flops, vector_flops=vec, transcendentals=base.transcendentals,
                functions=base.functions, mac_dtype=int_mac_dtype(x.dtype), note="mac_dtype: the int8 QKV projection dominates")


# ----------------------------------------------------------------------------- recurrent


@register("DynamicQuantizeLSTM", domain=MS)
def dynamic_quantize_lstm(ins, outs, ctx):
    """LSTM with int8 weights (``quantize_dynamic`` turns every LSTM into it).

    Inputs: X [S, B, I], W [D, I, 4H], R [D, H, 4H] (the float LSTM's W and R transposed),
    B?, sequence_lens?, initial_h?, initial_c?, P?, W_scale, W_zero_point, R_scale, R_zero_point.
    The float LSTM's counts (``rules/onnx/recurrent.py``: the same mac_flops, run on the int8
    path, and the same cell arithmetic), plus what onnxruntime's quantized GEMM does around
    each product (rnn_helpers ComputeGemm): per direction, X is dynamically quantized once
    (all S*B rows: ``dynamic_quantize_ops``) and the hidden state before each step
    (S times B*H), and each int32 product element is dequantized (1 multiply; 2 products of
    S*B*4H elements).  The weights' zero points cost one subtraction per weight element.
    """
    x, w, r = ins[0], ins[1], ins[2]
    seq, batch, inp = x.dim(0), x.dim(1), x.dim(2)
    dirs, gates_h = w.dim(0), w.dim(2)
    if w.dim(1) != inp or r.dim(2) != gates_h or gates_h % 4:
        raise ShapeError(f"DynamicQuantizeLSTM: W {w.dims()} and R {r.dims()} do not match "
                         f"X {x.dims()} ([D, I, 4H] and [D, H, 4H] expected)")
    h = gates_h // 4
    as_float = TensorSpec((dirs, gates_h, inp), w.dtype)  # the float LSTM's W layout
    cell = recurrent.lstm_rule((x, as_float) + tuple(ins[2:8]), outs, ctx)
    quant = dirs * (dynamic_quantize_ops(seq * batch * inp) + seq * dynamic_quantize_ops(batch * h))
    dequant = dirs * 2 * seq * batch * gates_h
    vec = cell.vector_flops + quant + dequant + zero_point_subtractions(ins, ((1, 9), (2, 11)))
    return Work(mac_flops=cell.mac_flops, vector_flops=vec, transcendentals=cell.transcendentals,
                functions=cell.functions, mac_dtype=int_mac_dtype(w.dtype))
