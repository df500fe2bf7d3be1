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
