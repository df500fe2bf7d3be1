"""A node whose output size is data-dependent (NonZero, NonMaxSuppression: a dim shape inference
derives, ``unk__0``, that no option binds) predicts with its rule's upper bound, the one its
counts already rest on (``Coverage.estimates``); before, the prediction stopped with
"symbolic dim 'unk__0' is unbound; pass dims={'unk__0': ...}", which dims= refuses."""

from __future__ import annotations

import math

import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.prediction.kernel_rows import fusion_nodes

HW = ["ane-a16", "tpu-v5e", "a100", "hexagon-sd8gen3", "edge-tpu", "hifi4"]


def _model(op, inputs, after=None):
    nodes = [helper.make_node(op, list(inputs), ["y"], name=op.lower())]
    if after:
        nodes.append(helper.make_node(after, ["y"], ["z"], name="after"))
    g = helper.make_graph(nodes, op, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
                          [helper.make_tensor_value_info("z" if after else "y", 0, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("op,inputs", [("NonZero", {"x": [129, 100]}),
                                       ("NonMaxSuppression", {"b": [1, 100, 4], "s": [1, 1, 100]})])
def test_a_data_dependent_output_predicts_on_every_kind(op, inputs):
    rep = analyzer.analyze(_model(op, inputs), hw=HW)
    assert rep.nodes[0].out_specs[0].unresolved and rep.coverage.estimates
    assert all(math.isfinite(p.latency_s) and p.latency_s > 0 for p in rep.predictions)


def test_the_output_bytes_are_the_rules_bound():
    """NonZero of a 129 x 100 tensor: at most 12900 non-zeros, int64 [2, 12900] = 206400 B written."""
    rep = analyzer.analyze(_model("NonZero", {"x": [129, 100]}, after="Shape"))
    (nz, shape), _ = fusion_nodes(list(rep.nodes), None)
    assert nz.output_bytes == (2 * 12900 * 8,) == (rep.nodes[0].cost.activation_bytes_written,)
    assert shape.input_bytes == (rep.nodes[1].cost.activation_bytes_read,)
