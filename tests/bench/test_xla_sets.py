"""bench/xla_sets.py: the committed Hopper XLA sets are what the fit gives on the committed H200
rows, and --write writes them (with Blackwell's copies) as the files hold them."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import xla_sets

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EFF = os.path.join(ROOT, "hardware_db", "efficiency")


@pytest.fixture(scope="module")
def fits():
    return xla_sets.fit_all(xla_sets.read_rows())


def test_the_fit_reproduces_the_committed_sets(fits, tmp_path):
    for name in ("nvidia-hopper.json", "nvidia-blackwell.json"):
        shutil.copy(os.path.join(EFF, name), tmp_path / name)
    xla_sets.write(fits, str(tmp_path))
    for name in ("nvidia-hopper.json", "nvidia-blackwell.json"):
        with open(os.path.join(EFF, name), encoding="utf-8") as f:
            committed = json.load(f)["sets"]
        written = json.loads((tmp_path / name).read_text())["sets"]
        for cls in (*xla_sets.CLASSES, *xla_sets.COPIES):
            assert written[cls]["constants"] == pytest.approx(committed[cls]["constants"], rel=2e-3), (name, cls)


def test_the_reduction_and_dot_fits_beat_the_sets_their_classes_took_before(fits):
    assert set(fits) == set(xla_sets.CLASSES)
    # kept: each size left out, the fit beats PyTorch's set; the loop and activation fits do not
    # (17.3 against 17.1 %, 18.2 against 17.2 %): their classes keep PyTorch's sets under their names
    assert {c for c, r in fits.items() if xla_sets.kept(r)} == {"xla_reduce", "xla_gemm", "xla_bgemm"}
    assert all(r["rows"] >= 5 for r in fits.values())
