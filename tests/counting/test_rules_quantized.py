"""Quantized ops against hand arithmetic (analyzer/rules/quantized.py states the convention):
quantize = divide, round, add zero point, clamp (min, max) = 5 per element (4 without a zero
point); dequantize = subtract zero point, multiply = 2 (1); integer matmul/conv mac_flops as
linear.py, tagged with the integer mac_dtype; a zero-point input costs one subtraction per operand
element; requantizing an output costs the quantize count per output element.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnx_builders import F32, analyze, cost_of, graph, node_of, typed, weight

I8, U8, I32, I4 = TensorProto.INT8, TensorProto.UINT8, TensorProto.INT32, TensorProto.INT4
MS = "com.microsoft"


def scalar(v=1.0, dtype=np.float32):
    return np.array(v, dtype=dtype)


def test_quantize_per_tensor_with_zero_point():
    c = cost_of("QuantizeLinear", (2, 3, 4), scalar(0.5), scalar(0, np.int8))
    assert c.vector_flops == 5 * 24  # divide, round, + zp, min, max: 5 * 2*3*4 = 120
    assert c.params == 2  # the scale and the zero point (data, small)
    assert c.weight_bytes == 4 + 1  # float32 scale + int8 zero point = 5
    assert c.activation_bytes_read == 24 * 4  # 96
    assert c.activation_bytes_written == 24  # int8 output: 24


def test_quantize_without_zero_point():
    c = cost_of("QuantizeLinear", (2, 3, 4), scalar(0.5))
    assert c.vector_flops == 4 * 24  # no zero-point add: 4 * 24 = 96


def test_quantize_per_axis():
    c = cost_of("QuantizeLinear", (2, 3, 4), weight(3), np.zeros(3, np.int8), axis=1)
    assert c.vector_flops == 5 * 24  # per-axis costs the same per element: 120
    assert c.params == 3 + 3  # 3 scales + 3 zero points
    assert c.weight_bytes == 3 * 4 + 3  # 15


def test_quantize_blocked():
    # opset 21 block_size 4 along axis 1: x [4, 8] -> scales [4, 2]
    c = cost_of("QuantizeLinear", (4, 8), weight(4, 2), np.zeros((4, 2), np.int8), axis=1, block_size=4,
                opset=21)
    assert c.vector_flops == 5 * 32  # 160
    assert c.params == 8 + 8  # 16
    assert c.weight_bytes == 8 * 4 + 8  # 40


def test_dequantize_int8_weight():
    # the int8 weight is a param of its DequantizeLinear; the node writes the float weight
    c = cost_of("DequantizeLinear", weight(16, 8, dtype=np.int8), scalar(0.1), scalar(0, np.int8))
    assert c.vector_flops == 2 * 128  # subtract zp, multiply: 2 * 16*8 = 256
    assert c.params == 128 + 2  # 130
    assert c.weight_bytes == 128 + 4 + 1  # int8 weight + scale + zp = 133
    assert c.activation_bytes_written == 128 * 4  # 512


def test_dequantize_int4_without_zero_point():
    c = cost_of("DequantizeLinear", ((10,), I4), scalar(0.1), opset=21)
    assert c.vector_flops == 10  # multiply only: 1 * 10
    assert c.activation_bytes_read == 5  # 10 * 4 bits


def test_dynamic_quantize_linear():
    nc = node_of("DynamicQuantizeLinear", (4, 8), n_out=3)
    # min and max reductions 2*(32-1) = 62, 9 scalar ops, quantize 5*32 = 160: 231
    assert nc.cost.vector_flops == 2 * 31 + 9 + 5 * 32 == 231
    assert nc.cost.activation_bytes_written == 32 + 4 + 1  # uint8 y, float scale, uint8 zp = 37


# ----------------------------------------------------------------------------- integer matmul / conv


def test_matmul_integer_with_zero_points():
    nc = node_of("MatMulInteger", ((4, 6), U8), weight(6, 5, dtype=np.int8), scalar(3, np.uint8),
                 scalar(0, np.int8))
    assert nc.cost.mac_flops == 2 * 4 * 5 * 6  # 2*m*n*k = 240
    assert nc.cost.vector_flops == 24 + 30  # zp subtraction per element of A (4*6) and B (6*5) = 54
    assert nc.mac_dtype == "int8"  # uint8 x int8 runs on the int8 path
    assert nc.cost.activation_bytes_written == 20 * 4  # int32 [4,5] = 80


def test_matmul_integer_without_zero_points():
    nc = node_of("MatMulInteger", ((4, 6), I8), ((6, 5), I8))
    assert (nc.cost.mac_flops, nc.cost.vector_flops) == (240, 0)
    assert nc.mac_dtype == "int8"


def test_qlinear_matmul():
    nc = node_of("QLinearMatMul", ((4, 6), U8), scalar(0.1), scalar(128, np.uint8),
                 weight(6, 5, dtype=np.int8), scalar(0.2), scalar(0, np.int8), scalar(0.3), scalar(128, np.uint8))
    assert nc.cost.mac_flops == 240  # 2*4*5*6
    assert nc.cost.vector_flops == 24 + 30 + 5 * 20  # zps 54 + requantize 5 * 4*5 = 154
    assert nc.mac_dtype == "int8"
    assert nc.cost.activation_bytes_written == 20  # uint8 [4,5]


def test_conv_integer():
    # x [1,2,5,5] uint8, w [3,2,3,3] -> [1,3,3,3] int32
    nc = node_of("ConvInteger", ((1, 2, 5, 5), U8), weight(3, 2, 3, 3, dtype=np.uint8), scalar(1, np.uint8))
    assert nc.cost.mac_flops == 2 * 27 * 18  # 2 * outputs * (C*kh*kw) = 972
    assert nc.cost.vector_flops == 50  # x zero point: 1*2*5*5
    assert nc.mac_dtype == "int8"


def test_qlinear_conv():
    # x [1,4,6,6] int8, w [8,4,3,3], pads 1 -> y [1,8,6,6] = 288 outputs, int32 bias [8]
    nc = node_of("QLinearConv", ((1, 4, 6, 6), I8), scalar(0.1), scalar(0, np.int8),
                 weight(8, 4, 3, 3, dtype=np.int8), scalar(0.2), scalar(0, np.int8), scalar(0.3),
                 scalar(0, np.int8), np.zeros(8, np.int32), pads=[1, 1, 1, 1])
    assert nc.outputs == ("int8[1,8,6,6]",)
    assert nc.cost.mac_flops == 2 * 288 * 36  # 2 * outputs * (4*3*3) = 20736
    # bias 288 + x zp 144 + w zp 288 + requantize 5*288 = 2160
    assert nc.cost.vector_flops == 288 + 144 + 288 + 5 * 288 == 2160
    assert nc.cost.params == 288 + 8 + 6  # weight + bias + 6 scale/zero-point scalars = 302
    assert nc.mac_dtype == "int8"


def test_qlinear_conv_contrib_channels_last_same_counts():
    # com.microsoft QLinearConv with channels_last: x [1,6,6,4] NHWC, w [8,4,3,3] -> [1,6,6,8]
    nc = typed("QLinearConv", [((1, 6, 6, 4), I8), scalar(0.1), scalar(0, np.int8),
                               weight(8, 4, 3, 3, dtype=np.int8), scalar(0.2), scalar(0, np.int8),
                               scalar(0.3), scalar(0, np.int8)],
               [((1, 6, 6, 8), I8)], channels_last=1, pads=[1, 1, 1, 1])
    assert nc.cost.mac_flops == 20736  # layout does not change 2 * 288 * 36
    assert nc.cost.vector_flops == 144 + 288 + 5 * 288  # no bias: 1872


def test_qgemm_quantized_and_float_outputs():
    args = [((4, 6), U8), scalar(0.1), scalar(128, np.uint8), weight(5, 6, dtype=np.int8), scalar(0.2),
            scalar(0, np.int8), np.zeros(5, np.int32)]
    q = typed("QGemm", args + [scalar(0.3), scalar(128, np.uint8)], [((4, 5), U8)], transB=1)
    assert q.cost.mac_flops == 2 * 4 * 5 * 6  # 240
    # + C (4*5) + zps (24 + 30) + requantize 5*20 = 174
    assert q.cost.vector_flops == 20 + 54 + 100 == 174
    assert q.mac_dtype == "int8"
    f = typed("QGemm", args, [((4, 5), F32)], transB=1)
    assert f.cost.vector_flops == 20 + 54 + 20  # dequantize 1 per output instead: 94


# ----------------------------------------------------------------------------- QLinear elementwise (com.microsoft)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
def test_qlinear_add_mul(op):
    nc = typed(op, [((2, 3, 4), I8), scalar(0.1), scalar(0, np.int8), ((4,), I8), scalar(0.2),
                              scalar(0, np.int8), scalar(0.3), scalar(0, np.int8)], [((2, 3, 4), I8)])
    assert nc.cost.vector_flops == 24 * (2 + 2 + 1 + 5)  # dq A, dq B, add (or mul), quantize: 240


def test_qlinear_sigmoid():
    nc = typed("QLinearSigmoid", [((10,), U8), scalar(0.1), scalar(0, np.uint8), scalar(0.2),
                                  scalar(0, np.uint8)], [((10,), U8)])
    assert (nc.cost.vector_flops, nc.cost.transcendentals) == (10 * (2 + 2 + 5), 10)  # (90, 10)


def test_qlinear_leaky_relu_and_softmax():
    lr = typed("QLinearLeakyRelu", [((10,), U8), scalar(0.1), "", scalar(0.2), ""], [((10,), U8)])
    assert lr.cost.vector_flops == 10 * (1 + 2 + 4)  # no zero points: dq 1 + 2 + q 4 = 70
    sm = typed("QLinearSoftmax", [((2, 5), U8), scalar(0.1), scalar(0, np.uint8), scalar(0.2),
                                  scalar(0, np.uint8)], [((2, 5), U8)], opset=13)
    assert (sm.cost.vector_flops, sm.cost.transcendentals) == (10 * (2 + 4 + 5), 10)  # (110, 10)


def test_qlinear_global_average_pool():
    nc = typed("QLinearGlobalAveragePool", [((1, 4, 5, 5), U8), scalar(0.1), scalar(0, np.uint8),
                                            scalar(0.2), scalar(0, np.uint8)], [((1, 4, 1, 1), U8)])
    # dq 2*100 + (100-4) adds + 4 divides + quantize 5*4 = 320
    assert nc.cost.vector_flops == 200 + 96 + 4 + 20 == 320


def test_qlinear_average_pool():
    nc = typed("QLinearAveragePool", [((1, 2, 4, 4), U8), scalar(0.1), scalar(0, np.uint8), scalar(0.2),
                                      scalar(0, np.uint8)], [((1, 2, 2, 2), U8)],
               kernel_shape=[2, 2], strides=[2, 2])
    # dq 2*32 + pool 8 outputs * 4 (3 adds + divide) + quantize 5*8 = 64 + 32 + 40 = 136
    assert nc.cost.vector_flops == 136


def test_qlinear_concat():
    nc = typed("QLinearConcat", [scalar(0.3), scalar(0, np.uint8), ((2, 2), U8), scalar(0.1), scalar(0, np.uint8),
                                 ((2, 3), U8), scalar(0.2), scalar(0, np.uint8)], [((2, 5), U8)], axis=1)
    assert nc.cost.vector_flops == 10 * (2 + 5)  # requantize every element: 70


def test_qlinear_reduce_mean_and_where():
    rm = typed("QLinearReduceMean", [((2, 6), U8), scalar(0.1), scalar(0, np.uint8), scalar(0.2),
                                     scalar(0, np.uint8)], [((2, 1), U8)], axes=[1], keepdims=1)
    assert rm.cost.vector_flops == 2 * 12 + 10 + 2 + 5 * 2  # dq 24, 10 adds, 2 divides, q 10 = 46
    wh = typed("QLinearWhere", [((4,), TensorProto.BOOL), ((4,), U8), scalar(0.1), scalar(0, np.uint8),
                                ((4,), U8), scalar(0.2), scalar(0, np.uint8), scalar(0.3), scalar(0, np.uint8)],
               [((4,), U8)])
    assert wh.cost.vector_flops == 4 * (1 + 2 + 5)  # select, requantize: 32


def test_contrib_quantize_dequantize_match_standard():
    q = typed("QuantizeLinear", [(2, 3), scalar(0.5), scalar(0, np.uint8)], [((2, 3), U8)])
    dq = typed("DequantizeLinear", [((2, 3), U8), scalar(0.5)], [((2, 3), F32)])
    assert (q.cost.vector_flops, dq.cost.vector_flops) == (5 * 6, 1 * 6)  # (30, 6)


# ----------------------------------------------------------------------------- dynamic / integer-to-float matmuls


def test_dynamic_quantize_matmul():
    nc = typed("DynamicQuantizeMatMul", [(4, 6), weight(6, 5, dtype=np.int8), scalar(0.2), scalar(0, np.int8),
                                         weight(5)], [((4, 5), F32)])
    assert nc.cost.mac_flops == 240  # 2*4*5*6
    # quantize A: 2*23 + 9 + 5*24 = 175; A zp 24; B zp 30; dequantize 20; bias 20 = 269
    assert nc.cost.vector_flops == 175 + 24 + 30 + 20 + 20 == 269
    assert nc.mac_dtype == "int8"


def test_matmul_integer_to_float():
    nc = typed("MatMulIntegerToFloat", [((4, 6), U8), weight(6, 5, dtype=np.int8), scalar(0.1), scalar(0.2),
                                        scalar(128, np.uint8), scalar(0, np.int8), weight(5)], [((4, 5), F32)])
    assert nc.cost.mac_flops == 240
    assert nc.cost.vector_flops == 24 + 30 + 20 + 20  # zps, dequantize, bias = 94
    assert nc.mac_dtype == "int8"


def test_matmul_integer16():
    nc = typed("MatMulInteger16", [((4, 6), TensorProto.INT16), ((6, 5), TensorProto.INT16)], [((4, 5), I32)])
    assert nc.cost.mac_flops == 240
    assert nc.mac_dtype == "int16"


# ----------------------------------------------------------------------------- MatMulNBits


def _nbits(accuracy_level=0, bias=False):
    # K=64, N=32, 4 bits, block 32: B uint8 [N, 2 blocks, 16 bytes], scales [32, 2], packed zp [32, 1]
    ins = [(2, 3, 64), weight(32, 2, 16, dtype=np.uint8), weight(32, 2), weight(32, 1, dtype=np.uint8)]
    if bias:
        ins += ["", weight(32)]
    return typed("MatMulNBits", ins, [((2, 3, 32), F32)], K=64, N=32, bits=4, block_size=32,
                 accuracy_level=accuracy_level)


def test_matmul_nbits_counts():
    nc = _nbits()
    assert nc.cost.mac_flops == 2 * 6 * 32 * 64  # 2*M*N*K with M = 2*3: 24576
    assert nc.cost.vector_flops == 2 * 64 * 32  # dequantize each weight: 4096
    assert nc.cost.weight_bytes == 32 * 2 * 16 + 64 * 4 + 32  # packed 1024 + scales 256 + zp 32 = 1312
    assert nc.mac_dtype == "float32"  # weight-only: the product runs in the activation dtype
    assert _nbits(bias=True).cost.vector_flops == 4096 + 6 * 32  # + bias: 4288


def test_matmul_nbits_int8_accuracy_level():
    assert _nbits(accuracy_level=4).mac_dtype == "int8"


def test_matmul_nbits_params_are_weight_elements():
    assert _nbits().cost.params == 64 * 32 + 64 + 32  # K*N weights + scales + zero points = 2144


def test_matmul_bnb4():
    # K=32, N=16, block 16: B uint8 [(N*K+1)/2 = 256], absmax [32]
    nc = typed("MatMulBnb4", [(3, 32), weight(256, dtype=np.uint8), weight(32)], [((3, 16), F32)],
               K=32, N=16, block_size=16, quant_type=1)
    assert nc.cost.mac_flops == 2 * 3 * 16 * 32  # 3072
    assert nc.cost.vector_flops == 2 * 32 * 16  # 1024


def test_gather_block_quantized_reads_gathered_rows():
    # data uint8 [100, 16] (4 bits: 32 values per row), 3 ids -> [3, 32] float; block 32: scales [100, 1]
    nc = typed("GatherBlockQuantized", [weight(100, 16, dtype=np.uint8), ((3,), TensorProto.INT64), weight(100, 1)],
               [((3, 32), F32)], bits=4, block_size=32, gather_axis=0, quantize_axis=1)
    assert nc.cost.vector_flops == 96 * 2  # implicit zero point 8: subtract + multiply = 192
    assert nc.cost.weight_bytes == 96 // 2 + 3 * 4  # 48 packed bytes + 3 scales = 60


def test_ort_op_output_shape_comes_from_its_surrogate():
    # ONNX shape inference does not know com.microsoft ops; QLinearAdd's shape comes from an
    # Add surrogate (analyzer/frontends/contrib_shapes.py) and keeps its int8 dtype
    node = helper.make_node("QLinearAdd", ["a", "s", "z", "a", "s", "z", "s", "z"], ["y"], name="n", domain=MS)
    m = graph([node], {"a": ((4,), I8)}, ["y"], {"s": scalar(0.1), "z": scalar(0, np.int8)}, domains={MS: 1})
    assert analyze(m).node("n").outputs == ("int8[4]",)


def test_ort_op_without_output_shape_is_a_clear_error():
    # an op whose surrogate cannot resolve (an NHWC pool needs its input's rank, here unknown),
    # output undeclared: the error names it
    import analyzer

    node = helper.make_node("NhwcMaxPool", ["a"], ["y"], name="n", domain=MS, kernel_shape=[2, 2])
    m = graph([node], {"a": ((4,), I8)}, ["y"], domains={MS: 1})
    m.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(analyzer.ShapeError, match=r"node 'n' \(NhwcMaxPool\)"):
        analyze(m)
