"""PyTorch's gather on Hopper (``prediction.gather_latency``): the id load before the row load adds
one dependent load's latency per kernel, and the vectorized gather streams at 1 / RATE of a copy."""

from __future__ import annotations

import dataclasses

import onnx
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
import hardware_db
from analyzer.prediction import gather_latency as gl

H200 = "h200-sxm"   # 132 SMs, 1.98 GHz (the profile's clock), nvidia-hopper


def _lookup(ids: int, rows: int, width: int, dtype=onnx.TensorProto.BFLOAT16):
    node = helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)
    return graph([node], {"table": ((rows, width), dtype), "ids": ((ids,), onnx.TensorProto.INT64)}, ["y"])


def _pred(model, hw=H200, runtime="kernel", l2="warm"):
    return analyzer.analyze(model, hw=[hw], runtime=runtime, l2=l2).predictions[0]


def test_constants_in_cycles_and_seconds():
    assert gl.DEP_CYCLES == {"warm": 424.0, "cold": 2241.0} and gl.RATE == 1.142
    prof = hardware_db.get(H200)
    # 424 / 1.98 GHz = 214.14 ns (an L2 hit); 2241 / 1.98 GHz = 1.13182 us (flushed)
    assert gl.profile_terms(prof, 1.98e9, cold=False) == pytest.approx((214.1414e-9, 1.142), rel=1e-6)
    assert gl.profile_terms(prof, 1.98e9, cold=True) == pytest.approx((1.131818e-6, 1.142), rel=1e-6)
    assert gl.profile_terms(hardware_db.get("a100-80gb-sxm"), 1.41e9, cold=True) == (0.0, 1.0)
    assert gl.profile_terms(dataclasses.replace(prof, family="nvidia-hopper-pytorch2.3"), 1.98e9, True) == (0.0, 1.0)


def test_closed_form_2048_ids_4096_wide_flushed_on_h200():
    # bf16 [32000, 4096] table, 2048 ids: bytes = 2 x 2048 x 4096 x 2 + 2048 x 8 = 33,570,816 B.
    # Hopper elementwise set: DRAM (33,570,816 + 177.1 B) / 4.8 TB/s = 6.99396 us (cold: e_bw 1, no
    # cache share), per-SM 33,570,816 B / 37.1915 TB/s = 0.90265 us, floor 2062 cycles = 1.04136 us.
    # memory = 1.142 x (6.99396 + 0.90265) + 2241 / 1.98 GHz = 9.01793 + 1.13182 = 10.14975 us;
    # kernel = 1.04136 + 10.14975 = 11.1911 us (measured on the H200: 11.36 us; without the term 8.94)
    p = _pred(_lookup(2048, 32000, 4096), l2="cold")
    d = p.kernel_table.detail(0)
    assert d["bytes"] == 33_570_816 and d["cache_share"] == 0.0
    assert d["gather_rate"] == 1.142 and d["gather_dep_s"] == pytest.approx(2241 / 1.98e9, rel=1e-9)
    assert d["memory_s"] == pytest.approx(1.142 * (d["dram_s"] + d["sm_s"]) + 2241 / 1.98e9, rel=1e-9)
    assert d["dram_s"] == pytest.approx(6.99396e-6, rel=1e-5) and d["sm_s"] == pytest.approx(0.90265e-6, rel=1e-4)
    assert p.latency_s == pytest.approx(11.1911e-6, rel=1e-4)


def test_small_index_takes_the_round_trip_not_the_rate():
    # 16 ids (indexSelectSmallIndex): its loop (15 x 998 cycles) and one L2 round trip, rate 1
    d = _pred(_lookup(16, 32000, 4096)).kernel_table.detail(0)
    assert d["gather_rate"] == 1.0 and d["gather_dep_s"] == pytest.approx(424 / 1.98e9, rel=1e-9)
    assert d["memory_s"] == pytest.approx(d["dram_s"] + d["sm_s"] + 15 * 998 / 1.98e9 + 424 / 1.98e9, rel=1e-9)


def test_a_row_not_a_multiple_of_16_bytes_streams_at_the_copy_rate():
    # 1001 bf16 = 2002 B: not the vectorized gather (indexSelectLargeIndex), no rate; the id load still first
    d = _pred(_lookup(128, 4096, 1001)).kernel_table.detail(0)
    assert d["gather_rate"] == 1.0 and d["gather_dep_s"] > 0


@pytest.mark.parametrize("hw, runtime", [(H200, "xla"), (H200, "onnxruntime"), ("a100-80gb-sxm", "kernel"),
                                         ("b200", "kernel"), ("mi300x", "kernel")])
def test_other_runtimes_and_families_are_unchanged(hw, runtime):
    kt = _pred(_lookup(2048, 32000, 4096), hw=hw, runtime=runtime).kernel_table
    k = next(i for i, c in enumerate(kt.op_class) if c == "gather")
    d = kt.detail(k)
    assert d["gather_dep_s"] == 0.0 and d["gather_rate"] == 1.0


def test_the_2024_kernels_variant_is_unchanged():
    prof = dataclasses.replace(hardware_db.get(H200), family="nvidia-hopper-pytorch2.3")
    d = _pred(_lookup(2048, 32000, 4096), hw=prof).kernel_table.detail(0)
    assert d["gather_dep_s"] == 0.0 and d["gather_rate"] == 1.0


# H200 SXM rows (bench/data/hopper_mem/h200_ops_2026-12-04.csv, bf16, V = 32000; fitted on):
# (ids, width, kernel_sum_us warm, kernel_sum_l2cold_us)
H200_ROWS = [(128, 1024, 1.344, 2.272), (512, 4096, 2.656, 4.448), (2048, 4096, 6.72, 11.36),
             (32768, 8192, 281.072, 281.983), (1, 1024, 1.44, 1.92)]   # (1 id, 4096 wide: -21 % warm)


@pytest.mark.parametrize("ids, width, warm_us, cold_us", H200_ROWS)
def test_recorded_h200_rows_within_15_percent(ids, width, warm_us, cold_us):
    for l2, want in (("warm", warm_us), ("cold", cold_us)):
        got = _pred(_lookup(ids, 32000, width), l2=l2).latency_s
        assert got == pytest.approx(want * 1e-6, rel=0.15), (ids, width, l2)


def test_eager_op_runs_it_too():
    d = _pred(_lookup(2048, 32000, 4096), runtime="eager-op").kernel_table.detail(0)
    assert d["gather_rate"] == 1.142 and d["gather_dep_s"] == pytest.approx(424 / 1.98e9, rel=1e-9)


def test_search_scores_equal_analyze():
    assert_search_scores_equal_analyze(_lookup(2048, 32000, 4096), H200, "kernel")
    assert_search_scores_equal_analyze(_lookup(16, 32000, 4096), H200, "kernel")


def test_explain_shows_both_factors_and_its_terms_give_the_memory_time():
    from analyzer.render.explain import render_explain
    rep = analyzer.analyze(_lookup(2048, 32000, 4096), hw=[H200], runtime="kernel", l2="cold")
    e = rep.predictions[0].explain(0)
    assert e.gather_rate == 1.142 and e.gather_dep_s == pytest.approx(2241 / 1.98e9, rel=1e-9)
    assert e.memory_s == pytest.approx(e.runs * (e.gather_rate * (e.dram_s + e.sm_s) + e.gather_dep_s), rel=1e-6)
    assert e.time_s == pytest.approx(e.fixed_s + e.memory_s, rel=1e-6)
    text = render_explain(rep, 0)
    assert "gather rate 1.142 x" in text and "id load before the row 1.13 µs" in text
