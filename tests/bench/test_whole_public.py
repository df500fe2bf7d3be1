"""NeuSight's whole-model rows (bench/data/whole_public) and their check script: the rows name their
source and hold no H100, every scored row has its graph-only export, and an export predicts on
every profile it is scored on (inference and a training step)."""

from __future__ import annotations

import csv
import math
import os

import pytest
import whole_public as W

ROWS = os.path.join(W.DATA, "rows.csv")
EXPORTS = os.path.join(W.DATA, "exports")


@pytest.fixture(scope="module")
def rows():
    with open(ROWS, newline="") as f:
        return list(csv.DictReader(f))


def test_rows_name_their_source_and_no_h100(rows):
    assert len(rows) == 52
    for r in rows:
        assert "H100" not in r["device_dir"] and r["profile"] != "h100-sxm"
        kind = "train" if r["mode"] == "train" else "inf"
        desc = f"{r['model']}-{kind}-{r['seq']}-{r['batch']}"
        assert r["source_path"] == f"scripts/asplos/label/{r['device_dir']}/{desc}.json"
        e2e, fw, bw = (float(r[k]) for k in ("e2e_ms", "fw_ms", "bw_ms"))
        assert e2e == pytest.approx(fw + bw, rel=1e-9)
        assert (bw > 0) == (r["mode"] == "train")


def test_every_scored_row_has_its_export(rows):
    for r in rows:
        assert os.path.exists(os.path.join(EXPORTS, W.export_name(r) + ".onnx")), W.export_name(r)


@pytest.mark.parametrize("name, train", [("bert_large-inf-512-8", False),
                                         ("bert_large-train-512-2", True)])
def test_an_export_predicts_on_its_profiles(rows, name, train):
    profiles = sorted({r["profile"] for r in rows if W.export_name(r) == name})
    got = W.predict_export(os.path.join(EXPORTS, name + ".onnx"), profiles, train)
    for prof in profiles:
        ms, fw, bw = got[prof]
        assert math.isfinite(ms) and ms > 0, prof
        assert ms == pytest.approx(fw + bw, rel=1e-12)
        assert (bw > 0) == train


@pytest.mark.parametrize("rows, out", [("bench/data/whole_public/rows.csv", "whole_public.md"),
                                       ("bench/data/whole_public/rows_h100.csv", "whole_public_h100.md"),
                                       ("/tmp/mine.csv", "whole_public_mine.md")])
def test_another_row_file_never_overwrites_the_default_report(rows, out):
    assert W.default_out(rows) == os.path.join(W.ROOT, "bench", "results", out)
