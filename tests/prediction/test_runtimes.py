"""Closed-form checks of each prediction mechanism: fusion, tile padding, per-trip launches,
host dispatch, runtime choice and provenance.

The profile is tests/fixtures/hw/round-gpu.toml (family "datasheet": every class at the
datasheet peak, no class floor): matrix fp16 100 TFLOP/s, vector fp32 10 TFLOP/s, 1000 GB/s,
2 us per kernel launch.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx_builders import graph, one_node, weight

import analyzer
import hardware_db

ROUND_GPU = Path(__file__).resolve().parents[1] / "fixtures" / "hw" / "round-gpu.toml"
BW, VEC, MAT, LAUNCH = 1000e9, 10e12, 100e12, 2e-6


def _conv_bn_relu():
    # x [1, 8, 16, 16] -> Conv 3x3 pad 1 (16 out) -> BatchNormalization -> Relu
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    inits = {"w": weight(16, 8, 3, 3), "s": weight(16), "b": weight(16), "m": weight(16), "v": weight(16)}
    return graph(nodes, {"x": (1, 8, 16, 16)}, ["y"], inits)


def test_fused_conv_bn_relu_writes_one_output_and_launches_once():
    rep = analyzer.analyze(_conv_bn_relu(), hw=str(ROUND_GPU), runtime="onnxruntime")
    p = rep.predictions[0]
    assert p.kernels == 1 and {r.kernel for r in p.nodes} == {"conv"}
    # unfused bytes: conv reads x 8192 + w 4608, writes c 16384; bn reads c 16384 + 4x64 params,
    # writes n 16384; relu reads n 16384, writes y 16384. Fused: c and n never cross memory
    # (saved 2 x (16384 + 16384) = 65536): x 8192 + w 4608 + 256 params + y 16384 = 29440 bytes
    total_bytes = sum(n.cost.bytes_moved for n in rep.nodes)
    assert total_bytes == 8192 + 4608 + 16384 + 16384 + 256 + 16384 + 16384 + 16384
    # FLOPs: conv 2*16*16*16*72 = 589,824 MACs-as-FLOPs on the CUDA cores (fp32: vector 10 TF)
    flops = sum(n.cost.flops for n in rep.nodes)
    compute = flops / VEC
    memory = 29440 / BW
    # one launch (2 us) plus onnxruntime's per-node dispatch, which this profile does not state:
    # its launch figure stands in (and the notes say so)
    assert p.latency_s == pytest.approx(2 * LAUNCH + max(compute, memory), rel=1e-5)
    assert sum(r.overhead_s for r in p.nodes) == pytest.approx(2 * LAUNCH, rel=1e-6)
    assert any("dispatch per kernel taken as" in n for n in p.notes)


def test_unfused_runtime_launches_each_node():
    p = analyzer.analyze(_conv_bn_relu(), hw=str(ROUND_GPU), runtime="kernel").predictions[0]
    assert p.kernels == 3 and sum(r.overhead_s for r in p.nodes) == pytest.approx(3 * LAUNCH)


def test_gemm_129_cubed_on_128_tiles_does_the_padded_work():
    # a TPU-like engine: the datasheet-tpu set pads matrix work to 128x128 tiles
    prof = dataclasses.replace(hardware_db.load_file(str(ROUND_GPU)), family="datasheet-tpu")
    m = one_node("MatMul", ((129, 129), TensorProto.FLOAT16), ((129, 129), TensorProto.FLOAT16))
    p = analyzer.analyze(m, hw=[prof], runtime="kernel").predictions[0]
    (row,) = p.nodes
    # 2 * ceil(129/128)*128 * ceil(129/128)*128 * 129 = 2 * 256 * 256 * 129 on 100 TFLOP/s
    assert row.compute_s == pytest.approx(2 * 256 * 256 * 129 / MAT, rel=1e-5)
    unpadded = analyzer.analyze(m, hw=str(ROUND_GPU), runtime="kernel").predictions[0].nodes[0]
    assert unpadded.compute_s == pytest.approx(2 * 129 ** 3 / MAT, rel=1e-5)


def test_a_12_trip_scan_pays_12_times_its_bodys_launches():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    def f(xs):
        def body(h, x):
            h = jnp.tanh(h * 0.5 + x)      # one fusion per trip under xla
            return h, h
        return jax.lax.scan(body, jnp.zeros((64,), jnp.float32), xs)[0]

    xs = jax.ShapeDtypeStruct((12, 64), jnp.float32)
    p = analyzer.analyze_jax(f, xs, hw=str(ROUND_GPU)).predictions[0]
    assert p.runtime == "xla"
    body = [r for r in p.nodes if "/" in r.name]
    kernels = {r.kernel for r in body}
    assert len(kernels) == 1                        # mul, add, tanh fuse into one kernel
    # per trip the kernel and the trip counter's add (``xla_gpu_loops``; the unused stacked h is dropped)
    (carried,) = {t.inserted for i in range(len(p.nodes)) if (t := p.explain(i)) is not None and t.kernel in kernels}
    assert carried == (("add", 0),)
    assert sum(r.overhead_s for r in body) == pytest.approx(12 * 2 * LAUNCH, rel=1e-6)


def test_eager_adds_host_dispatch_per_op_with_its_source():
    m = one_node("Relu", (1024,))
    k = analyzer.analyze(m, hw="a100", runtime="kernel").predictions[0]
    e = analyzer.analyze(m, hw="a100", runtime="eager").predictions[0]
    # an elementwise op: the 12 us single-kernel dispatch (runtimes.EAGER_DISPATCH_DEFAULT_US)
    assert e.latency_s - k.latency_s == pytest.approx(12e-6, rel=1e-6)
    assert any("LLMCompass" in n for n in e.notes)
    assert e.time_definition != k.time_definition


@pytest.mark.parametrize("model,us", [
    (lambda: one_node("MatMul", (64, 64), weight(64, 64)), 21.0),
    (lambda: one_node("Softmax", (64, 64)), 12.0),
    (lambda: one_node("LayerNormalization", (64, 64), weight(64), axis=-1), 12.0),
    (lambda: one_node("Gelu", (64, 64), opset=20), 12.0)], ids=["matmul", "softmax", "layernorm", "gelu"])
def test_eager_dispatch_is_llmcompass_eager_figure_not_its_compiled_one(model, us):
    # LLMCompass's A100 figures: 21 us per matmul, 12 us per softmax; its 45 us per layernorm and
    # GELU timed torch.compile'd functions, so an eager LayerNorm or GELU takes the 12 us eager one
    m = model()
    k = analyzer.analyze(m, hw="a100", runtime="kernel").predictions[0]
    e = analyzer.analyze(m, hw="a100", runtime="eager").predictions[0]
    assert e.latency_s - k.latency_s == pytest.approx(us * 1e-6, rel=1e-6)


def test_eager_dispatch_of_a_refined_matrix_class_is_its_parents():
    # a depthwise convolution is one framework conv call: conv_dw -> conv's 21 us matmul-like
    # figure (before: the 12 us default of a class without a figure), as a JAX x^T g product
    # (gemm_tn -> gemm) is a matmul's
    from analyzer.prediction.runtimes import eager_dispatch_us

    assert eager_dispatch_us("conv_dw") == eager_dispatch_us("conv_1x1") == eager_dispatch_us("gemm_tn") == 21.0
    assert eager_dispatch_us("pooling") == eager_dispatch_us("gather") == 12.0
    m = one_node("Conv", (1, 32, 16, 16), weight(32, 1, 3, 3), group=32, pads=[1, 1, 1, 1])
    k = analyzer.analyze(m, hw="a100", runtime="kernel").predictions[0]
    e = analyzer.analyze(m, hw="a100", runtime="eager").predictions[0]
    assert e.latency_s - k.latency_s == pytest.approx(21e-6, rel=1e-6)


@pytest.mark.parametrize("model,us,stream_us", [
    (lambda: one_node("MatMul", (64, 64), weight(64, 64)), 44.0, 21.0),          # nn.Linear's figure
    (lambda: one_node("MatMul", (8, 64, 64), (8, 64, 64)), 21.8, 21.0),          # torch.bmm's
    # (a 1x1 convolution: no cuDNN launch besides the main kernel, rule cudnn-fp32)
    (lambda: one_node("Conv", (1, 8, 16, 16), weight(16, 8, 1, 1)), 65.8, 21.0),
    (lambda: one_node("LayerNormalization", (64, 64), weight(64), axis=-1), 39.3, 12.0),
    (lambda: one_node("Softmax", (64, 64)), 27.2, 12.0),
    (lambda: one_node("Gelu", (64, 64), opset=20), 25.3, 12.0),                  # activation
    (lambda: one_node("Relu", (64, 64)), 25.9, 12.0),                            # elementwise
    (lambda: one_node("MaxPool", (1, 8, 16, 16), kernel_shape=[2, 2]), 25.9, 12.0)],   # pooling -> reduce
    ids=["linear", "bmm", "conv", "layernorm", "softmax", "gelu", "relu", "maxpool"])
def test_eager_op_time_is_kernel_plus_the_per_call_figure(model, us, stream_us):
    # a one-op model timed one call at a time: eager-op = kernel + the class's per-call host time
    # (runtimes.EAGER_OP_CALL_US: NeuSight's five hosts' median); the eager stream keeps its own
    # issue cost (runtimes.EAGER_DISPATCH_US: 21 us matrix, 12 us other)
    m = model()
    k = analyzer.analyze(m, hw="a100", runtime="kernel").predictions[0]
    o = analyzer.analyze(m, hw="a100", runtime="eager-op").predictions[0]
    e = analyzer.analyze(m, hw="a100", runtime="eager").predictions[0]
    assert o.latency_s - k.latency_s == pytest.approx(us * 1e-6, rel=1e-6)
    assert e.latency_s - k.latency_s == pytest.approx(stream_us * 1e-6, rel=1e-6)
    assert any("NeuSight" in n for n in o.notes) and not any("NeuSight" in n for n in e.notes)


def test_eager_op_takes_a_profile_calibrated_with_eager_its_measured_figure():
    # a profile calibrated with the eager runtime: its measured per-op launch_overhead_us (7 us)
    # for every class, under eager and eager-op alike; uncalibrated, the per-class tables
    from analyzer.prediction import hardware as hwmod
    from analyzer.prediction.runtimes import RUNTIMES

    prof = dataclasses.replace(hardware_db.get("a100"), launch_overhead_us=7.0,
                               calibration={"runtime": "eager", "tables": {}})
    for rt in ("eager", "eager-op"):
        note: list[str] = []
        h = hwmod.host_dispatch(prof, RUNTIMES[rt], ["gemm", "elementwise"], 7e-6, note)
        assert h == pytest.approx([7e-6, 7e-6], rel=1e-12) and note == []
    plain = hardware_db.get("a100")
    note = []
    h = hwmod.host_dispatch(plain, RUNTIMES["eager-op"], ["gemm", "elementwise"], 1.5e-6, note)
    assert h == pytest.approx([44.0e-6, 25.9e-6], rel=1e-12) and "NeuSight" in note[0]


def test_runtime_defaults_and_provenance_per_profile():
    m = one_node("Relu", (1024,))
    rep = analyzer.analyze(m, hw=["a100", "tpu-v5e", "epyc-9654"])
    by = {p.hardware: p for p in rep.predictions}
    assert by["a100-80gb-sxm"].runtime == "kernel"
    assert by["a100-80gb-sxm"].provenance == "architecture constants"
    # the v5e's family constants: fitted on its public XLA matmul timings (bench/check_tpu.py)
    assert by["tpu-v5e"].runtime == "xla" and by["tpu-v5e"].provenance == "architecture constants"
    assert by["epyc-9654"].runtime == "onnxruntime" and by["epyc-9654"].provenance == "datasheet"
    # a profile without a launch figure is charged its kind's documented default, and says so
    assert any("no launch figure" in n for n in by["epyc-9654"].notes)
    assert not any("no launch figure" in n for n in by["a100-80gb-sxm"].notes)


def test_unknown_runtime_is_bad_input():
    with pytest.raises(analyzer.InputSpecError, match="unknown runtime 'tensorrt'"):
        analyzer.analyze(one_node("Relu", (4,)), hw="a100", runtime="tensorrt")


def test_every_profile_predicts():
    m = one_node("MatMul", (8, 64), weight(64, 64))
    for prof in hardware_db.list_profiles():
        p = analyzer.analyze(m, hw=prof.id).predictions[0]
        assert np.isfinite(p.latency_s) and p.latency_s > 0, prof.id
        assert p.provenance in ("calibrated", "architecture constants", "generic", "datasheet")


def test_a_fused_kernel_takes_its_class_view_and_dtype_from_the_first_heaviest_member():
    from analyzer.prediction.efficiency import kernel_time as eff
    from analyzer.prediction import kernel_rows as kr
    from analyzer.prediction.node_shapes import kernel_class

    def part(mac, flops, nbytes, cls, view, dtype):
        return (mac, 0.0, 0.0, flops, nbytes, 0.0, 1, cls, view, dtype)
    # members 1 and 2 tie on (MACs, FLOPs, bytes): the first of them, member 1, decides
    parts = [part(0, 10, 64, "elementwise", (1, 1, 1, 1), "fp32"),
             part(8, 16, 32, "gemm", (2, 2, 2, 1), "fp16"),
             part(8, 16, 32, "conv", (4, 4, 4, 1), "bf16"),
             part(4, 99, 99, "softmax", (3, 3, 3, 1), "fp32")]
    row = kr.fused_row(parts, saved=32)
    assert row[6] == eff.CLASS_CODE[kernel_class("gemm", "")]
    assert row[7:] == ((2, 2, 2, 1), "fp16")
    # sums per launch: MACs 0+8+8+4 = 20, bytes 64+32+32+99 - 32 saved = 195
    assert row[0] == 20 and row[3] == 195 and row[5] == 1


def test_a_fitted_class_floor_is_the_fixed_cost_not_the_profiles_assumed_launch_figure():
    # the NVIDIA families' elementwise floors, measured on their own kernels, pooled in cycles
    # (constants.floor_cycles: the median of the A100's 1.933 us x 1.41 GHz = 2725.5, the A40's
    # 1.185 us x 1.74 GHz = 2061.9 and the H200's 0.9134 us x 1.98 GHz = 1808.5 cycles: 2061.9),
    # on the A40's 1.74 GHz: 1.185 us, not the profile's assumed 1.5 us launch figure. A 16-element fp32 Add (kernel time) costs that floor plus its
    # memory term; a datasheet GPU (round-gpu: no class floors) pays its 2 us launch figure instead
    m = one_node("Add", (16,), (16,))
    node = analyzer.analyze(m, hw="a40", runtime="kernel").predictions[0].nodes[0]
    cycles = sorted([1.933e-6 * 1.41e9, 1.185e-6 * 1.74e9, 0.9134e-6 * 1.98e9])[1]
    assert node.overhead_s == pytest.approx(cycles / 1.74e9, rel=1e-9)
    node = analyzer.analyze(m, hw=str(ROUND_GPU), runtime="kernel").predictions[0].nodes[0]
    assert node.overhead_s == pytest.approx(LAUNCH, rel=1e-12)


def test_a_gpu_prediction_with_a_gather_says_which_pytorch_gather_it_assumes():
    from onnx import numpy_helper

    table = numpy_helper.from_array(np.zeros((1000, 64), np.float32), "E")
    g = helper.make_graph([helper.make_node("Gather", ["E", "ids"], ["y"], name="embed")], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [table])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    h100 = hardware_db.get("h100")
    said = lambda p: [n for n in p.notes if "vectorized gather" in n]   # noqa: E731
    (note,) = said(analyzer.analyze(m, hw=[h100]).predictions[0])
    assert 'family = "nvidia-hopper-pytorch2.3"' in note
    # not where the profile already names the older kernel, nor without a gather, nor on a CPU
    old = dataclasses.replace(h100, family="nvidia-hopper-pytorch2.3")
    assert not said(analyzer.analyze(m, hw=[old]).predictions[0])
    assert not said(analyzer.analyze(one_node("Relu", (64,)), hw=[h100]).predictions[0])
    assert not said(analyzer.analyze(m, hw="epyc-9654").predictions[0])
