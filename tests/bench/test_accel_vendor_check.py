"""bench/accel_vendor_check.py: issue 34's vendor table is scored whole (7 rows, each with the
nearest public record of its figure), every row predicts, and the 8 Gen 3 / 8 Gen 2 ratios are
taken from the same rows.  No tolerance on the ratios: the check is reported, not held."""

from __future__ import annotations

import math

import accel_vendor_check as V


def test_table_is_the_issues():
    assert len(V.PUBLISHED) == 7
    assert {(m, prec, pid) for m, prec, pid, _, _ in V.PUBLISHED} == set(V.NEAREST)
    assert {m for m, *_ in V.PUBLISHED} == set(V.GRAPHS)


def test_every_row_predicts_and_renders():
    rows = V.score()
    assert all(math.isfinite(r["pred_ms"]) and r["pred_ms"] > 0 for r in rows)
    assert all(r["dlc_ms"] > 0 and r["tflite_ms"] > 0 for r in rows if r["profile"].startswith("hexagon"))
    (fp16, m16, _), (int8, m8, _) = V.gen_ratios(rows)
    assert (fp16, int8) == ("fp16", "int8") and m16 == 1.62 / 2.27 and m8 == 0.59 / 0.77
    text = "\n".join(V.render(rows))
    assert text.count("| ResNet-50 |") == 6 and text.count("| MobileNetV2 |") == 1
