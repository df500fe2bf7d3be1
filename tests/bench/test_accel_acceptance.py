"""bench/accel_acceptance.py: the pooled acceptance figures (closed forms on made-up errors; the
script's rows come from the scripts that own them and are not read here)."""

from __future__ import annotations

import accel_acceptance as A


def test_pooled_mape_and_mean_over_devices():
    # hexagon-sd8gen2: |+10|, |-30| -> MAPE 20; tpu7x: |+40| -> 40; ane-a16 (not an acceptance device): 90
    # pooled over the acceptance devices: (10 + 30 + 40) / 3 = 26.7 %; mean over devices (20 + 40) / 2 = 30.0 %
    lines = A.summary([("hexagon-sd8gen2", 10.0), ("hexagon-sd8gen2", -30.0), ("tpu7x", 40.0), ("ane-a16", -90.0)])
    assert "| hexagon-sd8gen2 | 2 | 20.0 | 30.0 | yes |" in lines
    assert "| ane-a16 | 1 | 90.0 | 90.0 | no |" in lines
    assert lines[-1].startswith("Pooled over the acceptance devices: MAPE 26.7 % over 3 rows; mean over devices "
                                "30.0 %; largest device MAPE 40.0 %")


def test_ratio_within_tolerance_counts():
    # measured 0.70; predicted 0.77 (10 % off: within 15 %) and 0.84 (20 % off: not)
    pairs = [("a", "fp16", "tflite", 0.70, {"pred": 0.77}), ("b", "int8", "qnn_dlc", 0.70, {"pred": 0.84})]
    lines = A.ratio_lines(pairs)
    assert "| a | fp16 | tflite | 0.700 | 0.770 | 10.0 |" in lines
    assert lines[-1] == "Within 15 % of the measured ratio: 1 of 2 pairs."
