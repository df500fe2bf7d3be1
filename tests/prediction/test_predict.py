"""Latency predictions (issue 3): the roofline of DESIGN.md principle 6 checked in closed form.

Most tests run on ``tests/fixtures/hw/round-gpu.toml``, a made-up device with round numbers,
copied to ``tmp_path`` (variants are written there too):

    matrix fp16 = 100 TFLOP/s   vector fp32 = 10 TFLOP/s   mem_bw = 1000 GB/s   overhead = 2 us

so every expected time below is arithmetic written beside the assertion. The kernels compute in
float32, hence ``rel=1e-6``. Per kernel (``overlap=True``, the default):
``time = max(mac/matrix_peak + vec/vector_peak, bytes/bw) + overhead``.
"""

from __future__ import annotations

import math
import os
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
import hardware_db
from analyzer.prediction import kernels
from analyzer.errors import ShapeError
from onnx_builders import graph, one_node, weight

ROOT = Path(__file__).resolve().parents[2]
ROUND_GPU = ROOT / "tests" / "fixtures" / "hw" / "round-gpu.toml"
SAMPLES = ROOT / "samples"
F16 = TensorProto.FLOAT16

MATRIX_FP16 = 100e12   # FLOP/s
VECTOR_FP32 = 10e12    # FLOP/s
BW = 1000e9            # B/s
OVH = 2e-6             # s per kernel


@pytest.fixture
def hw(tmp_path) -> str:
    """Path of the round-number profile, written to tmp_path."""
    dst = tmp_path / "round-gpu.toml"
    shutil.copy(ROUND_GPU, dst)
    return str(dst)


def _predict(model, hw, **kw):
    rep = analyzer.analyze(model, hw=hw, **kw)
    assert len(rep.predictions) == 1
    return rep, rep.predictions[0]


def _chain(n: int, op: str = "Relu", shape=(1024,)) -> onnx.ModelProto:
    """x -> op -> op -> ... (n nodes named k0..k{n-1}): n kernels."""
    names = ["x"] + [f"t{i}" for i in range(n - 1)] + ["y"]
    nodes = [helper.make_node(op, [names[i]], [names[i + 1]], name=f"k{i}") for i in range(n)]
    return graph(nodes, {"x": shape}, ["y"])


# ------------------------------------------------------------------------------- 1. closed forms

def test_compute_bound_fp16_matmul_is_2mnk_over_matrix_peak_plus_overhead(hw):
    # fp16 [512,1024] @ [1024,2048]: mac = 2*m*n*k = 2*512*2048*1024 = 2,147,483,648
    # bytes = 2 B * (512*1024 + 1024*2048 + 512*2048) = 2 * 3,670,016 = 7,340,032
    # compute = 2,147,483,648 / 100e12 = 21.47483648 us > memory = 7,340,032 / 1e12 = 7.340032 us
    m, k, n = 512, 1024, 2048
    _, p = _predict(one_node("MatMul", ((m, k), F16), weight(k, n, dtype=np.float16)), hw)
    x = p.node("n")
    assert x.compute_s == pytest.approx(2 * m * n * k / MATRIX_FP16, rel=1e-6)
    assert x.memory_s == pytest.approx(7_340_032 / BW, rel=1e-6)
    assert x.overhead_s == pytest.approx(OVH, rel=1e-6)
    assert x.time_s == pytest.approx(2 * m * n * k / MATRIX_FP16 + OVH, rel=1e-6)  # 23.47483648 us
    assert x.bound == "compute"
    assert p.precision == "fp16"
    assert p.latency_s == pytest.approx(23.47483648e-6, rel=1e-6)


@pytest.mark.parametrize("op,attrs,w_shape", [("MatMul", {}, (1024, 2048)),
                                               ("Gemm", {"transB": 1}, (2048, 1024))])
def test_compute_bound_fp32_gemm_runs_on_the_vector_fp32_peak(hw, op, attrs, w_shape):
    # fp32 on a GPU runs on the CUDA cores (the profile has no matrix fp32 figure): 10 TFLOP/s.
    # mac = 2*512*2048*1024 = 2,147,483,648 -> 214.7483648 us; bytes = 4 * 3,670,016 = 14,680,064
    # -> 14.680064 us: compute-bound; time = 214.7483648 + 2 = 216.7483648 us
    _, p = _predict(one_node(op, (512, 1024), weight(*w_shape), **attrs), hw)
    x = p.node("n")
    assert x.compute_s == pytest.approx(2_147_483_648 / VECTOR_FP32, rel=1e-6)
    assert x.memory_s == pytest.approx(14_680_064 / BW, rel=1e-6)
    assert x.time_s == pytest.approx(216.7483648e-6, rel=1e-6)
    assert x.bound == "compute"
    assert p.warnings == ()   # fp32 is a figure the profile has: no fallback warning


def test_memory_bound_matvec_is_bytes_over_bw_plus_overhead(hw):
    # fp32 [1,1024] @ [1024,1024]: mac = 2*1*1024*1024 = 2,097,152 -> /10e12 = 0.2097152 us
    # bytes = 4 * (1*1024 + 1024*1024 + 1*1024) = 4 * 1,050,624 = 4,202,496 -> /1e12 = 4.202496 us
    # time = 4.202496 + 2 = 6.202496 us, memory-bound
    _, p = _predict(one_node("MatMul", (1, 1024), weight(1024, 1024)), hw)
    x = p.node("n")
    assert x.compute_s == pytest.approx(2_097_152 / VECTOR_FP32, rel=1e-6)
    assert x.memory_s == pytest.approx(4_202_496 / BW, rel=1e-6)
    assert x.time_s == pytest.approx(4_202_496 / BW + OVH, rel=1e-6)
    assert x.bound == "memory"
    assert x.intensity == pytest.approx(2_097_152 / 4_202_496)   # FLOP per byte


def test_tiny_op_is_overhead_bound(hw):
    # Add of two float32[4]: 4 FLOPs -> 4e-13 s; bytes 4*(4+4+4) = 48 -> 4.8e-11 s; overhead 2 us wins
    _, p = _predict(one_node("Add", (4,), (4,)), hw)
    x = p.node("n")
    assert x.bound == "overhead"
    assert x.compute_s == pytest.approx(4 / VECTOR_FP32, rel=1e-6)
    assert x.memory_s == pytest.approx(48 / BW, rel=1e-6)
    assert x.time_s == pytest.approx(48 / BW + OVH, rel=1e-6)


def test_pure_movement_has_zero_compute_never_nan(hw):
    # Transpose float32[64,128]: 0 FLOPs; bytes = 2 * 64*128*4 = 65,536 -> 65.536 ns
    _, p = _predict(one_node("Transpose", (64, 128), perm=[1, 0]), hw)
    x = p.node("n")
    assert x.compute_s == 0.0
    assert all(math.isfinite(v) for v in (x.time_s, x.compute_s, x.memory_s, x.overhead_s))
    assert x.memory_s == pytest.approx(65_536 / BW, rel=1e-6)
    assert x.time_s == pytest.approx(65_536 / BW + OVH, rel=1e-6)
    assert x.bound == "overhead"
    assert all(math.isfinite(v) for v in p.bound_share.values())


def test_reshape_is_a_view_and_launches_no_kernel(hw):
    # x[4,256] -Reshape-> [1024] -Relu-> y: the Reshape moves 0 bytes, so only the Relu is a kernel
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["r"], name="view"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    rep, p = _predict(graph(nodes, {"x": (4, 256)}, ["y"], {"shape": np.array([1024], np.int64)}), hw)
    assert rep.node("view").cost.bytes_moved == 0 and rep.node("view").cost.flops == 0
    assert [x.name for x in p.nodes] == ["relu"]
    with pytest.raises(KeyError):
        p.node("view")
    # relu: 1024 FLOPs, 2*1024*4 = 8192 B; total = 8.192 ns + one overhead of 2 us
    assert p.latency_s == pytest.approx(8192 / BW + OVH, rel=1e-6)


@pytest.mark.parametrize("n", [1, 5, 17])
def test_overhead_once_per_kernel(hw, n):
    # a chain of n Relus on float32[1024]: n kernels -> sum(overhead_s) = n * 2 us
    _, p = _predict(_chain(n), hw)
    assert len(p.nodes) == n
    assert sum(x.overhead_s for x in p.nodes) == pytest.approx(n * OVH, rel=1e-6)
    # each Relu: memory 8192 B / 1e12 = 8.192 ns > compute 1024 / 10e12 = 0.1024 ns
    assert p.latency_s == pytest.approx(n * (8192 / BW + OVH), rel=1e-6)


def test_additive_model_adds_compute_memory_and_overhead(hw):
    # seed 003's model (overlap=False) on the matvec above:
    # 0.2097152 us + 4.202496 us + 2 us = 6.4122112 us (the overlap model gives 6.202496 us)
    model = one_node("MatMul", (1, 1024), weight(1024, 1024))
    _, p = _predict(model, hw, overlap=False)
    x = p.node("n")
    assert p.overlap is False and p.to_dict()["model"] == "additive"
    assert x.time_s == pytest.approx(2_097_152 / VECTOR_FP32 + 4_202_496 / BW + OVH, rel=1e-6)
    assert x.time_s == pytest.approx(6.4122112e-6, rel=1e-6)
    assert x.bound == "memory"
    _, q = _predict(model, hw, overlap=True)
    assert q.node("n").time_s == pytest.approx(6.202496e-6, rel=1e-6)


def test_fp16_precision_on_fp32_model_halves_bytes_and_uses_matrix_fp16(hw):
    # memory-bound matvec: bytes 4,202,496 at fp32 -> 2,101,248 at fp16 -> 2.101248 us;
    # compute on the fp16 matrix engine: 2,097,152 / 100e12 = 20.97152 ns; time = 4.101248 us
    _, p = _predict(one_node("MatMul", (1, 1024), weight(1024, 1024)), hw, precision="fp16")
    x = p.node("n")
    assert p.precision == "fp16"
    assert x.memory_s == pytest.approx(2_101_248 / BW, rel=1e-6)
    assert x.compute_s == pytest.approx(2_097_152 / MATRIX_FP16, rel=1e-6)
    assert x.time_s == pytest.approx(4.101248e-6, rel=1e-6)
    # compute-bound GEMM: 2,147,483,648 / 100e12 = 21.47483648 us (vs 214.7... us at fp32)
    _, q = _predict(one_node("MatMul", (512, 1024), weight(1024, 2048)), hw, precision="fp16")
    assert q.node("n").compute_s == pytest.approx(21.47483648e-6, rel=1e-6)
    assert q.node("n").memory_s == pytest.approx(7_340_032 / BW, rel=1e-6)   # half of 14,680,064
    assert q.node("n").bound == "compute"


def test_missing_dtype_falls_back_with_a_warning(hw):
    # the profile has no bf16 figure: bf16 runs at its fp16 matrix peak (FALLBACK bf16 -> fp16)
    rep, p = _predict(one_node("MatMul", (512, 1024), weight(1024, 2048)), hw, precision="bf16")
    assert p.node("n").compute_s == pytest.approx(2_147_483_648 / MATRIX_FP16, rel=1e-6)
    assert len(p.warnings) == 1
    w = p.warnings[0]
    assert "round-gpu" in w and "bf16" in w and "fp16" in w
    assert w in rep.warnings
    assert rep.to_dict()["predictions"][0]["warnings"] == [w]


def test_profile_without_mem_bw_assumes_its_kinds_slowest_and_says_so(tmp_path):
    text = ROUND_GPU.read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if "mem_bw_gbs" not in line) + "\n"
    path = tmp_path / "no-bw.toml"
    path.write_text(text, encoding="utf-8")
    p = analyzer.analyze(one_node("Relu", (16,)), hw=str(path)).predictions[0]
    slowest = min((q for q in hardware_db.list_profiles() if q.kind == "gpu" and q.mem_bw_gbs),
                  key=lambda q: q.mem_bw_gbs)
    assert any(n.startswith("INCOMPLETE") and slowest.id in n for n in p.notes)
    # Relu of 16 floats: 128 bytes at the slowest GPU's bandwidth + the 2 us launch
    assert p.latency_s == pytest.approx(2e-6 + 128 / (slowest.mem_bw_gbs * 1e9), rel=1e-5)


def test_profile_without_launch_figure_takes_its_kinds_default_and_says_so(tmp_path):
    text = ROUND_GPU.read_text(encoding="utf-8")
    text = "\n".join(line for line in text.splitlines() if "launch_overhead_us" not in line) + "\n"
    path = tmp_path / "no-ovh.toml"
    path.write_text(text, encoding="utf-8")
    _, p = _predict(one_node("MatMul", (1, 1024), weight(1024, 1024)), str(path))
    # the documented default of a GPU (runtimes.KIND_LAUNCH_US["gpu"]): 1.5 us per kernel
    assert p.node("n").overhead_s == pytest.approx(1.5e-6, rel=1e-6)
    assert p.latency_s == pytest.approx(4_202_496 / BW + 1.5e-6, rel=1e-6)   # memory + default
    assert any("no launch figure" in n and "1.5 µs" in n for n in p.notes)


# ------------------------------------------------------------------------ 2. totals and shares

@pytest.mark.parametrize("sample", ["transformer", "cnn", "mlp"])
def test_total_is_sum_of_layers_and_bound_share_sums_to_one(sample, hw):
    rep = analyzer.analyze(str(SAMPLES / f"{sample}.onnx"), hw=["a100", "t4", "tpu-v5e", hw])
    assert [p.hardware for p in rep.predictions] == ["a100-80gb-sxm", "t4", "tpu-v5e", "round-gpu"]
    for p in rep.predictions:
        assert p.latency_s > 0
        # the rows plus the per-call term in no row (xla on a TPU: the call's launch); the bound
        # shares are of the rows
        rows = math.fsum(x.time_s for x in p.nodes)
        assert p.latency_s == pytest.approx(rows + p.run_overhead_s, rel=1e-9)
        assert math.fsum(p.bound_share.values()) == pytest.approx(1.0, abs=1e-9)
        for b in ("compute", "memory", "overhead"):
            own = math.fsum(x.time_s for x in p.nodes if x.bound == b)
            assert p.bound_share[b] == pytest.approx(own / rows, rel=1e-9, abs=1e-12)
        for x in p.nodes:   # the roofline identity per layer
            assert x.time_s == pytest.approx(max(x.compute_s, x.memory_s) + x.overhead_s, rel=1e-6)


# -------------------------------------------------------------------------- 3. compile once

def test_kernel_compiles_once_per_size_bucket(monkeypatch, hw):
    # a fresh jitted kernel, so that what other tests compiled before does not matter
    monkeypatch.setattr(kernels, "_jitted", None)
    assert kernels.bucket(70) == kernels.bucket(120) == 128 and kernels.bucket(200) == 256
    start = kernels.TRACES["roofline"]
    analyzer.analyze(_chain(70), hw=hw)
    assert kernels.TRACES["roofline"] == start + 1        # first model: one compilation
    analyzer.analyze(_chain(120), hw=hw)                   # same bucket (128 rows)
    analyzer.analyze(_chain(120), hw=hw, overlap=False)    # overlap is an argument, not a retrace
    assert kernels.TRACES["roofline"] == start + 1
    analyzer.analyze(_chain(200), hw=hw)                   # bucket 256: compiles again
    assert kernels.TRACES["roofline"] == start + 2


# --------------------------------------------------------------------- 4. zoo ResNet-50

@pytest.fixture(scope="module")
def resnet50_path() -> str:
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        "light_resnet50.onnx")
    if not os.path.exists(path):
        pytest.skip("the onnx wheel has no light_resnet50.onnx")
    return path


def _resnet50_batch_free(path: str) -> onnx.ModelProto:
    """The zoo ResNet-50 with its final Reshape target [1, 2048] replaced by [-1, 2048].

    The exported graph hard-codes batch 1 in that initializer (the classic export bug), so any
    other batch cannot run: [64, 2048, 1, 1] has 131072 elements, [1, 2048] only 2048. -1 lets the
    Reshape infer the batch, which is what the model means."""
    m = onnx.load(path)
    (reshape,) = [n for n in m.graph.node if n.op_type == "Reshape"]
    (init,) = [t for t in m.graph.initializer if t.name == reshape.input[1]]
    assert numpy_helper.to_array(init).tolist() == [1, 2048]
    init.CopyFrom(numpy_helper.from_array(np.array([-1, 2048], np.int64), init.name))
    return m


def test_resnet50_batch1_mixed_bounds_and_device_ordering(resnet50_path):
    rep = analyzer.analyze(resnet50_path, hw=["b200", "h100", "a100", "t4"])
    lat = {p.hardware: p.latency_s for p in rep.predictions}
    # each newer generation is faster than the A100, the A100 than the T4 (B200 vs H100 at
    # batch 1 fp32 is within their floors: not ordered here)
    assert max(lat["b200-hgx"], lat["h100-sxm"]) < lat["a100-80gb-sxm"] < lat["t4"], lat
    a100 = rep.predictions[2]
    bounds = Counter(x.bound for x in a100.nodes)
    assert bounds["memory"] > 0 and bounds["compute"] > 0, bounds
    ops = {n.name: n.op for n in rep.nodes}
    assert all(ops[x.name] in ("Conv", "Gemm") for x in a100.nodes if x.bound == "compute")


def test_resnet50_batch64_amortizes_conv_weights(resnet50_path):
    r1 = analyzer.analyze(resnet50_path, hw="a100")
    b1, rep_nodes = r1.predictions[0], r1.nodes
    b64 = analyzer.analyze(_resnet50_batch_free(resnet50_path), hw="a100",
                           inputs={"gpu_0/data_0": (64, 3, 224, 224)}).predictions[0]
    assert len(b1.nodes) == len(b64.nodes)
    # a bigger batch amortizes each convolution's weights: FLOPs per byte grow for every conv
    ops = [rep_nodes[x.index].op for x in b1.nodes]
    conv = [i for i, op in enumerate(ops) if op == "Conv"]
    assert len(conv) == 53
    assert all(b64.nodes[i].intensity > b1.nodes[i].intensity for i in conv)
    assert b64.latency_s > 10 * b1.latency_s


def test_resnet50_batch64_without_the_fix_names_the_reshape(resnet50_path):
    with pytest.raises(ShapeError, match=r"n173.*Reshape"):
        analyzer.analyze(resnet50_path, hw="a100", inputs={"gpu_0/data_0": (64, 3, 224, 224)})


# --------------------------------------------- 5. seed 001: A100 / V100 = 1555 / 900 on memory-bound layers

def _memory_heavy_block(S: int = 2048, D: int = 1024, H: int = 16) -> onnx.ModelProto:
    """A transformer block's memory-bound parts: LayerNorm, a GELU-like elementwise tail, the
    residual Add and an attention Softmax over [1, H, S, S] (plus one MatMul, compute-bound)."""
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["h"], name="ln", axis=-1),
        helper.make_node("MatMul", ["h", "w"], ["u"], name="fc"),
        helper.make_node("Erf", ["u"], ["e"], name="erf"),
        helper.make_node("Mul", ["u", "e"], ["a"], name="mul"),
        helper.make_node("Add", ["a", "x"], ["y"], name="residual"),
        helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
    ]
    inits = {"g": weight(D), "b": weight(D), "w": weight(D, D)}
    return graph(nodes, {"x": (1, S, D), "scores": (1, H, S, S)}, ["y", "probs"], inits)


def _round_gpu_variant(tmp_path, name: str, bw_gbs: float, vector_fp32: float) -> str:
    """The round-number profile (datasheet family: e = 1, no floors, 2 us per kernel) with another
    DRAM bandwidth and vector fp32 peak, written to tmp_path."""
    text = ROUND_GPU.read_text(encoding="utf-8")
    for old, new in (('id = "round-gpu"', f'id = "{name}"'),
                     ("mem_bw_gbs = 1000.0", f"mem_bw_gbs = {bw_gbs}"),
                     ("fp32 = 10.0", f"fp32 = {vector_fp32}")):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a100_over_v100_speedup_on_memory_bound_layers_is_the_bandwidth_ratio(tmp_path):
    # Two datasheet-roofline profiles with the A100's and the V100's own figures, differing in two:
    # DRAM 1555 vs 900 GB/s and vector fp32 19.5 vs 15.7 TFLOP/s (same 2 us overhead). Every time
    # below is written in closed form, so a model that scales both devices by the same wrong
    # factor (or takes the wrong term as the bound) fails here.
    A_BW, V_BW, A_VEC, V_VEC = 1555e9, 900e9, 19.5e12, 15.7e12
    a = _round_gpu_variant(tmp_path, "a100-like", 1555.0, 19.5)
    v = _round_gpu_variant(tmp_path, "v100-like", 900.0, 15.7)
    a100, v100 = analyzer.analyze(_memory_heavy_block(), hw=[a, v]).predictions
    # fp32 bytes of the memory-bound kernels (S = 2048, D = 1024, H = 16):
    #   erf: reads u, writes e: 2 * 4 * 2048*1024 = 16,777,216
    #   mul, residual: read two [1,S,D], write one: 3 * 4 * 2048*1024 = 25,165,824
    #   ln: reads x (8,388,608) + g, b (2 * 4 * 1024 = 8,192), writes h (8,388,608) = 16,785,408
    #   softmax: reads and writes [1,16,2048,2048]: 2 * 4 * 67,108,864 = 536,870,912
    mem_bytes = {"erf": 16_777_216, "mul": 25_165_824, "residual": 25_165_824,
                 "ln": 16_785_408, "softmax": 536_870_912}
    for p, bw in ((a100, A_BW), (v100, V_BW)):
        for name, b in mem_bytes.items():
            x = p.node(name)
            assert x.bound == "memory", (p.hardware, name)
            assert x.memory_s == pytest.approx(b / bw, rel=1e-6)   # softmax: 345.25 us vs 596.52 us
            assert x.time_s == pytest.approx(b / bw + OVH, rel=1e-6)
    total = sum(mem_bytes.values())   # 620,764,384 B
    t_a = math.fsum(a100.node(n).memory_s for n in mem_bytes)
    t_v = math.fsum(v100.node(n).memory_s for n in mem_bytes)
    # seed 001: on memory-bound layers the speedup is the bandwidth ratio, 1555 / 900 = 1.7278
    assert t_v / t_a == pytest.approx(1555 / 900, rel=1e-5)
    # with the fixed 2 us per kernel (5 kernels) the speedup is smaller:
    # (620,764,384 / 900e9 + 10 us) / (620,764,384 / 1555e9 + 10 us) = 699.74 / 409.21 = 1.7100
    wall_a = math.fsum(a100.node(n).time_s for n in mem_bytes)
    wall_v = math.fsum(v100.node(n).time_s for n in mem_bytes)
    assert wall_v / wall_a == pytest.approx((total / V_BW + 5 * OVH) / (total / A_BW + 5 * OVH), rel=1e-5)
    assert 1.70 < wall_v / wall_a < 1555 / 900
    # fc is compute-bound on the vector fp32 peak: 2*m*n*k = 2*2048*1024*1024 = 4,294,967,296 FLOP,
    # so its speedup is the peak ratio 19.5 / 15.7 = 1.2420, not the bandwidth ratio
    fc_flops = 2 * 2048 * 1024 * 1024
    for p, vec in ((a100, A_VEC), (v100, V_VEC)):
        assert p.node("fc").bound == "compute"
        assert p.node("fc").compute_s == pytest.approx(fc_flops / vec, rel=1e-6)   # 220.25 / 273.56 us
    assert v100.node("fc").compute_s / a100.node("fc").compute_s == pytest.approx(19.5 / 15.7, rel=1e-5)


# ------------------------------------------------------------------ precision label (bug)

def test_precision_label_of_fp16_model_without_macs(hw):
    _, p = _predict(one_node("Relu", ((1024, 1024), F16)), hw)
    assert p.precision == "fp16"
