"""--value / values=: graph inputs whose value decides shapes become constants.

A reduce whose axes, a Range whose limit, or a window whose length is a graph input has a
data-dependent output shape: without the value the analysis stops with an error that names
the input and the option; with it, the input is an initializer and everything folds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.errors import InputSpecError, ShapeError
from onnx_builders import graph, weight

I64 = TensorProto.INT64


def _reduce_model():
    # y = ReduceSum(x [3,4,5], axes) with keepdims=0; z = Relu(y)
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    return graph(nodes, {"x": (3, 4, 5), "axes": ((1,), I64)}, ["z"], opset=18)


def _range_model():
    # pos = Range(0, n, 1) with n a scalar graph input; e = Gather(E [100, 8], pos); y = e + x
    nodes = [helper.make_node("Range", ["zero", "n", "one"], ["pos"], name="range"),
             helper.make_node("Gather", ["E", "pos"], ["e"], name="gather"),
             helper.make_node("Add", ["e", "x"], ["y"], name="add")]
    inits = {"zero": np.array(0, np.int64), "one": np.array(1, np.int64), "E": weight(100, 8)}
    return graph(nodes, {"n": ((), I64), "x": (7, 8)}, ["y"], inits)


def test_without_the_value_the_error_names_the_input_and_the_option():
    with pytest.raises(ShapeError, match=r"graph input 'axes'.*values=\{'axes': \.\.\.\}") as e:
        analyzer.analyze(_reduce_model())
    assert "--value axes=..." in e.value.format("cli")


@pytest.mark.parametrize("axes, reduced, out", [
    ([1], 3 * 5 * (4 - 1), 3 * 5),    # 45 adds, 15 outputs
    ([-1], 3 * 4 * (5 - 1), 3 * 4),   # 48 adds, 12 outputs
])
def test_a_reduce_with_given_axes_is_counted(axes, reduced, out):
    r = analyzer.analyze(_reduce_model(), values={"axes": axes})
    assert r.node("sum").cost.vector_flops == reduced
    assert r.node("relu").cost.vector_flops == out
    assert r.model["values"] == {"axes": axes}
    assert "axes" not in r.model["inputs"]  # a constant now, not an input


def test_a_range_limit_given_as_a_scalar():
    r = analyzer.analyze(_range_model(), values={"n": 7})
    assert r.node("gather").status == "folded"  # rows of a constant table at constant positions
    assert r.node("add").in_specs[0].shape == (7, 8)
    assert r.node("add").cost.vector_flops == 7 * 8  # 56
    assert r.totals.params == 100 * 8  # the table E, gathered ahead of time, counted once


@pytest.mark.parametrize("values, message", [
    ({"nope": [1]}, "values names 'nope', but the model's inputs are: x, axes"),
    ({"axes": [1, 2]}, r"the input has shape \[1\] \(1 values\), but 2 were given"),
    ({"axes": ["a"]}, "not int64 values"),
])
def test_value_errors_say_what_is_wrong(values, message):
    with pytest.raises(InputSpecError, match=message):
        analyzer.analyze(_reduce_model(), values=values)


def test_a_scalar_input_takes_one_value():
    with pytest.raises(InputSpecError, match="the input is a scalar, but 2 values were given"):
        analyzer.analyze(_range_model(), values={"n": [3, 4]})


def test_cli_value_option(tmp_path, run_cli):
    import onnx

    path = tmp_path / "reduce.onnx"
    onnx.save(_reduce_model(), path)
    res = run_cli(path, "--value", "axes=1", "--format", "json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["totals"]["vector_flops"] == 45 + 15
    assert d["model"]["values"] == {"axes": [1]}
    bad = run_cli(path, "--value", "axes=one")
    assert bad.exit_code == 2 and "'one' is not a number" in bad.output
    missing = run_cli(path)
    assert missing.exit_code == 2 and "--value axes=" in missing.output


# ----------------------------------------------------------------------------- consistency

@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_a_scalar_index_or_threshold_is_not_a_param_whether_initializer_or_constant(dtype):
    # x < 3: the 3 is structure, not a weight, stored either way; a float threshold is a
    # constant operand (a param) either way
    from onnx import TensorProto, numpy_helper
    elem = {np.int64: TensorProto.INT64, np.bool_: TensorProto.BOOL}[dtype]
    op = "Less" if dtype is np.int64 else "And"
    k = np.array(3 if dtype is np.int64 else True, dtype)
    nodes = [helper.make_node(op, ["x", "k"], ["y"], name="cmp")]
    as_init = graph(nodes, {"x": ([4], elem)}, ["y"], {"k": k})
    as_const = graph([helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(k, "k"))]
                     + nodes, {"x": ([4], elem)}, ["y"])
    assert analyzer.analyze(as_init).totals.params == analyzer.analyze(as_const).totals.params == 0
    fk = np.array(3.0, np.float32)
    f_nodes = [helper.make_node("Less", ["x", "k"], ["y"], name="cmp")]
    f_init = graph(f_nodes, {"x": [4]}, ["y"], {"k": fk})
    f_const = graph([helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(fk, "k"))]
                    + f_nodes, {"x": [4]}, ["y"])
    assert analyzer.analyze(f_init).totals.params == analyzer.analyze(f_const).totals.params == 1
