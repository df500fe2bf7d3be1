"""bench/fit_efficiency.py --check: ``efficiency_files.drift`` names every constant of a fresh fit
that the committed family files do not hold (beyond 1e-6 relative), and nothing else."""

from __future__ import annotations

import json

import efficiency_files as ef


def _write(d, family, sets):
    d.mkdir(exist_ok=True)
    (d / f"{family}.json").write_text(json.dumps(
        {"family": family, "sets": {c: {"constants": k, "provenance": {}} for c, k in sets.items()}}))


def test_drift_names_what_moved_and_ignores_rounding(tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    _write(new, "nvidia-ampere", {"elementwise": {"floor_s": 1.933e-06, "bpc": 58.11, "e_bw": 1.0},
                                  "norm": {"b_half_bytes": 267500.0}})
    _write(old, "nvidia-ampere", {"elementwise": {"floor_s": 1.934e-06, "bpc": 58.11 * (1 + 5e-7),
                                                  "e_bw": 1.0},
                                  "norm": {"b_half_bytes": 267500.0, "l2_hit": 0.5},
                                  "softmax": {"e_bw": 0.9668}})   # another script's set: not compared
    (new / "schema.json").write_text("{}")
    lines = ef.drift(str(new), str(old))
    # floor 1.933 vs 1.934 us: 5.2e-4 relative > 1e-6; bpc 5e-7 relative: within; l2_hit only committed
    assert lines == ["nvidia-ampere.json elementwise floor_s: committed 1.934e-06, the fit now 1.933e-06",
                     "nvidia-ampere.json norm l2_hit: committed only"]


def test_drift_names_a_family_or_set_never_committed(tmp_path):
    new, old = tmp_path / "new", tmp_path / "old"
    _write(new, "nvidia-hopper", {"quantize": {"bpc": 20.83}})
    _write(new, "nvidia-ada", {"gather": {"bpc": 2.3}})
    _write(old, "nvidia-hopper", {"gemm": {"e_compute": 0.9}})
    assert ef.drift(str(new), str(old)) == [f"nvidia-ada.json: not in {old}",
                                            "nvidia-hopper.json quantize: set not committed"]


def _write_err(d, family, cls, consts, err):
    d.mkdir(exist_ok=True)
    (d / f"{family}.json").write_text(json.dumps(
        {"family": family, "sets": {cls: {"constants": consts, "provenance": {"fit_error": err}}}}))


def test_a_constant_whose_set_fits_as_well_is_unpinned(tmp_path):
    # b_half_bytes 2508 -> 1256 with the set's fit error equal to its stated digits: unpinned;
    # the same move with the MAPE 4.55 -> 4.61: moved; a family never committed: moved
    err = {"rows": 400, "mape": 4.55, "bias": -0.94}
    new, old = tmp_path / "new", tmp_path / "old"
    _write_err(new, "nvidia-ampere-ga10x", "elementwise", {"b_half_bytes": 1256.0}, err)
    _write_err(old, "nvidia-ampere-ga10x", "elementwise", {"b_half_bytes": 2508.0}, err)
    lines = ef.drift(str(new), str(old))
    assert ef.unpinned(str(new), str(old)) == ([], lines) and len(lines) == 1
    _write_err(new, "nvidia-ampere-ga10x", "elementwise", {"b_half_bytes": 1256.0}, dict(err, mape=4.61))
    assert ef.unpinned(str(new), str(old)) == (lines, [])
    _write_err(new, "nvidia-hopper", "quantize", {"bpc": 20.83}, err)
    gone = ["nvidia-hopper.json: not in " + str(old)]
    assert ef.unpinned(str(new), str(old)) == (lines + gone, [])
