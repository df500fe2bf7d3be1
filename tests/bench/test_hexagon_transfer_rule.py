"""bench/hexagon_transfer.py's adoption rules check every condition they state, and
bench/hexagon_changes.py's closed-form factors.

Scores are MAPE points as the script rounds them (0.1). The base: LOFO 24.2, LOMO 22.3, in-sample
19.4, pooled W8A8 LOFO 32.3, cells 21.4 / 32.8 / 21.2 / 31.9 (an earlier shipped line's scores).
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pandas")
pytest.importorskip("scipy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import hexagon_changes as C  # noqa: E402
import hexagon_transfer as T  # noqa: E402

CELLS = {"g2 fp16": 21.4, "g2 int8": 32.8, "g3 fp16": 21.2, "g3 int8": 31.9}
BASE = {"lofo": 24.2, "lomo": 22.3, "insample": 19.4, "int8": 32.3, "cells": CELLS}


def _s(**kw):
    return {**BASE, **kw}


def test_hw_rule_each_condition():
    hw = T.RULES["hw"]
    # LOFO 24.2 - 1 = 23.2 exactly passes; 23.3 does not
    assert T.adopted(_s(lofo=23.2), BASE, hw)
    assert not T.adopted(_s(lofo=23.3), BASE, hw)
    # LOMO not worse: 22.3 passes, 22.4 fails
    assert not T.adopted(_s(lofo=23.0, lomo=22.4), BASE, hw)
    # in-sample at most 1 above: 19.4 + 1 = 20.4 passes, 20.5 fails
    assert T.adopted(_s(lofo=23.0, insample=20.4), BASE, hw)
    assert not T.adopted(_s(lofo=23.0, insample=20.5), BASE, hw)
    # no cell condition in this rule: a cell 10 points worse still passes
    assert T.adopted(_s(lofo=23.0, cells={**CELLS, "g2 int8": 42.8}), BASE, hw)


def test_transfer_rule_checks_cells_not_int8():
    tr = T.RULES["transfer"]
    # LOMO slack 0.5: 22.8 passes, 22.9 fails
    assert T.adopted(_s(lofo=23.0, lomo=22.8), BASE, tr)
    assert not T.adopted(_s(lofo=23.0, lomo=22.9), BASE, tr)
    # a cell 2.0 above passes, 2.1 above fails (32.8 + 2.1 = 34.9)
    assert T.adopted(_s(lofo=23.0, cells={**CELLS, "g2 int8": 34.8}), BASE, tr)
    assert not T.adopted(_s(lofo=23.0, cells={**CELLS, "g2 int8": 34.9}), BASE, tr)
    # the W8A8 rows are not this rule's: worse W8A8 still passes
    assert T.adopted(_s(lofo=23.0, int8=40.0), BASE, tr)


def test_int8_rule_needs_the_w8a8_rows_better():
    q = T.RULES["int8"]
    assert T.adopted(_s(lofo=23.0, int8=32.2), BASE, q)
    assert not T.adopted(_s(lofo=23.0, int8=32.3), BASE, q)   # equal is not better


def test_rule_of_candidates():
    assert T.rule_of("dwq, stream: a kernel over the budget streams all its activations (no spill)") is T.RULES["int8"]
    assert T.rule_of("dwq, bnq: W8A8 standalone BatchNorm adds 2 elementwise kernels") is T.RULES["int8"]
    assert T.rule_of("dwq, mib, dil") is T.RULES["hw"]
    assert T.rule_of("dwq, dil: x") is T.RULES["hw"]
    assert T.rule_of("dwq, ecap 2") is T.RULES["transfer"]


def test_dilated_work_factor_closed_form():
    w = (64, 64, 3, 3)
    assert C.dilated({}, w) == 1.0
    assert C.dilated({"dilations": [1, 1]}, w) == 1.0
    assert C.dilated({"dilations": [2, 2]}, w) == pytest.approx(25 / 9)   # (1 + 2 x 2) / 3, squared
    assert C.dilated({"dilations": [4, 4]}, w) == pytest.approx(9.0)      # (1 + 4 x 2) / 3, squared
    assert C.dilated({"dilations": [4, 4]}, (64, 64, 1, 1)) == 1.0        # a 1x1 has no gaps


def test_padded_work_factor_closed_form():
    # 3 -> 4 input and 6 -> 8 output channels: (4 / 3) x (8 / 6) = 16 / 9
    assert C.padded(4)({}, (6, 3, 3, 3)) == pytest.approx(16 / 9)
    # depthwise (group = out channels, 1 input channel per group): unchanged
    assert C.padded(4)({"group": 6}, (6, 1, 3, 3)) == 1.0


def test_mib_budget_is_8_mib_in_the_profiles_unit():
    assert C.MIB_MB * 1e6 == 8 * 1024 * 1024 == 8_388_608


def _one_movement_kernel_row():
    """One 8 Gen 3 int8 row, one data-movement kernel (group 3), no work, one launch: M = 2e-3 s of
    DRAM bytes (over the budget and weights) and O = 1e-3 s of bytes kept on chip (datasheet seconds)."""
    import numpy as np
    import pandas as pd

    rows = pd.DataFrame([{"model_id": "m", "opcost_profile": "hexagon-sd8gen3", "precision": "int8",
                          "runtime": "tflite", "inference_time_ms": 1.0}])
    feats = {("m", "hexagon-sd8gen3", "int8"): (np.array([3]), np.array([0.0]), np.array([2e-3]), np.array([1.0]),
                                                np.array([1e-3]), np.array([0.0]))}
    z = np.zeros(2)
    P = {k: z.copy() for k in ("e_dw", "bw_mat", "bw_ew", "t0_fp16", "t0_int8", "d_fp16", "d_int8", "kfix")}
    P.update(e_mat=np.ones(2), bw_move=np.full(2, 0.004), c_act=np.full(2, 0.0135))
    return T.rows_of(rows, feats), P


def test_movement_at_its_onchip_rate_closed_form():
    """e_move = 0.004, c_act = 0.0135. Shipped: (M + c O) / e_move = (2e-3 + 1.35e-5) / 0.004
    = 0.503375 s. mvo: max(c (M + O) / e_move, M) = max(0.0135 x 3e-3 / 0.004, 2e-3) = max(10.125e-3,
    2e-3) = 10.125 ms; mvs: 10.125e-3 + 2e-3 = 12.125 ms."""
    import pytest

    D, P = _one_movement_kernel_row()
    assert T.times(D, P, 0.3)[0] == pytest.approx(0.503375, rel=1e-9)
    assert T.times(D, P, 0.3, {"mv": "max"})[0] == pytest.approx(10.125e-3, rel=1e-9)
    assert T.times(D, P, 0.3, {"mv": "sum"})[0] == pytest.approx(12.125e-3, rel=1e-9)
    assert T.rule_of("dwq, mvo: data movement at its on-chip rate, DRAM overlapped") is T.RULES["transfer"]


def test_fitted_movement_range_is_the_transfer_record():
    """qnn.FITTED_MOVE_DRAM_B is the largest data-movement DRAM bytes per launch of the fitted rows,
    as bench/hexagon_transfer.py recorded it (bench/results/hexagon_transfer.json)."""
    import json

    from analyzer.prediction.accelerators import qnn

    with open(os.path.join(ROOT, "bench", "results", "hexagon_transfer.json"), encoding="utf-8") as fh:
        assert json.load(fh)["largest_move_dram_bytes"] == qnn.FITTED_MOVE_DRAM_B
