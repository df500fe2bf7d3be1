"""Quantized ops of the standard domain: Quantize/DequantizeLinear, DynamicQuantizeLinear and the
integer matmul/conv family (onnxruntime's quantized ops: ``rules/onnxruntime/quantized.py``, which
shares these conventions).

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
from analyzer.counting.rules.onnx import linear
from analyzer.counting.rules.onnx.common import output, present

QUANTIZE, QUANTIZE_NO_ZP = 5, 4
DEQUANTIZE, DEQUANTIZE_NO_ZP = 2, 1


def quantize_ops(has_zero_point: bool) -> int:
    return QUANTIZE if has_zero_point else QUANTIZE_NO_ZP


def dequantize_ops(has_zero_point: bool) -> int:
    return DEQUANTIZE if has_zero_point else DEQUANTIZE_NO_ZP


def int_mac_dtype(dtype: str) -> str:
    """The MAC-array dtype of an integer operand: uint8 runs on the int8 path, uint4 on int4."""
    return {"uint8": "int8", "uint4": "int4", "uint16": "int16"}.get(dtype, dtype)


def with_params(work: Work, params: dict[int, int]) -> Work:
    """``work`` with packed-weight param counts (``Work.params``: input index -> elements)."""
    return work._replace(params=params)


# ----------------------------------------------------------------------------- Q / DQ


@register("QuantizeLinear")
def quantize_linear(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel() * quantize_ops(present(ins, 2)))


@register("DequantizeLinear")
def dequantize_linear(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel() * dequantize_ops(present(ins, 2)))


DQL_SCALAR_OPS = 9  # Min(min,0), Max(max,0), Sub, Div(255) -> scale; Div, Sub, Clip (2), Round -> zp


def dynamic_quantize_ops(n: int) -> int:
    return 2 * (n - 1) + DQL_SCALAR_OPS + QUANTIZE * n


@register("DynamicQuantizeLinear")
def dynamic_quantize_linear(ins, outs, ctx):
    return Work(vector_flops=dynamic_quantize_ops(ins[0].numel()))


# ----------------------------------------------------------------------------- integer matmul / conv


def zero_point_subtractions(ins, pairs) -> int:
    """One subtraction per operand element for each (operand index, zero-point index) present."""
    return sum(ins[x].numel() for x, zp in pairs if present(ins, zp))


@register("MatMulInteger")
def matmul_integer(ins, outs, ctx):
    a, b = ins[0], ins[1]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    return Work(mac_flops=mm.mac_flops, vector_flops=zero_point_subtractions(ins, ((0, 2), (1, 3))),
                mac_dtype=int_mac_dtype(a.dtype))


@register("QLinearMatMul")
def qlinear_matmul(ins, outs, ctx):
    # a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
    a, b = ins[0], ins[3]
    mm = linear.matmul((a, b), (output(outs),), ctx)
    vec = zero_point_subtractions(ins, ((0, 2), (3, 5)))
    vec += output(outs).numel() * quantize_ops(present(ins, 7))
    return Work(mac_flops=mm.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(a.dtype))


@register("ConvInteger")
def conv_integer(ins, outs, ctx):
    x, w = ins[0], ins[1]
    c = linear.conv((x, w), (output(outs),), ctx)
    return Work(mac_flops=c.mac_flops, vector_flops=zero_point_subtractions(ins, ((0, 2), (1, 3))),
                mac_dtype=int_mac_dtype(x.dtype))


@register("QLinearConv")
def qlinear_conv(ins, outs, ctx):
    # x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B (int32)
    x, w = ins[0], ins[3]
    bias = ins[8] if present(ins, 8) else None
    c = linear.conv((x, w, bias), (output(outs),), ctx)  # mac + one bias add per output element
    vec = c.vector_flops + zero_point_subtractions(ins, ((0, 2), (3, 5)))
    vec += output(outs).numel() * quantize_ops(present(ins, 7))
    return Work(mac_flops=c.mac_flops, vector_flops=vec, mac_dtype=int_mac_dtype(x.dtype))
