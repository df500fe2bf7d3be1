"""A model in which no node launches a kernel (a lone Reshape: a view) predicts its runtime's
per-call costs alone, and says so (``predict.NO_KERNEL``): never a silent zero."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.prediction import predict as P


def _reshape_model():
    g = helper.make_graph([helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape")], "r",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024])],
                          [numpy_helper.from_array(np.array([-1], np.int64), "s")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("hw", ["ane-a16", "edge-tpu", "hifi4", "a100", "tpu-v5e"])
def test_a_model_of_views_warns_that_nothing_launches(hw):
    (p,) = analyzer.analyze(_reshape_model(), hw=hw).predictions
    assert p.kernels == 0 and P.NO_KERNEL in p.warnings
    assert p.latency_s == pytest.approx(p.run_overhead_s, abs=1e-15)   # the per-call costs alone


def test_a_model_with_a_kernel_has_no_such_warning():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "r",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 128])])
    (p,) = analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), hw="ane-a16").predictions
    assert p.kernels == 1 and P.NO_KERNEL not in p.warnings and p.latency_s > 0
