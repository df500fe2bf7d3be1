"""Declared shapes are hints: when ``inputs=``, ``dims=`` or folded values decide a shape, the
file's stale value_info and output declarations do not override it; an input dim declared -1
(paddle2onnx) is a symbol that ``inputs=`` / ``dims=`` fixes."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.errors import UnboundDimError
from onnx_builders import graph, weight

F32 = TensorProto.FLOAT


def test_a_declared_output_does_not_fix_the_batch():
    # traced at batch 1, declared [1, 10]; analysed at batch 8 the MatMul writes 8x10 floats
    m = graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], {"x": [1, 4]},
              {"y": ([1, 10], F32)}, {"w": weight(4, 10)})
    r = analyzer.analyze(m, inputs={"x": "8x4"})
    assert r.node("fc").out_specs[0].shape == (8, 10)
    assert r.node("fc").cost.activation_bytes_written == 8 * 10 * 4 == 320
    assert r.node("fc").cost.mac_flops == 2 * 8 * 4 * 10


def test_a_folded_reshape_target_beats_a_stale_declaration():
    t = numpy_helper.from_array(np.array([20, 1, -1], np.int64), "t")
    nodes = [helper.make_node("Constant", [], ["t"], value=t),
             helper.make_node("Reshape", ["x", "t"], ["y"], name="rs"),
             helper.make_node("Relu", ["y"], ["z"], name="relu")]
    m = graph(nodes, {"x": [20, 8210]}, {"z": ([1, "seqlen"], F32)},
              value_info=[helper.make_tensor_value_info("y", F32, [1, "seqlen"])])
    r = analyzer.analyze(m)
    assert r.node("rs").out_specs[0].shape == (20, 1, 8210)
    assert r.node("relu").out_specs[0].shape == (20, 1, 8210)
    assert r.node("relu").cost.vector_flops == 20 * 8210


def test_minus_one_input_dims_are_symbols_that_inputs_or_dims_fix():
    m = graph([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [-1, 4]}, ["y"])
    assert analyzer.analyze(m, inputs={"x": "8x4"}).node("r").out_specs[0].shape == (8, 4)
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(m)
    dim = e.value.dim
    assert dim == "x_dim0"
    assert analyzer.analyze(m, dims={dim: 3}).node("r").out_specs[0].shape == (3, 4)
