"""PyTorch's small-index gather (``prediction.small_index``): an index_select of 16 ids or fewer
steps through its ids in every thread; the serial steps beyond the first cost ITER_CYCLES each."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
import hardware_db
from analyzer.prediction import small_index as si
from analyzer.prediction.efficiency import kernel_time as eff

A100 = "a100-80gb-sxm"   # 108 SMs, 1.41 GHz


def _lookup(ids: int, rows: int, width: int, dtype=onnx.TensorProto.FLOAT16):
    node = helper.make_node("Gather", ["table", "ids"], ["y"], axis=0)
    return graph([node], {"table": ((rows, width), dtype), "ids": ((ids,), onnx.TensorProto.INT64)}, ["y"])


@pytest.mark.parametrize("ids, width, units, steps", [
    (16, 4096, 108, 16),      # grid min(ceil(4096/128) = 32, 864) x 128 threads = 4096: 1 step per id
    (17, 4096, 108, 0),       # more than 16 ids: the large-index / gather kernel, no loop
    (1, 4096, 108, 1),
    (4, 131072, 108, 8),      # grid min(1024, 864) = 864 x 128 = 110,592 < 131,072: 2 steps per id
    (4, 131072, 0, 4),        # SM count unknown: no cap, 1 step per id
    (16, 64, 108, 16),        # grid 1 x 64 threads: 1 step per id
])
def test_steps_per_thread(ids, width, units, steps):
    assert si.steps(ids, width, units) == steps


def test_closed_form_16_ids_on_a100():
    # D = 4096: 16 steps, 15 beyond the first: 15 x 998 cycles / 1.41 GHz = 10.617 us
    want = 15 * 998.0 / 1.41e9
    assert si.ITER_CYCLES == 998.0 and want == pytest.approx(10.617e-6, rel=1e-4)
    rep = analyzer.analyze(_lookup(16, 1024, 4096), hw=[A100], runtime="kernel")
    kt = rep.predictions[0].kernel_table
    assert float(kt.feats["index_ids"][0]) == 16 and float(kt.feats["index_slice"][0]) == 4096
    d = kt.detail(0)
    assert d["index_loop_s"] == pytest.approx(want, rel=1e-9)
    assert float(kt.time[0]) == pytest.approx(d["floor_s"] + d["memory_s"], rel=1e-6)
    assert d["memory_s"] == pytest.approx(_memory_without_loop(kt, 0) + want, rel=1e-9)


def _memory_without_loop(kt, k: int) -> float:
    """Kernel ``k``'s memory time from ``kernel_time`` without the small-index features and scalar."""
    feats = {n: np.asarray(v)[k:k + 1] for n, v in kt.feats.items() if n not in ("index_ids", "index_slice")}
    consts = {n: v for n, v in kt.class_consts.items() if n != "index_iter_s"}
    hw_d = {"matrix_peak": float(kt.matrix_peak[k]), "vector_peak": float(kt.vector_peak[k]),
            "mem_bw": kt.mem_bw, "units": kt.units, "l2_bytes": kt.l2_bytes}
    return float(eff.kernel_time(np, feats, hw_d, consts)["memory_s"][0])


def test_closed_form_grid_capped_on_a100():
    # D = 131,072 fp32 elements, 4 ids: 8 steps, 7 x 998 / 1.41 GHz = 4.9546 us, whatever the dtype
    for dtype in (onnx.TensorProto.FLOAT16, onnx.TensorProto.FLOAT):
        d = analyzer.analyze(_lookup(4, 64, 131072, dtype), hw=[A100], runtime="kernel") \
            .predictions[0].kernel_table.detail(0)
        assert d["index_loop_s"] == pytest.approx(7 * 998.0 / 1.41e9, rel=1e-9)


def test_17_ids_have_no_loop_and_the_term_is_the_whole_difference(monkeypatch):
    big = analyzer.analyze(_lookup(17, 1024, 4096), hw=[A100], runtime="kernel").predictions[0]
    # 17 ids: the feature names the gather (``gather_latency`` prices it), the loop is off
    assert float(big.kernel_table.feats["index_ids"][0]) == 17 and big.kernel_table.detail(0)["index_loop_s"] == 0
    small = analyzer.analyze(_lookup(16, 1024, 4096), hw=[A100], runtime="kernel").predictions[0].latency_s
    monkeypatch.setattr(si, "ITER_CYCLES", 0.0)
    plain = analyzer.analyze(_lookup(16, 1024, 4096), hw=[A100], runtime="kernel").predictions[0].latency_s
    assert small - plain == pytest.approx(15 * 998.0 / 1.41e9, rel=1e-5)


def test_eager_runs_it_too():
    d = analyzer.analyze(_lookup(8, 1024, 4096), hw=[A100], runtime="eager-op").predictions[0] \
        .kernel_table.detail(0)
    assert d["index_loop_s"] == pytest.approx(7 * 998.0 / 1.41e9, rel=1e-9)


@pytest.mark.parametrize("hw, runtime", [(A100, "xla"), (A100, "onnxruntime"), ("mi300x", "kernel"),
                                         ("tpu-v6e", "xla")])
def test_other_runtimes_and_devices_are_unchanged(hw, runtime):
    kt = analyzer.analyze(_lookup(16, 1024, 4096), hw=[hw], runtime=runtime).predictions[0].kernel_table
    k = next(i for i, c in enumerate(kt.op_class) if c == "gather")
    d = kt.detail(k)
    assert d["index_loop_s"] == 0.0 and _memory_without_loop(kt, k) == d["memory_s"]


def test_profile_term():
    assert si.profile_term(hardware_db.get(A100), 1.41e9) == 998.0 / 1.41e9
    assert si.profile_term(hardware_db.get("mi300x"), 2.1e9) == 0.0
    assert si.profile_term(hardware_db.get(A100), 0.0) == 0.0


def test_search_scores_equal_analyze_with_the_loop():
    assert_search_scores_equal_analyze(_lookup(16, 1024, 4096), A100, "kernel")
    assert_search_scores_equal_analyze(_lookup(17, 1024, 4096), A100, "kernel")


def test_explain_shows_the_loop_and_its_terms_give_the_memory_time():
    from analyzer.render.explain import render_explain
    rep = analyzer.analyze(_lookup(16, 1024, 4096), hw=[A100], runtime="kernel")
    e = rep.predictions[0].explain(0)
    want = 15 * 998.0 / 1.41e9          # 15 steps past the first, 998 cycles at 1.41 GHz
    assert e.index_loop_s == pytest.approx(want, rel=1e-9)
    inner = max(e.dram_s, e.sm_s) if e.sm_overlap else e.dram_s + e.sm_s
    assert e.memory_s == pytest.approx(e.runs * (inner + e.index_loop_s), rel=1e-6)
    text = render_explain(rep, 0)
    assert "index loop" in text and "each thread steps through every id" in text
