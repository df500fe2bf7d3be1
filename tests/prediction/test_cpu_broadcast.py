"""onnxruntime runs a binary op of a tensor ending in dimensions of 1 and a 1-element constant of
no higher rank element by element: ``cpu_broadcast`` counts those elements and charges them
``calibration.scalar_span_ns`` each."""

from __future__ import annotations

import types

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer.measure.calibrate import calibration_sources, write_profile
from analyzer.prediction.cpu import broadcast as cpu_broadcast


def _node(op, *shapes):
    spec = [types.SimpleNamespace(shape=s) for s in shapes]
    return types.SimpleNamespace(op=op, in_specs=tuple(spec), out_specs=(spec[0],))


@pytest.mark.parametrize("op, a, b, elems", [
    ("Add", (1, 576, 1, 1), (), 576),           # SE hard-sigmoid: x[1, C, 1, 1] + 3
    ("Div", (1, 576, 1, 1), (1,), 576),         # ... / 6, the 6 of rank 1
    ("Mul", (), (1, 576, 1, 1), 576),           # either operand order
    ("Sub", (1, 1000, 1, 1), (1, 1), 1000),     # rank 2 <= the 2 trailing ones
    ("Add", (1, 1000, 1, 1), (1, 1, 1), 0),     # rank 3 > 2 trailing ones: spans of the C axis
    ("Add", (1, 576, 1, 1), (1, 1, 1, 1), 0),
    ("Add", (1, 576), (), 0),                   # no trailing 1: one span of 576
    ("Add", (1, 576, 2, 2), (), 0),
    ("Add", (1, 576, 1, 1), (1, 576, 1, 1), 0),  # no 1-element input
    ("Relu", (1, 576, 1, 1), (), 0),
    ("Add", (1, "C", 1, 1), (), 0),             # not static: nothing said
])
def test_span_elements(op, a, b, elems):
    assert cpu_broadcast.span_elements(_node(op, a, b)) == elems


def test_span_seconds_per_kernel():
    nodes = [_node("Add", (1, 96, 1, 1), ()), _node("Div", (1, 96, 1, 1), ()), _node("Add", (1, 96), ())]
    got = cpu_broadcast.span_s({"scalar_span_ns": 20.0}, nodes, [(0, 1), (2,)])
    assert got.tolist() == pytest.approx([2 * 96 * 20e-9, 0.0])
    assert cpu_broadcast.span_s({}, nodes, [(0, 1)]).tolist() == [0.0]


def test_measurement_is_the_median_difference_per_element():
    pairs = cpu_broadcast.pair_models()
    assert [e for _, _, e in pairs] == [1200, 2800, 1800]
    elems = {id(s): e for _, s, e in pairs}
    got = cpu_broadcast.measure(lambda m: 4e-6 + 20e-9 * elems.get(id(m), 0), pairs=pairs)
    assert got == pytest.approx(20e-9)


def _se_sigmoid(c=576):
    """s[1, C, 1, 1] -> Add(3) -> Clip(0, 6) -> Div(6): a hard-sigmoid as paddle2onnx writes it."""
    inits = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
             (("three", 3.0), ("zero", 0.0), ("six", 6.0))]
    nodes = [helper.make_node("Add", ["s", "three"], ["a"], name="add"),
             helper.make_node("Clip", ["a", "zero", "six"], ["c"], name="clip"),
             helper.make_node("Div", ["c", "six"], ["y"], name="div")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, c, 1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 1, 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_analyze_charges_the_add_and_the_div_per_element(tmp_path):
    # 2 nodes x 576 elements x 20 ns = 23.04 us more than without the figure; the Clip none
    from analyzer import analyze
    from tests.prediction.test_cpu_pieces import _doc

    def lat(ns):
        doc = _doc()
        doc["calibration"]["scalar_span_ns"] = ns
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
        return analyze(_se_sigmoid(), hw=write_profile(doc, tmp_path / f"p{ns}.toml")).predictions[0].latency_s

    assert lat(20.0) - lat(0.0) == pytest.approx(2 * 576 * 20e-9, rel=1e-6)


@pytest.mark.parametrize("op, a, b, calls", [
    ("Mul", (1, 576, 5, 5), (1, 576, 1, 1), 576),   # a squeeze-excite's channel scale: C spans of 25
    ("Add", (1, 64, 9, 9), (64, 1, 1), 64),         # the scale of rank 3: right-aligned, the same
    ("Mul", (1, 576, 1, 1), (1, 576, 5, 5), 576),   # either operand order
    ("Add", (1, 128, 768), (768,), 0),              # a bias, S spans of D: not the calibrated form
    ("Mul", (2, 8, 30, 10), (1, 8, 1, 1), 16),      # batch 2: N x C spans of H x W
    ("Mul", (1, 8, 300, 1), (1, 8, 1, 1), 8),       # W = 1: spans of H x W = 300
    ("Mul", (1, 8, 30, 10), (1, 8, 30, 1), 0),      # spans of W only: not the calibrated form
    ("Div", (1, 96, 20, 20), (1, 1, 1, 1), 0),      # a 1-element operand: one span
    ("Add", (1, 96, 20, 20), (1, 96, 20, 20), 0),   # same shapes: one span
    ("Add", (1, 576, 1, 1), (), 0),                 # one-element spans: span_elements' (576), not here
    ("Add", (1, 576, 1, 1), (1, 576, 1, 1), 0),
    ("Relu", (1, 576, 5, 5), (1, 576, 1, 1), 0),    # not a broadcast binary op
    ("Mul", (1, "C", 5, 5), (1, "C", 1, 1), 0),     # not static: nothing said
])
def test_span_calls(op, a, b, calls):
    assert cpu_broadcast.span_calls(_node(op, a, b)) == calls


def test_channel_spans_cost_their_figure_else_the_scalar_one():
    nodes = [_node("Mul", (1, 96, 5, 5), (1, 96, 1, 1)), _node("Add", (1, 96, 1, 1), ())]
    # 96 calls x 12 ns; the one-element spans 96 x 20 ns
    got = cpu_broadcast.span_s({"scalar_span_ns": 20.0, "channel_span_ns": 12.0}, nodes, [(0,), (1,)])
    assert got.tolist() == pytest.approx([96 * 12e-9, 96 * 20e-9])
    # a profile without channel_span_ns: its calls at scalar_span_ns
    assert cpu_broadcast.span_s({"scalar_span_ns": 20.0}, nodes, [(0,)]).tolist() == pytest.approx([96 * 20e-9])
    assert cpu_broadcast.span_s({"channel_span_ns": 12.0}, nodes, [(0, 1)]).tolist() == pytest.approx([96 * 12e-9])
    assert cpu_broadcast.span_s({}, nodes, [(0, 1)]).tolist() == [0.0]


def test_channel_measurement_is_the_median_difference_per_call():
    pairs = cpu_broadcast.channel_pair_models()
    assert [c for _, _, c in pairs] == [700, 1500, 180]
    for base, other, c in pairs:
        assert [list(t.dims) for t in base.graph.initializer] == [[1, 1, 1, 1]]
        assert [list(t.dims) for t in other.graph.initializer] == [[1, c, 1, 1]]
    calls = {id(s): c for _, s, c in pairs}
    # 3 us a run + 11 ns a call of the per-channel spans: (t_other - t_base) / C = 11 ns
    got = cpu_broadcast.measure_channel(lambda m: 3e-6 + 11e-9 * calls.get(id(m), 0), pairs=pairs)
    assert got == pytest.approx(11e-9)


def _se_scale(c=288, hw=5):
    """x[1, C, hw, hw] * s[1, C, 1, 1]: a squeeze-excite block's channel scale."""
    nodes = [helper.make_node("Mul", ["x", "s"], ["y"], name="scale")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw]),
                                       helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, c, 1, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, hw, hw])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_analyze_charges_the_channel_scale_per_call(tmp_path):
    # 288 calls x 12 ns = 3.456 us more than without the figures
    from analyzer import analyze
    from tests.prediction.test_cpu_pieces import _doc

    def lat(ns):
        doc = _doc()
        doc["calibration"]["channel_span_ns"] = ns
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
        return analyze(_se_scale(), hw=write_profile(doc, tmp_path / f"p{ns}.toml")).predictions[0].latency_s

    assert lat(12.0) - lat(0.0) == pytest.approx(288 * 12e-9, rel=1e-6)


def test_a_constant_channel_scale_runs_blocked_under_the_layout():
    # onnxruntime's NCHWc layout runs x[1, C, H, W] * const[1, C, 1, 1] as a blocked depthwise
    # convolution: no calls at a layout level; a computed scale (a squeeze-excite's) keeps its C
    const = _node("Mul", (1, 96, 5, 5), (1, 96, 1, 1))
    const.constant_inputs = (1,)
    computed = _node("Mul", (1, 96, 5, 5), (1, 96, 1, 1))
    assert cpu_broadcast.span_calls(const) == 96
    assert cpu_broadcast.span_calls(const, blocked=True) == 0
    assert cpu_broadcast.span_calls(computed, blocked=True) == 96
    got = cpu_broadcast.span_s({"channel_span_ns": 10.0, "level": "default"}, [const, computed], [(0,), (1,)])
    assert got.tolist() == pytest.approx([0.0, 96 * 10e-9])
    got = cpu_broadcast.span_s({"channel_span_ns": 10.0, "level": "off"}, [const], [(0,)])
    assert got.tolist() == pytest.approx([96 * 10e-9])
