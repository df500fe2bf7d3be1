"""ONNX control flow (If, Loop, Scan): sub-graphs costed as parent/child rows, scaled by trips.

Models are built by hand with onnx.helper; closed forms are written beside each check.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import analyzer
from analyzer.errors import ShapeError

W = numpy_helper.from_array(np.ones((4, 4), np.float32), "W")  # outer-scope weight, 16 params


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = h.make_graph(nodes, "cf", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=8)


def _vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def _if_model(cond_const: bool | None):
    # then: y = x @ W (2*2*4*4 = 64 mac_flops); else: y = x + x (8 vector flops)
    then_g = h.make_graph([h.make_node("MatMul", ["x", "W"], ["t"], name="mm")], "then", [],
                          [_vi("t", [2, 4])])
    else_g = h.make_graph([h.make_node("Add", ["x", "x"], ["e"], name="add")], "else", [],
                          [_vi("e", [2, 4])])
    nodes, inputs = [], [_vi("x", [2, 4])]
    if cond_const is None:
        inputs.append(_vi("c", [], TP.BOOL))
    else:
        nodes.append(h.make_node("Constant", [], ["c"], value=h.make_tensor("cv", TP.BOOL, [], [cond_const])))
    nodes.append(h.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g))
    return _model(nodes, inputs, [_vi("y", [2, 4])], [W])


def test_if_constant_condition_costs_the_taken_branch():
    r = analyzer.analyze(_if_model(False))
    assert r.totals.mac_flops == 0 and r.totals.vector_flops == 8  # else: 2*4 adds
    assert "branch/add" in [n.name for n in r.nodes]
    assert "branch/mm" not in [n.name for n in r.nodes]
    r = analyzer.analyze(_if_model(True))
    assert r.totals.mac_flops == 2 * 2 * 4 * 4  # then: x @ W = 64
    assert r.node("branch").note.startswith("condition is constant")


def test_if_runtime_condition_costs_the_costlier_branch_and_says_so():
    r = analyzer.analyze(_if_model(None))
    assert r.totals.mac_flops == 64  # then-branch (64 FLOPs) beats else (8)
    assert r.totals.params == 16  # W, seen from inside the branch (outer scope)
    assert "costlier branch 'then_branch'" in r.node("branch").note


def _loop_model(trips: int | None):
    # body: carried v <- v @ W ; trip count M = trips
    body = h.make_graph(
        [h.make_node("MatMul", ["v_in", "W"], ["v_out"], name="mm"),
         h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep")],
        "body", [_vi("i", [], TP.INT64), _vi("cond_in", [], TP.BOOL), _vi("v_in", [2, 4])],
        [_vi("cond_out", [], TP.BOOL), _vi("v_out", [2, 4])])
    inits = [W, numpy_helper.from_array(np.array(True), "c0")]
    inputs = [_vi("x", [2, 4])]
    if trips is None:
        inputs.append(_vi("M", [], TP.INT64))
    else:
        inits.append(numpy_helper.from_array(np.array(trips, np.int64), "M"))
    node = h.make_node("Loop", ["M", "c0", "x"], ["y"], name="loop", body=body)
    return _model([node], inputs, [_vi("y", [2, 4])], inits)


def test_loop_with_constant_trip_count_multiplies_its_body():
    r = analyzer.analyze(_loop_model(5))
    assert r.totals.mac_flops == 5 * 2 * 2 * 4 * 4  # 5 trips x 64 = 320
    assert r.totals.params == 16  # W once (not x5); M and the condition are loop settings
    mm = r.node("loop/mm")
    assert mm.mac_flops == 320 and "x5" in mm.note
    assert mm.weight_bytes == 5 * 64  # W (64 B) read on every trip


def test_loop_without_constant_trip_count_needs_loop_trips():
    with pytest.raises(ShapeError, match="loop-trips"):
        analyzer.analyze(_loop_model(None))
    r = analyzer.analyze(_loop_model(None), loop_trips=3)
    assert r.totals.mac_flops == 3 * 64


def test_scan_runs_its_body_once_per_step_of_the_scanned_axis():
    # x: [7, 4] scanned on axis 0; body: s_out = s_in + x_t (4 adds), y_t = x_t @ W' ([1,4]x[4,4])
    body = h.make_graph(
        [h.make_node("Add", ["s_in", "xt"], ["s_out"], name="acc"),
         h.make_node("Constant", [], ["ax"], name="axes", value=numpy_helper.from_array(np.array([0], np.int64))),
         h.make_node("Unsqueeze", ["xt", "ax"], ["xt2"], name="unsq"),
         h.make_node("MatMul", ["xt2", "W"], ["yt"], name="mm")],
        "body", [_vi("s_in", [4]), _vi("xt", [4])], [_vi("s_out", [4]), _vi("yt", [1, 4])])
    node = h.make_node("Scan", ["s0", "x"], ["s", "ys"], name="scan", body=body, num_scan_inputs=1)
    m = _model([node], [_vi("s0", [4]), _vi("x", [7, 4])], [_vi("s", [4]), _vi("ys", [7, 1, 4])],
               [W])
    r = analyzer.analyze(m)
    assert r.totals.mac_flops == 7 * 2 * 1 * 4 * 4  # 7 steps x 32 = 224
    assert r.node("scan/acc").vector_flops == 7 * 4  # 28
    assert r.node("scan").note.startswith("7 iterations")


def test_nested_control_flow_names_and_multiplies_through_levels():
    # If(const true) -> then: Loop(M=3) -> body: MatMul
    inner = _loop_model(3).graph
    then_g = h.make_graph(list(inner.node), "then", [], [_vi("y", [2, 4])], list(inner.initializer)[1:])
    else_g = h.make_graph([h.make_node("Identity", ["x"], ["z"], name="id")], "else", [], [_vi("z", [2, 4])])
    nodes = [h.make_node("Constant", [], ["c"], value=h.make_tensor("cv", TP.BOOL, [], [True])),
             h.make_node("If", ["c"], ["out"], name="top", then_branch=then_g, else_branch=else_g)]
    r = analyzer.analyze(_model(nodes, [_vi("x", [2, 4])], [_vi("out", [2, 4])], [W]))
    assert r.node("top/loop/mm").mac_flops == 3 * 64  # 192
    assert r.totals.mac_flops == 192
