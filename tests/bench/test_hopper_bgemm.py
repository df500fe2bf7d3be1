"""bench/hopper_bgemm.py: the Hopper-only bgemm set (a warm start and a cache share) on the H200's
batched GEMM rows: the evaluator is analyze, the held constants are the gemm set's, the rule."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("scipy")

import hopper_bgemm as hb


def _doc() -> dict:
    with open(os.path.join(hb._dir(), "nvidia-hopper.json"), encoding="utf-8") as f:
        return json.load(f)


def test_the_set_holds_the_gemm_sets_constants_and_states_its_own():
    # a refit of the Hopper gemm set (bench/fit_efficiency.py) without bench/hopper_bgemm.py --write fails here
    sets = _doc()["sets"]
    g, b = sets["gemm"]["constants"], sets["bgemm"]["constants"]
    assert {k: v for k, v in b.items() if k not in ("l2_hit", "l2_gain", "l2_floor")} == \
        {k: v for k, v in g.items() if k not in ("floor_clock_hz", "l2_hit", "l2_gain")}
    # fitted on the 72 warm rows (2026-12-04): share 0.4749 of an L2-resident working set skips DRAM,
    # a warm start takes 0.2476 of the floor; no floor_clock_hz: the pooled GEMM floor, not pooled itself
    assert (b["l2_hit"], b["l2_floor"], b["l2_gain"]) == (0.4749, 0.2476, 0.0)
    assert "floor_clock_hz" not in b and sets["bgemm"]["provenance"]["rows"] == 72
    assert hb.shipped() == {"l2_hit": 0.4749, "l2_gain": 0.0, "l2_floor": 0.2476}


def test_the_evaluator_is_analyze_on_the_rows_of_one_group():
    data = [r for r in hb.bmm_rows() if hb.group(r) == "qk 512"]
    assert len(data) == 24   # 2 dtypes x 2 head sizes x 3 batches, each warm and flushed
    hb.check(data, hb.hg.stack(data))   # raises where a row differs from analyze by over 1e-4
    b = hb.hg.stack(data)
    # today's form (no bgemm constants): the flushed and warm rows alike; the committed set moves only warm
    today, now = hb.predict(b, {}), hb.predict(b, hb.shipped())
    cold = np.array([r.l2 == "cold" for r in data])
    assert np.allclose(today[cold], now[cold]) and (now[~cold] < today[~cold]).all()


def test_the_rule():
    e = {"today": (np.array([0.3]), {}, np.array([0.06])),
         "cache: l2_hit": (np.array([0.14]), {}, np.array([0.06])),
         "floor + l2_hit": (np.array([0.104]), {}, np.array([0.088])),      # flushed 2.8 points worse: out
         "warm + l2_hit": (np.array([0.1049]), {}, np.array([0.06])),
         "warm + both": (np.array([0.1046]), {}, np.array([0.06]))}        # ties at 10.5 %: fewer constants
    assert hb.choose(e) == "warm + l2_hit"


def test_what_the_rows_measure():
    # the median replay gap (graph_x20 - kernel sum) and cold start (flushed - warm), bmm rows under 3 us
    assert hb.gaps()[2] == "| 0-3 us | 16 | 0.51 us | 0.69 us |"
