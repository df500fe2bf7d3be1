"""Matrix-engine rules (Conv, ConvTranspose, MatMul, Gemm, Einsum) against hand arithmetic.

Convention (DESIGN.md "Cost semantics", analyzer/rules/linear.py): mac_flops = 2 x MACs;
bias adds and alpha/beta scaling are vector_flops.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from onnx_builders import F32, analyze, cost_of, graph, node_of, weight

# ----------------------------------------------------------------------------- Conv


def test_conv_groups_dilation_strides_pads():
    # x [1,8,15,15], W [12, 8/2=4, 3, 3], group 2, dilation 2 (effective kernel 5), stride 2,
    # pads (top 1, left 2, bottom 1, right 2):
    #   H = (15 + 1 + 1 - 5) // 2 + 1 = 7;  W = (15 + 2 + 2 - 5) // 2 + 1 = 8
    nc = node_of("Conv", (1, 8, 15, 15), weight(12, 4, 3, 3), weight(12),
                 group=2, dilations=[2, 2], strides=[2, 2], pads=[1, 2, 1, 2])
    assert nc.outputs == ("float32[1,12,7,8]",)
    c = nc.cost
    assert c.mac_flops == 2 * 12 * 7 * 8 * (4 * 3 * 3)  # 2*M*Ho*Wo*(C/g*kh*kw) = 2*672*36 = 48384
    assert c.mac_flops == 48384
    assert c.vector_flops == 12 * 7 * 8  # one bias add per output element = 672
    assert c.params == 12 * 4 * 3 * 3 + 12  # 432 + 12 = 444
    assert c.weight_bytes == 444 * 4  # 1776
    assert c.activation_bytes_read == 8 * 15 * 15 * 4  # 7200
    assert c.activation_bytes_written == 672 * 4  # 2688


def test_conv_auto_pad_same_upper():
    # x [1,3,10,10], W [4,3,3,3], stride 2, SAME_UPPER -> ceil(10/2) = 5
    nc = node_of("Conv", (1, 3, 10, 10), weight(4, 3, 3, 3), strides=[2, 2], auto_pad="SAME_UPPER")
    assert nc.outputs == ("float32[1,4,5,5]",)
    assert nc.cost.mac_flops == 2 * 4 * 5 * 5 * 27  # 2*M*Ho*Wo*(C*kh*kw) = 2*100*27 = 5400
    assert nc.cost.vector_flops == 0  # no bias


def test_conv_depthwise():
    # x [1,6,8,8], W [6,1,3,3], group 6, pads 1 -> [1,6,8,8]; each output sums 1*3*3 products
    c = cost_of("Conv", (1, 6, 8, 8), weight(6, 1, 3, 3), group=6, pads=[1, 1, 1, 1])
    assert c.mac_flops == 2 * 6 * 8 * 8 * 9  # = 6912
    assert c.params == 54  # 6*1*3*3


def test_conv_1d():
    # x [2,4,20], W [8,4,5] -> L = 20 - 5 + 1 = 16; out [2,8,16]
    c = cost_of("Conv", (2, 4, 20), weight(8, 4, 5))
    assert c.mac_flops == 2 * 2 * 8 * 16 * (4 * 5)  # 2*N*M*L*(C*k) = 2*256*20 = 10240


def test_conv_3d():
    # x [1,2,6,6,6], W [4,2,3,3,3] -> [1,4,4,4,4]
    c = cost_of("Conv", (1, 2, 6, 6, 6), weight(4, 2, 3, 3, 3))
    assert c.mac_flops == 2 * 4 * 4 * 4 * 4 * (2 * 27)  # 2*256*54 = 27648


def test_conv_bias_is_vector_not_mac():
    # x [1,2,5,5], W [3,2,1,1], B [3] -> [1,3,5,5]
    with_bias = cost_of("Conv", (1, 2, 5, 5), weight(3, 2, 1, 1), weight(3))
    without = cost_of("Conv", (1, 2, 5, 5), weight(3, 2, 1, 1))
    assert with_bias.mac_flops == without.mac_flops == 2 * 3 * 25 * 2  # = 300
    assert with_bias.vector_flops == 3 * 5 * 5  # one add per output element = 75
    assert without.vector_flops == 0


# ----------------------------------------------------------------------------- ConvTranspose


def test_conv_transpose_groups_strides_output_padding():
    # x [1,4,5,5], W [C=4, M/group=3, 3, 3], group 2 -> M = 6 output channels;
    # out = stride*(in-1) + output_padding + kernel = 2*4 + 1 + 3 = 12 -> [1,6,12,12]
    nc = node_of("ConvTranspose", (1, 4, 5, 5), weight(4, 3, 3, 3), weight(6),
                 group=2, strides=[2, 2], output_padding=[1, 1])
    assert nc.outputs == ("float32[1,6,12,12]",)
    # every input element is scattered into (M/group)*kh*kw outputs: 2 * (4*5*5) * (3*9) = 2*100*27
    assert nc.cost.mac_flops == 5400
    assert nc.cost.vector_flops == 6 * 12 * 12  # bias on each output element = 864
    assert nc.cost.params == 4 * 3 * 9 + 6  # 108 + 6 = 114


def test_conv_transpose_plain():
    # x [1,2,3,3], W [2,4,2,2], stride 1 -> [1,4,4,4]; 2 * 18 inputs * 4*2*2 = 2*18*16 = 576
    nc = node_of("ConvTranspose", (1, 2, 3, 3), weight(2, 4, 2, 2))
    assert nc.outputs == ("float32[1,4,4,4]",)
    assert nc.cost.mac_flops == 576
    assert nc.cost.vector_flops == 0  # no bias


# ----------------------------------------------------------------------------- MatMul


@pytest.mark.parametrize("a, b, out, expected", [
    ((4, 5), (5, 6), "[4,6]", 2 * 4 * 6 * 5),                 # 2*m*n*k = 2*4*6*5 = 240
    ((3, 4, 5), (3, 5, 6), "[3,4,6]", 2 * 3 * 4 * 6 * 5),     # batched: 2*b*m*n*k = 720
    ((2, 1, 4, 5), (3, 5, 6), "[2,3,4,6]", 2 * 2 * 3 * 4 * 6 * 5),  # broadcast: 2*6*4*6*5 = 1440
    ((5,), (5, 6), "[6]", 2 * 6 * 5),                         # 1-D x 2-D: 2*n*k = 60
    ((4, 5), (5,), "[4]", 2 * 4 * 5),                         # 2-D x 1-D: 2*m*k = 40
    ((7, 4, 5), (5, 6), "[7,4,6]", 2 * 7 * 4 * 6 * 5),        # 3-D x 2-D: 2*7*4*6*5 = 1680
], ids=["2d", "batched", "broadcast", "1d_x_2d", "2d_x_1d", "3d_x_2d"])
def test_matmul(a, b, out, expected):
    nc = node_of("MatMul", a, b)
    assert nc.outputs == (f"float32{out}",)
    assert nc.cost.mac_flops == expected
    assert nc.cost.vector_flops == 0 and nc.cost.transcendentals == 0
    # both operands are activations here: read whole, output written whole
    assert nc.cost.activation_bytes_read == 4 * (int(np.prod(a)) + int(np.prod(b)))
    assert nc.cost.weight_bytes == 0 and nc.cost.params == 0


def test_matmul_weight_operand_is_weight_bytes():
    c = cost_of("MatMul", (4, 5), weight(5, 6))
    assert c.params == 30  # 5*6
    assert c.weight_bytes == 30 * 4  # 120
    assert c.activation_bytes_read == 20 * 4  # 80
    assert c.activation_bytes_written == 24 * 4  # 96


# ----------------------------------------------------------------------------- Gemm


def test_gemm_trans_bias_alpha_beta():
    # A [5,4] transA -> M=4, K=5;  B [6,5] transB -> N=6;  C [6];  alpha 0.5, beta 2
    nc = node_of("Gemm", (5, 4), weight(6, 5), weight(6), transA=1, transB=1, alpha=0.5, beta=2.0)
    assert nc.outputs == ("float32[4,6]",)
    assert nc.cost.mac_flops == 2 * 4 * 6 * 5  # 2*m*n*k = 240
    assert nc.cost.vector_flops == 3 * 4 * 6  # alpha*AB (24) + beta*C (24) + add C (24) = 72
    assert nc.cost.params == 30 + 6  # B + C = 36


def test_gemm_plain_has_no_vector_work():
    c = cost_of("Gemm", (3, 7), weight(7, 2))
    assert c.mac_flops == 2 * 3 * 2 * 7  # = 84
    assert c.vector_flops == 0


def test_gemm_bias_default_alpha_beta():
    c = cost_of("Gemm", (3, 7), weight(7, 2), weight(1, 2))
    assert c.mac_flops == 84  # 2*3*2*7
    assert c.vector_flops == 3 * 2  # only + C (broadcast to [3,2]) = 6


def test_gemm_trans_a_only():
    # A [7,3] transA -> M=3, K=7; B [7,2] -> N=2
    c = cost_of("Gemm", (7, 3), weight(7, 2), transA=1)
    assert c.mac_flops == 2 * 3 * 2 * 7  # = 84


# ----------------------------------------------------------------------------- Einsum


@pytest.mark.parametrize("eq, shapes, mac, vec", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], 2 * 2 * 3 * 5 * 4, 0),              # 2*b*i*k*j = 240
    ("bhqd,bhkd->bhqk", [(2, 4, 8, 16), (2, 4, 10, 16)], 2 * 2 * 4 * 8 * 10 * 16, 0),  # = 20480
    ("ij->", [(3, 4)], 0, 3 * 4 - 1),                                             # sum of 12: 11 adds
    ("...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)], 2 * 2 * 3 * 4 * 6 * 5, 0),  # = 1440
    # 3 operands, left to right: (ij,jk->ik) 2*2*4*3 = 48, then (ik,kl->il) 2*2*5*4 = 80
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], 48 + 80, 0),
    ("i,i->", [(7,), (7,)], 2 * 7, 0),                                            # dot product: 14
    ("ij,kj->ik", [(3, 4), (5, 4)], 2 * 3 * 5 * 4, 0),                             # A.B^T = 120
], ids=["bmm", "attention_scores", "sum_all", "ellipsis", "three_operands",
        "dot", "abt"])
def test_einsum(eq, shapes, mac, vec):
    c = cost_of("Einsum", *shapes, equation=eq)
    assert c.mac_flops == mac
    assert c.vector_flops == vec


def test_einsum_ellipsis_of_different_ranks_broadcasts():
    # [3,4,5] x [2,3,5,6]: the ellipsis is [3] on the left and [2,3] on the right -> [2,3,4,6].
    # ONNX shape inference leaves this output unknown, so the model declares it.
    m = graph([helper.make_node("Einsum", ["a", "b"], ["y"], name="n", equation="...ij,...jk->...ik")],
              {"a": (3, 4, 5), "b": (2, 3, 5, 6)}, {"y": ((2, 3, 4, 6), F32)})
    c = analyze(m).node("n").cost
    assert c.mac_flops == 2 * 2 * 3 * 4 * 6 * 5  # 2*(2*3)*i*k*j = 1440


def test_einsum_outer_product_is_vector():
    # "i,j->ij": no contracted letter: 3*4 = 12 multiplies, not MACs
    c = cost_of("Einsum", (3,), (4,), equation="i,j->ij")
    assert c.mac_flops == 0
    assert c.vector_flops == 12


# ----------------------------------------------------------------------------- attention


def _attention_model(B: int, S: int, D: int, H: int):
    """Multi-head self-attention from plain ops: x [B,S,D] -> Q,K,V -> heads -> softmax(QK^T/sqrt(dh)) V -> Wo."""
    dh = D // H
    n = helper.make_node
    nodes = []
    for p in ("q", "k", "v"):
        nodes += [
            n("MatMul", ["x", f"W{p}"], [f"{p}"], name=f"{p}_proj"),
            n("Reshape", [f"{p}", "heads_shape"], [f"{p}_r"], name=f"{p}_reshape"),
            n("Transpose", [f"{p}_r"], [f"{p}_h"], name=f"{p}_heads",
              perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]),
        ]
    nodes += [
        n("MatMul", ["q_h", "k_h"], ["s"], name="qk"),               # [B,H,S,S]
        n("Div", ["s", "scale"], ["s2"], name="scale_div"),
        n("Softmax", ["s2"], ["p"], name="softmax", axis=-1),
        n("MatMul", ["p", "v_h"], ["ctx"], name="pv"),             # [B,H,S,dh]
        n("Transpose", ["ctx"], ["ctx_t"], name="merge_t", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_t", "merge_shape"], ["ctx_m"], name="merge_r"),
        n("MatMul", ["ctx_m", "Wo"], ["y"], name="out_proj"),
    ]
    inits = {f"W{p}": weight(D, D) for p in "qkvo"}
    inits["heads_shape"] = np.array([B, S, H, dh], dtype=np.int64)
    inits["merge_shape"] = np.array([B, S, D], dtype=np.int64)
    inits["scale"] = np.array(np.sqrt(dh), dtype=np.float32)
    return graph(nodes, {"x": (B, S, D)}, ["y"], inits)


def test_attention_block_closed_form():
    B, S, D, H = 2, 8, 16, 4
    dh = D // H  # 4
    r = analyze(_attention_model(B, S, D, H))
    t = r.totals
    assert r.coverage.uncosted == ()
    # projections: 4 * 2*B*S*D*D = 4 * 2*2*8*16*16 = 32768
    # QK^T: 2*B*H*S*S*dh = 2*2*4*8*8*4 = 4096;  PV: 2*B*H*S*dh*S = 4096
    assert t.mac_flops == 4 * 2 * B * S * D * D + 2 * (2 * B * H * S * S * dh)
    assert t.mac_flops == 32768 + 4096 + 4096 == 40960
    # scores B*H*S*S = 2*4*8*8 = 512 elements: Div 1 each, Softmax 4 each -> 5*512 = 2560
    assert t.vector_flops == 5 * B * H * S * S == 2560
    assert t.transcendentals == B * H * S * S == 512  # one exp per score
    # params: 4 weights D*D = 4*256 = 1024, + the scale scalar 1; int64 reshape shapes are not params
    assert t.params == 4 * D * D + 1 == 1025
    assert t.weight_bytes == 4 * (4 * D * D + 1) == 4100  # each weight read once, float32
    # per-node spot checks
    assert r.node("qk").cost.mac_flops == 2 * B * H * S * S * dh == 4096
    assert r.node("out_proj").cost.mac_flops == 2 * B * S * D * D == 8192
    # reshapes are views: no bytes; transposes copy B*S*D floats in and out
    assert r.node("q_reshape").cost.activation_bytes_read == 0
    assert r.node("q_reshape").cost.activation_bytes_written == 0
    assert r.node("k_heads").cost.activation_bytes_written == 4 * B * S * D == 1024
    assert t.flops == t.mac_flops + t.vector_flops + t.transcendentals == 40960 + 2560 + 512


def test_attention_scales_quadratically_in_sequence():
    # doubling S: projections double (linear in S), the two S*S products quadruple
    a = analyze(_attention_model(1, 8, 16, 2)).totals.mac_flops
    b = analyze(_attention_model(1, 16, 16, 2)).totals.mac_flops
    proj = lambda s: 4 * 2 * 1 * s * 16 * 16  # noqa: E731
    sq = lambda s: 2 * 2 * 1 * 2 * s * s * 8  # noqa: E731  2 products * 2*B*H*S*S*dh
    assert a == proj(8) + sq(8)  # 16384 + 4096 = 20480
    assert b == proj(16) + sq(16)  # 32768 + 16384 = 49152
