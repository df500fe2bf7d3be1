"""bench/fit_efficiency.py can fit a set with its floor held (``hold``), as its ``--floor`` modes
other than "own" do to fit each family at the pooled floor analyze applies: the held constants
come back as given and the free ones are fitted around them."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

pd = pytest.importorskip("pandas")
pytest.importorskip("scipy")

import fit_efficiency as fe  # noqa: E402

A100 = {"matrix_peak": 312e12, "vector_peak": 19.5e12, "mem_bw": 2039e9, "units": 108.0, "l2_bytes": 40e6,
        "clock_hz": 1.41e9}
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


def test_a_held_floor_is_kept_and_the_rate_is_fitted_around_it():
    data = [(rows(A100), A100)]
    right = FLOOR_CYCLES / A100["clock_hz"]
    consts, err = fe.fit_memory_class("gather", data, per_element=True, hold={"floor_s": right})
    assert consts["floor_s"] == right and consts["bpc"] == pytest.approx(BPC, rel=1e-3) and err["mape"] < 0.1
    # a floor 30 % too high is held all the same: the fit cannot undo it, the small rows are over-predicted
    high, _ = fe.fit_memory_class("gather", data, per_element=True, hold={"floor_s": 1.3 * right})
    assert high["floor_s"] == 1.3 * right
    assert fe._loss("gather", high, data) > fe._loss("gather", consts, data)

