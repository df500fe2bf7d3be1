"""bench/fit_efficiency.py fits the gather class in the SM-bound form (``CLASS_FORM``): memory time
= max(DRAM term, per-SM term), the DRAM term's ramp and cache share held at 0.  Rows made with that
form on one device give back its rate per SM-cycle and floor, and the fitted set predicts another
device's rows of the same kernel (other SM count, clock and bandwidth) to the closed form."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("scipy")

import efficiency_class_fit as fe  # noqa: E402
from efficiency_data import predict  # noqa: E402

A100 = {"matrix_peak": 312e12, "vector_peak": 19.5e12, "mem_bw": 2039e9, "units": 108.0, "l2_bytes": 40e6,
        "clock_hz": 1.41e9}
A40 = {"matrix_peak": 150e12, "vector_peak": 37.4e12, "mem_bw": 696e9, "units": 84.0, "l2_bytes": 6e6,
       "clock_hz": 1.74e9}
BPC, FLOOR_CYCLES = 2.0, 3000.0   # bytes per SM-cycle, floor in cycles


def rows(hw):
    """fp16 embeddings, bytes = 4 M N + 8 M; t = floor + max(bytes / mem_bw, bytes / (units x clock x bpc))."""
    m = np.array([16, 64, 256, 1024, 4096, 16384] * 4, dtype=float)
    n = np.repeat([1024.0, 2048.0, 4096.0, 8192.0], 6)
    b = 4 * m * n + 8 * m
    t = FLOOR_CYCLES / hw["clock_hz"] + np.maximum(b / hw["mem_bw"], b / (hw["units"] * hw["clock_hz"] * BPC))
    z = np.zeros_like(b)
    return pd.DataFrame({"op": "embedding", "op_class": "gather", "mac": z, "vec": z, "trans": z, "bytes": b,
                         "m": m, "n": n, "k": z, "batch": 1.0, "t": t, "key": [f"{a}|{c}" for a, c in zip(m, n)]})


def test_the_gather_is_fitted_sm_bound_and_its_rate_per_sm_cycle_carries_to_another_device():
    # on the A100 the per-SM term is the larger for every row (108 x 1.41e9 x 2 = 304.6 GB/s < 2039);
    # on the A40 too (84 x 1.74e9 x 2 = 292.3 GB/s < 696): the A40 rows are predicted from the A100's
    # fit by its own SM count and clock, the floor 3000 cycles / 1.74 GHz = 1.724 us
    assert fe.CLASS_FORM["gather"] == "sm_bound"
    consts, err = fe.fit_memory_class("gather", [(rows(A100), A100)], per_element=True)
    assert consts["sm_overlap"] == 1.0 and consts["b_half_bytes"] == 0.0 and consts["l2_hit"] == 0.0
    assert consts["bpc"] == pytest.approx(BPC, rel=1e-3)
    assert consts["floor_s"] == pytest.approx(FLOOR_CYCLES / 1.41e9, rel=1e-2)
    assert err["mape"] < 0.1
    far = rows(A40)
    shipped = fe._arrays_with("gather", dict(consts, floor_clock_hz=A100["clock_hz"]))
    assert np.allclose(predict(far, A40, shipped), far.t.to_numpy(), rtol=2e-3)
    assert "SM-bound form" in fe.fit_method("gather", consts)
