"""``fit_worker.fit_classes``: the workers return what an in-process fit returns, and a caller's
script without a ``__main__`` guard runs once (a "spawn" pool had re-run it in every worker)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from analyzer.measure.fit import worker as fit_worker


def _jobs():
    rng = np.random.default_rng(5)
    out = {}
    for cls, n in (("gemm", 8), ("norm", 6)):   # two classes: one per worker of two
        F = rng.uniform(1e5, 1e8, n)
        B = rng.uniform(1e3, 1e7, n)
        t = 1e-6 + np.maximum(F / 2e11, B / 3e10)
        out[cls] = ((F, B, t, 3e11, 5e10), {})
    return out


@pytest.fixture(scope="module")
def in_process_fits():
    """What an in-process fit of ``_jobs()`` returns (fitted once for the module's tests)."""
    return fit_worker.run(_jobs())


@pytest.mark.machine
def test_workers_return_the_in_process_fits(monkeypatch, in_process_fits):
    # two workers whatever this machine has; and this process cannot fit (run raises here), so
    # equal results can only have come from the workers
    jobs = _jobs()
    expected = in_process_fits
    monkeypatch.setattr(fit_worker.os, "cpu_count", lambda: 2)

    def no_fit_here(_jobs):
        raise AssertionError("fitted in this process, not in the workers")

    monkeypatch.setattr(fit_worker, "run", no_fit_here)
    assert fit_worker.fit_classes(jobs) == expected


@pytest.mark.machine
def test_an_unguarded_script_runs_once(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = tmp_path / "unguarded.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {root!r})\n"
        "from tests.measure.test_fit_worker import _jobs\n"
        "from analyzer.measure.fit import worker as fit_worker\n"
        "print('top-level ran', flush=True)\n"
        "fits = fit_worker.fit_classes(_jobs())\n"
        "print(sorted(fits))\n")
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("top-level ran") == 1
    assert "['gemm', 'norm']" in out.stdout


def test_a_worker_that_cannot_start_falls_back_to_fitting_here(monkeypatch, in_process_fits):
    jobs = _jobs()
    monkeypatch.setattr(fit_worker.os, "cpu_count", lambda: 2)   # (the worker path, on any machine)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    assert fit_worker.fit_classes(jobs) == in_process_fits


def test_the_workers_say_each_class_as_its_fit_finishes(in_process_fits):
    # calibrate's progress line moves through the fit (35 % of a calibration's time): every
    # class is reported once, by the worker processes, and the fits are the in-process ones
    seen = []
    fits = fit_worker.fit_classes(_jobs(), seen.append)
    assert sorted(seen) == sorted(_jobs())
    assert fits == in_process_fits


def test_fit_progress_moves_from_the_clip_phase_to_the_end_once_per_class():
    from analyzer.measure.calibrate import PHASE_END, _fit_progress

    said = []
    done = _fit_progress({"a": None, "b": None}, lambda f, s: said.append((f, s)))
    done("a")
    done("a")      # a class refitted after a failed worker: counted once
    done("b")
    fr = [f for f, _ in said]
    assert fr[0] == PHASE_END["clip"] and fr == sorted(fr)
    assert said[-1][1] == "fitting the op classes (2/2)"
    # 0.65 + 0.35 * 2/2 * 0.999: the line reaches 1 only when calibrate says "done"
    assert abs(fr[-1] - (PHASE_END["clip"] + (1.0 - PHASE_END["clip"]) * 0.999)) < 1e-12
    assert list(PHASE_END.values()) == sorted(PHASE_END.values()) and PHASE_END["fit"] == 1.0
