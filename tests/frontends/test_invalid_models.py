"""Invalid is not valid; odd but valid is fine.

A model the ONNX checker rejects (or that breaks a rule it lets through: a Conv whose
``kernel_shape`` disagrees with its weight) is one error naming the finding and the node:
``GraphError`` for a node, ``ModelLoadError`` for the file (IR or opset newer than the
installed onnx), exit 2 through the CLI.  Odd models that the checker and onnxruntime accept
analyse: a graph without nodes, nested If branches that produce a name of an outer scope,
duplicate node names (renamed ``name~2``, said in the row's note)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer import GraphError, ModelLoadError
from onnx_builders import graph

F32 = TensorProto.FLOAT


def typed(nodes, ins, outs, inits=None, opset=17):
    return graph(nodes, ins, {o: (s, F32) for o, s in outs.items()}, inits, opset=opset)


def _ir(v):
    m = typed([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 3]}, {"y": [1, 3]})
    m.ir_version = v
    return m


def _opset(v):
    m = typed([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": [1, 3]}, {"y": [1, 3]})
    m.opset_import[0].version = v
    return m


INVALID = {
    "int64 weight of a Conv": (
        typed([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], {"x": [1, 3, 8, 8]},
              {"y": [1, 4, 6, 6]}, {"w": np.ones((4, 3, 3, 3), np.int64)}),
        GraphError, ["node 'conv' (Conv)", "tensor(int64)"]),
    "kernel_shape against the weight": (
        typed([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[5, 5])],
              {"x": [1, 3, 8, 8]}, {"y": [1, 4, 4, 4]}, {"w": np.ones((4, 3, 3, 3), np.float32)}),
        GraphError, ["node 'conv' (Conv)", "kernel_shape [5, 5] disagrees", "[4, 3, 3, 3]"]),
    "attribute of the wrong type": (
        typed([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=1.5)], {"x": [1, 3]},
              {"y": [1, 3]}),
        GraphError, ["node 'sm' (Softmax)", "Mismatched attribute type", "axis"]),
    "op outside its declared opset": (
        typed([helper.make_node("Gelu", ["x"], ["y"], name="g")], {"x": [1, 3]}, {"y": [1, 3]}),
        GraphError, ["node 'g' (Gelu)", "Gelu is not defined in opset 17 (it exists from opset 20)"]),
    "unknown op in the default domain": (
        typed([helper.make_node("FooBar", ["x"], ["y"], name="f")], {"x": [1, 3]}, {"y": [1, 3]}),
        GraphError, ["node 'f' (FooBar)", "'FooBar' is not an operator of domain 'ai.onnx'"]),
    "IR version newer than supported": (
        _ir(onnx.IR_VERSION + 1), ModelLoadError, [f"IR version {onnx.IR_VERSION + 1} is newer"]),
    "opset newer than onnx knows": (
        _opset(99), ModelLoadError, ["opset 99 of domain 'ai.onnx' is newer than the installed onnx"]),
}


@pytest.mark.parametrize("case", INVALID)
def test_invalid_models_are_one_error_naming_the_node(case):
    m, cls, needles = INVALID[case]
    with pytest.raises(cls) as e:
        analyzer.analyze(m)
    msg = str(e.value)
    assert "\n" not in msg
    for s in needles:
        assert s in msg, (s, msg)


@pytest.mark.parametrize("case", ["attribute of the wrong type", "opset newer than onnx knows"])
def test_invalid_models_exit_2_through_the_cli(case, save, run_cli):
    m, _, needles = INVALID[case]
    res = run_cli(save(m))
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needles[-1] in lines[0], res.stderr


def test_the_checker_runs_on_every_kind_of_node_not_just_the_first():
    # the checker sees one node of each kind: a bad attribute on the 3rd Softmax is its own kind
    nodes = [helper.make_node("Softmax", ["x"], ["a"], name="s1", axis=1),
             helper.make_node("Softmax", ["a"], ["b"], name="s2", axis=1),
             helper.make_node("Softmax", ["b"], ["y"], name="s3", axis=1.0)]
    with pytest.raises(GraphError, match="node 's3' \\(Softmax\\)"):
        analyzer.analyze(typed(nodes, {"x": [1, 3]}, {"y": [1, 3]}))


def _runs_in_onnxruntime(m):
    onnx.checker.check_model(m)
    ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.machine
def test_a_graph_without_nodes_analyses():
    m = typed([], {"x": [2, 3]}, {"x": [2, 3]})
    _runs_in_onnxruntime(m)
    r = analyzer.analyze(m)
    assert r.nodes == () and r.totals.flops == 0


@pytest.mark.machine
def test_nested_if_branches_that_reuse_an_outer_output_name():
    def branch(name, nodes):
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info("y", F32, [2])])
    inner = helper.make_node("If", ["c"], ["y"],
                             then_branch=branch("it", [helper.make_node("Relu", ["x"], ["y"])]),
                             else_branch=branch("ie", [helper.make_node("Neg", ["x"], ["y"])]))
    outer = helper.make_node("If", ["c"], ["y"], name="top", then_branch=branch("ot", [inner]),
                             else_branch=branch("oe", [helper.make_node("Abs", ["x"], ["y"])]))
    m = helper.make_model(helper.make_graph(
        [outer], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                       helper.make_tensor_value_info("x", F32, [2])],
        [helper.make_tensor_value_info("y", F32, [2])]), opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    _runs_in_onnxruntime(m)
    r = analyzer.analyze(m)
    assert r.node("top").out_specs[0].shape == (2,)
    assert r.totals.vector_flops == 2  # the costlier branch: one elementwise op on 2 elements


def test_duplicate_node_names_are_renamed_and_said_so():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="act"),
             helper.make_node("Relu", ["a"], ["b"], name="act"),
             helper.make_node("Relu", ["b"], ["y"], name="act")]
    m = typed(nodes, {"x": [2]}, {"y": [2]})
    onnx.checker.check_model(m)  # valid ONNX (onnxruntime refuses to load it, though)
    r = analyzer.analyze(m)
    assert [n.name for n in r.nodes] == ["act", "act~2", "act~3"]
    assert r.node("act").note is None
    assert r.node("act~3").note == "renamed: node #3 named 'act' in the file"
