"""Function ops: schema function bodies and model-local functions are decomposed (issue #4).

Each decomposed op is checked against the counts of its body written out by hand; the body
nodes are named ``parent/child`` and the coverage line says how many nodes came from bodies.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import AttributeProto, TensorProto, helper
from onnx_builders import graph, ints, one_node

import analyzer
from analyzer.counting.cost import has_rule
from analyzer.frontends.onnx import functions
from analyzer.frontends.onnx.load import read_model
from analyzer.render.formats import render

F32, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def rows(report):
    return {n.name: n for n in report.nodes}


def mvn_model(opset=18):
    return one_node("MeanVarianceNormalization", (2, 3, 4, 5), opset=opset)  # axes [0, 2, 3]


def test_mean_variance_normalization_is_its_body():
    r = analyzer.analyze(mvn_model())
    by = rows(r)
    # the opset-18 body: 3 Constants (exponent 2, epsilon, axes) fold; x has 2*3*4*5 = 120
    # elements, the mean over axes [0, 2, 3] has 3
    assert [n.name for n in r.nodes] == [
        "n/Constant_0", "n/Constant_1", "n/Constant_2", "n/ReduceMean_3", "n/Pow_4", "n/Pow_5",
        "n/ReduceMean_6", "n/Sub_7", "n/Sqrt_8", "n/Sub_9", "n/Add_10", "n/Div_11"]
    assert all(by[f"n/Constant_{i}"].status == "folded" for i in range(3))
    assert by["n/ReduceMean_3"].vector_flops == 120   # E[x]: (120 - 3) adds + 3 divides
    assert by["n/Pow_4"].transcendentals == 3         # E[x]^2 on 3 means
    assert by["n/Pow_5"].transcendentals == 120       # x^2
    assert by["n/ReduceMean_6"].vector_flops == 120   # E[x^2]: 117 adds + 3 divides
    assert by["n/Sub_7"].vector_flops == 3            # variance = E[x^2] - E[x]^2
    assert by["n/Sqrt_8"].transcendentals == 3        # std
    assert by["n/Sub_9"].vector_flops == 120          # x - E[x]
    assert by["n/Add_10"].vector_flops == 3           # std + epsilon
    assert by["n/Div_11"].vector_flops == 120         # (x - E[x]) / (std + eps)
    assert r.totals.vector_flops == 120 + 120 + 3 + 120 + 3 + 120  # 486
    assert r.totals.transcendentals == 3 + 120 + 3                 # 126
    assert by["n/Div_11"].origin == ("n", "MeanVarianceNormalization")
    c = r.coverage
    assert (c.nodes, c.by_rule, c.decomposed, c.free, c.folded, c.uncosted) == (12, 0, 9, 0, 3, ())
    assert c.costed == 9 and c.decomposed_ops == {"MeanVarianceNormalization": 1}
    assert c.line() == ("0 of 12 nodes costed by rule, 9 through the function bodies of 1 node "
                        "(MeanVarianceNormalization x1), 3 constant-folded, 0 uncosted")


def test_without_decomposition_the_op_is_uncosted(monkeypatch):
    monkeypatch.setattr(functions, "wanted", lambda m, nodes, names, counted: False)
    m = graph([helper.make_node("MeanVarianceNormalization", ["x"], ["y"], name="n")],
              {"x": (2, 3, 4, 5)}, {"y": ((2, 3, 4, 5), F32)}, opset=18)  # inference leaves y unknown
    r = analyzer.analyze(m)
    assert r.coverage.uncosted == ("n",) and r.totals.flops == 0
    monkeypatch.undo()
    assert analyzer.analyze(m).totals.flops == 486 + 126


def test_json_and_renderers_say_where_nodes_came_from():
    r = analyzer.analyze(mvn_model())
    d = r.to_dict()
    cov = d["coverage"]
    assert {"nodes", "costed", "folded", "uncosted", "uncosted_ops"} <= cov.keys()  # as before
    assert (cov["by_rule"], cov["decomposed"], cov["decomposed_nodes"], cov["free"]) == (0, 9, 1, 0)
    assert cov["decomposed_ops"] == {"MeanVarianceNormalization": 1}
    node = next(n for n in d["nodes"] if n["name"] == "n/Sub_9")
    assert node["decomposed_from"] == {"name": "n", "op": "MeanVarianceNormalization"}
    assert node["status"] == "costed"  # statuses are unchanged
    assert "9 through the function bodies of 1 node" in render(r, "table")
    assert "9 through the function bodies of 1 node" in render(r, "markdown")


def _without_loss_rules(monkeypatch):
    """The two loss ops have rules (counting/rules/onnx/loss.py); without them their function
    bodies are decomposed: the frontend path these tests check."""
    from analyzer.counting import cost

    real = cost.has_rule
    loss_ops = ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")
    monkeypatch.setattr(cost, "has_rule", lambda d, op: op not in loss_ops and real(d, op))


def test_negative_log_likelihood_loss_mean(monkeypatch):
    # context-dependent body (reduction=mean, no weight) over input [3, 5], target [3]
    _without_loss_rules(monkeypatch)
    r = analyzer.analyze(one_node("NegativeLogLikelihoodLoss", (3, 5), ((3,), I64), opset=22,
                                  reduction="mean"))
    by = rows(r)
    assert [n.name for n in r.nodes] == [
        "n/Constant_0", "n/Constant_1", "n/Constant_2", "n/Unsqueeze_3", "n/GatherElements_4",
        "n/Neg_5", "n/Slice_6", "n/Squeeze_7", "n/ReduceMean_8"]
    assert by["n/GatherElements_4"].flops == 0         # picks input[i, target[i]]: [3, 1]
    assert by["n/Neg_5"].vector_flops == 3             # -picked, 3 elements
    assert by["n/ReduceMean_8"].vector_flops == 3      # mean of 3: 2 adds + 1 divide
    assert r.totals.flops == 3 + 3
    c = r.coverage
    assert (c.decomposed, c.folded, c.by_rule, c.uncosted) == (6, 3, 0, ())
    assert c.decomposed_ops == {"NegativeLogLikelihoodLoss": 1}


def test_a_body_that_calls_a_function_op_is_expanded_again(monkeypatch):
    # SoftmaxCrossEntropyLoss's body calls NegativeLogLikelihoodLoss, itself a function op
    _without_loss_rules(monkeypatch)
    r = analyzer.analyze(one_node("SoftmaxCrossEntropyLoss", (3, 5), ((3,), I64), opset=13,
                                  reduction="mean"))
    names = [n.name for n in r.nodes]
    assert "n/LogSoftmax_3" in names
    nested = [n for n in r.nodes if n.name.startswith("n/NegativeLogLikelihoodLoss")]
    assert nested and all(n.name.count("/") == 2 for n in nested)
    assert all(n.origin == ("n", "SoftmaxCrossEntropyLoss") for n in r.nodes)
    assert r.coverage.uncosted == () and r.coverage.decomposed_ops == {"SoftmaxCrossEntropyLoss": 1}
    ls = next(n for n in r.nodes if n.op == "LogSoftmax")
    assert ls.flops == rows(analyzer.analyze(one_node("LogSoftmax", (3, 5), opset=13)))["n"].flops


def test_hann_window_of_constant_size():
    # size 10 is a constant: the window's angle arithmetic folds; what runs is 2 cosines and
    # the weighted sum 0.5 - 0.5*cos(2*pi*k/10) + 0*cos(4*pi*k/10) over 10 samples
    r = analyzer.analyze(one_node("HannWindow", np.array(10, dtype=np.int64), opset=17))
    costed = [(n.name, n.op, n.vector_flops, n.transcendentals) for n in r.nodes if n.status == "costed"]
    assert costed == [
        ("n/Cos_19", "Cos", 0, 10),     # cos(2 * angle)
        ("n/Mul_20", "Mul", 10, 0),     # a2 * cos(2 * angle)
        ("n/Cos_21", "Cos", 0, 10),     # cos(angle)
        ("n/Mul_22", "Mul", 10, 0),     # a1 * cos(angle)
        ("n/Sub_23", "Sub", 10, 0),     # a0 - a1 * cos
        ("n/Add_24", "Add", 10, 0),     # + a2 * cos(2 * angle)
        ("n/Cast_25", "Cast", 0, 0),    # to output_datatype (float)
    ]
    assert r.coverage.folded == 26 - 7 and r.coverage.decomposed == 7
    assert r.nodes[-1].outputs == ("float32[10]",)


def test_a_window_whose_size_is_data_stays_uncosted():
    # the body's shapes depend on the value of `size`: the node stays, uncosted, and the
    # analysis does not fail
    m = graph([helper.make_node("HannWindow", ["size"], ["y"], name="w")],
              {"size": ((), I64)}, {"y": ((10,), F32)})
    r = analyzer.analyze(m)
    assert [n.name for n in r.nodes] == ["w"] and r.coverage.uncosted == ("w",)


@pytest.mark.parametrize("target, pad_out, out", [
    ((2, 8), "float32[4,8]", "float32[2,8]"),   # crop rows 4 -> 2, pad columns 6 -> 8
    ((6, 4), "float32[6,6]", "float32[6,4]"),   # pad rows 4 -> 6, crop columns 6 -> 4
])
def test_center_crop_pad(target, pad_out, out):
    r = analyzer.analyze(one_node("CenterCropPad", (4, 6), ints(*target), opset=18))
    by = rows(r)
    runtime = [n.name for n in r.nodes if n.status != "folded"]
    assert runtime == ["n/Pad_7", "n/Slice_12"]  # the pad/crop amounts are shape arithmetic
    pad, sl = by["n/Pad_7"], by["n/Slice_12"]
    assert pad.outputs == (pad_out,) and sl.outputs == (out,)
    assert r.totals.flops == 0
    # Pad reads x (4*6*4 = 96 bytes) and writes its output; Slice reads and writes the crop
    n_pad = int(np.prod([int(d) for d in pad_out[8:-1].split(",")])) * 4
    n_out = target[0] * target[1] * 4
    assert pad.cost.activation_bytes_read == 96 and pad.cost.activation_bytes_written == n_pad
    assert sl.cost.activation_bytes_written == n_out
    assert r.coverage.decomposed == 2 and r.coverage.folded == 11


# ----------------------------------------------------------------------------- model-local

def my_gelu():
    """custom::MyGelu(x) = x * sigmoid(alpha * x), alpha an attribute defaulting to 1.702."""
    const = helper.make_node("Constant", [], ["a"], name="alpha")
    const.attribute.append(helper.make_attribute_ref("value_float", AttributeProto.FLOAT,
                                                     ref_attr_name="alpha"))
    nodes = [const,
             helper.make_node("Mul", ["x", "a"], ["t"], name="scale"),
             helper.make_node("Sigmoid", ["t"], ["s"], name="sig"),
             helper.make_node("Mul", ["x", "s"], ["y"], name="gate")]
    return helper.make_function("custom", "MyGelu", ["x"], ["y"], nodes,
                                [helper.make_opsetid("", 17)],
                                attribute_protos=[helper.make_attribute("alpha", 1.702)])


def local_model(extra_fn=(), nodes=None):
    nodes = nodes or [helper.make_node("MyGelu", ["x"], ["h"], name="g1", domain="custom"),
                      helper.make_node("MyGelu", ["h"], ["y"], name="g2", domain="custom", alpha=1.0)]
    m = graph(nodes, {"x": (2, 8)}, ["y"], domains={"custom": 1})
    m.functions.extend([my_gelu(), *extra_fn])
    return m


def test_model_local_function_is_inlined_and_costed():
    r = analyzer.analyze(local_model())
    assert [n.name for n in r.nodes] == ["g1/alpha", "g1/scale", "g1/sig", "g1/gate",
                                         "g2/alpha", "g2/scale", "g2/sig", "g2/gate"]
    by = rows(r)
    # per call on 2*8 = 16 elements: Mul 16, Sigmoid 2*16 vector + 16 exp, Mul 16
    for g in ("g1", "g2"):
        assert by[f"{g}/scale"].vector_flops == 16
        assert (by[f"{g}/sig"].vector_flops, by[f"{g}/sig"].transcendentals) == (32, 16)
        assert by[f"{g}/gate"].vector_flops == 16
        assert by[f"{g}/alpha"].status == "folded"
    assert r.totals.vector_flops == 2 * (16 + 32 + 16) and r.totals.transcendentals == 2 * 16
    assert r.coverage.decomposed_ops == {"custom::MyGelu": 2}
    assert "6 through the function bodies of 2 nodes (custom::MyGelu x2)" in r.coverage.line()


def test_local_function_names_and_attributes_are_bound():
    x = functions.expand(read_model(local_model())[0], has_rule)
    assert x is not None
    model, origin = x
    out = {n.name: n for n in model.graph.node}
    # body tensors are prefixed with the calling node's name; the call's own tensors stay
    assert list(out["g1/scale"].input) == ["x", "g1/a"] and list(out["g1/gate"].output) == ["h"]
    assert list(out["g2/gate"].input) == ["h", "g2/s"] and list(out["g2/gate"].output) == ["y"]
    # alpha: the function's default for g1, the call's attribute for g2
    assert helper.get_attribute_value(out["g1/alpha"].attribute[0]) == pytest.approx(1.702)
    assert helper.get_attribute_value(out["g2/alpha"].attribute[0]) == 1.0
    assert origin["g2/sig"] == ("g2", "custom::MyGelu")


def test_without_decomposition_the_local_function_is_uncosted(monkeypatch):
    monkeypatch.setattr(functions, "wanted", lambda m, nodes, names, counted: False)
    assert analyzer.analyze(local_model()).coverage.uncosted == ("g1", "g2")


def test_a_local_function_calling_a_schema_function():
    norm = helper.make_function(
        "custom", "Norm", ["x"], ["y"],
        [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], name="mvn")],
        [helper.make_opsetid("", 18)])
    m = graph([helper.make_node("Norm", ["x"], ["y"], name="f", domain="custom")],
              {"x": (2, 3, 4, 5)}, ["y"], domains={"custom": 1}, opset=18)
    m.functions.append(norm)
    r = analyzer.analyze(m)
    assert rows(r)["f/mvn/Div_11"].vector_flops == 120
    assert r.totals.vector_flops == 486 and r.totals.transcendentals == 126  # as MVN above
    assert r.coverage.decomposed_ops == {"custom::Norm": 1}


# ----------------------------------------------------------------------------- nested

def test_function_op_inside_a_loop_body():
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         helper.make_node("MeanVarianceNormalization", ["x"], ["y_i"], name="mvn")],
        "body", [helper.make_tensor_value_info("i", I64, []),
                 helper.make_tensor_value_info("c_in", BOOL, [])],
        [helper.make_tensor_value_info("c_out", BOOL, []),
         helper.make_tensor_value_info("y_i", F32, [2, 3, 4, 5])])
    loop = helper.make_node("Loop", ["trips", ""], ["ys"], name="loop", body=body)
    m = graph([loop], {"x": (2, 3, 4, 5)}, ["ys"], {"trips": np.array(3, dtype=np.int64)}, opset=18)
    r = analyzer.analyze(m)
    by = rows(r)
    assert by["loop/mvn/Div_11"].vector_flops == 3 * 120  # 3 trips
    assert by["loop/mvn/Div_11"].origin == ("loop/mvn", "MeanVarianceNormalization")
    assert r.totals.vector_flops == 3 * 486 and r.totals.transcendentals == 3 * 126
    c = r.coverage
    assert (c.by_rule, c.free, c.decomposed, c.folded) == (1, 1, 9, 3)  # Loop; Identity (a view)


def test_function_op_inside_an_if_branch():
    then = helper.make_graph([helper.make_node("MeanVarianceNormalization", ["x"], ["t"], name="mvn")],
                             "then", [], [helper.make_tensor_value_info("t", F32, [2, 3, 4, 5])])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="id")],
                              "else", [], [helper.make_tensor_value_info("e", F32, [2, 3, 4, 5])])
    m = graph([helper.make_node("If", ["c"], ["y"], name="if", then_branch=then, else_branch=other)],
              {"x": (2, 3, 4, 5), "c": ((), BOOL)}, ["y"], opset=18)
    r = analyzer.analyze(m)
    assert r.totals.vector_flops == 486  # the costlier branch: MVN's body
    assert rows(r)["if/mvn/Sqrt_8"].transcendentals == 3
    assert r.coverage.decomposed_ops == {"MeanVarianceNormalization": 1}


# ----------------------------------------------------------------------------- rules win

def test_ops_with_a_rule_are_never_expanded(monkeypatch):
    # LayerNormalization and Attention have function bodies, but their rules count the fused
    # kernel; the common case never even looks for bodies
    def boom(*a, **k):
        raise AssertionError("decomposition attempted")

    monkeypatch.setattr(functions, "build_decomposed", boom)
    m = graph([helper.make_node("LayerNormalization", ["x", "s", "b"], ["h"], name="ln"),
               helper.make_node("Attention", ["h", "h", "h"], ["y"], name="attn")],
              {"x": (1, 2, 4, 8)}, ["y"], {"s": np.ones(8, np.float32), "b": np.zeros(8, np.float32)},
              opset=23)
    r = analyzer.analyze(m)
    assert [(n.name, n.status, n.origin) for n in r.nodes] == [
        ("ln", "costed", None), ("attn", "costed", None)]
    assert r.coverage.by_rule == 2 and r.coverage.decomposed == 0
    assert r.coverage.to_dict()["decomposed_ops"] == {}


def test_free_nodes_are_counted_apart():
    m = graph([helper.make_node("Reshape", ["x", "shape"], ["r"], name="view"),
               helper.make_node("Relu", ["r"], ["y"], name="act")],
              {"x": (2, 6)}, ["y"], {"shape": ints(3, 4)})
    c = analyzer.analyze(m).coverage
    assert (c.nodes, c.by_rule, c.free, c.costed, c.decomposed) == (2, 1, 1, 2, 0)
    assert c.line() == "1 of 2 nodes costed by rule, 1 free (views), 0 constant-folded, 0 uncosted"
