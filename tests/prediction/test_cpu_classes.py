"""CPU op classes a calibration measures apart because onnxruntime runs them as different kernels
(closed-form checks; no wall-clock assertions)."""

from __future__ import annotations

import os
from typing import ClassVar

import numpy as np
import pytest
from onnx import TensorProto, helper

from analyzer.prediction.efficiency import kernel_time as eff

ort = pytest.importorskip("onnxruntime")


def test_quickgelu_is_the_swish_class_falling_back_to_activation():
    assert eff.op_class_of("com.microsoft", "QuickGelu") == "swish"
    assert eff.class_chain("swish") == ("swish", "activation")
    for op in ("Sigmoid", "Gelu", "FastGelu", "BiasGelu"):
        assert eff.op_class_of("com.microsoft", op) == "activation", op


def test_swish_calibration_rows_run_the_alpha_1_kernel(calibration_model_set):
    m = calibration_model_set
    swish = [n for n in m["swish"].graph.node if n.op_type == "QuickGelu"]
    assert len(swish) >= 6
    for n in swish:
        assert [a.f for a in n.attribute if a.name == "alpha"] == [1.0]
    # activation rows no longer carry QuickGelu (its kernels are predicted with swish constants)
    assert not [n for n in m["activation"].graph.node if n.op_type == "QuickGelu"]


def _silu(shape=(1, 32, 28, 28)):
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
             helper.make_node("Mul", ["x", "s"], ["y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _tables_profile(tmp_path, tables: dict):
    """A calibrated 1-thread test profile (0.25 TFLOP/s, 12.5 GB/s, dispatch 1.5 us, no per-run
    cost) with these class tables, written to ``tmp_path``."""
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.profile_docs import calibrated_doc

    doc = calibrated_doc(1)
    doc["calibration"]["run_overhead_us"] = 0.0
    doc["calibration"]["tables"] = tables
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return write_profile(doc, tmp_path / "cal.toml")


def test_silu_runs_as_quickgelu_and_is_predicted_with_the_swish_table(tmp_path):
    from analyzer import analyze
    from analyzer.prediction.onnxruntime.graph import fused_graph

    f = fused_graph(_silu(), "default", threads=1)
    assert [n.op_type for n in f.graph.node] == ["QuickGelu"]
    p = _tables_profile(tmp_path, {
        "activation": {"floor_us": 9.0, "e_c": 0.01, "e_bw": 0.1, "b_half_bytes": 0.0},
        "swish": {"floor_us": 2.0, "e_c": 0.5, "e_bw": 2.0, "b_half_bytes": 1000.0}})
    rep = analyze(_silu(), hw=p)
    pred = rep.predictions[0]
    assert pred.kernels == 1
    terms = pred.explain(0)
    assert terms.op_class == "swish" and terms.e_compute == 0.5 and terms.e_bw == 2.0
    F = terms.mac_flops + terms.vector_flops + terms.transcendental_flops
    # profile: 0.25 TFLOP/s, 12.5 GB/s, dispatch 1.5 us; swish floor 2 us, b_half 1000 B.
    # 25,088 elements: bytes >= 2 * 4 * 25,088 = 200,704, so memory ~ 8 us > compute ~ 1 us
    assert terms.bytes >= 2 * 4 * 25088
    memory = (terms.bytes + 1000.0) / (12.5e9 * 2.0)
    compute = F / (0.25e12 * 0.5)
    assert memory > compute
    assert pred.latency_s == pytest.approx(1.5e-6 + 2e-6 + memory, rel=1e-6)
    np.testing.assert_allclose(sum(n.time_s for n in pred.nodes), pred.latency_s, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# the L2 step of the CPU form (cpu_model docstring)

def test_kernel_time_with_l2_step_closed_form():
    from analyzer.measure.fit import class_fit as cpu_model

    # F = 0, B = 5e5, b_half = 1e5, bw 1e10, e_bw 0.5; L2 1e6: s = 1 / (1 + 0.5**2) = 0.8,
    # cache = 1 + 2.0 * 0.8 = 2.6; memory = 6e5 / (1e10 * 0.5 * 2.6) = 4.6154e-5 s; + floor 1 us
    t = cpu_model.kernel_time(0.0, 5e5, 1e-6, 0.5, 0.5, 1e5, 1e12, 1e10, 2.0, 1e6)
    assert t[0] == pytest.approx(1e-6 + 6e5 / (1e10 * 0.5 * 2.6), rel=1e-9)
    # far above the cache (B = 1e8: s = 1e-4) the step is gone: within 2e-4 of the plain form
    big = cpu_model.kernel_time(0.0, 1e8, 0.0, 0.5, 0.5, 0.0, 1e12, 1e10, 2.0, 1e6)[0]
    assert big == pytest.approx(1e8 / 5e9, rel=2.1e-4)
    # no cache size: the step is off whatever the gain
    assert cpu_model.kernel_time(0.0, 5e5, 0.0, 0.5, 0.5, 0.0, 1e12, 1e10, 2.0, 0.0)[0] == pytest.approx(1e-4)


def test_fit_recovers_a_known_l2_gain():
    from analyzer.measure.fit import class_fit as cpu_model

    peak, bw, l2 = 5e11, 4e10, 1e6
    B = np.geomspace(4e3, 2e8, 30)
    F = B * 0.1   # memory-bound rows
    t = cpu_model.kernel_time(F, B, 5e-7, 0.5, 0.9, 2e4, peak, bw, 1.5, l2)
    fit = cpu_model.fit_class(F, B, t, peak, bw, l2)
    assert fit["fit_mape"] < 1.0
    assert fit["l2_gain"] == pytest.approx(1.5, rel=0.05)
    assert fit["e_bw"] == pytest.approx(0.9, rel=0.03)
    # without a cache size the gain is not fitted
    assert cpu_model.fit_class(F, B, t, peak, bw)["l2_gain"] == 0.0


def test_fit_finds_the_tile_of_output_columns():
    # rows made with 16-column tiles and n_half 10 (what MLAS showed on an AVX-512 EPYC:
    # efficiency.py docstring): the tiled fit finds 16 among the candidates, its n_half, and
    # fits the rows exactly; without candidates it cannot (N = 2, 8 and 16 cost the same: 6.8 %)
    from analyzer.measure.fit import class_fit as cpu_model

    peak, bw = 2.7e11, 5e10
    rows = [(m, n, k) for m in (256, 1024, 4096) for n in (2, 8, 16, 24, 32, 48, 64, 128)
            for k in (64, 576)]
    m, n, k = (np.array(x, np.float64) for x in zip(*rows))
    mac = 2 * m * n * k
    F, B = mac, 4 * (m * k + k * n + m * n)
    view = np.stack([mac, m, n, k, np.ones_like(m)])
    t = cpu_model.kernel_time(F, B, 1e-6, 0.9, 1.0, 0.0, peak, bw, 0.0, 0.0, view, 16.0, 10.0)
    # closed form of one row: m 256, n 24 -> padded 32, k 64: 2*256*32*64 / (0.9 peak) x (1 + (10/32)^2)
    i = rows.index((256, 24, 64))
    assert t[i] == pytest.approx(1e-6 + 2 * 256 * 32 * 64 / (0.9 * peak) * (1 + (10 / 32) ** 2), rel=1e-9)
    fit = cpu_model.fit_class(F, B, t, peak, bw, 0.0, view, cpu_model.TILE_CANDIDATES)
    assert fit["tile_n"] == 16.0
    assert fit["n_half"] == pytest.approx(10.0, rel=0.05)
    assert fit["e_c"] == pytest.approx(0.9, rel=0.03)
    assert fit["fit_mape"] < 1.0
    plain = cpu_model.fit_class(F, B, t, peak, bw, 0.0)
    assert plain["tile_n"] == 0.0 and plain["fit_mape"] > 5.0


def test_fit_finds_the_input_channel_block():
    # 1x1 convolution rows made with 16-column tiles and input channels in blocks of 16 (MLAS's
    # NCHWc layout on AVX-512): the fit given the candidate blocks finds 16 and fits the rows
    # exactly; without them the 24- and 40-channel inputs (which do the work of 32 and 48) are off
    from analyzer.measure.fit import class_fit as cpu_model

    peak, bw = 2.7e11, 5e10
    rows = [(m, n, k) for m in (784, 3136) for n in (16, 32, 64, 144) for k in (16, 24, 32, 40, 64, 96)]
    m, n, k = (np.array(x, np.float64) for x in zip(*rows))
    mac = 2 * m * n * k
    F, B = mac, 4 * (m * k + k * n + m * n)
    view = np.stack([mac, m, n, k, np.ones_like(m)])
    t = cpu_model.kernel_time(F, B, 1e-6, 0.9, 1.0, 0.0, peak, bw, 0.0, 0.0, view, 16.0, 0.0, k_block=16.0)
    # closed form of one row: m 784, n 32, k 24 -> padded 32: 2*784*32*32 / (0.9 peak)
    i = rows.index((784, 32, 24))
    assert t[i] == pytest.approx(1e-6 + 2 * 784 * 32 * 32 / (0.9 * peak), rel=1e-9)
    fit = cpu_model.fit_class(F, B, t, peak, bw, 0.0, view, cpu_model.TILE_CANDIDATES, k_blocks=cpu_model.K_BLOCKS)
    assert (fit["tile_n"], fit["k_block"]) == (16.0, 16.0)
    assert fit["e_c"] == pytest.approx(0.9, rel=0.03) and fit["fit_mape"] < 1.0
    plain = cpu_model.fit_class(F, B, t, peak, bw, 0.0, view, cpu_model.TILE_CANDIDATES)
    assert plain["k_block"] == 0.0 and plain["fit_mape"] > 3.0


def test_calibrated_tables_carry_the_tile():
    # a calibrated table's tile_n / n_half reach the constants (tile_m 1: one row per tile)
    from analyzer.prediction.efficiency import kernel_time as eff
    from analyzer.prediction.hardware import efficiency_constants

    class P:
        calibration: ClassVar[dict] = {"runtime": "onnxruntime", "tables": {
            "gemm": {"e_c": 0.9, "e_bw": 1.0, "tile_n": 16.0, "n_half": 10.0},
            "conv_1x1": {"e_c": 0.9, "e_bw": 1.0, "tile_n": 16.0, "n_half": 10.0, "k_block": 16.0},
            "conv": {"e_c": 0.8, "e_bw": 1.0}}}
    arrays, prov, _ = efficiency_constants(P())
    assert prov == "calibrated"
    g, c, p = eff.CLASS_CODE["gemm"], eff.CLASS_CODE["conv"], eff.CLASS_CODE["conv_1x1"]
    assert (arrays["tile_m"][g], arrays["tile_n"][g], arrays["n_half"][g]) == (1.0, 16.0, 10.0)
    assert (arrays["tile_m"][c], arrays["tile_n"][c], arrays["n_half"][c]) == (0.0, 0.0, 0.0)
    assert (arrays["k_block"][p], arrays["k_block"][g], arrays["k_block"][c]) == (16.0, 0.0, 0.0)


def test_simd_reads_the_widest_vector_extension(tmp_path):
    from analyzer.prediction.cpu.host import simd

    def info(text):
        p = tmp_path / "cpuinfo"
        p.write_text(text)
        return str(p)
    assert simd(info("processor : 0\nflags : fpu sse2 avx avx2 avx512f avx512bw\n")) == "avx512"
    assert simd(info("flags : fpu sse sse2 avx fma avx2\n")) == "avx2"
    assert simd(info("Features : fp asimd evtstrm aes\n")) == "neon"
    assert simd(info("processor : 0\n")) == "unknown"
    assert simd(str(tmp_path / "missing")) == "unknown"


def test_a_profile_calibrated_on_another_vector_extension_says_so(monkeypatch):
    from analyzer.prediction.cpu import host
    from analyzer.prediction.hardware import efficiency_constants

    class P:
        calibration: ClassVar[dict] = {"runtime": "onnxruntime", "measured_on": "2026-11-25", "cpu": "AMD EPYC",
                       "simd": "avx512", "tables": {"gemm": {"e_c": 0.9, "e_bw": 1.0}}}
    monkeypatch.setattr(host, "this_simd", lambda: "avx2")
    _, prov, detail = efficiency_constants(P())
    assert prov == "calibrated" and detail.startswith("calibrated on another machine (2026-11-25")
    assert "calibrated on a CPU with avx512 (AMD EPYC), predicted on one with avx2" in detail
    monkeypatch.setattr(host, "this_simd", lambda: "avx512")
    assert efficiency_constants(P())[2] == "calibrated on this machine (2026-11-25, onnxruntime)"
    del P.calibration["simd"]          # a profile calibrated before the field: nothing said
    monkeypatch.setattr(host, "this_simd", lambda: "avx2")
    assert efficiency_constants(P())[2] == "calibrated on this machine (2026-11-25, onnxruntime)"


def test_l2_cache_bytes_reads_sysfs(tmp_path):
    from analyzer.prediction.cpu.host import cache_level_bytes, l2_cache_bytes

    for idx, (level, kind, size) in enumerate([("1", "Data", "32K"), ("1", "Instruction", "32K"),
                                               ("2", "Unified", "1024K"), ("3", "Unified", "32768K")]):
        d = tmp_path / f"index{idx}"
        d.mkdir()
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
    assert l2_cache_bytes(str(tmp_path)) == 1024 * 1024
    assert cache_level_bytes(3, str(tmp_path)) == 32 * 1024 * 1024


def test_calibrated_profile_applies_its_l2_step(tmp_path):
    from analyzer import analyze
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.profile_docs import calibrated_doc

    doc = calibrated_doc(1)
    doc["calibration"]["run_overhead_us"] = 0.0
    doc["calibration"]["cache_bytes"] = 1e6
    doc["calibration"]["tables"] = {
        "swish": {"floor_us": 0.0, "e_c": 4.0, "e_bw": 1.0, "b_half_bytes": 0.0, "l2_gain": 3.0}}
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    pred = analyze(_silu((1, 8, 50, 50)), hw=write_profile(doc, tmp_path / "cal.toml")).predictions[0]
    terms = pred.explain(0)
    assert terms.op_class == "swish"
    # 20,000 elements; B = the kernel's bytes (>= 160 kB); s = 1 / (1 + (B/1e6)**2);
    # memory = B / (12.5e9 * 1.0 * (1 + 3 s)); + dispatch 1.5 us (floor 0)
    B = terms.bytes
    s = 1.0 / (1.0 + (B / 1e6) ** 2)
    assert pred.latency_s == pytest.approx(1.5e-6 + B / (12.5e9 * (1 + 3.0 * s)), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# calibration rows measure what they claim to

def test_transpose_rows_are_not_pushed_below_their_sink(calibration_model_set):
    from analyzer.measure.cpu.models import split_rows
    from analyzer.measure.onnx_build import extra_nodes
    from analyzer.prediction.onnxruntime.graph import fused_graph

    rows = split_rows(calibration_model_set["movement"])
    for k, m in rows.items():
        ops = [n.op_type for n in m.graph.node if n.name == k]
        if ops != ["Transpose"]:
            assert extra_nodes(m) == 0
            continue
        assert extra_nodes(m) == 1
        f = fused_graph(m, "default", threads=1)
        # the Transpose still reads the row's full input (a graph input), not a 1-element slice
        tr = [n for n in f.graph.node if n.op_type == "Transpose"]
        assert len(tr) == 1 and tr[0].input[0] == f"{k}_x0", (k, [n.op_type for n in f.graph.node])


def test_masked_attention_rows_have_an_int32_mask_index(calibration_model_set):
    from analyzer import analyze

    m = calibration_model_set["attention"]
    masked = [n for n in m.graph.node if n.op_type == "Attention" and len(n.input) == 4]
    assert len(masked) == 4
    types = {v.name: v.type.tensor_type.elem_type for v in m.graph.input}
    assert all(types[n.input[3]] == 6 for n in masked)
    assert all(n.status == "costed" for n in analyze(m).nodes)


def test_a_class_whose_rows_are_all_under_the_noise_floor_fits_their_median():
    from analyzer.measure.fit import class_fit as cpu_model

    t = np.array([0.02, 0.04, 0.05, 0.09]) * 1e-6   # views: under the 0.25 us noise floor
    fit = cpu_model.fit_class(np.zeros(4), np.zeros(4), t, 1e12, 1e10)
    assert fit["floor_s"] == pytest.approx(0.045e-6, rel=1e-3)
    # one row above the floor: the others are fitted as the floor (0.25 us), not their value
    t2 = np.array([0.02, 0.04, 0.05, 0.4]) * 1e-6
    assert cpu_model.fit_class(np.zeros(4), np.zeros(4), t2, 1e12, 1e10)["floor_s"] > 0.2e-6


# ---------------------------------------------------------------------------------------------
# cold weights (cpu_cold)

def _cold_case():
    from analyzer.prediction.efficiency import kernel_time as eff

    C = len(eff.OP_CLASSES)
    consts = {p: np.zeros(C) for p in eff.CLASS_PARAMS}
    consts["e_compute"][:] = 1.0
    consts["e_bw"][:] = 1.0
    consts["trans_weight"] = 1.0
    hw = {"matrix_peak": 1e12, "vector_peak": 1e12, "mem_bw": 1e11, "units": 0.0, "l2_bytes": 0.0}
    # kernel 0 compute-bound: 1e9 FLOP (1 ms), 4e6 B of which 3e6 weights (memory 40 us);
    # kernel 1 a GEMV: 2e6 FLOP (2 us), 8e6 B of which 7.9e6 weights (memory 80 us);
    # kernel 2 no weights
    feats = {"op_class": np.zeros(3, np.int32), "mac_flops": np.array([1e9, 2e6, 1e6]),
             "bytes": np.array([4e6, 8e6, 1e6])}
    return feats, np.array([3e6, 7.9e6, 0.0]), hw, consts


def test_cold_weights_closed_form():
    from analyzer.prediction.cpu.cold import cold_weight_s

    feats, w, hw, consts = _cold_case()
    cal = {"cold_weight_bw_gbs": 40.0, "llc_bytes": 1e6}
    extra = cold_weight_s(cal, feats, w, hw, consts)
    # compute-bound: max(1 ms, 10 us) - max(1 ms, 40 us) + 3e6 / 40e9 = 75 us
    assert extra[0] == pytest.approx(3e6 / 40e9, rel=1e-9)
    # GEMV: max(2 us, 1 us) - max(2 us, 80 us) + 7.9e6 / 40e9 = 2 - 80 + 197.5 = 119.5 us
    assert extra[1] == pytest.approx(2e-6 - 80e-6 + 7.9e6 / 40e9, rel=1e-9)
    assert extra[2] == 0.0


def test_cold_weights_off_when_the_weights_fit_or_figures_are_missing():
    from analyzer.prediction.cpu.cold import cold_weight_s

    feats, w, hw, consts = _cold_case()
    assert not cold_weight_s({"cold_weight_bw_gbs": 40.0, "llc_bytes": 2e7}, feats, w, hw, consts).any()
    assert not cold_weight_s({"llc_bytes": 1e6}, feats, w, hw, consts).any()
    assert not cold_weight_s(None, feats, w, hw, consts).any()


def test_calibrated_profile_charges_cold_weights(tmp_path):
    from onnx import numpy_helper

    from analyzer import analyze
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.profile_docs import calibrated_doc

    w = numpy_helper.from_array(np.ones((256, 512), np.float32), "W")   # 524,288 weight bytes
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8

    def latency(llc):
        doc = calibrated_doc(1)
        doc["calibration"].update(run_overhead_us=0.0, llc_bytes=llc, cold_weight_bw_gbs=5.0)
        doc["calibration"]["tables"] = {"gemm": {"floor_us": 0.0, "e_c": 1.0, "e_bw": 1.0, "b_half_bytes": 0.0}}
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
        return analyze(m, hw=write_profile(doc, tmp_path / f"cal{llc}.toml")).predictions[0].latency_s

    hot, cold = latency(1e9), latency(1e5)
    # bytes: weights 524,288 + x 1,024 + y 2,048 = 527,360; compute 262,144 / 0.25e12 = 1.05 us;
    # hot memory 527,360 / 12.5e9 = 42.19 us; cold: max(1.05, 3,072 / 12.5e9) + 524,288 / 5e9
    assert hot == pytest.approx(1.5e-6 + 527360 / 12.5e9, rel=1e-6)
    assert cold == pytest.approx(1.5e-6 + 262144 / 0.25e12 + 524288 / 5e9, rel=1e-6)


# ---------------------------------------------------------------------------------------------
# one spatial dim: conv1d / pool1d (onnxruntime's im2col + GEMM and generic pool, never NCHWc)

def test_rank3_convs_and_pools_are_their_own_classes_falling_back_to_2d():
    assert eff.op_class_of("", "Conv", conv_input=(1, 16, 400), conv_weight=(32, 16, 3)) == "conv1d"
    assert eff.op_class_of("", "Conv", conv_input=(1, 16, 400), conv_weight=(16, 1, 3)) == "conv1d"
    assert eff.op_class_of("", "MaxPool", conv_input=(1, 16, 400)) == "pool1d"
    assert eff.op_class_of("", "GlobalAveragePool", conv_input=(1, 16, 400)) == "pool1d"
    # 2-D stays as it was
    assert eff.op_class_of("", "Conv", conv_input=(1, 16, 8, 8), conv_weight=(32, 16, 3, 3)) == "conv"
    assert eff.op_class_of("", "MaxPool", conv_input=(1, 16, 8, 8)) == "pooling"
    assert eff.class_chain("conv1d") == ("conv1d", "conv", "gemm")
    assert eff.class_chain("pool1d") == ("pool1d", "pooling", "reduce", "norm")
    assert "conv1d" in eff.MATRIX_CLASSES


def _conv1d():
    w = helper.make_tensor("w", TensorProto.FLOAT, [32, 16, 3], np.full(32 * 16 * 3, 0.1).tolist())
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1], name="c")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 400])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 400])],
                          initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_a_1d_conv_is_predicted_with_the_conv1d_table(tmp_path):
    from analyzer import analyze

    p = _tables_profile(tmp_path, {
        "conv": {"floor_us": 9.0, "e_c": 0.9, "e_bw": 1.0, "b_half_bytes": 0.0},
        "conv1d": {"floor_us": 3.0, "e_c": 0.25, "e_bw": 1.0, "b_half_bytes": 0.0}})
    pred = analyze(_conv1d(), hw=p).predictions[0]
    terms = pred.explain(0)
    assert terms.op_class == "conv1d" and terms.e_compute == 0.25
    # 2 * 400 * 32 * (16 * 3) = 1,228,800 MACs x 2 FLOPs: compute at 0.25 TFLOP/s x 0.25 = 19.66 us
    # (bytes: 25.6 KB in + 6.1 KB weights + 51.2 KB out at 12.5 GB/s = 6.6 us: compute-bound)
    assert terms.mac_flops == 2 * 400 * 32 * 16 * 3
    compute = terms.mac_flops / (0.25e12 * 0.25)
    assert compute > (terms.bytes) / 12.5e9
    assert pred.latency_s == pytest.approx(1.5e-6 + 3e-6 + compute, rel=1e-6)


def test_a_gpu_family_predicts_a_1d_conv_with_its_conv_constants():
    """No GPU family has conv1d/pool1d sets: the fallback gives the conv constants, as before."""
    import hardware_db

    from analyzer.prediction.efficiency.constants import load_constants

    c = load_constants(hardware_db.get("a100").family)
    for p in ("e_compute", "e_bw", "floor_s"):
        assert c.arrays[p][eff.CLASS_CODE["conv1d"]] == c.arrays[p][eff.CLASS_CODE["conv"]]
        assert c.arrays[p][eff.CLASS_CODE["pool1d"]] == c.arrays[p][eff.CLASS_CODE["pooling"]]


def test_calibration_rows_of_the_1d_classes_are_rank_3(calibration_model_set):
    from analyzer import analyze

    m = calibration_model_set
    for cls in ("conv1d", "pool1d"):
        nodes = [n for n in analyze(m[cls]).nodes if n.name.startswith("k") and n.name[1:].isdigit()]
        assert len(nodes) >= 9
        assert {eff.op_class_of(n.domain, n.op, conv_input=n.in_specs[0].shape,
                                conv_weight=n.in_specs[1].shape if len(n.in_specs) > 1 else None)
                for n in nodes} == {cls}


def test_fixed_costs_stay_under_the_smallest_row():
    # rows with a 100 KB ramp (2 us of fixed cost at 50 GB/s) and one tiny row that ran in 0.5 us:
    # the fit's floor plus the ramp's fixed part (b_half at the cached rate) stay within that
    # row's time (the floor alone was bounded before), so a tiny kernel is
    # not charged the medium kernels' latency
    from analyzer.measure.fit import class_fit as cpu_model

    peak, bw = 5e11, 5e10
    B = np.geomspace(2e4, 4e7, 20)
    t = cpu_model.kernel_time(B / 8, B, 2e-7, 0.5, 1.0, 1e5, peak, bw)
    F, B, t = np.append(B / 8, 100.0), np.append(B, 800.0), np.append(t, 0.5e-6)
    fit = cpu_model.fit_class(F, B, t, peak, bw)
    fixed = fit["floor_s"] + max(fit["b_half"], 0.0) / (bw * fit["e_bw"] * (1 + fit["l2_gain"]))
    assert fixed <= 0.5e-6 * (1 + 1e-9)
    # the tiny row is predicted within 2x of its time (without the cap: 2.2 us, 4.4x)
    p = cpu_model.kernel_time(F[-1:], B[-1:], fit["floor_s"], fit["e_c"], fit["e_bw"], fit["b_half"], peak, bw)
    assert p[0] < 1e-6


def test_tiled_fit_leaves_a_saturated_floor():
    # run ac's 1-thread conv rows: the untiled fit puts the floor at the smallest row's time (6.8
    # us, its sigmoid saturated) and the tiled fits that started there stayed (11.1 % MAPE); from a
    # second start at 0.95 of it they reach 1.6 us and 5.7 % (run ab's rows, 2 % apart: 6.2 %)
    import json

    from analyzer.measure.fit import class_fit as cpu_model

    with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "calibration",
                           "conv_rows_1t.json")) as f:
        d = json.load(f)
    F, B, t = (np.array([r[j] for r in d["rows"]]) for j in (1, 2, 3))
    view = np.array([r[4] for r in d["rows"]]).T
    fit = cpu_model.fit_class(F, B, t, d["peak_flops"], d["mem_bw"], d["l2_bytes"], view, cpu_model.TILE_CANDIDATES)
    assert fit["fit_mape"] < 7.0
    assert fit["floor_s"] < 0.5 * t.min()
