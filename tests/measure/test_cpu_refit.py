"""bench/cpu_refit.py refits a calibration's saved rows exactly as calibrate fitted them.

The rows and profile are those of the CPU accuracy bench's current run: bench/results keeps only
the latest run of each bench (bench/results/README.md), so exactly one 1-thread default-level
calibration is there, whatever its date.
"""

import glob
import os
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "bench", "results")


def _current_run():
    rows = glob.glob(os.path.join(RESULTS, "accuracy_cpu_*_rows_default_1t.json"))
    assert len(rows) == 1, f"bench/results should hold one CPU accuracy run, found {rows}"
    prof = rows[0].replace("_rows_default_1t.json", "_profile_default_1t.toml")
    assert os.path.isfile(prof), prof
    return rows[0], prof


def test_refit_reproduces_the_calibration_and_the_channel_blocks_lower_its_loss(tmp_path):
    # the refit with the input-channel blocks is calibrate's own fit, so it gives back the
    # profile's conv_1x1 table; without the blocks the fit has no k_block and a loss no lower
    # (calibrate keeps blocks only where they lower it; the run of bench/results/README.md:
    # 4.86 % with blocks of 16, 7.53 % without)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import cpu_refit
    finally:
        sys.path.pop(0)

    rows, prof = _current_run()
    with open(prof, "rb") as f:
        table = tomllib.load(f)["calibration"]["tables"]["conv_1x1"]
    new = cpu_refit.refit(rows, prof, str(tmp_path / "new.toml"), ["conv_1x1"])["conv_1x1"]
    assert new == pytest.approx(table, rel=1e-9)
    old = cpu_refit.refit(rows, prof, str(tmp_path / "old.toml"), ["conv_1x1"], k_blocks=False)["conv_1x1"]
    assert "k_block" not in old
    assert old["rows"] == table["rows"]
    assert old["fit_mape"] >= table["fit_mape"] - 1e-9
    with open(tmp_path / "new.toml", "rb") as f:
        written = tomllib.load(f)
    assert written["calibration"]["tables"]["conv_1x1"] == pytest.approx(table, rel=1e-9)
    if "k_block" in table:
        assert table["k_block"] in (8.0, 16.0)
        assert old["fit_mape"] > table["fit_mape"]
        assert "calibration.tables.conv_1x1.k_block" in written["sources"]
