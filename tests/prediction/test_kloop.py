"""The serial k loop's bound on a tiled class's matrix time (``efficiency.tiles.kloop_bound``):
``k x kloop_cycles / clock``, their max with the tiles' time (or the sum, ``kloop_sum``), the clock
conversion (``with_clock``), off in every shipped file, and ``--explain``'s lines giving the time."""

import os

import numpy as np
import pytest

import analyzer
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.render.explain import render_explain

from kloop_files import conv_1x1, write_kloop_files

C = len(eff.OP_CLASSES)
CONV = eff.CLASS_CODE["conv_simt"]
H200, CLOCK = "h200-sxm", 1.98e9   # (the profile's clock_ghz)


def _arrays(kloop_s: float, kloop_sum: float = 0.0) -> dict:
    """conv_simt untiled at e_compute 0.5, no memory time, no floor; its k loop ``kloop_s`` a step."""
    a = {p: np.zeros(C) for p in eff.CLASS_PARAMS}
    a["e_compute"][:] = a["e_bw"][:] = 0.5
    a["kloop_s"][CONV], a["kloop_sum"][CONV] = kloop_s, kloop_sum
    return dict(a, trans_weight=1.0)


def _time(arrays, k: float) -> dict:
    feats = {"op_class": np.array([CONV]), "mac_flops": np.array([1e9]), "bytes": np.array([0.0]),
             "m": np.array([196.0]), "n": np.array([256.0]), "k": np.array([k]), "batch": np.array([1.0])}
    hw = {"matrix_peak": 1e13, "vector_peak": 1e13, "mem_bw": 1e12}
    return {n: float(v[0]) for n, v in eff.kernel_time(np, feats, hw, arrays, detail=True).items()}


def test_the_k_loop_bounds_the_matrix_time_from_below():
    # tiles: 1e9 / (1e13 x 0.5) = 200 us; k loop 2048 x 0.2 us = 409.6 us > 200 us: the k loop
    t = _time(_arrays(0.2e-6), 2048.0)
    assert t["tiles_s"] == pytest.approx(200e-6) and t["kloop_s"] == pytest.approx(409.6e-6)
    assert t["compute_s"] == pytest.approx(409.6e-6) and t["time_s"] == pytest.approx(409.6e-6)
    # a shallow product: k loop 512 x 0.2 us = 102.4 us < 200 us: the tiles' time
    assert _time(_arrays(0.2e-6), 512.0)["compute_s"] == pytest.approx(200e-6)
    # kloop_sum: 200 + 102.4 us
    assert _time(_arrays(0.2e-6, 1.0), 512.0)["compute_s"] == pytest.approx(302.4e-6)
    # off (0): the tiles' time, no k-loop detail
    off = _time(_arrays(0.0), 2048.0)
    assert off["compute_s"] == pytest.approx(200e-6) and off["kloop_s"] == 0.0 and off["kloop_k"] == 0.0


def test_with_clock_turns_cycles_into_seconds():
    a = {p: np.zeros(C) for p in eff.FILE_PARAMS}
    a["kloop_cycles"][CONV] = 45.0
    assert eff.with_clock(a, CLOCK)["kloop_s"][CONV] == pytest.approx(45.0 / 1.98e9)   # 22.73 ns
    assert eff.with_clock(a, 0.0)["kloop_s"][CONV] == 0.0   # (no clock: off)


def test_no_shipped_family_sets_a_k_loop():
    # the one fit scored (bench/hopper_conv_simt.py, H200) did not pass its rule: off everywhere
    for name in os.listdir(fc.EFFICIENCY_DIR):
        if name.endswith(".json") and name != "schema.json":
            assert not fc.load_constants(name[:-5]).arrays["kloop_cycles"].any(), name


def test_explain_prints_the_k_loop_and_its_terms_give_the_time(tmp_path, monkeypatch):
    write_kloop_files(str(tmp_path))
    monkeypatch.setattr(fc, "EFFICIENCY_DIR", str(tmp_path))
    rep = analyzer.analyze(conv_1x1(), hw=[H200], precision="fp32")
    e = rep.predictions[0].explain(0)
    assert e.op_class == "conv_simt"
    assert e.kloop_k == 1024 and e.kloop_step_s == pytest.approx(45.0 / CLOCK)
    assert e.kloop_s == pytest.approx(1024 * 45.0 / 1.98e9)            # 23.27 us
    assert e.matrix_s == pytest.approx(max(e.tiles_s, e.kloop_s)) and e.kloop_s > e.tiles_s
    assert e.time_s == pytest.approx(e.fixed_s + max(e.compute_s, e.memory_s))
    text = render_explain(rep, 0)
    assert "matrix = max(tiles" in text and "k loop = k 1024 x 22.7 ns a step" in text
