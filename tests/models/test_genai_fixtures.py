"""LLM decoders as onnxruntime-genai's model builder writes them (weights absent).

tests/fixtures/genai/ holds three files made by samples/genai_fixtures/make.py from one tiny
random-init LlamaForCausalLM (2 layers, hidden d=64, H=4 query heads, Hkv=2 KV heads, head_dim
hd=16, intermediate I=128, vocab V=256; 106,816 HF parameters):

- llama_tiny_fp32_cpu.onnx  ``-p fp32 -e cpu``: packed QKV MatMul, RoPE fused into
  GroupQueryAttention (do_rotary=1, cos/sin caches as GQA inputs)
- llama_tiny_int4_cpu.onnx  ``-p int4 -e cpu``: the same with MatMulNBits (4-bit, block 32,
  symmetric: scales, no zero points)
- llama_tiny_int4_dml.onnx  ``-p int4 -e dml``: fp16 I/O, separate q/k/v MatMulNBits and
  com.microsoft RotaryEmbedding on Q and K (position_ids input)

Symbolic dims: batch_size, sequence_length, past_sequence_length, total_sequence_length and
kv_cache_dim (the KV cache's head size). reference.json holds numbers computed without opcost.

Attention convention: ORT's GroupQueryAttention has a ``causal`` attribute whose schema
default is 1 (the builder leaves it unset), and attention.py costs an op whose own causal
attribute is set as a causal kernel: per (batch, head) only S*P + S*(S+1)/2 scores. The
``analyze(causal=...)`` option (off by default) is not what halves here. For a prefill this is
below the dense S*T that HF eager attention computes (torch FlopCounterMode counts the dense
form; the difference is pinned below); a decode step (S=1) is the same either way. Note that
ORT's CPU GroupQueryAttention kernel (contrib_ops/cpu/bert/gqa_attention_base.h) runs both GEMMs
over the full S x total rectangle and only zeroes the masked probabilities, so on the CPU EP the
executed work is the dense form; flash kernels skip the masked tiles. GQA_COSTED_CAUSAL pins
opcost's present choice: flip it if attention.py ever costs GQA dense.
"""

from __future__ import annotations

import json
import os
from collections import Counter

import onnx
import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "genai")
with open(os.path.join(HERE, "reference.json"), encoding="utf-8") as _f:
    REF = json.load(_f)
FIX = REF["fixtures"]

B, L, D, H, HKV, HD, I, V = 1, 2, 64, 4, 2, 16, 128, 256
HF_PARAMS = 106_816  # embed 256*64 + 2*(q 4096 + k 2048 + v 2048 + o 4096 + 3*8192 + 2*64 norms)
#                      + final norm 64 + lm_head 64*256 = 16384 + 2*36992 + 64 + 16384
COS_SIN = 2 * 128 * 8  # cos_cache + sin_cache initializers (max_position 128 x hd/2): 2048
SCALES = 2 * (128 * 2 + 64 * 2 + 3 * 128 * 2) + 256 * 2  # N*K/32 per MatMulNBits: qkv 256,
#       o 128, gate 256, up 256, down 64*(128/32)=256 -> 1152/layer; lm_head 512 -> 2816

MS_OPS = {  # com.microsoft ops each file must contain (a regenerated file without them fails)
    "llama_tiny_fp32_cpu.onnx": {"GroupQueryAttention": 2, "SkipSimplifiedLayerNormalization": 4},
    "llama_tiny_int4_cpu.onnx": {"GroupQueryAttention": 2, "SkipSimplifiedLayerNormalization": 4,
                                 "MatMulNBits": 11},
    "llama_tiny_int4_dml.onnx": {"GroupQueryAttention": 2, "SkipSimplifiedLayerNormalization": 4,
                                 "MatMulNBits": 15, "RotaryEmbedding": 4},
}
FILES = sorted(MS_OPS)


def dims(seq: int, past: int) -> dict[str, int]:
    return {"batch_size": B, "sequence_length": seq, "past_sequence_length": past,
            "total_sequence_length": past + seq, "kv_cache_dim": HD}


GQA_COSTED_CAUSAL = True  # attention.py: GQA's causal attribute defaults to 1 -> causal kernel
CASES = {"prefill": dims(16, 0), "decode": dims(1, 15)}


def linear_mac_flops(s: int) -> int:
    """q/k/v/o + gate/up/down in every layer, and lm_head, for S tokens (2 per MAC)."""
    per_layer = D * H * HD + 2 * D * HKV * HD + H * HD * D + 3 * D * I  # 4096+4096+4096+24576
    return 2 * B * s * (L * per_layer + D * V)  # 2*S*(2*36864 + 16384) = S*180224


def attention_mac_flops(s: int, past: int, causal: bool) -> int:
    """QK^T + PV over all layers: 2*B*H*(scores)*hd each; GQA: every query head does its own."""
    t = past + s
    scores = s * past + s * (s + 1) // 2 if causal else s * t
    return L * 2 * (2 * B * H * scores * HD)


@pytest.fixture(scope="module")
def reports():
    return {(f, c): analyzer.analyze(os.path.join(HERE, f), dims=d)
            for f in FILES for c, d in CASES.items()}


@pytest.mark.parametrize("name", FILES)
def test_the_builders_com_microsoft_ops_are_in_the_file(name):
    m = onnx.load(os.path.join(HERE, name), load_external_data=False)
    ops = Counter(n.op_type for n in m.graph.node if n.domain == "com.microsoft")
    assert {k: ops[k] for k in MS_OPS[name]} == MS_OPS[name]
    gqa = [n for n in m.graph.node if n.op_type == "GroupQueryAttention"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in gqa[0].attribute}
    assert attrs["num_heads"] == H and attrs["kv_num_heads"] == HKV and "causal" not in attrs
    assert attrs["do_rotary"] == (0 if "dml" in name else 1)
    inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in m.graph.input}
    assert inputs["input_ids"] == ["batch_size", "sequence_length"]
    assert inputs["attention_mask"] == ["batch_size", "total_sequence_length"]
    assert inputs["past_key_values.0.key"] == ["batch_size", HKV, "past_sequence_length", "kv_cache_dim"]
    assert ("position_ids" in inputs) == ("dml" in name)
    # weights are absent: every big initializer is external and its .data file is not shipped
    assert not os.path.exists(os.path.join(HERE, name + ".data"))
    assert FIX[name]["num_external_initializers"] == sum(
        t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer) > 0


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", FILES)
def test_every_node_is_costed(reports, name, case):
    assert reports[name, case].coverage.uncosted == ()


def test_closed_form_agrees_with_the_reference_and_torch():
    cf = REF["closed_form"]
    # prefill S=16: linear 16*180224 = 2,883,584; dense attention 2*2*(2*4*16*16*16) = 131,072
    assert cf["prefill"]["mac_flops_dense"] == linear_mac_flops(16) + attention_mac_flops(16, 0, False) == 3_014_656
    # causal: 16*17/2 = 136 scores per head: 2*2*(2*4*136*16) = 69,632
    assert cf["prefill"]["mac_flops_causal"] == linear_mac_flops(16) + attention_mac_flops(16, 0, True) == 2_953_216
    # decode S=1, past 15, T=16: 180,224 + 2*2*(2*4*1*16*16) = 180,224 + 8,192
    assert cf["decode"]["mac_flops_dense"] == cf["decode"]["mac_flops_causal"] == 188_416
    assert linear_mac_flops(1) + attention_mac_flops(1, 15, True) == 188_416
    # torch FlopCounterMode of the HF forward (prefill, eager attention: aten.mm + aten.bmm)
    assert REF["torch_flop_counter_prefill"]["eager"]["total"] == cf["prefill"]["mac_flops_dense"]
    assert REF["hf_params"] == HF_PARAMS


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", FILES)
def test_mac_flops_equal_the_closed_form(reports, name, case):
    d = CASES[case]
    s, p = d["sequence_length"], d["past_sequence_length"]
    r = reports[name, case]
    gqa = [n for n in r.nodes if n.op == "GroupQueryAttention"]
    linear = [n for n in r.nodes if n.op in ("MatMul", "MatMulNBits")]
    assert len(gqa) == L and len(linear) == (15 if "dml" in name else 11)
    assert sum(n.cost.mac_flops for n in linear) == linear_mac_flops(s)
    assert sum(n.cost.mac_flops for n in gqa) == attention_mac_flops(s, p, causal=GQA_COSTED_CAUSAL)
    assert r.totals.mac_flops == linear_mac_flops(s) + attention_mac_flops(s, p, causal=GQA_COSTED_CAUSAL)
    key = "mac_flops_causal" if GQA_COSTED_CAUSAL else "mac_flops_dense"
    assert r.totals.mac_flops == REF["closed_form"][case][key]


def test_gqa_with_causal_0_is_the_dense_count_torch_reports():
    m = onnx.load(os.path.join(HERE, "llama_tiny_fp32_cpu.onnx"), load_external_data=False)
    for n in m.graph.node:
        if n.op_type == "GroupQueryAttention":
            n.attribute.append(onnx.helper.make_attribute("causal", 0))
    r = analyzer.analyze(m, dims=CASES["prefill"])
    assert r.totals.mac_flops == REF["torch_flop_counter_prefill"]["eager"]["total"] == 3_014_656


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", FILES)
def test_params_equal_hf_params_plus_documented_extras(reports, name, case):
    f = FIX[name]
    # the rotary cos/sin caches are initializers consumed as data (GQA's or RotaryEmbedding's
    # inputs 7/8 resp. 2/3): they count, once, although each of 2..4 nodes reads them
    assert f["rotary_cos_sin_cache_numel"] == COS_SIN
    if "int4" in name:
        # 4-bit weights count one element each (K*N, not the packed uint8 bytes), plus scales;
        # symmetric quantization writes no zero points
        assert f["matmulnbits_unpacked_numel"] == 2 * f["matmulnbits_packed_uint8_numel"] == 90_112
        assert f["matmulnbits_scales_numel"] == SCALES == 2816
        assert f["matmulnbits_zero_points_numel"] == 0
        expected = HF_PARAMS + COS_SIN + SCALES  # 106816 + 2048 + 2816 = 111,680
        assert f["initializer_numel"] == expected - f["matmulnbits_packed_uint8_numel"]
    else:
        expected = HF_PARAMS + COS_SIN  # 106816 + 2048 = 108,864
        assert f["initializer_numel"] == expected
    # the builder's two Constant nodes are int64 shape arithmetic (not data)
    assert f["constant_node_numel_by_dtype"] == {"INT64": 2}
    assert reports[name, case].totals.params == expected


def test_rotary_embedding_nodes_of_the_dml_file(reports):
    r = reports["llama_tiny_int4_dml.onnx", "prefill"]
    rot = {n.name: n.cost.vector_flops for n in r.nodes if n.op == "RotaryEmbedding"}
    # 3 vector ops per rotated element: Q 16 tokens x 64 = 3072, K 16 x 32 = 1536, per layer
    assert sorted(rot.values()) == [1536, 1536, 3072, 3072]


def test_prefill_sweep_attention_grows_quadratically():
    seqs = [8, 16, 32, 64]
    # a prefill moves sequence and total length together: one '+'-joined key (the CLI's
    # --dim sequence_length+total_sequence_length=8,16,32,64), 4 points, not a 4 x 4 product
    sw = analyzer.sweep(os.path.join(HERE, "llama_tiny_fp32_cpu.onnx"),
                        {"batch_size": 1, "past_sequence_length": 0, "kv_cache_dim": HD,
                         "sequence_length+total_sequence_length": seqs})
    assert sw.dims == ("sequence_length", "total_sequence_length") and len(sw.points) == 4
    assert all(b["total_sequence_length"] == b["sequence_length"] for b, _ in sw.points)
    points = {b["sequence_length"]: r for b, r in sw.points}
    assert sorted(points) == seqs
    att = {s: sum(n.cost.mac_flops for n in r.nodes if n.op == "GroupQueryAttention")
           for s, r in points.items()}
    for s in seqs:
        # 2 layers x (QK^T + PV) x 2*H*hd*S*(S+1)/2 = 256*S*(S+1): 8 -> 18,432 ... 64 -> 1,064,960
        assert att[s] == attention_mac_flops(s, 0, causal=GQA_COSTED_CAUSAL)
        assert att[s] == (256 * s * (s + 1) if GQA_COSTED_CAUSAL else 512 * s * s)
        assert points[s].totals.mac_flops - att[s] == linear_mac_flops(s)  # linear in S
    # doubling S multiplies attention by 2*(2S+1)/(S+1) -> 4 (quadratic)
    if GQA_COSTED_CAUSAL:
        assert [att[2 * s] / att[s] for s in seqs[:-1]] == [2 * (2 * s + 1) / (s + 1) for s in seqs[:-1]]
    assert att[64] / att[32] > 3.9


@pytest.mark.parametrize("name", FILES)
def test_shared_kv_buffer_binding_counts_the_real_total_length(name):
    # genai_config.json says past_present_share_buffer=true: the runtime feeds past_key as the
    # whole max_length=128 buffer, and total_sequence_length (the attention_mask width, the
    # present's declared dim) is the length actually attended. Decode at T=16 in a 128 buffer:
    # still 180,224 + 2*2*(2*4*1*16*16) = 188,416; the buffer's capacity is not attended.
    d = {"batch_size": B, "sequence_length": 1, "past_sequence_length": 128,
         "total_sequence_length": 16, "kv_cache_dim": HD}
    r = analyzer.analyze(os.path.join(HERE, name), dims=d)
    assert r.totals.mac_flops == linear_mac_flops(1) + attention_mac_flops(1, 15, causal=True) == 188_416


def test_dims_that_disagree_are_noted_on_the_attention_node():
    # past 4 + 16 new tokens cannot make a total of 16 (and 4 < 16: not a shared buffer)
    d = {"batch_size": 1, "sequence_length": 16, "past_sequence_length": 4,
         "total_sequence_length": 16, "kv_cache_dim": HD}
    r = analyzer.analyze(os.path.join(HERE, "llama_tiny_fp32_cpu.onnx"), dims=d)
    notes = [n.note or "" for n in r.nodes if n.op == "GroupQueryAttention"]
    assert len(notes) == 2 and all("past 4 + new 16 tokens != total 16" in x for x in notes)
    d.update(past_sequence_length=0)  # a consistent prefill: no such note
    r = analyzer.analyze(os.path.join(HERE, "llama_tiny_fp32_cpu.onnx"), dims=d)
    assert not any("disagree" in (n.note or "") for n in r.nodes)
