"""The cold start (``cache_clock.cold_start``): a set whose floor was measured with the L2 warm adds
``cold_start_s x (1 - s)`` to its fixed cost, s the cache step (0 with the L2 flushed)."""

from __future__ import annotations

import pytest
from onnx_builders import one_node

import analyzer
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency.op_classes import CLASS_CODE

H200 = "h200-sxm"   # 50 MB L2 in the profile


def _add(n: int = 1024):
    return one_node("Add", (1, n), (1, n))


def _explain(model, hw=H200, l2=None):
    kw = {} if l2 is None else {"l2": l2}
    return analyzer.analyze(model, hw=[hw], runtime="kernel", precision="fp16", **kw).predictions[0].explain(0)


def test_a_flushed_add_on_hopper_pays_its_measured_cold_start():
    # Hopper's elementwise set: cold_start_s 0.528 us (the H200's flushed - warm kernel sums of adds
    # far under its L2, median). Flushed: s = 0, the whole of it; warm, 4 KiB against 50 MB:
    # s = 1 / (1 + (4096 / 50e6)^2) = 1 - 6.7e-9, none of it
    cold, warm = _explain(_add(), l2="cold"), _explain(_add())
    assert cold.cold_start_s == pytest.approx(0.528e-6, rel=1e-9)
    assert warm.cold_start_s == pytest.approx(0.0, abs=1e-14)
    assert cold.fixed_s - warm.fixed_s == pytest.approx(0.528e-6, rel=1e-6)


def test_a_fallback_class_does_not_take_its_sets_cold_start():
    # the gather takes Hopper's elementwise set by fallback, and its own cold id load
    # (prediction.gather_latency): not the add's cold start
    arr = fc.load_constants("nvidia-hopper").arrays
    assert arr["cold_start_s"][CLASS_CODE["elementwise"]] == 0.528e-6
    assert arr["cold_start_s"][CLASS_CODE["gather"]] == 0.0
    assert arr["cold_start_s"][CLASS_CODE["gemm"]] == 0.0                     # a replay-fitted floor
    assert fc.load_constants("nvidia-ampere").arrays["cold_start_s"].max() == 0.0
    bw = fc.load_constants("nvidia-blackwell").arrays["cold_start_s"]        # Hopper's softmax sets, inherited
    assert bw[CLASS_CODE["softmax_row"]] == 1.447e-6 and bw[CLASS_CODE["norm_row"]] == 0.0


def test_explain_prints_the_cold_start_on_the_fixed_line():
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze(_add(), hw=[H200], runtime="kernel", precision="fp16", l2="cold")
    assert "+ cold start 528 ns (the first loads wait for DRAM: not in the L2)" in render_explain(rep, 0)
