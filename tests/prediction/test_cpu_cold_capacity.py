"""How much of a model's weights stays cached on a CPU (``cpu_cold``'s effective capacity):
closed-form shares, the fit recovering a known step, the sweep's models. No wall-clock
assertions: the timer in these tests is the form itself."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.prediction.cpu import cold as cpu_cold
from analyzer.measure.cpu import cold_cache

CAP = {"cold_weight_bw_gbs": 40.0, "llc_bytes": 32e6, "llc_effective_bytes": 25e6, "llc_step_power": 6.0}


def _form(w, cap=25e6, p=6.0, hot=100e9, cold=50e9):
    """Seconds per run of a chain holding ``w`` weight bytes under the fitted form."""
    w = np.asarray(w, dtype=float)
    h = 1.0 / (1.0 + (w / cap) ** p)
    return w * (h / hot + (1.0 - h) / cold)


def test_cold_share_closed_form():
    # at the capacity half the weights are cold: 1 - 1/(1 + 1) = 0.5; at twice it
    # 1 - 1/(1 + 64) = 64/65; at half of it 1 - 1/(1 + 1/64) = 1/65 = 0.01538
    assert cpu_cold.cold_share(CAP, 25e6) == pytest.approx(0.5)
    assert cpu_cold.cold_share(CAP, 50e6) == pytest.approx(64 / 65)
    assert cpu_cold.cold_share(CAP, 12.5e6) == pytest.approx(1 / 65)
    # 10 MB: (0.4)^6 = 0.004096 -> 0.00408, under MIN_SHARE: none
    assert cpu_cold.cold_share(CAP, 10e6) == 0.0
    # a profile without the fit keeps the step at llc_bytes; none without the cold rate
    old = {"cold_weight_bw_gbs": 40.0, "llc_bytes": 32e6}
    assert (cpu_cold.cold_share(old, 31e6), cpu_cold.cold_share(old, 33e6)) == (0.0, 1.0)
    assert cpu_cold.cold_share({"llc_bytes": 1e6}, 1e9) == 0.0
    assert cpu_cold.cold_share(None, 1e9) == 0.0


def test_cold_weight_seconds_scale_with_the_cold_share():
    # one GEMV-like kernel with 25e6 weight bytes of 25.1e6 moved, 2e6 FLOP, on 1e12 FLOP/s and
    # 1e11 B/s: hot max(2 us, 251 us) = 251 us; without the weights max(2 us, 1 us) = 2 us;
    # all cold: 2 + 25e6 / 40e9 = 627 us -> +378 us; at the capacity half of it: +189 us
    from tests.prediction.test_cpu_classes import _cold_case

    _, _, hw, consts = _cold_case()   # (every class: e_c 1, e_bw 1, no floor; 1e12 FLOP/s, 1e11 B/s)
    feats = {"op_class": np.zeros(1, np.int32), "mac_flops": np.array([2e6]), "bytes": np.array([25.1e6])}
    w = np.array([25e6])
    full = 2e-6 + 25e6 / 40e9 - 251e-6
    step = {"cold_weight_bw_gbs": 40.0, "llc_bytes": 1e6}
    assert cpu_cold.cold_weight_s(step, feats, w, hw, consts)[0] == pytest.approx(full, rel=1e-9)
    assert cpu_cold.cold_weight_s(CAP, feats, w, hw, consts)[0] == pytest.approx(full / 2, rel=1e-9)


def test_fit_capacity_recovers_the_step_of_its_form():
    w = np.array([8, 10, 13, 16, 20, 26, 33, 42, 52, 64]) * 1e6
    fit = cold_cache.fit_capacity(w, _form(w))
    assert fit["llc_step_power"] == 6.0
    assert fit["llc_effective_bytes"] == pytest.approx(25e6, rel=0.05)   # (the grid's spacing)
    assert fit["hot_bw_gbs"] == pytest.approx(100.0, rel=0.02)
    assert fit["cold_bw_gbs"] == pytest.approx(50.0, rel=0.02)
    # a sweep with no step (one rate throughout) gives no fit
    assert cold_cache.fit_capacity(w, w / 80e9) is None


def test_capacity_models_hold_the_stated_weights():
    from analyzer import analyze

    models = cold_cache.capacity_models(32e6)
    layer = 4 * 1024 * 512   # 2,097,152 bytes of fp32 weights a layer
    counts = [round(b / layer) for _, b in models]
    # 0.25-2x of 32 MB: 4 .. 31 layers (8 MB .. 64 MB), increasing
    assert counts[0] == 4 and counts[-1] == 31 and counts == sorted(set(counts))
    for m, b in models[:2]:
        assert b == counts[models.index((m, b))] * layer
        rep = analyze(m)
        assert sum(n.cost.params for n in rep.nodes) == b // 4


def test_measure_fits_a_timer_that_follows_the_form():
    # the timer: the form for the chains (all MatMuls, their weights counted from the model), the
    # GEMV (about 64 MB) at 40 GB/s plus a 1 us dispatch
    _, gemv_bytes = cold_cache.gemv_model(32e6)

    def timer(m):
        if len(m.graph.node) >= 2 and all(n.op_type == "MatMul" for n in m.graph.node):
            w = 4.0 * sum(int(np.prod(t.dims)) for t in m.graph.initializer)
            return float(_form(w, cap=20e6, p=4.0))
        return gemv_bytes / 40e9 + 1e-6

    out = cold_cache.measure(timer, 32e6, dispatch_s=1e-6)
    assert out["cold_weight_bw_gbs"] == pytest.approx(40.0, rel=1e-6)
    assert out["llc_step_power"] == 4.0
    assert out["llc_effective_bytes"] == pytest.approx(20e6, rel=0.05)


def test_the_activations_a_run_writes_share_the_cache_with_its_weights():
    # 5 MB of weights alone: (0.2)^6 -> none cold; with 20 MB of activations written the run
    # sweeps 25 MB through the cache: half the weights cold (the penalty stays on the weights)
    assert cpu_cold.cold_share(CAP, 5e6) == 0.0
    assert cpu_cold.cold_share(CAP, 5e6, activation_bytes=20e6) == pytest.approx(0.5)
    assert not cpu_cold.applies(CAP, np.array([5e6]))
    assert cpu_cold.applies(CAP, np.array([5e6]), activation_bytes=20e6)
    # no weights: nothing to charge, whatever the activations
    assert not cpu_cold.applies(CAP, np.array([0.0]), activation_bytes=1e9)


def test_a_models_activations_count_toward_its_cold_share(tmp_path):
    # MatMul x[1,256] @ W[256,512] (524,288 weight bytes, y 2,048 B written) beside a Relu over
    # z[1,262144] (1,048,576 B written): the run sweeps 1,574,912 B through the cache. With the
    # effective capacity there (p 6) half the weights are cold; by the weights alone
    # (524,288 / 1,574,912)^6 = 0.0014: none. Half the MatMul's cold extra: compute 262,144 /
    # 0.25e12 = 1.048576 us, hot memory 527,360 / 12.5e9 = 42.1888 us, cold 524,288 / 5e9 =
    # 104.8576 us -> 0.5 * (1.048576 - 42.1888 + 104.8576) us = 31.858688 us
    from onnx import TensorProto, helper, numpy_helper

    from analyzer import analyze
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.profile_docs import calibrated_doc

    w = numpy_helper.from_array(np.ones((256, 512), np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm"),
                           helper.make_node("Relu", ["z"], ["r"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 262144])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 512]),
                           helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 262144])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8

    def latency(cap):
        doc = calibrated_doc(1)
        doc["calibration"].update(run_overhead_us=0.0, llc_bytes=32e6, cold_weight_bw_gbs=5.0,
                                  llc_effective_bytes=cap, llc_step_power=6.0)
        doc["calibration"]["tables"] = {"gemm": {"floor_us": 0.0, "e_c": 1.0, "e_bw": 1.0, "b_half_bytes": 0.0}}
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
        return analyze(m, hw=write_profile(doc, tmp_path / f"cal{cap:g}.toml"), runtime="onnxruntime").predictions[0]

    half, none = latency(1574912.0), latency(1e12)
    assert half.latency_s - none.latency_s == pytest.approx(31.858688e-6, rel=1e-6)
    assert any("50% of the weights overflow" in n for n in half.notes)
