"""A power-capped card's boost window (``kernel_time.boost_window``): a matrix kernel's first
``boost_window_s`` busy seconds at the boost clock, the rest at the sustained clock; the effective
clock over busy time T is s + (b - s) min(1, tau / T)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
import hardware_db
from analyzer.prediction import engines
from analyzer.prediction.efficiency import kernel_time as eff


def _arrays(r, tau):
    return {"boost_ratio": r, "boost_window_s": tau}


def test_closed_form_for_a_short_and_a_long_kernel():
    # boost 1.6 GHz, sustained 0.8 GHz (r = 2), window 0.1 ms
    a = _arrays(2.0, 1e-4)
    # 0.1 ms of work at the sustained clock: 0.05 ms at boost, inside the window
    assert eff.boost_window(np, np.array([1e-4]), a)[0] == pytest.approx(5e-5)
    # 1 ms at the sustained clock: 0.1 ms at boost (160 k cycles), the other 640 k cycles at 0.8 GHz
    # = 0.1 + 0.8 = 0.9 ms; the effective clock 0.8 + 0.8 x 0.1 / 0.9 GHz gives the same
    t = eff.boost_window(np, np.array([1e-3]), a)[0]
    assert t == pytest.approx(9e-4)
    assert 8e5 / (0.8e9 + 0.8e9 * 1e-4 / t) == pytest.approx(t)
    # the share explain prints, and no change without the arrays' terms or with r = 1
    assert eff.boost_share(np, np.array([t]), a)[0] == pytest.approx(0.9)
    assert eff.boost_window(np, np.array([1e-3]), {})[0] == 1e-3
    assert eff.boost_window(np, np.array([1e-3]), _arrays(1.0, 0.0))[0] == 1e-3


def _matmul(m):
    vi = helper.make_tensor_value_info
    n = helper.make_node("MatMul", ["a", "b"], ["y"], name="x0")
    g = helper.make_graph([n], "g", [vi("a", TensorProto.FLOAT, [m, 1024]), vi("b", TensorProto.FLOAT, [1024, 1024])],
                          [vi("y", TensorProto.FLOAT, [m, 1024])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_the_t4_profile_applies_its_window_to_matrix_kernels_only_where_set():
    t4 = hardware_db.get("t4")
    assert t4.boost_window_s and "fitted" in t4.sources["power.boost_window_s"]
    r, tau = engines.boost_terms(t4)
    assert r == pytest.approx(t4.clock_ghz / t4.sustained_clock_ghz) and tau == t4.boost_window_s
    bare = dataclasses.replace(t4, boost_window_s=None)
    assert engines.boost_terms(bare) == (1.0, 0.0)
    for m in (64, 16384):   # a kernel inside the window, one far beyond it
        e = analyzer.analyze(_matmul(m), hw=[t4], runtime="kernel").predictions[0].explain(0)
        b = analyzer.analyze(_matmul(m), hw=[bare], runtime="kernel").predictions[0].explain(0)
        assert b.clock == 1.0 and e.vector_s == pytest.approx(b.vector_s)
        expect = b.matrix_s / r if b.matrix_s / r <= tau else b.matrix_s - tau * (r - 1.0)
        assert e.matrix_s == pytest.approx(expect, rel=1e-6)
        assert e.clock == pytest.approx(expect / b.matrix_s, rel=1e-6)
    # the P4 has no fitted window: its whole kernel at the sustained clock
    assert engines.boost_terms(hardware_db.get("p4")) == (1.0, 0.0)
