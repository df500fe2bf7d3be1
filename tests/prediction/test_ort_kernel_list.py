"""The kernels opcost's onnxruntime record plans are the kernels onnxruntime runs at its default
level (layout transform included): one launch per node of the graph onnxruntime runs, each
charged once, on a PaddleOCR-style check model (``samples/cpu_models/hswish_net.onnx``: 162
nodes of decomposed hard-swish / hard-sigmoid, blocked convolutions and the reorders between
them), its export with symbolic spatial dimensions, and an NHWC block whose Transposes the
reorders absorb."""

from __future__ import annotations

import collections
import json
import os

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

ort = pytest.importorskip("onnxruntime")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HSWISH = os.path.join(ROOT, "samples", "cpu_models", "hswish_net.onnx")


def _dynamic(path: str):
    """The model with its input ``N x 3 x H x W`` (a PaddleOCR export's ``-1 x 3 x -1 x -1``)."""
    import onnx

    m = onnx.load(path)
    d = m.graph.input[0].type.tensor_type.shape.dim
    d[0].dim_param, d[2].dim_param, d[3].dim_param = "N", "H", "W"
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_param = "N"
    return m


def _nhwc_block():
    """conv1 -> Transpose to NHWC -> LayerNorm -> MatMul -> Relu -> MatMul -> Transpose to NCHW
    -> conv2 (a ConvNeXt block's shape, 32 channels, 16 x 16)."""
    rng = np.random.default_rng(0)

    def f(*s):
        return numpy_helper.from_array((rng.standard_normal(s) * 0.1).astype(np.float32))

    inits = [f(32, 3, 3, 3), f(32), f(32), f(32, 64), f(64, 32), f(32, 32, 1, 1)]
    for t, name in zip(inits, ("W1", "g", "b", "W2", "W3", "W4")):
        t.name = name
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["c1"], ["t1"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("LayerNormalization", ["t1", "g", "b"], ["ln"], name="ln", axis=-1),
             helper.make_node("MatMul", ["ln", "W2"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "W3"], ["o"], name="fc2"),
             helper.make_node("Transpose", ["o"], ["t2"], name="to_nchw", perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["t2", "W4"], ["y"], name="conv2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 16, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _same_op(op: str) -> str:
    # the fused graph's FusedConv runs as the layout graph's blocked Conv
    return "Conv" if op == "FusedConv" else op


def _planned(rec) -> collections.Counter:
    """Every launch of a fusion record: its kernels (recorded op), extra launches, reorders."""
    c = collections.Counter(_same_op(op) for _, op, _ in rec.kernels)
    c.update(op for _, ops in rec.extra for op in ops)
    c.update(op for _, op, _ in rec.reorders)
    return c


def _ort_runs(model) -> collections.Counter:
    from analyzer.prediction.onnxruntime.layout import layout_graph

    return collections.Counter(_same_op(n.op_type) for n in layout_graph(model, 1).graph.node)


def test_every_kernel_onnxruntime_runs_is_planned_once_on_the_decomposed_hard_swish_net():
    from analyzer.prediction.onnxruntime.record import fusion_record

    rec = fusion_record(HSWISH)
    runs = _ort_runs(HSWISH)
    assert _planned(rec) == runs
    # 162 = 123 kernels + 18 ReorderInput + 21 ReorderOutput; 19 hard-swish/hard-sigmoid of
    # Add, Clip, (Mul), Div: 19 Adds + 3 residual Adds folded into a blocked convolution = 22
    assert sum(runs.values()) == 162 and len(rec.kernels) == 123 and len(rec.reorders) == 39
    assert (runs["Add"], runs["Clip"], runs["Mul"], runs["Div"]) == (19, 19, 19, 19)
    assert rec.extra == ()


def test_symbolic_spatial_dims_add_the_reshapes_of_a_blocked_residual_add():
    from analyzer.prediction.onnxruntime.record import fusion_record

    m = _dynamic(HSWISH)
    rec = fusion_record(m)
    runs = _ort_runs(m)
    assert _planned(rec) == runs
    # two residual Adds the layout cannot fold (it cannot prove their inputs the same shape):
    # each runs on the blocked tensors with a Reshape of each input and one of its sum: 2 x 3
    assert runs["Reshape"] == 6 and sum(runs.values()) == 170
    assert sorted(op for _, ops in rec.extra for op in ops) == ["Reshape"] * 6
    assert "6 launches the layout inserts (Reshape)" in rec.source


def test_transposes_the_reorders_absorb_launch_nothing():
    from analyzer.prediction.onnxruntime.record import fusion_record

    rec = fusion_record(_nhwc_block())
    assert _planned(rec) == _ort_runs(_nhwc_block())
    assert {"to_nhwc", "to_nchw"} <= rec.removed
    assert [k for k, _, _ in rec.kernels] == ["conv1", "ln", "fc1", "relu", "fc2", "conv2"]
    # the ReorderOutput writes the NHWC tensor t1 (charged to the LayerNorm it feeds); the
    # ReorderInput reads the NHWC tensor o (charged to the convolution it feeds)
    assert rec.reorders == (("ln", "ReorderOutput", "t1"), ("conv2", "ReorderInput", "o"),
                            ("conv2", "ReorderOutput", "y"))


def test_analyze_counts_the_launches_onnxruntime_profiles(tmp_path):
    """The prediction's kernel count is the number of kernels onnxruntime's profiler records in
    one run of the model (no timing is compared)."""
    from analyzer import analyze
    from analyzer.measure.calibrate import write_profile
    from analyzer.prediction.onnxruntime.graph import session_options
    from tests.measure.test_cpu_calibration import _calibrated_doc

    p = write_profile(_calibrated_doc(), tmp_path / "cal.toml")
    m = _dynamic(HSWISH)
    pred = analyze(m, hw=p, dims={"N": 1, "H": 160, "W": 160}).predictions[0]
    so = session_options("default", 1)
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof")
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    s.run(None, {"x": np.zeros((1, 3, 160, 160), np.float32)})
    with open(s.end_profiling(), encoding="utf-8") as f:
        events = json.load(f)
    kernels = {e["name"] for e in events if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")}
    assert pred.kernels == len(kernels) == 170
