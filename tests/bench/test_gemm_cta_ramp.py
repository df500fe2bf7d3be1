"""bench/gemm_cta_ramp.py: the tried ramp form reduces to the shipped kernel time at c_half 0,
slows a small grid more than a large one, leaves the fit's functions as they were after use, and
its adoption rule checks all three conditions it states."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pandas")
pytest.importorskip("scipy")

import fit_neusight as fns
import gemm_cta_ramp as R
import pandas as pd


def _rows(shapes):
    """nn.Linear rows (m, n, k) as neusight_data.load gives their features."""
    m, n, k = (np.array(v, dtype=float) for v in zip(*shapes))
    z = np.zeros(len(m))
    return pd.DataFrame({"cls": "gemm_simt", "mac": 2 * m * n * k, "vec": m * k, "trans": z, "bytes": 4 * (m * k + k * n + m * n),
                         "m": m, "n": n, "k": k, "batch": np.ones(len(m)), "device_system": "a100_pcie_40gb",
                         **{f"cudnn_b{j}": np.full(len(m), np.nan) for j in range(3)}})


def _arr(c_half):
    s = dict(fns._mat_set({"e_compute": 0.8}, (64.0, 64.0)), c_half=c_half)
    return R.arrays_of({"gemm_simt": s})


def test_zero_c_half_is_the_shipped_kernel_time():
    df = _rows([(256, 256, 256), (4096, 4096, 4096)])
    base = fns.kernel_s(df, "a100_pcie_40gb", fns.arrays_of({"gemm_simt": fns._mat_set({"e_compute": 0.8}, (64.0, 64.0))}))
    assert np.allclose(R.kernel_s(df, "a100_pcie_40gb", _arr(0.0)), base)


def test_the_ramp_slows_a_small_grid_more():
    df = _rows([(256, 256, 4096), (8192, 8192, 4096)])
    base, ramp = R.kernel_s(df, "a100_pcie_40gb", _arr(0.0)), R.kernel_s(df, "a100_pcie_40gb", _arr(0.5))
    slow = ramp / base
    assert slow[0] > slow[1] > 1.0
    assert slow[1] < 1.01      # 8192 x 8192 on 64 x 64 tiles: 16384 tiles over 108 SMs, c about 152


def test_the_context_restores_the_fit_functions():
    with R.ramp(True):
        assert fns.kernel_s is R.kernel_s
    assert fns.kernel_s is R._KERNEL_S and fns.arrays_of is R._ARRAYS_OF


def test_the_rule_needs_all_three_conditions():
    base = {"mape": 10.0, "b1e+11": 4.0, "b1e+12": 10.0}
    assert R.adopt(base, {"mape": 10.5, "b1e+11": 4.0, "b1e+12": 5.0})
    assert not R.adopt(base, {"mape": 10.5, "b1e+11": 4.0, "b1e+12": 5.1})     # 4.9 points
    assert not R.adopt(base, {"mape": 10.6, "b1e+11": 4.0, "b1e+12": 0.0})     # MAPE +0.6
    assert not R.adopt(base, {"mape": 10.0, "b1e+11": -4.1, "b1e+12": 0.0})    # >= 1e11 |bias| rises
