"""ONNX exports of common PyTorch models (random init, small configs; weights absent).

Fixtures were exported once by samples/torch_fixtures/export.py (CI never runs PyTorch);
tests/fixtures/torch/reference.json holds numbers computed independently of opcost:
the export's initializer element count and torch.utils.flop_counter.FlopCounterMode's
total (2 FLOPs per multiply-accumulate of matmul/conv/attention) for the same inputs.

params = every initializer consumed as data (each once; an exporter's Identity alias
of a deduplicated weight is the same tensor) + float scalars kept as Constant nodes
(GELU's 0.5, 1/sqrt(2), ...), which DESIGN.md counts as constants consumed as data.
Integer/bool Constant nodes (indices, masks, shape arithmetic) and Clip bounds are
settings, not weights.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import analyzer

HERE = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "torch")
with open(os.path.join(HERE, "reference.json"), encoding="utf-8") as _f:
    REF = json.load(_f)["fixtures"]

# fixture -> float elements of Constant nodes that are settings, not data (mobilenet_v2's
# 35 ReLU6 = Clip(0, 6) nodes carry their two bounds as Constant scalars: 70)
SETTING_FLOATS = {"mobilenet_v2.onnx": 70}
# onnxruntime-optimized graphs: fused ops, some initializers are integer shape tensors
OPTIMIZED = {"bert_opt.onnx", "gpt2_opt.onnx"}
FILES = sorted(REF)


@pytest.fixture(scope="module")
def reports():
    return {f: analyzer.analyze(os.path.join(HERE, f)) for f in FILES}


@pytest.mark.parametrize("name", sorted(set(FILES) - OPTIMIZED))
def test_params_equal_the_exports_initializer_count(reports, name):
    e = REF[name]
    expected = (e["onnx_initializer_numel"] + e["onnx_constant_node_numel"]["float"]
                - SETTING_FLOATS.get(name, 0))
    assert reports[name].totals.params == expected


@pytest.mark.parametrize("name", [f for f in FILES if "torch_flop_counter" in REF[f]])
def test_mac_flops_agree_with_pytorchs_flop_counter(reports, name):
    fc = REF[name]["torch_flop_counter"]
    ref = fc["total"] if isinstance(fc, dict) else fc
    got = reports[name].totals.mac_flops
    assert abs(got - ref) <= 0.01 * ref  # the acceptance bound is 1%; observed: exact
    assert got == ref


@pytest.mark.parametrize("name", FILES)
def test_every_node_is_costed_and_weights_are_counted_without_their_data(reports, name):
    r = reports[name]
    assert r.coverage.uncosted == ()
    assert r.totals.weight_bytes > 0  # counted from dims and dtypes: the .data file is absent


@pytest.mark.parametrize("name", sorted(OPTIMIZED))
def test_optimized_graphs_params_lie_between_float_and_all_initializers(reports, name):
    # the ORT optimizer keeps int64 shape tensors as initializers (not params) and a constant
    # position-ids tensor consumed as Gather indices (counted: a constant consumed as data)
    import onnx

    m = onnx.load(os.path.join(HERE, name), load_external_data=False)
    floats = sum(int(np.prod(t.dims)) for t in m.graph.initializer
                 if t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16))
    assert floats <= reports[name].totals.params <= REF[name]["onnx_initializer_numel"]


@pytest.mark.parametrize("name", ["bert_qdq.onnx", "bert_qdyn.onnx", "gpt2_qdq.onnx",
                                  "gpt2_qdyn.onnx", "resnet18_qdq.onnx", "resnet18_qop.onnx",
                                  "bert_opt.onnx", "gpt2_opt.onnx"])
def test_optimized_and_quantized_graphs_keep_the_float_graphs_mac_flops(reports, name):
    # contrib ops (SkipLayerNormalization, FastGelu, QLinearAdd, QGemm, ...) get their output
    # shapes from surrogates (analyzer/frontends/contrib_shapes.py); their MACs are the same work
    base = name.split("_")[0] + ".onnx"
    assert reports[name].totals.mac_flops == reports[base].totals.mac_flops
