"""bench/hopper_conv_simt.py: the H200 fp32 convolution rows, its by-layer folds and the shipped
Hopper sets against the recorded kernel sums."""

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import fit_neusight as fns  # noqa: E402
import hopper_conv_simt as h  # noqa: E402


def test_rows_are_the_86_ungrouped_fp32_convolutions_split_by_shape():
    rows = h.load()
    assert len(rows) == 86
    assert (rows.cls == "conv3_simt").sum() == 8        # the 3x3 stride-1 layers, batch 1 and 32
    # a 1x1 stride-1 conv of 64 -> 256 channels on 56x56 at batch 32: 2 * 32*56*56 * 256 * 64 FLOP
    r = rows[(rows.B == 32) & (rows.cin == 64) & (rows.cout == 256) & (rows.ksize == 1)].iloc[0]
    assert r.mac == 2 * 32 * 56 * 56 * 256 * 64 and (r.m, r.n, r.k) == (32 * 56 * 56, 256, 64)


def test_folds_keep_a_layers_batches_together():
    rows = h.load()
    a, b = h.folds(rows)
    assert len(a) + len(b) == len(rows) and not set(a.layer) & set(b.layer)


def test_shipped_sets_give_their_recorded_in_sample_error():
    rows = h.load()
    share = h.register()
    with open(os.path.join(fns.fc.EFFICIENCY_DIR, "nvidia-hopper.json"), encoding="utf-8") as f:
        sets = json.load(f)["sets"]
    for cls in h.CLASSES:
        s = {k: v for k, v in sets[cls]["constants"].items() if k != "floor_s"}
        ker = rows[rows.cls == cls]
        e = fns.predict(ker, fns.Fit({cls: s}, {h.DEVICE: share}, {})) / ker.t.to_numpy() - 1
        rec = sets[cls]["provenance"]["fit_error"]
        assert 100 * np.mean(np.abs(e)) == pytest.approx(rec["mape"], abs=0.05)


def test_the_k_loop_rule_keeps_todays_sets_with_its_recorded_scores():
    # the scores docs/accuracy.md records ("The serial k loop (tried, not kept)"), pooled two-fold
    # by layer: the max form (least MAPE) gains 11.8 points but its batch-32 rows lose 5.0 (> 1)
    rows = h.load()
    chosen, res = h.kloop_rule(rows, h.register())
    assert all(r["kloop"] is None for r in chosen.values())
    for form, (all_rows, b32) in {None: (29.9, 24.1), "max": (18.1, 29.1), "sum": (18.5, 23.5)}.items():
        assert h.pooled(rows, res[form])[0] == pytest.approx(all_rows, abs=0.05)
        assert h.pooled(rows, res[form], 32)[0] == pytest.approx(b32, abs=0.05)
    assert res["max"]["conv3_simt"]["set"]["kloop_cycles"] == pytest.approx(45.3, abs=0.05)
