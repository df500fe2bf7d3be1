"""Div and Clip on onnxruntime's CPU provider: a Div costs a Mul of the same counts plus
``calibration.divide_ns`` an element, a Clip that is its own kernel a Relu of its shape plus
``calibration.clip_ns`` an element (``cpu_op_rates``)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer.measure.calibrate import calibration_sources, write_profile
from analyzer.prediction.cpu import op_rates as cpu_op_rates

SHAPE = [1, 16, 20, 20]   # 6,400 elements


def _one(op, shape=SHAPE):
    consts = {"Mul": [("c", 1.5)], "Div": [("c", 1.5)], "Clip": [("lo", 0.0), ("hi", 6.0)], "Relu": []}[op]
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in consts]
    g = helper.make_graph([helper.make_node(op, ["x"] + [n for n, _ in consts], ["y"], name="n")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _latency(model, tmp_path, **figures):
    from analyzer import analyze
    from tests.prediction.test_cpu_pieces import _doc

    doc = _doc(cls="elementwise")
    # compute-bound: 0.5 TFLOP/s x e_c 0.002 = 1 GFLOP/s, 1 ns a FLOP (6,400 elements of 4 bytes
    # in and out stream in 51,200 / (38 GB/s x 1.2) = 1.12 us)
    doc["calibration"]["tables"]["elementwise"]["e_c"] = 0.002
    doc["calibration"].update(figures)
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    name = "p" + "_".join(f"{k}{v}" for k, v in sorted(figures.items())) + ".toml"
    return analyze(model, hw=write_profile(doc, tmp_path / name)).predictions[0].latency_s


def test_a_div_is_a_mul_plus_its_elements_at_divide_ns(tmp_path):
    # 6,400 elements x 0.25 ns = 1.6 us over the Mul of the same counts
    mul = _latency(_one("Mul"), tmp_path, divide_ns=0.25)
    assert _latency(_one("Div"), tmp_path, divide_ns=0.25) - mul == pytest.approx(6400 * 0.25e-9, rel=1e-6)
    # without the figure a Div is priced as a Mul (as before)
    assert _latency(_one("Div"), tmp_path) == pytest.approx(_latency(_one("Mul"), tmp_path), rel=1e-12)


def test_a_clip_is_a_relu_of_its_shape_plus_its_elements_at_clip_ns(tmp_path):
    # counted 2 FLOPs an element, priced at the Relu's 1 FLOP an element (same bytes) + 6,400 x 0.05 ns
    relu = _latency(_one("Relu"), tmp_path, clip_ns=0.05)
    assert _latency(_one("Clip"), tmp_path, clip_ns=0.05) - relu == pytest.approx(6400 * 0.05e-9, rel=1e-6)
    # without the figure: its two FLOPs an element, 6,400 x 1 ns more than the Relu
    assert _latency(_one("Clip"), tmp_path) - _latency(_one("Relu"), tmp_path) == pytest.approx(6.4e-6, rel=1e-6)


def test_pairs_are_the_op_against_its_reference():
    for op, ref in (("Div", "Mul"), ("Clip", "Relu")):
        pairs = cpu_op_rates.pair_models(op)
        assert [e for _, _, e in pairs] == [51840, 38880, 24300, 124416]   # 40x36x36, 120x18x18, ...
        assert {(a.graph.node[0].op_type, b.graph.node[0].op_type) for a, b, _ in pairs} == {(ref, op)}


def test_measurement_is_the_median_difference_per_element():
    # 2 us a run, + 0.1 ns an element for a Div, + 0.02 for a Clip
    extra = {"Div": 0.1e-9, "Clip": 0.02e-9, "Mul": 0.0, "Relu": 0.0}

    def timer(m):
        n = int(np.prod([d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]))
        return 2e-6 + extra[m.graph.node[0].op_type] * n

    got = cpu_op_rates.measure(timer)
    assert got == pytest.approx({"divide_ns": 0.1e-9, "clip_ns": 0.02e-9})
