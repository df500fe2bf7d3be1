"""The com.microsoft ops onnxruntime's own tools emit are counted, or listed as uncosted with a
reason (never a silent zero); DynamicQuantizeLSTM (``quantize_dynamic`` of any LSTM) counts the
float LSTM's MACs.

Emitted by (onnxruntime 1.2x): ``quantization`` (quantize_dynamic / quantize_static /
matmul_nbits_quantizer), ``transformers`` (optimizer fusions, convert_generation,
convert_to_packing_mode) and the runtime's graph optimizer when it saves an optimized model.
"""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
import analyzer.counting.rules  # fills the registry
from analyzer.counting.cost import RULES
from analyzer.counting.rules import WHY_UNCOSTED
from analyzer.counting.rules.onnxruntime.uncosted import UNCOSTED as ORT_UNCOSTED

MS = "com.microsoft"

# counted by a rule (rules/onnxruntime/, rules/onnx/attention.py)
COUNTED = sorted("""
    Attention BiasAdd BiasDropout BiasGelu BiasSoftmax BiasSplitGelu DecoderMaskedMultiHeadAttention
    DequantizeLinear DynamicQuantizeLSTM DynamicQuantizeMatMul EmbedLayerNormalization FastGelu
    FusedConv FusedGemm FusedMatMul GatherBlockQuantized Gelu GemmFastGelu GroupNorm
    GroupQueryAttention MatMulBnb4 MatMulInteger16 MatMulIntegerToFloat MatMulNBits
    MultiHeadAttention NhwcConv NhwcFusedConv NhwcMaxPool QAttention QEmbedLayerNormalization QGemm
    QLinearAdd QLinearAveragePool QLinearConcat QLinearConv QLinearGlobalAveragePool
    QLinearLeakyRelu QLinearMul QLinearReduceMean QLinearSigmoid QLinearSoftmax QLinearWhere
    QuantizeLinear QuickGelu Range RotaryEmbedding SkipGroupNorm SkipLayerNormalization
    SkipSimplifiedLayerNormalization TransposeMatMul
""".split())
# emitted, no rule: the reason is in rules/onnxruntime/uncosted.py
UNCOSTED = sorted("""
    BeamSearch BitmaskDropout DecoderMaskedSelfAttention DynamicTimeWarping
    GatedRelativePositionBias GreedySearch PackedAttention PackedMultiHeadAttention PagedAttention
    QOrderedAttention QOrderedGelu QOrderedLayerNormalization QOrderedMatMul RelativePositionBias
    RemovePadding RestorePadding Sampling UnfoldTensor WhisperBeamSearch
""".split())


def test_every_emitted_op_is_counted_or_uncosted_with_a_reason():
    for op in COUNTED:
        assert (MS, op) in RULES, op
    for op in UNCOSTED:
        assert (MS, op) not in RULES, op
        assert len(ORT_UNCOSTED[(MS, op)]) > 20, op
    for key in ORT_UNCOSTED:
        assert key not in RULES, key  # a rule would make the entry a lie


def _ort_tool_strings() -> set[str] | None:
    try:
        import onnxruntime
        from onnxruntime.capi.onnxruntime_pybind11_state import get_all_operator_schema
    except ImportError:
        return None
    ms = {s.name for s in get_all_operator_schema() if s.domain == MS}
    root = os.path.dirname(onnxruntime.__file__)
    found: set[str] = set()
    for sub in ("quantization", "transformers"):
        for dirpath, _, files in os.walk(os.path.join(root, sub)):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        found.update(re.findall(r'"([A-Z][A-Za-z0-9]+)"', fh.read()))
    return found & ms


def test_the_installed_onnxruntime_tools_emit_nothing_unlisted():
    """Scans the installed onnxruntime's quantization and transformers sources for com.microsoft op
    names: an op a new release starts emitting fails here until it gets a rule or a reason."""
    emitted = _ort_tool_strings()
    if emitted is None:
        pytest.skip("onnxruntime is not installed")
    unlisted = sorted(op for op in emitted if (MS, op) not in RULES and (MS, op) not in ORT_UNCOSTED)
    assert unlisted == []


# ----------------------------------------------------------------------------- DynamicQuantizeLSTM


def _lstm_model(seq, batch, inp, hidden, dirs, *, declare_outputs=True) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((dirs, 4 * hidden, inp)).astype(np.float32)
    r = rng.standard_normal((dirs, 4 * hidden, hidden)).astype(np.float32)
    b = rng.standard_normal((dirs, 8 * hidden)).astype(np.float32)
    direction = "bidirectional" if dirs == 2 else "forward"
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh", "Yc"], name="lstm",
                              hidden_size=hidden, direction=direction),
             helper.make_node("Relu", ["Y"], ["Z"], name="relu")]
    g = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
        [helper.make_tensor_value_info("Z", TensorProto.FLOAT, [seq, dirs, batch, hidden])],
        initializer=[numpy_helper.from_array(a, k) for k, a in (("W", w), ("R", r), ("B", b))])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m)
    return m


def _quantize(m: onnx.ModelProto, tmp_path) -> onnx.ModelProto:
    quantization = pytest.importorskip("onnxruntime.quantization")
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(m, src)
    quantization.quantize_dynamic(str(src), str(dst), weight_type=quantization.QuantType.QInt8)
    q = onnx.load(dst)
    assert [n.op_type for n in q.graph.node] == ["DynamicQuantizeLSTM", "Relu"]
    return q


@pytest.mark.machine
@pytest.mark.parametrize("dirs", [1, 2])
def test_quantize_dynamic_lstm_counts_the_float_lstm_macs(tmp_path, dirs):
    S, B, I, H = 5, 2, 8, 16
    m = _lstm_model(S, B, I, H, dirs)
    q = _quantize(m, tmp_path)
    fl, qu = analyzer.analyze(m), analyzer.analyze(q)
    assert qu.coverage.uncosted == ()
    # rows = S*D*B = 10*D; mac = 2*rows*I*4H + 2*rows*H*4H = 2*10D*8*64 + 2*10D*16*64 = 30720*D
    assert qu.totals.mac_flops == fl.totals.mac_flops == 30720 * dirs
    lstm = next(n for n in qu.nodes if n.op == "DynamicQuantizeLSTM")
    assert lstm.mac_dtype == "int8"
    # float cell with bias: rows*H*(14 + 8) = 10D*16*22 = 3520*D
    # quantize X per direction: 2*(80-1) + 9 + 5*80 = 567; h per step: S*(2*(32-1) + 9 + 5*32) = 5*231 = 1155
    # dequantize both products: 2*S*B*4H = 2*5*2*64 = 1280
    # weight zero points: W 8*64 + R 16*64 = 1536 per direction
    assert lstm.cost.vector_flops == dirs * (3520 + 567 + 1155 + 1280 + 1536)
    assert lstm.cost.transcendentals == dirs * 10 * 16 * 5  # 3 sigmoids + 2 tanh per unit
    # int8 W and R (+ float bias, scales and zero points) instead of float32 weights
    assert qu.totals.weight_bytes < fl.totals.weight_bytes / 2


@pytest.mark.machine
def test_quantized_lstm_without_declared_shapes_gets_them_from_its_surrogate(tmp_path):
    q = _quantize(_lstm_model(5, 2, 8, 16, 2), tmp_path)
    del q.graph.value_info[:]  # what a converter that drops value_info leaves: no shapes for Y
    r = analyzer.analyze(q)
    assert r.coverage.uncosted == ()
    relu = next(n for n in r.nodes if n.op == "Relu")
    assert relu.cost.vector_flops == 5 * 2 * 2 * 16  # Y [S, D, B, H] reached the Relu
    assert r.totals.mac_flops == 2 * 30720


@pytest.mark.machine
def test_a_symbolic_sequence_binds_through_the_surrogate(tmp_path):
    m = _lstm_model(5, 2, 8, 16, 1)
    q = _quantize(m, tmp_path)
    del q.graph.value_info[:]
    x = q.graph.input[0].type.tensor_type.shape.dim
    x[0].dim_param = "seq"
    q.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "seq"
    assert analyzer.analyze(q, dims={"seq": 5}).totals.mac_flops == 30720
    assert analyzer.analyze(q, dims={"seq": 10}).totals.mac_flops == 61440  # linear in S


def test_an_uncosted_op_is_reported_with_its_reason():
    # RemovePadding(input [2, 4, 8], sequence_token_count [2]); the outputs are declared
    vi = helper.make_tensor_value_info
    n = helper.make_node("RemovePadding", ["x", "count"], ["y", "offset", "cum", "mx"], domain=MS,
                         name="unpad")
    g = helper.make_graph([n], "g", [vi("x", TensorProto.FLOAT, [2, 4, 8]), vi("count", TensorProto.INT32, [2])],
                          [vi("y", TensorProto.FLOAT, [6, 8]), vi("offset", TensorProto.INT32, [2, 4]),
                           vi("cum", TensorProto.INT32, [3]), vi("mx", TensorProto.INT32, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                          ir_version=8)
    r = analyzer.analyze(m)
    assert r.coverage.uncosted == ("unpad",)
    (node,) = r.nodes
    assert node.note == f"no cost rule for com.microsoft::RemovePadding: {WHY_UNCOSTED[(MS, 'RemovePadding')]}"
    assert node.cost.activation_bytes_read == 2 * 4 * 8 * 4 + 2 * 4  # its bytes are still counted
