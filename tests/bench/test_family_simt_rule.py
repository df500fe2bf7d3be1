"""bench/family_simt.py's rule and writing: a family's own FMA-unit GEMM or convolution set ships only where its
two-fold cross-validated MAPE beats the pooled set's in-sample MAPE; bench/fit_neusight.py, when it
rewrites the Volta, Turing and Pascal files, keeps those sets."""

from __future__ import annotations

import json
import os
import re
import shutil

import family_simt as fs
import fit_neusight as fns
import neusight_report as nr
import pandas as pd
import pytest


def _rows(cls, pairs):
    return pd.DataFrame({"cls": cls, "t": [t for t, _ in pairs], "p": [p for _, p in pairs]})


def test_the_rule_is_strictly_below_the_pooled_mape():
    # gemm_simt: cross-validated |errors| 12 %, 12 % (MAPE 12) against the pooled 20 %, 0 % (MAPE 10): the
    # pooled set; bgemm_simt: 5 % against 10 %: the family's
    cv = pd.concat([_rows("gemm_simt", [(1.0, 1.12), (2.0, 1.76)]), _rows("bgemm_simt", [(1.0, 1.05), (1.0, 0.95)])])
    pooled = pd.concat([_rows("gemm_simt", [(1.0, 1.2), (2.0, 2.0)]), _rows("bgemm_simt", [(1.0, 1.1), (1.0, 0.9)])])
    conv = fs.choose(pd.concat([cv, _rows("conv3_simt", [(1.0, 1.0)]), _rows("conv_simt", [(1.0, 1.3)])]),
                     pd.concat([pooled, _rows("conv3_simt", [(1.0, 1.0)]), _rows("conv_simt", [(1.0, 0.8)])]))
    assert {c: conv[c] for c in fs.GEMM_CLASSES} == {"gemm_simt": "pooled", "bgemm_simt": "family"}


def test_the_convolution_rule_is_strictly_below_the_pooled_mape():
    # conv3_simt: cross-validated |errors| 30 %, 10 % (MAPE 20) against the pooled 40 %, 0 % (MAPE 20): equal,
    # the pooled set stays; conv_simt: 25 % against 50 %, 10 % (MAPE 30): the family's
    cv = pd.concat([_rows("gemm_simt", [(1.0, 1.0)]), _rows("bgemm_simt", [(1.0, 1.0)]),
                    _rows("conv3_simt", [(1.0, 1.3), (2.0, 1.8)]), _rows("conv_simt", [(4.0, 3.0), (1.0, 1.25)])])
    pooled = pd.concat([_rows("gemm_simt", [(1.0, 1.0)]), _rows("bgemm_simt", [(1.0, 1.0)]),
                        _rows("conv3_simt", [(1.0, 1.4), (2.0, 2.0)]), _rows("conv_simt", [(4.0, 2.0), (1.0, 1.1)])])
    choice = fs.choose(cv, pooled)
    assert (choice["conv3_simt"], choice["conv_simt"]) == ("pooled", "family")


def test_the_convolution_classes_are_fitted_as_the_gemm_tile_is():
    # the same tiles and free constants as the pooled fit's convolution sets (fit_neusight.fit_matrix)
    assert fs.FREE["conv3_simt"] == dict(fns.MAT_FREE, **fns.WINO)
    assert fs.FREE["conv_simt"] == fns.MAT_FREE == fs.FREE["gemm_simt"]
    assert fs.CLASSES == fs.GEMM_CLASSES + fs.CONV_CLASSES and set(fs.CONV_CLASSES) <= set(fns.MATRIX)
    # the A100's convolution rows are on the 80 GB card, its matmul rows on the 40 GB one
    assert fs.FAMILY_DEVICES["nvidia-ampere"] == ("a100_pcie_40gb", "a100_pcie_80gb")


def test_the_shipped_families_state_the_rule_and_their_rows():
    for family, devices in fs.FAMILY_DEVICES.items():
        with open(os.path.join(fns.fc.EFFICIENCY_DIR, f"{family}.json"), encoding="utf-8") as f:
            doc = json.load(f)
        assert "bench/family_simt.py" in doc["description"]
        for cls in fs.CLASSES:
            if cls not in doc["sets"]:
                assert re.search(rf" {cls}(, [a-z0-9_]+)* generic.json's pooled set", doc["description"])
                continue
            prov = doc["sets"][cls]["provenance"]
            assert prov["kind"] == "fit" and set(prov["device_system"].split(", ")) <= set(devices)
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
        assert (cls in ga["sets"]) == (cls in amp["sets"])
        if cls in amp["sets"]:
            assert ga["sets"][cls]["constants"] == amp["sets"][cls]["constants"]
            assert ga["sets"][cls]["provenance"]["kind"] == "inherit"
    assert ga["description"].count(fs.GA10X_NOTE) == 1 and fs.GA10X_OLD_NOTE not in ga["description"]


def _family_arrays(family):
    return fns.fc.load_constants(family).arrays


@pytest.mark.parametrize("family", list(fs.FAMILY_DEVICES) + ["nvidia-ampere-ga10x", "nvidia-hopper", "nvidia-ada"])
def test_a_family_loads_its_own_convolution_sets_or_the_pooled_ones(family):
    # the arrays the product predicts with: the family file's own convolution set where it has one
    # (Hopper its own, bench/hopper_conv_simt.py; Ada through nvidia-ampere-ga10x), else generic.json's pooled set
    own = {"nvidia-ada": "nvidia-ampere-ga10x"}.get(family, family)
    with open(os.path.join(fns.fc.EFFICIENCY_DIR, f"{own}.json"), encoding="utf-8") as f:
        sets = json.load(f)["sets"]
    with open(os.path.join(fns.fc.EFFICIENCY_DIR, "generic.json"), encoding="utf-8") as f:
        gen = json.load(f)["sets"]
    arr = _family_arrays(family)
    for cls in fs.CONV_CLASSES:
        want = (sets.get(cls) or gen[cls])["constants"]
        i = fns.CLASS_CODE[cls]
        for k in ("e_compute", "tile_m", "tile_n", "mult_share"):
            assert arr[k][i] == pytest.approx(want.get(k, 0.0)), (cls, k)


def test_fit_efficiency_keeps_the_family_convolution_sets():
    from efficiency_files import KEPT_NOTES, KEPT_SETS

    for fam in ("nvidia-ampere", "nvidia-ampere-ga10x"):
        assert set(fs.CLASSES) <= set(KEPT_SETS[fam])
    assert fs.GA10X_NOTE in KEPT_NOTES
