"""The committed GPU accuracy must not get worse.

tests/fixtures/accuracy/cases.csv: 8 cases per group of bench/accuracy.py (public measurements
of shared/measurements/gpu and the held-out H100 check set), with their errors when they were
recorded (recorded.json, written by ``python bench/accuracy.py --write-guard
tests/fixtures/accuracy``). Each case is predicted again through ``analyzer.analyze`` exactly as
the bench does. No timing is measured here: the measured times are data.

Stated margins: the overall MAPE may not grow by more than 2 points, a group's by more than 5.
A change that makes predictions better passes; re-record with the command above to tighten.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures", "accuracy")
OVERALL_MARGIN, GROUP_MARGIN = 2.0, 5.0


@pytest.fixture(scope="module")
def scored():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import accuracy
    finally:
        sys.path.pop(0)
    cases = accuracy.read_cases(os.path.join(FIX, "cases.csv"))
    s = accuracy.score(cases)
    return accuracy, s


def _recorded():
    with open(os.path.join(FIX, "recorded.json")) as f:
        return json.load(f)


def test_overall_mape_does_not_get_worse(scored):
    accuracy, s = scored
    rec = _recorded()["overall"]
    now = accuracy.stats(s)
    assert now["rows"] == rec["rows"]
    assert now["mape"] <= rec["mape"] + OVERALL_MARGIN, (now["mape"], rec["mape"])


def test_no_group_gets_worse(scored):
    accuracy, s = scored
    now = {tuple(k): v for k, v in accuracy.table(s, ("source", "op_class", "timing"))}
    worse = []
    for key, rec in _recorded()["groups"]:
        got = now[tuple(key)]
        if got["mape"] > rec["mape"] + GROUP_MARGIN:
            worse.append(f"{'/'.join(key)}: MAPE {got['mape']:.1f}% (recorded {rec['mape']:.1f}%)")
    assert not worse, worse


def test_a_planted_regression_is_caught(scored):
    # the guard can fail: predictions 30% slower push the shared GEMM groups past their margin
    accuracy, s = scored
    slow = [accuracy.Scored(x.case, x.predicted_s * 1.3) for x in s]
    now = {tuple(k): v for k, v in accuracy.table(slow, ("source", "op_class", "timing"))}
    rec = {tuple(k): v for k, v in _recorded()["groups"]}
    key = ("vidur", "GEMM", "kernel")
    assert now[key]["mape"] > rec[key]["mape"] + GROUP_MARGIN
