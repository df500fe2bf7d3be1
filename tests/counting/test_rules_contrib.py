"""com.microsoft fusions and the attention family against hand arithmetic.

Conventions: analyzer/rules/contrib.py (a fusion = the sum of the standard ops it replaces) and
analyzer/rules/attention.py (QKᵀ and PV are 2*B*H*S_q*S_kv*D mac_flops each; per score 1 scale,
4 softmax vector ops + 1 exp, 1 per additive mask; a causal kernel computes S*(S+1)/2 scores per
(batch, head) for S_q == S_kv == S).  ORT ops have no ONNX shape inference, so the test models
declare their outputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnx_builders import graph, node_of, typed, weight

MS = "com.microsoft"
I32, I64 = TensorProto.INT32, TensorProto.INT64




def ops(nc):
    c = nc.cost
    return c.mac_flops, c.vector_flops, c.transcendentals


# ----------------------------------------------------------------------------- activations


@pytest.mark.parametrize("op, ins, out, expected", [
    ("Gelu", [(10,)], (10,), (0, 40, 10)),                              # erf form (4, 1) * 10
    ("BiasGelu", [(2, 5), weight(5)], (2, 5), (0, 50, 10)),             # + bias: (5, 1) * 10
    ("FastGelu", [(10,), weight(10)], (10,), (0, 90, 10)),              # tanh form 8 + bias 1: 9 * 10
    ("FastGelu", [(10,)], (10,), (0, 80, 10)),                          # no bias: 8 * 10
    ("QuickGelu", [(10,)], (10,), (0, 40, 10)),                         # alpha*x, sigmoid (2+exp), *x
    ("BiasAdd", [(2, 3, 4), weight(4), (2, 3, 4)], (2, 3, 4), (0, 48, 0)),  # 2 adds * 24
    ("BiasSplitGelu", [(1, 2, 8), weight(8)], (1, 2, 4), (0, 56, 8)),   # bias 16 + (gelu 4 + mul 1) * 8
    ("BiasSoftmax", [(2, 5), (2, 5)], (2, 5), (0, 50, 10)),             # add 1 + softmax 4: 5 * 10
    ("BiasDropout", [(2, 5), weight(5), (2, 5)], (2, 5), (0, 20, 0)),   # bias + residual: 2 * 10
    ("BitmaskBiasDropout", [(2, 5), weight(5)], (2, 5), (0, 10, 0)),    # bias only: 1 * 10
], ids=lambda v: v if isinstance(v, str) else None)
def test_fused_activations(op, ins, out, expected):
    assert ops(typed(op, ins, [out])) == expected


# ----------------------------------------------------------------------------- normalizations


def test_skip_layer_normalization():
    # input/skip [2,4,8]: n = 64, rows = 8; skip add 64 + bias add 64 + LayerNorm with beta 7*64 + 4*8
    nc = typed("SkipLayerNormalization", [(2, 4, 8), (2, 4, 8), weight(8), weight(8), weight(8)], [(2, 4, 8)])
    assert ops(nc) == (0, 64 + 64 + 448 + 32, 8)  # (0, 608, 8)
    assert nc.cost.params == 24


def test_skip_layer_normalization_writes_the_sum_output():
    # no beta, no bias: skip add 64 + LayerNorm 6*64 + 4*8 = 480; output and input_skip_bias_sum written
    nc = typed("SkipLayerNormalization", [(2, 4, 8), (2, 4, 8), weight(8)], [(2, 4, 8), "", "", (2, 4, 8)])
    assert ops(nc) == (0, 64 + 6 * 64 + 32, 8)
    assert nc.cost.activation_bytes_written == 2 * 64 * 4  # 512


def test_skip_simplified_layer_normalization():
    nc = typed("SkipSimplifiedLayerNormalization", [(2, 4, 8), (2, 4, 8), weight(8)], [(2, 4, 8)])
    assert ops(nc) == (0, 64 + 4 * 64 + 3 * 8, 8)  # skip add 64 + RMS 4*64 + 3*8 = 344


@pytest.mark.parametrize("domain", ["", MS])
def test_simplified_layer_normalization_is_rms(domain):
    nc = typed("SimplifiedLayerNormalization", [(3, 16), weight(16)], [(3, 16)], domain=domain)
    assert ops(nc) == (0, 4 * 48 + 3 * 3, 3)  # 192 + 9 = 201; one sqrt per row


def test_rms_normalization_opset23():
    nc = node_of("RMSNormalization", (2, 3, 8), weight(8), opset=23)
    assert ops(nc) == (0, 4 * 48 + 3 * 6, 6)  # n = 48, rows = 6: 192 + 18 = 210


def test_embed_layer_normalization_reads_gathered_rows():
    ins = [((2, 4), I32), ((2, 4), I32), weight(100, 8), weight(16, 8), weight(2, 8), weight(8), weight(8),
           ((2, 4), I32)]
    nc = typed("EmbedLayerNormalization", ins, [(2, 4, 8), ((2,), I32)])
    # tokens 8, n 64: two extra tables 2*64 + mask 8 + LayerNorm 7*64 + 4*8 = 128 + 8 + 480 = 616
    assert ops(nc) == (0, 616, 8)
    # word rows 64*4 = 256 (not 3200), position min(512, 256), segment min(64, 256), gamma, beta
    assert nc.cost.weight_bytes == 256 + 256 + 64 + 32 + 32
    assert nc.cost.params == 800 + 128 + 16 + 8 + 8  # 960


def test_qembed_layer_normalization_dequantizes_what_it_gathers():
    u8 = lambda *shape: weight(*shape).astype(np.uint8)  # noqa: E731
    f32s, u8s = np.array(0.1, np.float32), np.array(3, np.uint8)
    ins = [((2, 4), I32), ((2, 4), I32), u8(100, 8), u8(16, 8), u8(2, 8), u8(8), u8(8), ((2, 4), I32),
           f32s, f32s, f32s, f32s, f32s, u8s, u8s, u8s, u8s, u8s]
    nc = typed("QEmbedLayerNormalization", ins, [(2, 4, 8), ((2,), I32)])
    # EmbedLayerNormalization's 616 (see above) + dequantize (q - zp) * scale: 2 per gathered value
    # of 3 tables (3 * 64) and per gamma/beta element (2 * 8): 616 + 2 * (192 + 16) = 1032
    assert ops(nc) == (0, 1032, 8)
    # uint8 rows: word 64, position min(128, 64), segment min(16, 64); gamma, beta 8 each;
    # 5 float scales (20 B) and 5 uint8 zero points
    assert nc.cost.weight_bytes == 64 + 64 + 16 + 8 + 8 + 20 + 5
    assert nc.cost.params == 800 + 128 + 16 + 8 + 8 + 10  # 970


def test_group_norm_with_silu():
    # x [2,4,4,6] NHWC, 3 groups: n = 192, groups N*G = 6; + SiLU 3*192, 192 exp
    nc = typed("GroupNorm", [(2, 4, 4, 6), weight(6), weight(6)], [(2, 4, 4, 6)], groups=3, activation=1)
    assert ops(nc) == (0, 7 * 192 + 4 * 6 + 3 * 192, 6 + 192)  # (0, 1944, 198)


def test_skip_group_norm():
    nc = typed("SkipGroupNorm", [(2, 4, 4, 6), weight(6), weight(6), (2, 4, 4, 6)], [(2, 4, 4, 6)],
               groups=3, activation=0)
    assert ops(nc) == (0, 192 + 7 * 192 + 4 * 6, 6)  # skip add + GroupNorm = 1560


# ----------------------------------------------------------------------------- matmul / conv / gemm


@pytest.mark.parametrize("op", ["FusedMatMul", "TransposeMatMul"])
def test_fused_matmul_transposes_and_alpha(op):
    # A [2,5,3] transA -> [2,3,5]; B [4,5] transB -> [5,4]; Y [2,3,4]: K = 5
    nc = typed(op, [(2, 5, 3), weight(4, 5)], [(2, 3, 4)], transA=1, transB=1, alpha=0.5)
    assert ops(nc) == (2 * 24 * 5, 24, 0)  # 2*out*K = 240; alpha one multiply per output


def test_fused_matmul_trans_batch():
    # transBatchA: A (3, 2, 5) is read as (2, 3, 5); with B (2, 5, 4): Y (2, 3, 4), K = 5
    nc = typed("FusedMatMul", [(3, 2, 5), (2, 5, 4)], [(2, 3, 4)], transBatchA=1)
    assert ops(nc) == (2 * 24 * 5, 0, 0)  # 2*out*K = 240
    # transBatchB + transB: B (4, 2, 3) -> (2, 4, 3) -> (2, 3, 4); A (2, 5, 3): Y (2, 5, 4), K = 3
    nc = typed("FusedMatMul", [(2, 5, 3), (4, 2, 3)], [(2, 5, 4)], transBatchB=1, transB=1)
    assert ops(nc) == (2 * 40 * 3, 0, 0)  # 240


def test_fused_conv_with_activation_and_z():
    # x [1,2,5,5], W [3,2,3,3], pads 1 -> [1,3,5,5] = 75 outputs
    nc = typed("FusedConv", [(1, 2, 5, 5), weight(3, 2, 3, 3), weight(3)], [(1, 3, 5, 5)],
               activation="Relu", pads=[1, 1, 1, 1])
    assert ops(nc) == (2 * 75 * 18, 75 + 75, 0)  # mac 2700; bias + relu = 150
    nhwc = typed("NhwcFusedConv", [(1, 5, 5, 2), weight(3, 2, 3, 3), weight(3)], [(1, 5, 5, 3)],
                 activation="Relu", pads=[1, 1, 1, 1])
    assert ops(nhwc) == (2700, 150, 0)  # the layout does not change the counts
    z = typed("FusedConv", [(1, 2, 5, 5), weight(3, 2, 3, 3), weight(3), (1, 3, 5, 5)], [(1, 3, 5, 5)],
              activation="Sigmoid", pads=[1, 1, 1, 1])
    assert ops(z) == (2700, 75 + 75 + 2 * 75, 75)  # bias + Z + sigmoid (2, 1): (2700, 300, 75)


def test_nhwc_conv_same_macs():
    nc = typed("NhwcConv", [(1, 5, 5, 2), weight(3, 2, 3, 3)], [(1, 5, 5, 3)], pads=[1, 1, 1, 1])
    assert ops(nc) == (2 * 75 * 18, 0, 0)  # 2700


def test_fused_gemm_and_gemm_fast_gelu():
    g = typed("FusedGemm", [(4, 6), weight(6, 5), weight(5)], [(4, 5)], activation="LeakyRelu")
    assert ops(g) == (2 * 4 * 5 * 6, 20 + 2 * 20, 0)  # C add 20 + leaky relu 2*20: (240, 60, 0)
    f = typed("GemmFastGelu", [(4, 6), weight(6, 5), weight(5)], [(4, 5)])
    assert ops(f) == (240, 20 * 9, 20)  # bias 1 + fast gelu 8 per output: (240, 180, 20)


def test_unknown_fused_activation_is_an_error():
    import analyzer

    with pytest.raises(analyzer.ShapeError, match="unknown fused activation 'Swoosh'"):
        typed("FusedGemm", [(4, 6), weight(6, 5)], [(4, 5)], activation="Swoosh")


# ----------------------------------------------------------------------------- com.microsoft Attention


def test_ms_attention_with_projection():
    # input [B=2, S=8, 16], merged QKV weight [16, 48], 2 heads: D = 8
    nc = typed("Attention", [(2, 8, 16), weight(16, 48), weight(48)], [(2, 8, 16)], num_heads=2)
    proj = 2 * 2 * 8 * 16 * 48  # 2*B*S*D_in*(3*hidden) = 24576
    qk = 2 * 2 * 2 * 8 * 8 * 8  # 2*B*H*S*S*D = 4096 (PV the same)
    scores = 2 * 2 * 8 * 8  # 256
    # bias add 2*8*48 = 768 + (scale + softmax) 5*256 = 2048
    assert ops(nc) == (proj + 2 * qk, 2 * 8 * 48 + 5 * scores, scores) == (32768, 2048, 256)
    assert nc.cost.params == 16 * 48 + 48


def test_ms_attention_unidirectional_is_causal():
    nc = typed("Attention", [(2, 8, 16), weight(16, 48), weight(48)], [(2, 8, 16)], num_heads=2,
               unidirectional=1)
    scores = 2 * 2 * (8 * 9 // 2)  # B*H*S*(S+1)/2 = 144
    assert ops(nc) == (24576 + 2 * 2 * scores * 8, 768 + 5 * scores, scores) == (29184, 1488, 144)


def test_multi_head_attention_cross():
    # q [1,4,16], k/v [1,6,16], 4 heads: D = 4; scores 1*4*4*6 = 96
    nc = typed("MultiHeadAttention", [(1, 4, 16), (1, 6, 16), (1, 6, 16)], [(1, 4, 16)], num_heads=4)
    assert ops(nc) == (2 * 96 * 4 * 2, 5 * 96, 96)  # (1536, 480, 96)


def test_multi_head_attention_causal_bottom_right():
    # S_q 4 < S_kv 6: query i sees keys j <= i + 2: 3+4+5+6 = 18 = 4*2 + 4*5/2 per head
    nc = typed("MultiHeadAttention", [(1, 4, 16), (1, 6, 16), (1, 6, 16)], [(1, 4, 16)], num_heads=4,
               unidirectional=1)
    scores = 4 * 18  # 72
    assert ops(nc) == (2 * scores * 4 * 2, 5 * scores, scores)  # (1152, 360, 72)


def test_multi_head_attention_bias_and_mask():
    nc = typed("MultiHeadAttention", [(1, 4, 16), (1, 6, 16), (1, 6, 16), weight(48), "", (1, 4, 4, 6)],
               [(1, 4, 16)], num_heads=4)
    # bias adds q 4*16 + k,v 6*32 = 256; attention_bias 1 per score 96
    assert ops(nc) == (1536, 480 + 256 + 96, 96)


def test_multi_head_attention_packed_qkv():
    # query (B=1, S=4, N=2, 3, D=8): scores 1*2*16 = 32
    nc = typed("MultiHeadAttention", [(1, 4, 2, 3, 8)], [(1, 4, 16)], num_heads=2)
    assert ops(nc) == (2 * 32 * 8 * 2, 5 * 32, 32)  # (1024, 160, 32)


def _gqa(*, past=0, **attrs):
    # query [1,8,64] 4 heads, key/value [1,8,32] 2 KV heads: D = 16
    ins = [(1, 8, 64), (1, 8, 32), (1, 8, 32)]
    total = 8 + past
    ins += [(1, 2, past, 16), (1, 2, past, 16)] if past else ["", ""]
    ins += [((1,), I32), ((), I32)]
    outs = [(1, 8, 64), (1, 2, total, 16), (1, 2, total, 16)]
    return typed("GroupQueryAttention", ins, outs, num_heads=4, kv_num_heads=2, **attrs)


def test_group_query_attention_is_causal_by_default():
    scores = 4 * (8 * 9 // 2)  # H_q * S(S+1)/2 = 144
    assert ops(_gqa()) == (2 * scores * 16 * 2, 5 * scores, scores)  # (9216, 720, 144)


def test_group_query_attention_non_causal():
    scores = 4 * 64  # 256
    assert ops(_gqa(causal=0)) == (2 * scores * 32, 5 * scores, scores)  # (16384, 1280, 256)


def test_group_query_attention_with_past():
    # S_q 8, S_kv 12: per head 8*4 + 8*9/2 = 68 scores; 4 heads: 272
    scores = 4 * 68
    assert ops(_gqa(past=4)) == (2 * scores * 32, 5 * scores, scores)  # (17408, 1360, 272)


def test_group_query_attention_local_window():
    # window 2: query i sees keys max(0, i-2)..i: 1+2+3*6 = 21 per head, 84 for 4 heads
    scores = 4 * 21
    assert ops(_gqa(local_window_size=2)) == (2 * scores * 32, 5 * scores, scores)  # (5376, 420, 84)


def test_group_query_attention_rotary_reads_used_cache_rows():
    ins = [(1, 8, 64), (1, 8, 32), (1, 8, 32), "", "", ((1,), I32), ((), I32), weight(128, 8), weight(128, 8)]
    nc = typed("GroupQueryAttention", ins, [(1, 8, 64), (1, 2, 8, 16), (1, 2, 8, 16)], num_heads=4,
               kv_num_heads=2, do_rotary=1)
    scores = 144
    # rotary on Q and K heads: 3 * S * (4+2) * 16 = 2304
    assert ops(nc) == (9216, 5 * scores + 2304, scores)
    assert nc.cost.weight_bytes == 2 * 8 * 8 * 4  # 8 rows of each [128, 8] cache: 512, not 8192


def test_decoder_masked_mha_self_with_past():
    # q/k/v [2,1,16], 2 heads (D 8), past_key [2,2,5,8] -> 6 keys; scores 2*2*1*6 = 24
    nc = typed("DecoderMaskedMultiHeadAttention",
               [(2, 1, 16), (2, 1, 16), (2, 1, 16), "", "", (2, 2, 5, 8), (2, 2, 5, 8)],
               [(2, 1, 16), (2, 2, 6, 8), (2, 2, 6, 8)], num_heads=2)
    assert ops(nc) == (2 * 24 * 8 * 2, 5 * 24, 24)  # (768, 120, 24)


# ----------------------------------------------------------------------------- ai.onnx Attention (opset 23)


QKV4 = [(1, 2, 32, 64)] * 3  # B=1, H=2, S=32, D=64


def test_onnx_attention_full():
    nc = node_of("Attention", *QKV4, opset=23)
    qk = 2 * 1 * 2 * 32 * 32 * 64  # 2*B*H*S*S*D = 262144
    assert ops(nc) == (2 * qk, 5 * 2048, 2048)  # QK + PV = 524288; scale + softmax 5 per score


def test_onnx_attention_is_causal_halves_to_lower_triangle():
    nc = node_of("Attention", *QKV4, opset=23, is_causal=1)
    pairs = 32 * 33 // 2  # S*(S+1)/2 = 528 per (B, H)
    qk = 2 * 1 * 2 * pairs * 64  # 2*B*H*S(S+1)/2*D = 135168
    assert ops(nc) == (2 * qk, 5 * 2 * pairs, 2 * pairs)  # (270336, 5280, 1056)
    assert nc.cost.mac_flops == 270336


def test_causal_option_applies_to_fused_attention():
    import analyzer
    from onnx_builders import one_node

    r = analyzer.analyze(one_node("Attention", *QKV4, opset=23), causal=True)
    assert r.node("n").cost.mac_flops == 270336  # as is_causal=1


def test_causal_option_never_halves_a_plain_matmul_softmax_chain():
    import analyzer

    n = helper.make_node
    m = graph([n("Transpose", ["k"], ["kt"], name="t", perm=[0, 1, 3, 2]),
               n("MatMul", ["q", "kt"], ["s"], name="qk"),
               n("Softmax", ["s"], ["p"], name="sm", axis=-1),
               n("MatMul", ["p", "v"], ["y"], name="pv")],
              {"q": (1, 2, 32, 64), "k": (1, 2, 32, 64), "v": (1, 2, 32, 64)}, ["y"])
    full, causal = analyzer.analyze(m), analyzer.analyze(m, causal=True)
    for name in ("qk", "sm", "pv"):
        assert causal.node(name).cost == full.node(name).cost
    assert causal.node("qk").cost.mac_flops == 262144  # 2*1*2*32*32*64, all of it


def test_onnx_attention_3d_inputs_and_gqa():
    nc = node_of("Attention", (1, 32, 128), (1, 32, 128), (1, 32, 128), opset=23, q_num_heads=2, kv_num_heads=2)
    assert nc.cost.mac_flops == 524288  # same as the 4-D form
    g = node_of("Attention", (1, 4, 8, 16), (1, 2, 8, 16), (1, 2, 8, 16), opset=23)
    assert g.cost.mac_flops == 2 * (2 * 1 * 4 * 8 * 8 * 16)  # each of 4 query heads: 16384


def test_onnx_attention_mask_and_past():
    # past_key/value [1,2,4,64] + new 32 keys: S_kv = 36; mask [32, 36]
    nc = node_of("Attention", *QKV4, (32, 36), (1, 2, 4, 64), (1, 2, 4, 64), opset=23, n_out=3)
    scores = 2 * 32 * 36  # 2304
    assert ops(nc) == (2 * scores * 64 * 2, 6 * scores, scores)  # mask add 1 per score: (589824, 13824, 2304)


def test_onnx_attention_softcap():
    nc = node_of("Attention", *QKV4, opset=23, softcap=30.0)
    assert ops(nc)[1:] == (7 * 2048, 2 * 2048)  # + 2 vector and 1 tanh per score


# ----------------------------------------------------------------------------- rotary / linear attention


def test_rotary_embedding_opset23():
    nc = node_of("RotaryEmbedding", (1, 2, 8, 16), weight(32, 8), weight(32, 8), ((1, 8), I64), opset=23)
    assert ops(nc) == (0, 3 * 256, 0)  # 3 per rotated element, 1*2*8*16 = 256: 768
    assert nc.cost.weight_bytes == 2 * 8 * 8 * 4  # 8 used rows of each cache: 512 (not 2048)
    partial = node_of("RotaryEmbedding", (1, 2, 8, 16), weight(32, 4), weight(32, 4), ((1, 8), I64), opset=23,
                      rotary_embedding_dim=8)
    assert ops(partial) == (0, 3 * 128, 0)  # half of each head rotated: 384


def test_rotary_embedding_contrib():
    nc = typed("RotaryEmbedding", [(1, 8, 32), ((1, 8), I64), weight(32, 8), weight(32, 8)], [(1, 8, 32)],
               num_heads=2)
    assert ops(nc) == (0, 768, 0)  # D = 16 fully rotated: 3 * 256


def test_linear_attention_gated_delta():
    # B=1, T=4, Hq=Hkv=2, dk=dv=8: state 64, steps = B*T*Hkv = 8
    ins = [(1, 4, 16), (1, 4, 16), (1, 4, 16), "", (1, 4, 2), (1, 4, 2)]
    nc = typed("LinearAttention", ins, [(1, 4, 16), (1, 2, 8, 8)], domain="", opset=27, q_num_heads=2,
               kv_num_heads=2)
    mac = 2 * 64 * 8 + 2 * 64 * 8 + 2 * 64 * 8  # update + retrieval + read-out = 3072
    vec = 64 * 8 + 2 * 8 * 8 + 8 * 8  # S *= exp(g), (v - r)*beta, scale = 512 + 128 + 64 = 704
    assert ops(nc) == (mac, vec, 8)  # 8 decay exps


def test_linear_attention_linear_rule():
    # no decay, no delta: update 2*64*8 + read-out 2*64*8 = 2048 mac; scale 8*8 = 64
    nc = typed("LinearAttention", [(1, 4, 16), (1, 4, 16), (1, 4, 16)], [(1, 4, 16), (1, 2, 8, 8)], domain=MS,
               q_num_heads=2, kv_num_heads=2, update_rule="linear")
    assert ops(nc) == (2048, 64, 0)


@pytest.mark.parametrize("op", ["RotaryEmbedding", "MRotaryEmbedding"])
def test_contrib_rotary_family(op):
    pos = ((1, 8), I64) if op == "RotaryEmbedding" else ((3, 1, 8), I64)
    kw = {"mrope_section": [2, 3, 3]} if op == "MRotaryEmbedding" else {}
    nc = typed(op, [(1, 2, 8, 16), pos, weight(32, 8), weight(32, 8)], [(1, 2, 8, 16)], **kw)
    assert ops(nc) == (0, 3 * 256, 0)  # 4-D input, D = 16 fully rotated


def test_qattention_int8_projection():
    # as com.microsoft Attention (mac 32768, vector 2048, 256 exps) plus dequantizing the projection
    # 2*8*48 = 768 and the zero points of input (256) and weight (768)
    ins = [((2, 8, 16), TensorProto.UINT8), weight(16, 48, dtype=np.int8), weight(48), np.array(0.1, np.float32),
           np.array(0.2, np.float32), "", np.array(128, np.uint8), np.array(0, np.int8)]
    nc = typed("QAttention", ins, [(2, 8, 16)], num_heads=2)
    assert ops(nc) == (32768, 2048 + 768 + 256 + 768, 256)
    assert nc.mac_dtype == "int8"


def test_fused_matmul_activation():
    nc = typed("FusedMatMulActivation", [(4, 6), weight(6, 5)], [(4, 5)], activation="Relu")
    assert ops(nc) == (240, 20, 0)  # 2*4*5*6; relu 1 per output


@pytest.mark.parametrize("op, ins, out, attrs, standard", [
    ("GatherND", [(4, 5), ((2, 1), I64)], (2, 5), {}, ("GatherND", [(4, 5), ((2, 1), I64)], {})),
    ("Trilu", [(4, 4)], (4, 4), {}, ("Trilu", [(4, 4)], {})),
    ("GridSample", [(1, 2, 4, 4), (1, 3, 3, 2)], (1, 2, 3, 3), {}, ("GridSample", [(1, 2, 4, 4), (1, 3, 3, 2)],
                                                                     {"opset": 16})),
    ("NhwcMaxPool", [((1, 4, 4, 2), TensorProto.INT8)], ((1, 2, 2, 2), TensorProto.INT8),
     {"kernel_shape": [2, 2], "strides": [2, 2]},
     ("MaxPool", [((1, 2, 4, 4), TensorProto.INT8)], {"kernel_shape": [2, 2], "strides": [2, 2], "opset": 12})),
])
def test_contrib_copies_of_standard_ops_count_the_same(op, ins, out, attrs, standard):
    from onnx_builders import cost_of

    ms = typed(op, ins, [out], **attrs).cost
    sop, sins, skw = standard
    assert ms == cost_of(sop, *sins, **skw)


def test_contrib_unique_and_causal_conv():
    u = typed("Unique", [(6,)], [(4,), ((6,), I64), ((4,), I64)])
    assert ops(u) == (0, 6 * 3 + 6, 0)  # sort 6*lg(6) + adjacent compare = 24
    c = typed("CausalConvWithState", [(1, 4, 10), weight(4, 1, 3), weight(4)], [(1, 4, 10), (1, 4, 2)],
              activation="silu")
    assert ops(c) == (240, 160, 40)  # as the ai.onnx op: 2*40*3 mac; bias 40 + SiLU 120; 40 exps


# ----------------------------------------------------------------------------- output shapes (surrogates)
#
# ONNX shape inference does not know com.microsoft ops; analyzer/frontends/contrib_shapes.py gives
# them shapes through standard-op surrogates.  Each case is a one-node model whose outputs are NOT
# declared; the expected shapes and dtypes are those of onnxruntime's operator schema
# (docs/ContribOperators.md), worked out beside each case.

F16, U8, I8, I16 = TensorProto.FLOAT16, TensorProto.UINT8, TensorProto.INT8, TensorProto.INT16
BOOL = TensorProto.BOOL


def _c(v, dtype=np.float32):
    return np.array(v, dtype=dtype)


def inferred(op, ins, outs=1, *, domain=MS, opset=17, **attrs):
    """Output specs ("dtype[dims]") of a one-node model "n" whose outputs are undeclared; ``outs``:
    a count, or a list of 1 (present) / 0 (omitted) per output slot."""
    from onnx_builders import analyze, graph, named_inputs

    inputs, inits, names = named_inputs(ins)
    slots = [1] * outs if isinstance(outs, int) else outs
    out_names = [f"y{i}" if s else "" for i, s in enumerate(slots)]
    node = helper.make_node(op, names, out_names, name="n", domain=domain or None, **attrs)
    m = graph([node], inputs, [o for o in out_names if o], inits, opset=opset,
              domains={domain: 1} if domain else {MS: 1})
    return tuple(s for s in analyze(m).node("n").outputs if s not in (None, "-"))


QKV_W = [(2, 8, 16), weight(16, 48), weight(48)]  # B=2, S=8, D_in=16, merged Q/K/V 3*16
PAST_NONE = ["", ""]


@pytest.mark.parametrize("op, ins, outs, attrs, expected", [
    # Attention: output (B, S, v_hidden = 48/3); present (2, B, N, S, head = 16/2)
    ("Attention", QKV_W, 2, {"num_heads": 2}, ("float32[2,8,16]", "float32[2,2,2,8,8]")),
    # past (2, B, N, P=5, 8): present has P + S = 13 positions
    ("Attention", QKV_W + ["", (2, 2, 2, 5, 8)], 2, {"num_heads": 2},
     ("float32[2,8,16]", "float32[2,2,2,13,8]")),
    # shared buffer: present is the past buffer (capacity 32)
    ("Attention", QKV_W + ["", (2, 2, 2, 32, 8)], 2, {"num_heads": 2, "past_present_share_buffer": 1},
     ("float32[2,8,16]", "float32[2,2,2,32,8]")),
    # qkv_hidden_sizes (16, 16, 32): output width v_hidden = 32; fp16 stays fp16
    ("Attention", [((2, 8, 16), F16), weight(16, 64, dtype=np.float16)], 2,
     {"num_heads": 2, "qkv_hidden_sizes": [16, 16, 32]}, ("float16[2,8,32]", "float16[2,2,2,8,8]")),
    # QAttention: uint8 input, int8 weight, float bias: float outputs
    ("QAttention", [((2, 8, 16), U8), weight(16, 48, dtype=np.int8), weight(48), _c(0.1), _c(0.2)], 2,
     {"num_heads": 2}, ("float32[2,8,16]", "float32[2,2,2,8,8]")),
    # MultiHeadAttention q (1,4,16), k (1,6,16), v (1,6,32), 4 heads: head 4, v head 8;
    # output (B, S, v_hidden 32); present_key (B, N, 6, 4), present_value (B, N, 6, 8); qk (B, N, S, 6)
    ("MultiHeadAttention", [(1, 4, 16), (1, 6, 16), (1, 6, 32)], 4, {"num_heads": 4},
     ("float32[1,4,32]", "float32[1,4,6,4]", "float32[1,4,6,8]", "float32[1,4,4,6]")),
    # with past (1, 4, 3, head): 3 + 6 = 9 positions
    ("MultiHeadAttention", [(1, 4, 16), (1, 6, 16), (1, 6, 32), "", "", "", (1, 4, 3, 4), (1, 4, 3, 8)], 3,
     {"num_heads": 4}, ("float32[1,4,32]", "float32[1,4,9,4]", "float32[1,4,9,8]")),
    # packed QKV (B=1, S=4, N=2, 3, D=8): output (1, 4, 16); present (1, 2, 4, 8)
    ("MultiHeadAttention", [(1, 4, 2, 3, 8)], 3, {"num_heads": 2},
     ("float32[1,4,16]", "float32[1,2,4,8]", "float32[1,2,4,8]")),
    # packed KV (B=1, L=6, N=2, 2, D=8) with q (1, 4, 16)
    ("MultiHeadAttention", [(1, 4, 16), (1, 6, 2, 2, 8)], 3, {"num_heads": 2},
     ("float32[1,4,16]", "float32[1,2,6,8]", "float32[1,2,6,8]")),
    # cross attention over BNSH K/V (1, 2, 6, 8)
    ("MultiHeadAttention", [(1, 4, 16), (1, 2, 6, 8), (1, 2, 6, 8)], 1, {"num_heads": 2}, ("float32[1,4,16]",)),
    # DecoderMaskedMultiHeadAttention: q/k/v (2, 1, 16), 2 heads; past_key (2, 2, 5, 8) -> 6 positions
    ("DecoderMaskedMultiHeadAttention", [(2, 1, 16), (2, 1, 16), (2, 1, 16), "", "", (2, 2, 5, 8), (2, 2, 5, 8)],
     3, {"num_heads": 2}, ("float32[2,1,16]", "float32[2,2,6,8]", "float32[2,2,6,8]")),
    # ... with a shared buffer of capacity 32: present is the buffer
    ("DecoderMaskedMultiHeadAttention", [(2, 1, 16), (2, 1, 16), (2, 1, 16), "", "", (2, 2, 32, 8),
                                         (2, 2, 32, 8), ((1,), I32)],
     3, {"num_heads": 2, "past_present_share_buffer": 1},
     ("float32[2,1,16]", "float32[2,2,32,8]", "float32[2,2,32,8]")),
    # GroupQueryAttention q (1,8,64) 4 heads, k/v (1,8,32) 2 KV heads: head 16; present (1, 2, 8, 16)
    ("GroupQueryAttention", [(1, 8, 64), (1, 8, 32), (1, 8, 32)] + PAST_NONE + [((1,), I32), ((), I32)], 3,
     {"num_heads": 4, "kv_num_heads": 2}, ("float32[1,8,64]", "float32[1,2,8,16]", "float32[1,2,8,16]")),
    # past (1, 2, 4, 16), total_sequence_length a runtime value: 4 + 8 = 12
    ("GroupQueryAttention", [(1, 8, 64), (1, 8, 32), (1, 8, 32), (1, 2, 4, 16), (1, 2, 4, 16), ((1,), I32),
                             ((), I32)], 3,
     {"num_heads": 4, "kv_num_heads": 2}, ("float32[1,8,64]", "float32[1,2,12,16]", "float32[1,2,12,16]")),
    # past buffer (1, 2, 32, 16), total_sequence_length constant 12: max(32, 12) = 32
    ("GroupQueryAttention", [(1, 8, 64), (1, 8, 32), (1, 8, 32), (1, 2, 32, 16), (1, 2, 32, 16), ((1,), I32),
                             _c(12, np.int32)], 3,
     {"num_heads": 4, "kv_num_heads": 2}, ("float32[1,8,64]", "float32[1,2,32,16]", "float32[1,2,32,16]")),
    # packed QKV (1, 8, (4 + 2*2) * 16 = 128): output (1, 8, 4*16 = 64)
    ("GroupQueryAttention", [((1, 8, 128), F16), "", ""] + PAST_NONE + [((1,), I32), ((), I32)], 3,
     {"num_heads": 4, "kv_num_heads": 2}, ("float16[1,8,64]", "float16[1,2,8,16]", "float16[1,2,8,16]")),
    ("RotaryEmbedding", [(1, 8, 32), ((1, 8), I64), weight(32, 8), weight(32, 8)], 1, {"num_heads": 2},
     ("float32[1,8,32]",)),
    # LinearAttention q/k (1,4,16) 2 heads (d_k 8), v (1,4,32) (d_v 16): output (1,4,2*16); state (1,2,8,16)
    ("LinearAttention", [(1, 4, 16), (1, 4, 16), (1, 4, 32)], 2, {"q_num_heads": 2, "kv_num_heads": 2,
                                                                    "update_rule": "linear"},
     ("float32[1,4,32]", "float32[1,2,8,16]")),
    # EmbedLayerNormalization ids (2, 4), word (100, 8): output (2, 4, 8), mask_index int32 (2,), sum (2, 4, 8)
    ("EmbedLayerNormalization", [((2, 4), I32), ((2, 4), I32), weight(100, 8), weight(16, 8), weight(2, 8),
                                 weight(8), weight(8), ((2, 4), I32)], 3, {},
     ("float32[2,4,8]", "int32[2]", "float32[2,4,8]")),
    # SkipLayerNormalization fp16: output/sum fp16 (2, 4, 8); mean, inv_std float32 (2, 4, 1)
    ("SkipLayerNormalization", [((2, 4, 8), F16), ((2, 4, 8), F16), weight(8, dtype=np.float16)], 4, {},
     ("float16[2,4,8]", "float32[2,4,1]", "float32[2,4,1]", "float16[2,4,8]")),
    ("SimplifiedLayerNormalization", [(3, 16), weight(16)], 2, {}, ("float32[3,16]", "float32[3,1]")),
    ("SkipGroupNorm", [(2, 4, 4, 6), weight(6), weight(6), (2, 4, 4, 6)], 2, {"groups": 3, "activation": 0},
     ("float32[2,4,4,6]", "float32[2,4,4,6]")),
    ("GroupNorm", [(2, 4, 4, 6), weight(6), weight(6)], 1, {"groups": 3, "activation": 1}, ("float32[2,4,4,6]",)),
    ("BiasAdd", [(2, 3, 4), weight(4), (2, 3, 4)], 1, {}, ("float32[2,3,4]",)),
    ("BiasSplitGelu", [(1, 2, 8), weight(8)], 1, {}, ("float32[1,2,4]",)),  # (N, S, D/2)
    ("BiasSoftmax", [(2, 5), (2, 5)], 1, {}, ("float32[2,5]",)),
    ("BiasDropout", [(2, 5), weight(5), (2, 5)], 2, {}, ("float32[2,5]", "bool[2,5]")),
    # MatMulNBits: A (2, 8, 64), K=64, N=16 -> (2, 8, 16) in A's dtype
    ("MatMulNBits", [((2, 8, 64), F16), weight(16, 2, 16, dtype=np.uint8), weight(16, 2, dtype=np.float16)], 1,
     {"K": 64, "N": 16, "bits": 4, "block_size": 32}, ("float16[2,8,16]",)),
    ("MatMulBnb4", [(3, 32), weight(256, dtype=np.uint8), weight(8)], 1,
     {"K": 32, "N": 16, "block_size": 64, "quant_type": 1}, ("float32[3,16]",)),
    ("MatMulIntegerToFloat", [((4, 6), U8), weight(6, 5, dtype=np.int8), _c(0.1), _c(0.2)], 1, {},
     ("float32[4,5]",)),
    ("DynamicQuantizeMatMul", [(2, 3, 6), weight(6, 5, dtype=np.int8), _c(0.2)], 1, {}, ("float32[2,3,5]",)),
    ("MatMulInteger16", [((4, 6), I16), weight(6, 5, dtype=np.int16)], 1, {}, ("int32[4,5]",)),
    # 4-bit rows packed two per byte: data (100, 16) uint8 holds 32 values per row
    ("GatherBlockQuantized", [weight(100, 16, dtype=np.uint8), ((2, 3), I64), weight(100, 1)], 1,
     {"bits": 4, "block_size": 32, "gather_axis": 0, "quantize_axis": 1}, ("float32[2,3,32]",)),
    # FusedMatMul: A (2,5,3)^T -> (2,3,5), B (4,5)^T -> (5,4): (2,3,4)
    ("FusedMatMul", [(2, 5, 3), weight(4, 5)], 1, {"transA": 1, "transB": 1}, ("float32[2,3,4]",)),
    # transBatchA: A (3,2,5) is read as (2,3,5) (dim 0 moves behind the batch dims)
    ("FusedMatMul", [(3, 2, 5), (2, 5, 4)], 1, {"transBatchA": 1}, ("float32[2,3,4]",)),
    ("TransposeMatMul", [(5, 3), (5, 4)], 1, {"transA": 1}, ("float32[3,4]",)),
    ("FusedMatMulActivation", [(4, 6), weight(6, 5)], 1, {"activation": "Relu"}, ("float32[4,5]",)),
    ("GemmFastGelu", [(4, 6), weight(6, 5), weight(5)], 1, {}, ("float32[4,5]",)),
    ("FusedGemm", [(6, 4), weight(6, 5), weight(5)], 1, {"transA": 1, "activation": "Relu"}, ("float32[4,5]",)),
    ("FusedConv", [(1, 2, 5, 5), weight(3, 2, 3, 3), weight(3)], 1, {"activation": "Relu", "pads": [1, 1, 1, 1]},
     ("float32[1,3,5,5]",)),
    # NHWC: (1, 5, 5, 2) with 3 filters, stride 2, no pad: (1, 2, 2, 3)
    ("NhwcConv", [(1, 5, 5, 2), weight(3, 2, 3, 3)], 1, {"strides": [2, 2]}, ("float32[1,2,2,3]",)),
    ("NhwcFusedConv", [(1, 5, 5, 2), weight(3, 2, 3, 3)], 1, {"activation": "Relu", "pads": [1, 1, 1, 1]},
     ("float32[1,5,5,3]",)),
    ("NhwcMaxPool", [((1, 4, 4, 2), I8)], 1, {"kernel_shape": [2, 2], "strides": [2, 2]}, ("int8[1,2,2,2]",)),
    ("MaxpoolWithMask", [(1, 2, 4, 4), ((1, 2, 4, 4), I32)], 1, {"kernel_shape": [2, 2], "strides": [2, 2]},
     ("float32[1,2,2,2]",)),
    # quantized: output dtype from the output zero point
    ("QLinearConv", [((1, 2, 5, 5), U8), _c(0.1), _c(0, np.uint8), weight(3, 2, 3, 3, dtype=np.int8), _c(0.2),
                     _c(0, np.int8), _c(0.3), _c(0, np.uint8)], 1, {"pads": [1, 1, 1, 1]}, ("uint8[1,3,5,5]",)),
    ("QLinearConv", [((1, 5, 5, 2), U8), _c(0.1), _c(0, np.uint8), weight(3, 2, 3, 3, dtype=np.int8), _c(0.2),
                     _c(0, np.int8), _c(0.3), _c(0, np.uint8)], 1, {"channels_last": 1}, ("uint8[1,3,3,3]",)),
    ("QLinearAveragePool", [((1, 2, 4, 4), U8), _c(0.1), _c(0, np.uint8), _c(0.1), _c(0, np.uint8)], 1,
     {"kernel_shape": [2, 2], "strides": [2, 2]}, ("uint8[1,2,2,2]",)),
    ("QLinearAveragePool", [((1, 4, 4, 3), U8), _c(0.1), _c(0, np.uint8), _c(0.1), _c(0, np.uint8)], 1,
     {"kernel_shape": [2, 2], "strides": [2, 2], "channels_last": 1}, ("uint8[1,2,2,3]",)),
    ("QLinearGlobalAveragePool", [((1, 4, 4, 3), U8), _c(0.1), _c(0, np.uint8), _c(0.1), _c(0, np.uint8)], 1,
     {"channels_last": 1}, ("uint8[1,1,1,3]",)),
    ("QLinearReduceMean", [((2, 3, 4), I8), _c(0.1), _c(0, np.int8), _c(0.1), _c(0, np.int8)], 1,
     {"axes": [1], "keepdims": 0}, ("int8[2,4]",)),
    ("QLinearSoftmax", [((2, 5), U8), _c(0.1), _c(0, np.uint8), _c(1 / 256), _c(0, np.uint8)], 1,
     {"axis": -1, "opset": 13}, ("uint8[2,5]",)),
    # QLinearConcat(Y_scale, Y_zero_point, (a, s, z), (b, s, z)) along axis 1: (2, 3 + 5)
    ("QLinearConcat", [_c(0.1), _c(0, np.int8), ((2, 3), I8), _c(0.1), _c(0, np.int8), ((2, 5), I8), _c(0.2),
                       _c(0, np.int8)], 1, {"axis": 1}, ("int8[2,8]",)),
    # QLinearWhere broadcasts condition (2,1), X (2,3), Y (1,3)
    ("QLinearWhere", [((2, 1), BOOL), ((2, 3), I8), _c(0.1), _c(0, np.int8), ((1, 3), I8), _c(0.1),
                      _c(0, np.int8), _c(0.1), _c(0, np.int8)], 1, {}, ("int8[2,3]",)),
    ("QuantizeLinear", [(2, 3), _c(0.1), _c(0, np.int8)], 1, {}, ("int8[2,3]",)),
    ("DequantizeLinear", [((2, 3), I8), _c(0.1), _c(0, np.int8)], 1, {}, ("float32[2,3]",)),
    # copies of standard ops
    ("Trilu", [(4, 4)], 1, {}, ("float32[4,4]",)),
    ("ExpandDims", [(4, 3), _c(1, np.int32)], 1, {}, ("float32[4,1,3]",)),
    ("Range", [_c(0, np.int64), _c(10, np.int64), _c(2, np.int64)], 1, {}, ("int64[5]",)),  # 0,2,4,6,8
    ("GatherND", [(4, 5), ((2, 1), I64)], 1, {}, ("float32[2,5]",)),
    ("GridSample", [(1, 2, 4, 4), (1, 3, 3, 2)], 1, {}, ("float32[1,2,3,3]",)),
    ("Pad", [(2, 3), np.array([[0, 1, 0, 2]], np.int64)], 1, {}, ("float32[2,6]",)),
    # CausalConvWithState x (1, 4, 10), kernel 3: present_state (1, 4, k-1 = 2)
    ("CausalConvWithState", [(1, 4, 10), weight(4, 1, 3), weight(4)], 2, {"activation": "silu"},
     ("float32[1,4,10]", "float32[1,4,2]")),
], ids=lambda v: v if isinstance(v, str) else None)
def test_surrogate_output_shapes(op, ins, outs, attrs, expected):
    assert inferred(op, ins, outs, **attrs) == expected


def test_unique_surrogate():
    # uniques and counts have a data-dependent length; idx has the input's length
    y, idx, counts = inferred("Unique", [((6,), I8)], 3)
    assert y.startswith("int8[") and idx == "int64[6]" and counts.startswith("int64[")


def test_skip_layer_norm_optional_outputs_only():
    # output and input_skip_bias_sum present, mean / inv_std omitted
    assert inferred("SkipLayerNormalization", [(2, 4, 8), (2, 4, 8), weight(8)], [1, 0, 0, 1]) == (
        "float32[2,4,8]", "float32[2,4,8]")


def test_default_domain_simplified_layer_norm_gets_a_shape():
    # onnxruntime registers SimplifiedLayerNormalization in the default domain, which ONNX does not define
    assert inferred("SimplifiedLayerNormalization", [((3, 16), F16), weight(16, dtype=np.float16)], 2,
                    domain="", axis=-1) == ("float16[3,16]", "float32[3,1]")


def test_chained_contrib_ops_resolve_in_one_pass():
    # EmbedLayerNormalization -> Attention -> SkipLayerNormalization -> MatMulNBits -> FastGelu: every
    # output shape is built in the graph, so the chain resolves in one inference round
    from onnx_builders import analyze, graph

    n = helper.make_node
    nodes = [
        n("EmbedLayerNormalization", ["ids", "", "word", "pos", "", "g", "b"], ["e", "mi"], name="emb", domain=MS),
        n("Attention", ["e", "wqkv", "bqkv"], ["a"], name="att", domain=MS, num_heads=2),
        n("SkipLayerNormalization", ["a", "e", "g", "b"], ["s"], name="sln", domain=MS),
        n("MatMulNBits", ["s", "q", "qs"], ["m"], name="mnb", domain=MS, K=16, N=64, bits=4, block_size=16),
        n("FastGelu", ["m"], ["y"], name="gelu", domain=MS),
    ]
    inits = {"word": weight(50, 16), "pos": weight(8, 16), "g": weight(16), "b": weight(16),
             "wqkv": weight(16, 48), "bqkv": weight(48), "q": weight(64, 1, 8, dtype=np.uint8),
             "qs": weight(64, 1)}
    m = graph(nodes, {"ids": ((2, 8), I32)}, ["y"], inits, domains={MS: 1})
    r = analyze(m)
    assert r.node("gelu").outputs == ("float32[2,8,64]",)
    assert r.node("att").cost.mac_flops == 2 * 2 * 8 * 16 * 48 + 2 * 2 * (2 * 2 * 8 * 8 * 8)  # proj + QK + PV
