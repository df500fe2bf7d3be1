"""onnxruntime's NCHWc layout transform folds a residual Add (and the activation after it) into
the blocked convolution that feeds the Add: the record and the measured join must say so."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")


def _residual():
    """conv1 (3 -> 16) -> c1; conv2 (16 -> 16) -> c2; add = c2 + c1; relu -> y (16x16 pixels)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "W1"),
             numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32), "W2")]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c1", "W2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "c1"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_the_layout_levels_run_the_residual_add_and_relu_inside_the_convolution():
    from analyzer.prediction.onnxruntime.record import fusion_record

    rec = fusion_record(_residual())
    assert [k[2] for k in rec.kernels] == [("conv1",), ("conv2", "add", "relu")]
    # the blocked output leaves the layout once, charged to the convolution that now writes y
    assert rec.reorders == (("conv2", "ReorderOutput", "y"),)
    assert "2 residual Add/activation kernels run inside a blocked convolution" in rec.source
    # without the layout transform the Add and the Relu are kernels of their own
    plain = fusion_record(_residual(), "extended")
    assert [k[2] for k in plain.kernels] == [("conv1",), ("conv2",), ("add",), ("relu",)]


def test_analyze_charges_one_kernel_for_conv_add_relu(tmp_path):
    from analyzer import analyze
    from analyzer.measure.calibrate import write_profile
    from tests.measure.test_cpu_calibration import _calibrated_doc

    p = write_profile(_calibrated_doc(), tmp_path / "cal.toml")
    pred = analyze(_residual(), hw=p).predictions[0]
    kernel_of = {n.name: n.kernel for n in pred.nodes}
    assert kernel_of["add"] == kernel_of["relu"] == kernel_of["conv2"] != kernel_of["conv1"]
    assert pred.kernels == 3   # conv1, conv2 (+ add, relu), the ReorderOutput


@pytest.mark.machine
def test_measure_joins_the_folded_add_to_its_convolution():
    from analyzer.measure.onnxruntime import measure

    r = measure(_residual(), threads=1, level="default", runs=3, min_time_s=0.0)
    assert r.groups["conv2"] == ["conv2", "add", "relu"]
    assert "add" not in r.groups and "relu" not in r.groups
    assert r.by_fused["conv2"] > 0
