"""The NCHWc reorders around calibrate's convolution rows are profiled once, in the fast thread
state where it comes: a slow-state profile (2-7x the fast one in run u) takes too much out of
the rows and predicts the convolutions too fast."""

from __future__ import annotations

import pytest

from analyzer.prediction.cpu import thread_notes as thread_mode
from analyzer.measure.cpu import thread_state


@pytest.mark.parametrize("speedups, n", [([1.5], 1), ([0.9, 0.88, 1.55, 0.9], 3), ([0.9] * 9, 5)])
def test_wait_fast_probes_until_one_reads_fast(speedups, n):
    it = iter(speedups)
    slept: list = []
    got = thread_state.wait_fast(lambda: next(it), tries=5, wait_s=2.0, sleep=slept.append)
    assert got == speedups[:n] and slept == [2.0] * (n - 1)


def test_a_slow_reorder_profile_is_warned_of():
    cal = {"threads": 2, "thread_speedup_start": 1.5, "thread_speedup_end": 1.55, "row_passes": 5,
           "thread_speedup_passes_min": 0.9, "thread_speedup_passes_max": 1.6}
    assert thread_mode.notes(cal) == []
    assert thread_mode.notes(dict(cal, thread_speedup_reorders=1.52)) == []
    w = thread_mode.notes(dict(cal, thread_speedup_reorders=0.88))
    assert len(w) == 1 and "reorders around the convolution rows were profiled" in w[0] and "0.88" in w[0]


def test_the_reorder_probe_has_a_source_and_loads(tmp_path):
    import hardware_db
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.profile_docs import calibrated_doc

    doc = calibrated_doc(threads=2)
    doc["calibration"].update({"thread_speedup_start": 1.5, "thread_speedup_end": 1.6,
                               "thread_speedup_reorders": 1.58})
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    assert "before the NCHWc reorders" in doc["sources"]["calibration.thread_speedup_reorders"]
    prof = hardware_db.get(str(write_profile(doc, tmp_path / "p.toml")))
    assert prof.calibration["thread_speedup_reorders"] == 1.58


@pytest.mark.parametrize("speedups, n_runs", [([1.5, 1.6], 1),                     # fast around: once
                                               ([1.5, 0.9, 1.5, 1.55], 2),         # changed: again
                                               ([0.9, 0.9] * 5, 3)])               # never fast: tries
def test_bracketed_measures_again_until_fast_probes_surround_it(speedups, n_runs):
    # the effective-cache sweep in the slow state sees about twice the cache (this VM's two vCPUs
    # then sit on separate L3s): a sweep across a change of state mixes the two
    it = iter(speedups)
    runs: list = []
    out, around = thread_state.bracketed(lambda: next(it), lambda: runs.append(1) or len(runs), tries=3)
    assert len(runs) == n_runs and out == n_runs
    assert around == tuple(speedups[2 * n_runs - 2: 2 * n_runs])


def test_a_cache_sweep_in_the_slow_state_is_warned_of():
    cal = {"threads": 2, "thread_speedup_start": 1.5, "thread_speedup_end": 1.55}
    assert thread_mode.notes(dict(cal, thread_speedup_cache=1.5)) == []
    w = thread_mode.notes(dict(cal, thread_speedup_cache=0.89))
    assert len(w) == 1 and "effective cache size was measured" in w[0]


def test_another_pass_is_the_rule_calibrate_and_the_bench_share():
    # 3 passes asked, 3 extra allowed: the probes before each pass done (and after the last) decide
    assert thread_state.another_pass(2, 3, 3, [0.9, 0.9])            # fewer than asked: always
    assert not thread_state.another_pass(3, 3, 3, [0.9, 1.5, 1.5])   # pass 2 between fast probes: stop
    assert thread_state.another_pass(3, 3, 3, [0.9, 1.5, 0.9, 0.9])  # a fast probe, no fast pass: more
    assert thread_state.another_pass(3, 3, 3, [0.9, 0.9, 0.9])       # none fast: one more
    assert not thread_state.another_pass(6, 3, 3, [0.9] * 6)         # the extra ones spent
    assert not thread_state.another_pass(3, 3, 3, None)              # 1 thread: no probes
