"""Graphs made by onnxruntime's own tools (tests/fixtures/ort/, written by samples/ort_fixtures/make.py;
CI never runs it): a 2-layer BERT-like encoder and a GPT-2-like decoder in plain ONNX ops, the
transformer optimizer's fusions of them (EmbedLayerNormalization, Attention, SkipLayerNormalization,
BiasGelu / FastGelu), MatMulNBitsQuantizer's 4-bit MatMulNBits graphs, a QOperator static
quantization (QLinearSoftmax, QLinearAdd, QLinearMul) and a dynamic quantization of the fused
BERT (QAttention).  The contrib ops have no ONNX shape inference: their shapes come from
analyzer/frontends/contrib_shapes.py.

reference.json holds numbers computed by make.py, not by opcost: ``mac_flops`` is the closed form
of the float graph, ``L * 2 * (4*B*S*D*D + 2*B*S*D*F + 2*B*S*S*D)`` (Q, K, V, output
projections; FFN; QKᵀ and PV) = 2 * 2 * (4*2*16*64*64 + 2*2*16*64*256 + 2*2*16*16*64) = 6553600;
``float_weights`` the weight elements of the float graph (108672 for BERT, 108544 for GPT-2);
``params`` each file's elements of constants consumed as data (shape inputs of Reshape/Unsqueeze
excluded, a MatMulNBits weight counted as its K*N unpacked elements).
"""

from __future__ import annotations

import json
import os

import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "ort")
with open(os.path.join(HERE, "reference.json"), encoding="utf-8") as _f:
    REF = json.load(_f)["fixtures"]
FILES = sorted(REF)


@pytest.fixture(scope="module")
def reports():
    return {f: analyzer.analyze(os.path.join(HERE, f)) for f in FILES}


@pytest.mark.parametrize("name", FILES)
def test_every_node_is_costed(reports, name):
    r = reports[name]
    assert r.coverage.uncosted == ()
    assert r.totals.weight_bytes > 0  # from dims and dtypes: the .data file is absent


@pytest.mark.parametrize("name", FILES)
def test_mac_flops_equal_the_float_graphs_closed_form(reports, name):
    # fused attention, 4-bit and int8 matmuls do the float graph's multiply-accumulates;
    # the acceptance bound is 1%, measured: exact (difference 0) for every fixture
    ref = REF[name]["mac_flops"]
    got = reports[name].totals.mac_flops
    assert ref == 6553600
    assert abs(got - ref) <= 0.01 * ref
    assert got == ref


@pytest.mark.parametrize("name", FILES)
def test_params_equal_the_files_data_constants(reports, name):
    assert reports[name].totals.params == REF[name]["params"]
    assert reports[name].totals.params >= REF[name]["float_weights"]


@pytest.mark.parametrize("model", ["bert", "gpt2"])
def test_four_bit_graphs_count_unpacked_weights(reports, model):
    # MatMulNBits replaces each float weight of K*N elements by K*N 4-bit elements plus scales
    # (N x K/32) and packed zero points (N x ceil(K/64)); every other constant is unchanged
    float_params = reports[f"{model}.onnx"].totals.params
    int4 = reports[f"{model}_int4.onnx"]
    assert int4.totals.params - float_params == REF[f"{model}_int4.onnx"]["nbits_scales_and_zero_points"] == 4608
    # FFN up-projection K=64, N=256: packed weight K*N/2 = 8192 bytes, scales 256x2 float 2048 bytes,
    # zero points 256x1 bytes: 10496 weight bytes; K*N = 16384 params + 512 + 256
    up = [n for n in int4.nodes if n.op == "MatMulNBits" and n.outputs[0].endswith(",256]")]
    assert len(up) == 2
    assert up[0].cost.weight_bytes == 64 * 256 // 2 + 256 * 2 * 4 + 256 == 10496
    assert up[0].cost.params == 64 * 256 + 512 + 256


@pytest.mark.parametrize("name, ops", [
    ("bert_fused.onnx", {"EmbedLayerNormalization": 1, "Attention": 2, "SkipLayerNormalization": 4, "BiasGelu": 2}),
    ("gpt2_fused.onnx", {"SkipLayerNormalization": 4, "FastGelu": 2}),
    ("bert_fused_qdyn.onnx", {"QAttention": 2, "EmbedLayerNormalization": 1}),
    ("bert_qop.onnx", {"QLinearSoftmax": 2, "QLinearAdd": 22, "QLinearMul": 5}),
    ("bert_int4.onnx", {"MatMulNBits": 12}),
    ("gpt2_int4.onnx", {"MatMulNBits": 12}),
])
def test_fixtures_hold_the_contrib_ops_they_test(reports, name, ops):
    found = {}
    for n in reports[name].nodes:
        if n.domain == "com.microsoft":
            found[n.op] = found.get(n.op, 0) + 1
    assert {k: found.get(k, 0) for k in ops} == ops


def test_fused_attention_counts_the_float_subgraph(reports):
    # each Attention: projections 2*B*S*D*3D = 2*2*16*64*192 = 786432 + QKᵀ and PV, each
    # 2*B*H*S*S*(D/H) = 2*2*16*16*64 = 65536: 917504
    att = [n for n in reports["bert_fused.onnx"].nodes if n.op == "Attention"]
    assert [n.cost.mac_flops for n in att] == [786432 + 2 * 65536] * 2 == [917504] * 2
    assert att[0].outputs == ("float32[2,16,64]",)
