"""Standard ONNX ops whose schemas have no shape inference function (``surrogates.emit.UNINFERRED``)
get their output shapes from a surrogate, as onnxruntime's contrib ops do: GroupNormalization
(opset 21, a context-dependent function ONNX inference does not expand; its output has the input's
shape).  Before, a one-node GroupNormalization stopped with "tensor rank is unknown"."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import analyzer


def _group_norm(after: str | None = None):
    nodes = [helper.make_node("GroupNormalization", ["x", "g", "b"], ["n"], name="gn", num_groups=4)]
    if after:
        nodes.append(helper.make_node(after, ["n"], ["y"], name="after"))
    g = helper.make_graph(nodes, "gn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16, 5, 7])],
                          [helper.make_tensor_value_info("y" if after else "n", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.ones(16, np.float32), "g"),
                           numpy_helper.from_array(np.zeros(16, np.float32), "b")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


def test_group_normalization_output_takes_the_input_shape():
    rep = analyzer.analyze(_group_norm())
    (n,) = rep.nodes
    assert n.out_specs[0].shape == (2, 16, 5, 7) and n.out_specs[0].dtype == "float32"
    assert not rep.coverage.uncosted and n.cost.flops > 0
    # 2 x 16 x 5 x 7 = 1120 float32 elements read and written
    assert n.cost.activation_bytes_read == 4 * 1120 and n.cost.activation_bytes_written == 4 * 1120


def test_the_op_after_it_resolves_and_every_accelerator_predicts():
    rep = analyzer.analyze(_group_norm("Relu"), hw=["tpu-v6e", "ane-a16", "hexagon-sd8gen3", "edge-tpu"])
    assert rep.nodes[1].out_specs[0].shape == (2, 16, 5, 7)
    assert all(p.latency_s > 0 for p in rep.predictions)
