"""bench/family_simt.py's rule and writing: a family's own FMA-unit GEMM set ships only where its
two-fold cross-validated MAPE beats the pooled set's in-sample MAPE; bench/fit_neusight.py, when it
rewrites the Volta, Turing and Pascal files, keeps those sets."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pandas as pd
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)

import family_simt as fs  # noqa: E402
import fit_neusight as fns  # noqa: E402
import neusight_report as nr  # noqa: E402


def _rows(cls, pairs):
    return pd.DataFrame({"cls": cls, "t": [t for t, _ in pairs], "p": [p for _, p in pairs]})


def test_the_rule_is_strictly_below_the_pooled_mape():
    # gemm_simt: cross-validated |errors| 12 %, 12 % (MAPE 12) against the pooled 20 %, 0 % (MAPE 10): the
    # pooled set; bgemm_simt: 5 % against 10 %: the family's
    cv = pd.concat([_rows("gemm_simt", [(1.0, 1.12), (2.0, 1.76)]), _rows("bgemm_simt", [(1.0, 1.05), (1.0, 0.95)])])
    pooled = pd.concat([_rows("gemm_simt", [(1.0, 1.2), (2.0, 2.0)]), _rows("bgemm_simt", [(1.0, 1.1), (1.0, 0.9)])])
    assert fs.choose(cv, pooled) == {"gemm_simt": "pooled", "bgemm_simt": "family"}


def test_the_shipped_families_state_the_rule_and_their_rows():
    for family, devices in fs.FAMILY_DEVICES.items():
        with open(os.path.join(fns.fc.EFFICIENCY_DIR, f"{family}.json"), encoding="utf-8") as f:
            doc = json.load(f)
        assert "bench/family_simt.py" in doc["description"]
        for cls in fs.CLASSES:
            if cls not in doc["sets"]:
                assert f"{cls} generic.json's pooled set" in doc["description"]
                continue
            prov = doc["sets"][cls]["provenance"]
            assert prov["kind"] == "fit" and prov["device_system"] == ", ".join(devices)
            assert prov["fit_script"] == "bench/family_simt.py" and "two-fold cross-validated" in prov["fit_method"]
            assert prov["rows_used_in_fit"] <= prov["rows"]


def test_fit_neusight_keeps_the_family_sets_when_it_rewrites_the_family_files(tmp_path):
    eff = tmp_path / "efficiency"
    shutil.copytree(fns.fc.EFFICIENCY_DIR, eff)
    before = json.loads((eff / "nvidia-turing.json").read_text())
    gen = json.loads((eff / "generic.json").read_text())["sets"]
    # a fit whose sets are the shipped ones (the pooled memory-bound sets of the Turing file, the matrix
    # sets of generic.json)
    sets = {c: before["sets"][c]["constants"] for c in fns.MEMORY}
    sets.update({c: gen[c]["constants"] for c in fns.MATRIX})
    sub = pd.DataFrame({"cls": ["gemm_simt"], "op": ["linear"], "device_system": ["t4"], "near_floor": [False]})
    nr.write_constants(fns.Fit(sets), sub, {c: {} for c in fns.MEMORY + fns.MATRIX}, str(eff))
    after = json.loads((eff / "nvidia-turing.json").read_text())
    for cls in fs.CLASSES:
        assert after["sets"][cls] == before["sets"][cls]
    assert "FMA-unit GEMM sets (bench/family_simt.py" in after["description"]
    assert after["description"].count("FMA-unit GEMM sets (") == 1


@pytest.mark.parametrize("family", ["nvidia-ampere-ga10x"])
def test_ga10x_carries_amperes_sets_as_inherited_copies(family):
    with open(os.path.join(fns.fc.EFFICIENCY_DIR, "nvidia-ampere.json"), encoding="utf-8") as f:
        amp = json.load(f)
    with open(os.path.join(fns.fc.EFFICIENCY_DIR, f"{family}.json"), encoding="utf-8") as f:
        ga = json.load(f)
    for cls in fs.CLASSES:
        assert ga["sets"][cls]["constants"] == amp["sets"][cls]["constants"]
        assert ga["sets"][cls]["provenance"]["kind"] == "inherit"
