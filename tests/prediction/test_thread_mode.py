"""thread_mode: the thread state a multi-threaded calibration records, and what it says of it."""

from __future__ import annotations

import pytest

from analyzer.prediction.cpu import thread_notes as thread_mode
from analyzer.measure.cpu import thread_state


def test_steady_threads_say_nothing():
    assert thread_mode.notes({"threads": 2, "thread_speedup_start": 1.4, "thread_speedup_end": 1.3}) == []
    # 1 thread, or a profile written before the probe existed: nothing to say
    assert thread_mode.notes({"threads": 1}) == []
    assert thread_mode.notes({"threads": 2}) == []


def test_state_is_the_warning_rule():
    # fast where the threads help (speed-up >= 1), slow where they slow the probe down: the same
    # threshold the slowed-down warning uses (the bench labels its probes with it)
    assert thread_state.state(1.6) == "fast" and thread_state.state(1.0) == "fast"
    assert thread_state.state(0.87) == "slow"
    assert bool(thread_mode.notes({"threads": 2, "thread_speedup_start": 0.99, "thread_speedup_end": 0.99}))


def test_a_slowing_probe_and_a_change_are_named():
    # 1.6 -> 0.62: the threads stopped helping (below 1) and the state changed (ratio 2.6 > 1.25)
    said = thread_mode.notes({"threads": 2, "thread_speedup_start": 1.6, "thread_speedup_end": 0.62})
    assert len(said) == 2
    assert "slower than at 1 thread" in said[0] and "1.60" in said[0] and "0.62" in said[0]
    assert "changed during the calibration" in said[1] and "calibrate again" in said[1]
    # slowed throughout but steady: one warning, not two
    said = thread_mode.notes({"threads": 2, "thread_speedup_start": 0.9, "thread_speedup_end": 0.95})
    assert len(said) == 1 and "contended" in said[0]
    # steady ratio 1.25 exactly: not a change (the rule is > CHANGED)
    assert thread_mode.notes({"threads": 4, "thread_speedup_start": 2.5, "thread_speedup_end": 2.0}) == []


def test_predictions_on_the_profile_carry_the_warning(tmp_path):
    from analyzer import analyze
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.measure.test_cpu_calibration import _calibrated_doc, _matmul

    doc = _calibrated_doc()
    doc["calibration"].update({"threads": 2, "thread_speedup_start": 1.5, "thread_speedup_end": 0.7})
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    pred = analyze(_matmul(), hw=write_profile(doc, tmp_path / "p.toml")).predictions[0]
    assert pred.provenance == "calibrated"
    assert "changed during the calibration" in pred.provenance_detail


@pytest.mark.machine
def test_probe_runs_and_speeds_up_or_not():
    # the real probe on this machine: a finite positive ratio (its value is the machine's state;
    # no wall-clock is asserted); the probe itself is valid ONNX that onnxruntime runs
    pytest.importorskip("onnxruntime")
    import onnx

    from analyzer.measure.calibrate import wall_time

    onnx.checker.check_model(thread_state.probe_model())
    s = thread_state.speedup(2, lambda m, t: wall_time(m, t, "default", 0.5, min_s=0.02))
    assert 0.05 < s < 20
