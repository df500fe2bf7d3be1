"""bench/cpu_refit.py refits a calibration's saved rows exactly as calibrate fitted them."""

import os
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = os.path.join(ROOT, "bench", "results", "accuracy_cpu_2026-11-25ab")


def test_refit_reproduces_the_calibration_and_finds_the_channel_block(tmp_path):
    # run ab's 1-thread calibration (code before the input-channel blocks): refitted without the
    # blocks its conv_1x1 table comes back as calibrate wrote it; with them the fit takes 16 and
    # its rows' MAPE falls from 7.66 % to 4.13 %
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import cpu_refit

    rows, prof = RUN + "_rows_default_1t.json", RUN + "_profile_default_1t.toml"
    with open(prof, "rb") as f:
        table = tomllib.load(f)["calibration"]["tables"]["conv_1x1"]
    old = cpu_refit.refit(rows, prof, str(tmp_path / "old.toml"), ["conv_1x1"], k_blocks=False)["conv_1x1"]
    assert old == pytest.approx(table, rel=1e-9)
    new = cpu_refit.refit(rows, prof, str(tmp_path / "new.toml"), ["conv_1x1"])["conv_1x1"]
    assert new["k_block"] == 16.0 and new["tile_n"] == 16.0
    assert new["fit_mape"] == pytest.approx(4.13, abs=0.01) and table["fit_mape"] == pytest.approx(7.66, abs=0.01)
    with open(tmp_path / "new.toml", "rb") as f:
        written = tomllib.load(f)
    assert written["calibration"]["tables"]["conv_1x1"]["k_block"] == 16.0
    assert "calibration.tables.conv_1x1.k_block" in written["sources"]
