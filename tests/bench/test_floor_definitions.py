"""bench/floor_definitions.py's comparison of one GPU's graph-replay and kernel-sum times on the
shapes both hold, per band of the graph time (closed form on hand-made rows).

Graph times (us): s1 = 5, s2 = 8, s3 = 15, s4 = 30 (only in the graph set); kernel sums: s1 = 4,
s2 = 9, s3 = 15, s5 = 7 (only in the kernel-sum set). Band [0, 10): s1, s2: differences 5 - 4 = +1
and 8 - 9 = -1, median 0; ratios 4/5 = 0.8 and 9/8 = 1.125, median 0.9625. Band [10, 20): s3:
difference 0, ratio 1. Band [20, inf): s4 has no kernel sum, so no row.
"""

from __future__ import annotations

import floor_definitions as F
import pytest

GRAPH = {(1, 1, 1): 5.0, (2, 1, 1): 8.0, (3, 1, 1): 15.0, (4, 1, 1): 30.0}
KSUM = {(1, 1, 1): 4.0, (2, 1, 1): 9.0, (3, 1, 1): 15.0, (5, 1, 1): 7.0}


def test_common_shapes_per_band():
    rows = F.common_shape_gap(GRAPH, KSUM, bands=((0.0, 10.0), (10.0, 20.0), (20.0, float("inf"))))
    assert [r[:3] for r in rows] == [(0.0, 10.0, 2), (10.0, 20.0, 1)]
    assert rows[0][3] == pytest.approx(0.0) and rows[0][4] == pytest.approx(0.9625)
    assert rows[1][3] == pytest.approx(0.0) and rows[1][4] == pytest.approx(1.0)


def test_a_constant_gap_shows_as_the_median_difference():
    # every graph time = kernel sum + 0.7 us: the median difference is 0.7 in each band
    ksum = {(i, 1, 1): 2.0 + i for i in range(30)}
    graph = {s: t + 0.7 for s, t in ksum.items()}
    rows = F.common_shape_gap(graph, ksum, bands=((0.0, 10.0), (10.0, float("inf"))))
    assert [r[2] for r in rows] == [8, 22]          # graph 2.7 .. 9.7 -> i = 0..7; 10.7 .. 31.7 -> 22
    assert all(r[3] == pytest.approx(0.7) for r in rows)


def test_held_out_names_are_refused():
    assert F._held_out("h100_sxm") and F._held_out("NVIDIA H100 80GB HBM3") and not F._held_out("h200_sxm")
