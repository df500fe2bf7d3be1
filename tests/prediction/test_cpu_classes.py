"""CPU op classes a calibration measures apart because onnxruntime runs them as different kernels
(closed-form checks; no wall-clock assertions)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from analyzer.prediction import efficiency as eff

ort = pytest.importorskip("onnxruntime")


def test_quickgelu_is_the_swish_class_falling_back_to_activation():
    assert eff.op_class_of("com.microsoft", "QuickGelu") == "swish"
    assert eff.class_chain("swish") == ("swish", "activation")
    for op in ("Sigmoid", "Gelu", "FastGelu", "BiasGelu"):
        assert eff.op_class_of("com.microsoft", op) == "activation", op


def test_swish_calibration_rows_run_the_alpha_1_kernel():
    from analyzer.prediction.calibration_models import calibration_models

    m = calibration_models()
    swish = [n for n in m["swish"].graph.node if n.op_type == "QuickGelu"]
    assert len(swish) >= 6
    for n in swish:
        assert [a.f for a in n.attribute if a.name == "alpha"] == [1.0]
    # activation rows no longer carry QuickGelu (its kernels are predicted with swish constants)
    assert not [n for n in m["activation"].graph.node if n.op_type == "QuickGelu"]


def _silu(shape=(1, 32, 28, 28)):
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
             helper.make_node("Mul", ["x", "s"], ["y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_silu_runs_as_quickgelu_and_is_predicted_with_the_swish_table(tmp_path):
    from analyzer import analyze
    from analyzer.prediction.calibrate import calibration_sources, write_profile
    from analyzer.prediction.ort_graph import fused_graph
    from tests.profile_docs import calibrated_doc

    f = fused_graph(_silu(), "default", threads=1)
    assert [n.op_type for n in f.graph.node] == ["QuickGelu"]
    doc = calibrated_doc(1)
    doc["calibration"]["run_overhead_us"] = 0.0
    doc["calibration"]["tables"] = {
        "activation": {"floor_us": 9.0, "e_c": 0.01, "e_bw": 0.1, "b_half_bytes": 0.0},
        "swish": {"floor_us": 2.0, "e_c": 0.5, "e_bw": 2.0, "b_half_bytes": 1000.0}}
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    p = write_profile(doc, tmp_path / "cal.toml")
    rep = analyze(_silu(), hw=p)
    pred = rep.predictions[0]
    assert pred.kernels == 1
    terms = pred.explain(0)
    assert terms.op_class == "swish" and terms.e_compute == 0.5 and terms.e_bw == 2.0
    F = terms.mac_flops + terms.vector_flops + terms.transcendental_flops
    # profile: 0.25 TFLOP/s, 12.5 GB/s, dispatch 1.5 us; swish floor 2 us, b_half 1000 B.
    # 25,088 elements: bytes >= 2 * 4 * 25,088 = 200,704, so memory ~ 8 us > compute ~ 1 us
    assert terms.bytes >= 2 * 4 * 25088
    memory = (terms.bytes + 1000.0) / (12.5e9 * 2.0)
    compute = F / (0.25e12 * 0.5)
    assert memory > compute
    assert pred.latency_s == pytest.approx(1.5e-6 + 2e-6 + memory, rel=1e-6)
    np.testing.assert_allclose(sum(n.time_s for n in pred.nodes), pred.latency_s, rtol=1e-6)
