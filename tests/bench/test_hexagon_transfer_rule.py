"""bench/hexagon_transfer.py's adoption rules check every condition they state, and
bench/hexagon_changes.py's closed-form factors.

Scores are MAPE points as the script rounds them (0.1). The base: LOFO 24.2, LOMO 22.3, in-sample
19.4, pooled W8A8 LOFO 32.3, cells 21.4 / 32.8 / 21.2 / 31.9 (an earlier shipped line's scores).
"""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("pandas")
pytest.importorskip("scipy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

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
