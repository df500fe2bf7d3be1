"""bench/hopper_cold_start.py: the shipped cold starts are the H200 run's medians."""

from __future__ import annotations

import hopper_cold_start as H

from analyzer.prediction.efficiency.constants import load_constants
from analyzer.prediction.efficiency.op_classes import CLASS_CODE


def test_the_shipped_cold_starts_are_the_measured_medians():
    got = H.cold_starts()
    assert got == {"elementwise": 0.528e-6, "activation": 0.544e-6, "norm_row": 1.24e-6,
                   "softmax_row": 1.447e-6, "softmax_block_row": 1.447e-6}
    arr = load_constants("nvidia-hopper").arrays["cold_start_s"]
    assert {s: float(arr[CLASS_CODE[s]]) for s in got} == got
