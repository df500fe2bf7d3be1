"""The ``qnn`` runtime (analyzer/prediction/accelerators/qnn.py): QNN's fusion on the Hexagon NPU
(kernels counted by hand for small graphs), the Concat that runs no kernel, and the family's
per-inference fixed cost added once per prediction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import hardware_db
from analyzer.prediction import runtimes
from analyzer.prediction.accelerators import qnn
from analyzer.prediction.efficiency.constants import load_constants
from analyzer.prediction.predict import predict
from analyzer.prediction.targets import Target

F = TensorProto.FLOAT


def _analyze(nodes, inits=(), out_shape=(1, 8, 8, 8)):
    import analyzer

    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", F, list(out_shape))], initializer=list(inits))
    return analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def _w(name, shape):
    return numpy_helper.from_array(np.full(shape, 0.1, dtype=np.float32), name)


def _conv(x, y, w):
    return helper.make_node("Conv", [x, w], [y], pads=[1, 1, 1, 1])


def _bn(x, y, p):
    return helper.make_node("BatchNormalization", [x, f"{p}s", f"{p}b", f"{p}m", f"{p}v"], [y])


def _bn_inits(p):
    return [_w(f"{p}{k}", [8]) for k in "sbmv"]


def _kernels(report, runtime="qnn", pid="hexagon-sd8gen3"):
    (p,) = predict(report, [Target(hardware_db.get(pid), runtimes.get(runtime), "requested")], precision="fp16")
    return p


def test_hexagon_profiles_default_to_qnn():
    for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3"):
        assert hardware_db.get(pid).default_runtime == "qnn"
    assert runtimes.get("qnn").time_definition == qnn.TIME_DEFINITION


def test_residual_block_is_two_kernels():
    """conv1 -> BN -> Relu -> conv2 -> BN -> Add(x) -> Relu: QNN runs conv1+BN+Relu and
    conv2+BN+Add+Relu (2 kernels); the kernel runtime runs the 7 nodes as 7."""
    nodes = [_conv("x", "c1", "w1"), _bn("c1", "b1", "n1"), helper.make_node("Relu", ["b1"], ["r1"]),
             _conv("r1", "c2", "w2"), _bn("c2", "b2", "n2"), helper.make_node("Add", ["b2", "x"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    rep = _analyze(nodes, [_w("w1", [8, 8, 3, 3]), _w("w2", [8, 8, 3, 3])] + _bn_inits("n1") + _bn_inits("n2"))
    assert len(_kernels(rep).kernel_table.op_class) == 2
    assert len(_kernels(rep, "kernel").kernel_table.op_class) == 7


def test_silu_joins_its_convolution():
    """conv -> Sigmoid, Mul(conv, Sigmoid): one kernel (x * sigmoid(x) is the conv's epilogue)."""
    nodes = [_conv("x", "c", "w"), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["y"])]
    rep = _analyze(nodes, [_w("w", [8, 8, 3, 3])])
    assert len(_kernels(rep).kernel_table.op_class) == 1


def test_concat_runs_no_kernel():
    """conv_a, conv_b -> Concat: two kernels (the convolutions write into the concat's buffer);
    the concat's bytes (read 2 x 1x8x8x8, write 1x16x8x8 at fp16 = 2 x 1024 + 2048 B) are
    nowhere in the prediction."""
    nodes = [_conv("x", "a", "wa"), _conv("x", "b", "wb"), helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    rep = _analyze(nodes, [_w("wa", [8, 8, 3, 3]), _w("wb", [8, 8, 3, 3])], out_shape=(1, 16, 8, 8))
    q, k = _kernels(rep), _kernels(rep, "kernel")
    assert len(q.kernel_table.op_class) == 2 and len(k.kernel_table.op_class) == 3
    assert float(np.sum(k.kernel_table.nbytes)) - float(np.sum(q.kernel_table.nbytes)) == 2 * 1024 + 2048


@pytest.mark.parametrize("precision,key", [("fp16", "run_fixed_s"), ("int8", "run_fixed_int8_s")])
def test_fixed_cost_added_once_per_inference(precision, key):
    """latency = the kernels' sum + the family's run_fixed_s (fp16) / run_fixed_int8_s (int8),
    once; the kernel runtime adds none."""
    rep = _analyze([_conv("x", "y", "w")], [_w("w", [8, 8, 3, 3])])
    prof = hardware_db.get("hexagon-sd8gen2")
    fixed = load_constants(prof.family).arrays[key]
    assert 1e-6 <= fixed <= 1e-3   # a fitted figure between 1 us and 1 ms
    (p,) = predict(rep, [Target(prof, runtimes.get("qnn"), "requested")], precision=precision)
    assert p.run_overhead_s == pytest.approx(fixed)
    assert p.latency_s == pytest.approx(float(np.sum(p.kernel_table.time)) + fixed)
    (k,) = predict(rep, [Target(prof, runtimes.get("kernel"), "requested")], precision=precision)
    assert k.run_overhead_s == 0.0


def test_family_without_fixed_cost_adds_none():
    rep = _analyze([_conv("x", "y", "w")], [_w("w", [8, 8, 3, 3])])
    prof = dataclasses.replace(hardware_db.get("hexagon-sd8gen2"), family="datasheet")
    (p,) = predict(rep, [Target(prof, runtimes.get("qnn"), "requested")], precision="fp16")
    assert p.run_overhead_s == 0.0


def test_shipped_hexagon_efficiencies_are_fractions():
    """Every fitted efficiency and DRAM fraction is in (0, 1] (no e_bw standing in for fusion)."""
    for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3"):
        arrays = load_constants(hardware_db.get(pid).family).arrays
        for name in ("e_compute", "e_bw"):
            assert np.all(arrays[name] > 0) and np.all(arrays[name] <= 1.0), (pid, name)
