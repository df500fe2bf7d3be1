"""The k-loop latency term of the tiled GEMM class (``efficiency.kernel_time.k_loop_s``):
``compute_s = max(throughput time, k_step_s * min(ceil(k / 64), k_steps_max))``."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.prediction.efficiency import kernel_time as eff


def _arrays(k_step_s: float, k_steps_max: float, floor_clock_hz: float = 0.0) -> dict:
    c = len(eff.OP_CLASSES)
    a = {p: np.zeros(c) for p in eff.CLASS_PARAMS}
    i = eff.CLASS_CODE["gemm"]
    a["e_compute"][i], a["e_bw"][i], a["tile_m"][i], a["tile_n"][i] = 0.5, 1.0, 64.0, 64.0
    a["floor_s"][i] = 2e-6
    a["k_step_s"][i], a["k_steps_max"][i], a["floor_clock_hz"][i] = k_step_s, k_steps_max, floor_clock_hz
    a["trans_weight"] = 1.0
    return a


def _gemm(m, n, k, arrays, units=0.0, detail=False):
    feats = {"op_class": np.array([eff.CLASS_CODE["gemm"]]), "mac_flops": np.array([2.0 * m * n * k]),
             "m": np.array([float(m)]), "n": np.array([float(n)]), "k": np.array([float(k)]),
             "batch": np.array([1.0]), "bytes": np.array([0.0])}
    hw = {"matrix_peak": 100e12, "vector_peak": 10e12, "mem_bw": 1e12, "units": units}
    return {n_: float(v[0]) for n_, v in eff.kernel_time(np, feats, hw, arrays, detail=detail).items()}


def test_a_tiny_gemm_is_held_by_its_k_loop():
    # M = 1, N = 64, K = 1024: throughput 2 * 16 * 64 * 1024 / (100e12 * 0.5) = 0.042 us (m pads to 16);
    # k loop 1024 / 64 = 16 steps x 100 ns = 1.6 us (no cap): compute 1.6 us, time 2 + 1.6 = 3.6 us
    t = _gemm(1, 64, 1024, _arrays(1e-7, 0.0))
    assert t["compute_s"] == pytest.approx(1.6e-6, rel=1e-12)
    assert t["time_s"] == pytest.approx(3.6e-6, rel=1e-12)
    # K = 1025 is 17 steps (whole steps: ceil)
    assert _gemm(1, 64, 1025, _arrays(1e-7, 0.0))["compute_s"] == pytest.approx(1.7e-6, rel=1e-12)


def test_the_cap_bounds_the_steps_a_cta_walks():
    # M = 1, N = 16, K = 65536: throughput 2 * 16 * 16 * 65536 / 5e13 = 0.67 us; 1024 steps, k_steps_max
    # 14: 14 x 100 ns = 1.4 us
    assert _gemm(1, 16, 65536, _arrays(1e-7, 14.0))["compute_s"] == pytest.approx(1.4e-6, rel=1e-12)
    # K = 640 is 10 steps, under the cap: 1.0 us
    assert _gemm(1, 64, 640, _arrays(1e-7, 14.0))["compute_s"] == pytest.approx(1.0e-6, rel=1e-12)


def test_a_large_gemm_keeps_its_throughput_time():
    # 4096^3: 2 * 4096^3 / 5e13 = 2748.8 us >> 14 steps x 100 ns; the term changes nothing
    on, off = _gemm(4096, 4096, 4096, _arrays(1e-7, 14.0)), _gemm(4096, 4096, 4096, _arrays(0.0, 0.0))
    assert on["compute_s"] == off["compute_s"] == pytest.approx(2 * 4096**3 / 5e13, rel=1e-12)


def test_the_explain_detail_keeps_throughput_and_k_loop_apart():
    d = _gemm(1, 64, 1024, _arrays(1e-7, 0.0), detail=True)
    assert d["kloop_s"] == pytest.approx(1.6e-6, rel=1e-12)
    assert d["matrix_s"] == pytest.approx(2 * 16 * 64 * 1024 / 5e13, rel=1e-12)
    assert d["compute_s"] == max(d["matrix_s"] + d["vector_s"], d["kloop_s"])


def test_the_k_step_is_a_number_of_cycles():
    # fitted at 1.41 GHz, predicted at 2.82 GHz: half the seconds per step, like the floor
    a = eff.with_clock(_arrays(1e-7, 14.0, floor_clock_hz=1.41e9), 2.82e9)
    i = eff.CLASS_CODE["gemm"]
    assert a["k_step_s"][i] == pytest.approx(5e-8, rel=1e-12)
    assert a["floor_s"][i] == pytest.approx(1e-6, rel=1e-12)
    assert a["k_steps_max"][i] == 14.0


def test_the_slice_variant_counts_the_steps_of_the_split_k_slice():
    # M = 1, N = 64, K = 4096 on 100 SMs: the split tiles.wave_split picks, s, leaves
    # K / s per CTA: steps ceil(4096 / s / 64) x 100 ns
    a = _arrays(1e-7, 0.0)
    a["k_loop_slice"][eff.CLASS_CODE["gemm"]] = a["wave_alpha"][eff.CLASS_CODE["gemm"]] = 1.0
    d = _gemm(1, 64, 4096, a, units=100.0, detail=True)
    assert d["split_k"] > 1
    assert d["kloop_s"] == pytest.approx(1e-7 * np.ceil(4096 / d["split_k"] / 64), rel=1e-12)
    # the whole K (k_loop_slice 0): 64 steps
    assert _gemm(1, 64, 4096, _arrays(1e-7, 0.0), units=100.0, detail=True)["kloop_s"] == pytest.approx(6.4e-6)


def test_explain_shows_the_k_loop_and_its_terms_sum_to_the_time(monkeypatch):
    import dataclasses

    from onnx import TensorProto, helper

    import analyzer
    from analyzer.prediction.efficiency import constants as fc

    real = fc.load_constants

    def with_k_loop(family, directory=None):
        c = real(family, directory)
        arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in c.arrays.items()}
        arrays["k_step_s"][eff.CLASS_CODE["gemm"]] = 1e-7
        return dataclasses.replace(c, arrays=arrays)

    monkeypatch.setattr(fc, "load_constants", with_k_loop)
    w = helper.make_tensor("w", TensorProto.FLOAT16, [4096, 64], [0.0] * (4096 * 64))
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 4096])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 64])], [w])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)
    report = analyzer.analyze(model, hw=["a100-80gb-sxm"], runtime="kernel")
    p = report.predictions[0]
    e = p.explain(0)
    from analyzer.render.explain import render_explain

    text = render_explain(report, 0, width=200)
    assert "k-loop latency = 6.4" in text and "k-loop 6.4" in text
    # 4096 / 64 = 64 steps x 100 ns, the ampere gemm set fitted at the A100's 1.41 GHz clock: 6.4 us
    assert e.kloop_s == pytest.approx(6.4e-6, rel=1e-9)
    assert e.compute_s == pytest.approx(e.runs * max(e.matrix_s + e.vector_s, e.kloop_s), rel=1e-9)
    assert e.time_s == pytest.approx(e.overhead_s + max(e.compute_s, e.memory_s), rel=1e-9)
