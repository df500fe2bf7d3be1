"""A PyTorch BertModel in which onnxruntime's transformer optimizer really fuses attention.

tests/fixtures/torch/bert_fused*.onnx were written once by samples/torch_fixtures/export_fused.py
(CI never runs PyTorch): transformers.BertModel (2 layers, hidden 64, 4 heads, FFN 256, eager
attention, parameters redrawn so none are equal), TorchScript export with dynamic batch/seq axes,
optimize_model(model_type="bert") -> EmbedLayerNormalization + 2 x Attention, then batch=1,
seq=16 fixed; MatMulNBits 4-bit, static QDQ and dynamic (QAttention) variants of it.
reference_fused.json holds numbers computed there without opcost: torch's parameter count,
each file's initializer element counts, FlopCounterMode FLOPs of the eager model.
"""

from __future__ import annotations

import json
import os

import onnx
import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "torch")
with open(os.path.join(HERE, "reference_fused.json"), encoding="utf-8") as _f:
    REF = json.load(_f)["fixtures"]
ANALYSED = ["bert_fused.onnx", "bert_fused_int4.onnx", "bert_fused_qdq.onnx"]
TORCH_PARAMS = 168320  # BertModel(add_pooling_layer=False) of that config
# FlopCounterMode, 2 x MACs: L * 2 * (4*S*D*D + 2*S*D*F + 2*S*S*D)
#   = 2 * 2 * (4*16*64*64 + 2*16*64*256 + 2*16*16*64) = 3276800
TORCH_MAC_FLOPS = 3276800


@pytest.fixture(scope="module")
def reports():
    return {f: analyzer.analyze(os.path.join(HERE, f)) for f in ANALYSED}


def _ops(name):
    m = onnx.load(os.path.join(HERE, name), load_external_data=False)
    ops = {}
    for n in m.graph.node:
        ops[(n.domain, n.op_type)] = ops.get((n.domain, n.op_type), 0) + 1
    return m, ops


def test_reference_numbers_come_from_torch():
    e = REF["bert_fused.onnx"]
    assert e["torch_params"] == TORCH_PARAMS
    assert e["torch_flop_counter"]["total"] == TORCH_MAC_FLOPS


@pytest.mark.parametrize("name", ANALYSED + ["bert_fused_qdyn.onnx"])
def test_the_attention_really_is_fused(name):
    _, ops = _ops(name)
    att = "QAttention" if name.endswith("qdyn.onnx") else "Attention"
    assert ops.get(("com.microsoft", att)) == 2
    assert ("", "Softmax") not in ops  # no unfused attention left
    emb = "QEmbedLayerNormalization" if name.endswith("qdyn.onnx") else "EmbedLayerNormalization"
    assert ops.get(("com.microsoft", emb)) == 1
    assert REF[name]["contrib_ops"][att] == 2


@pytest.mark.parametrize("name", ANALYSED)
def test_every_node_is_costed_without_weight_bytes(reports, name):
    assert reports[name].coverage.uncosted == ()
    assert reports[name].totals.weight_bytes > 0  # the .data file is absent


@pytest.mark.parametrize("name", ANALYSED)
def test_mac_flops_equal_pytorchs_flop_counter(reports, name):
    # Attention's QK^T and PV, the concatenated QKV projection, 4-bit and int8 matmuls all do
    # the eager model's multiply-accumulates; acceptance bound 1%, measured: exact
    got = reports[name].totals.mac_flops
    assert abs(got - TORCH_MAC_FLOPS) <= 0.01 * TORCH_MAC_FLOPS
    assert got == TORCH_MAC_FLOPS


def test_fused_params_equal_the_torch_models_count(reports):
    # every initializer is float and a weight (Q, K, V concatenated: same count); no Constant nodes
    e = REF["bert_fused.onnx"]
    assert e["onnx_initializer_numel_by_dtype"] == {"FLOAT": TORCH_PARAMS}
    assert e["num_constant_nodes"] == 0
    assert reports["bert_fused.onnx"].totals.params == TORCH_PARAMS == 168320


def test_int4_params_count_packed_weights_as_elements(reports):
    # six MatMulNBits (K x N: 4 x 64x64 ... per layer 64x64, 64x256, 256x64 -> 2 * 36864 = 73728
    # weights), packed two per byte in 36864 uint8; scales float 73728/32 = 2304; zero points
    # uint8, two 4-bit values per byte: 38016 - 36864 = 1152.  Float initializers (incl. scales)
    # 96896 = 168320 - 73728 + 2304.
    e = REF["bert_fused_int4.onnx"]
    assert e["matmulnbits_weights"] == {"unpacked_KxN": 73728, "packed_uint8_elements": 36864}
    assert e["onnx_initializer_numel_by_dtype"] == {"FLOAT": 96896, "UINT8": 38016}
    zero_points = 38016 - 36864
    expected = 96896 + 73728 + zero_points
    assert expected == TORCH_PARAMS + 2304 + 1152 == 171776
    assert reports["bert_fused_int4.onnx"].totals.params == expected


def test_qdq_params_are_the_files_initializers(reports):
    # int8 weights (142091 elements: the quantized matrices and embeddings) + float biases,
    # norms and 22 more scalar scales / zero points than the torch model's count
    e = REF["bert_fused_qdq.onnx"]
    assert e["onnx_initializer_numel_by_dtype"] == {"FLOAT": 26251, "INT8": 142091}
    assert reports["bert_fused_qdq.onnx"].totals.params == e["onnx_initializer_numel"] == TORCH_PARAMS + 22


def test_dynamic_quantization_analyses():
    # QAttention x2 + QEmbedLayerNormalization (8-bit tables): every node costed, the float
    # graph's multiply-accumulates, and params = the file's initializers (int8/uint8 weights
    # and their scalar scales and zero points)
    r = analyzer.analyze(os.path.join(HERE, "bert_fused_qdyn.onnx"))
    assert r.coverage.uncosted == ()
    assert r.totals.mac_flops == TORCH_MAC_FLOPS
    e = REF["bert_fused_qdyn.onnx"]
    assert r.totals.params == e["onnx_initializer_numel"] == 168346


@pytest.mark.parametrize("batch, seq", [(1, 16), (2, 32)])
def test_the_dynamic_unfused_export_binds_its_dims(batch, seq):
    # transformers' default export (no token_type_ids, dynamic 'batch'/'seq'): the embeddings
    # build an Expand target through Equal/Where and the mask a Range over a Shape that only a
    # second fold -> infer round resolves. mac_flops: L * 2 * (4*BS*D*D + 2*BS*D*F + 2*B*S*S*D)
    r = analyzer.analyze(os.path.join(HERE, "bert_dynamic.onnx"), dims={"batch": batch, "seq": seq})
    bs, d, f = batch * seq, 64, 256
    assert r.totals.mac_flops == 2 * 2 * (4 * bs * d * d + 2 * bs * d * f + 2 * batch * seq * seq * d)
    if (batch, seq) == (1, 16):
        assert r.totals.mac_flops == TORCH_MAC_FLOPS  # FlopCounterMode of the eager model
    assert r.coverage.uncosted == ()
    # the export's initializers are exactly the torch parameters; the 10 float scalars of its
    # Constant nodes (GELU's 0.5 and 1/sqrt(2), the attention scale, ...) count as params too
    e = REF["bert_dynamic.onnx"]
    assert e["onnx_initializer_numel"] == TORCH_PARAMS
    assert e["onnx_constant_node_numel"]["float"] == 10
    assert r.totals.params == TORCH_PARAMS + 10 == 168330


def test_a_sequence_longer_than_the_models_tables_is_named_as_such():
    # max_position_embeddings is 64: at seq=128 the token-type buffer cannot be expanded; the
    # error names the constant computation that fails, not "a dim is unbound"
    path = os.path.join(HERE, "bert_dynamic.onnx")
    with pytest.raises(analyzer.errors.ShapeError) as e:
        analyzer.analyze(path, dims={"batch": 1, "seq": 128})
    msg = str(e.value)
    assert "(Expand) fails on its known input values" in msg and "[1, 128]" in msg
    assert "may not support these input dims" in msg and "unbound" not in msg
    # in a sweep, the failing point is named
    with pytest.raises(analyzer.errors.ShapeError, match=r"^at batch=1, seq=128: "):
        analyzer.sweep(path, {"batch": 1, "seq": [16, 128]})


def test_the_dynamo_export_counts_like_the_torchscript_one():
    # torch.onnx.export(dynamo=True), torch's default exporter: same multiply-accumulates
    r = analyzer.analyze(os.path.join(HERE, "bert_dynamo.onnx"), dims={"batch": 1, "seq": 16})
    assert r.totals.mac_flops == TORCH_MAC_FLOPS == 3276800
    assert r.coverage.uncosted == ()
    # params: the file's float initializers, 168,320 torch weights + 3 float scalars = 168,323.
    # Its 140 int64 + 1 bool initializer elements are not params: 11 are shape arguments (Slice
    # starts/axes, Range delta, Unsqueeze axes, Reshape target pieces), the others indices, a
    # threshold and the position-ids buffer: PyTorch buffers, not parameters, as an integer
    # Constant node is not
    e = REF["bert_dynamo.onnx"]
    assert e["onnx_initializer_numel_by_dtype"] == {"BOOL": 1, "FLOAT": TORCH_PARAMS + 3, "INT64": 140}
    assert r.totals.params == e["onnx_initializer_numel"] - 140 - 1 == TORCH_PARAMS + 3 == 168323
