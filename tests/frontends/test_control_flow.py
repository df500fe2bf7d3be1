"""ONNX control flow (If, Loop, Scan): sub-graphs costed as parent/child rows, scaled by trips.

Models are built by hand with onnx.helper; closed forms are written beside each check.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import NodeProto
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
    # an assumption: listed as an estimate in the node, the coverage and the terminal report
    assert r.node("branch").estimate and r.coverage.estimates == ("branch",)
    from analyzer.render.formats import render

    assert "estimates: 1 node rests on an assumption (branch: condition not constant" in \
        render(r, "table").replace("\n", " ")


def test_a_constant_condition_is_no_estimate():
    r = analyzer.analyze(_if_model(True))
    assert r.coverage.estimates == () and not r.node("branch").estimate
    assert "estimate" not in json.dumps(r.to_dict()["nodes"])


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
    with pytest.raises(ShapeError, match="pass loop_trips=N to cost its body") as e:
        analyzer.analyze(_loop_model(None))
    assert "pass --loop-trips N to cost its body" in e.value.format("cli")
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


# ----------------------------------------------------------------------------- body input typing

def _untyped_scan_model():
    # body formal inputs declared with a dtype only (no shape), outputs with nothing; the body
    # reads an outer-scope Constant (Unsqueeze axes) and an outer weight W [4,3]
    untyped = [h.make_tensor_value_info("s_in", TP.FLOAT, None),
               h.make_tensor_value_info("x_t", TP.FLOAT, None)]
    body = h.make_graph(
        [h.make_node("Add", ["s_in", "x_t"], ["s_out"], name="add"),
         h.make_node("Unsqueeze", ["s_out", "axes"], ["u"], name="unsq"),
         h.make_node("MatMul", ["u", "W3"], ["y_t"], name="mm")],
        "body", untyped, [h.make_tensor_value_info("s_out", TP.FLOAT, None),
                          h.make_tensor_value_info("y_t", TP.FLOAT, None)])
    w3 = numpy_helper.from_array(np.ones((4, 3), np.float32), "W3")
    nodes = [h.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([0], np.int64))),
             h.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan", body=body,
                         num_scan_inputs=1)]
    return _model(nodes, [_vi("s0", [4]), _vi("xs", [5, 4])], [_vi("s_final", None), _vi("ys", None)],
                  [w3])


def test_scan_body_inputs_are_typed_from_the_outer_node():
    m = _untyped_scan_model()
    assert not m.graph.node[1].attribute[0].g.input[0].type.tensor_type.HasField("shape")
    r = analyzer.analyze(m)
    # state s_in = s0's spec float[4]; scan input x_t = xs [5,4] without the scan axis = [4]
    # 5 iterations (xs's axis 0); per iteration: add 4 vector flops, u = [1,4],
    # mm [1,4]@[4,3] = 2*1*4*3 = 24 mac flops
    assert r.node("scan").note.startswith("5 iterations")
    assert r.node("scan/add").cost.vector_flops == 5 * 4  # 20
    assert r.node("scan/mm").cost.mac_flops == 5 * 24  # 120
    assert r.totals.mac_flops == 120 and r.totals.params == 12  # W3: 4*3, counted once
    # the outer outputs follow from the typed body: final state [4], ys stacked [5,1,3]
    assert r.node("scan").outputs == ("float32[4]", "float32[5,1,3]")


def test_loop_trip_count_from_a_scan_output_leading_dim():
    # M is a graph input, but the scan output is declared [3,2,4]: the loop ran 3 times
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep"),
         h.make_node("MatMul", ["x", "W"], ["y"], name="mm")],
        "body", [_vi("i", [], TP.INT64), _vi("cond_in", [], TP.BOOL)],
        [_vi("cond_out", [], TP.BOOL), _vi("y", [2, 4])])
    node = h.make_node("Loop", ["M", ""], ["ys"], name="loop", body=body)
    r = analyzer.analyze(_model([node], [_vi("x", [2, 4]), _vi("M", [], TP.INT64)],
                                [_vi("ys", [3, 2, 4])], [W]))
    assert "trip count 3" in r.node("loop").note
    assert r.totals.mac_flops == 3 * 2 * 2 * 4 * 4  # 3 trips x 64 = 192


def test_loop_trip_count_error_names_the_graph_input():
    with pytest.raises(ShapeError, match=r"trip count M = 'M' \(a graph input\) is not a constant"):
        analyzer.analyze(_loop_model(None))


# ----------------------------------------------------------------------------- Gradient

def _gradient_model(xs, y):
    # t = a*b; c = t + a; r = Relu(a) (not on a path to c); all float32[2,3]
    nodes = [h.make_node("Mul", ["a", "b"], ["t"], name="mul"),
             h.make_node("Add", ["t", "a"], ["c"], name="add"),
             h.make_node("Relu", ["a"], ["r"], name="relu"),
             h.make_node("Gradient", ["a", "b"], [f"d_{x}" for x in xs], name="grad",
                         domain="ai.onnx.preview.training", xs=xs, y=y)]
    g = h.make_graph(nodes, "g", [_vi("a", [2, 3]), _vi("b", [2, 3])],
                     [_vi("c", [2, 3]), _vi("r", [2, 3])] + [_vi(f"d_{x}", [2, 3]) for x in xs])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17),
                                          h.make_opsetid("ai.onnx.preview.training", 1)], ir_version=8)


def test_gradient_is_twice_the_forward_work_of_the_differentiated_nodes():
    r = analyzer.analyze(_gradient_model(["a", "b"], "c"))
    g = r.node("grad")
    assert g.status == "costed"
    # forward on the paths a,b -> c: mul (6 vector flops, reads 2*24 B, writes 24 B) and
    # add (6 vector flops, reads 48 B, writes 24 B); relu is not on a path to c
    # backward = 2 x forward: vector 2*(6+6) = 24, read 2*(48+48) = 192, written 2*(24+24) = 96
    assert g.cost.vector_flops == 24
    assert (g.cost.activation_bytes_read, g.cost.activation_bytes_written) == (192, 96)
    assert g.cost.params == 0 and "2 forward node(s)" in g.note and "(mul, add)" in g.note
    # the forward nodes keep their own rows
    assert r.node("mul").cost.vector_flops == 6 and r.node("add").cost.vector_flops == 6
    # y = t: only mul lies between the xs and y: 2*6 = 12
    assert analyzer.analyze(_gradient_model(["a", "b"], "t")).node("grad").cost.vector_flops == 12
    assert r.node("grad").estimate  # a rule of thumb: listed among the estimates


def _untyped_tanh_loop(i: int, x: str, out: str) -> NodeProto:
    # a Loop whose body declares its carried value with no shape (as many exporters write it)
    body = h.make_graph(
        [h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Tanh", ["v_in"], ["v_out"])],
        f"body{i}",
        [h.make_tensor_value_info("it", TP.INT64, []), h.make_tensor_value_info("c_in", TP.BOOL, []),
         h.make_tensor_value_info("v_in", TP.FLOAT, None)],
        [h.make_tensor_value_info("c_out", TP.BOOL, []), h.make_tensor_value_info("v_out", TP.FLOAT, None)])
    return h.make_node("Loop", ["M", "", x], [out], name=f"loop{i}", body=body)


@pytest.mark.parametrize("n_loops, add_between", [(40, False), (6, True)])
def test_a_chain_of_loops_with_untyped_bodies_resolves(n_loops, add_between):
    # ONNX inference leaves every Loop output rank-less; each Loop's body types its output,
    # which types the next Loop's body (directly, or through an Add that inference must redo)
    nodes, prev = [], "x"
    for i in range(n_loops):
        nodes.append(_untyped_tanh_loop(i, prev, f"l{i}"))
        prev = f"l{i}"
        if add_between:
            nodes.append(h.make_node("Add", [prev, prev], [f"a{i}"], name=f"add{i}"))
            prev = f"a{i}"
    g = h.make_graph(nodes, "chain", [h.make_tensor_value_info("x", TP.FLOAT, [4, 64])],
                     [h.make_tensor_value_info(prev, TP.FLOAT, None)],
                     [numpy_helper.from_array(np.array(3, np.int64), "M")])
    r = analyzer.analyze(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]))
    # per Loop: 3 trips x 256 tanh; per Add: 256 adds
    assert r.totals.transcendentals == n_loops * 3 * 256
    assert r.totals.vector_flops == (n_loops * 256 if add_between else 0)
    assert r.node(f"loop{n_loops - 1}").out_specs[0].shape == (4, 64)


def _traced_if():
    """x [1, 8] -> If (a run-time bool c): then x @ w; else Relu(x) @ w; -> Sigmoid.  The
    branches declare the traced [1, 4] as their outputs (an exporter's batch 1)."""
    w = numpy_helper.from_array(np.ones((8, 4), np.float32), "w")
    then = h.make_graph([h.make_node("MatMul", ["x", "w"], ["t_y"], name="t_mm")], "then", [],
                        [_vi("t_y", [1, 4])], value_info=[])
    other = h.make_graph([h.make_node("Relu", ["x"], ["e_r"], name="e_relu"),
                          h.make_node("MatMul", ["e_r", "w"], ["e_y"], name="e_mm")], "else", [],
                         [_vi("e_y", [1, 4])], value_info=[_vi("e_r", [1, 8])])
    nodes = [h.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other),
             h.make_node("Sigmoid", ["y"], ["z"], name="sig")]
    return _model(nodes, [_vi("x", [1, 8]), _vi("c", [], TP.BOOL)], [_vi("z", [1, 4])], [w])


@pytest.mark.parametrize("values", [{}, {"c": True}, {"c": False}])
def test_if_branches_take_their_shapes_from_the_inputs_not_their_declarations(values):
    r = analyzer.analyze(_traced_if(), inputs={"x": "8x8"}, values=values)
    assert r.coverage.uncosted == ()
    mm = [n for n in r.nodes if n.op == "MatMul"]
    assert len(mm) == 1 and mm[0].outputs == ("float32[8,4]",)
    assert mm[0].mac_flops == 2 * 8 * 8 * 4                      # 512, not batch 1's 64
    assert r.node("if").outputs == ("float32[8,4]",)
    assert r.node("sig").out_specs[0].shape == (8, 4)
    if values.get("c") is not True:
        assert r.node("if/e_relu").vector_flops == 8 * 8
    # at the traced shape the counts are batch 1's: the batch scales them by 8
    assert analyzer.analyze(_traced_if(), values=values).totals.mac_flops * 8 == r.totals.mac_flops
