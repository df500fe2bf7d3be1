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
    for cls, n in (("gemm", 8), ("elementwise", 7), ("norm", 6)):
        F = rng.uniform(1e5, 1e8, n)
        B = rng.uniform(1e3, 1e7, n)
        t = 1e-6 + np.maximum(F / 2e11, B / 3e10)
        out[cls] = ((F, B, t, 3e11, 5e10), {})
    return out


@pytest.mark.machine
def test_workers_return_the_in_process_fits(monkeypatch):
    # two workers whatever this machine has; and this process cannot fit (run raises here), so
    # equal results can only have come from the workers
    jobs = _jobs()
    expected = fit_worker.run(jobs)
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
    assert "['elementwise', 'gemm', 'norm']" in out.stdout


def test_a_worker_that_cannot_start_falls_back_to_fitting_here(monkeypatch):
    jobs = _jobs()
    monkeypatch.setattr(fit_worker.os, "cpu_count", lambda: 2)   # (the worker path, on any machine)
    monkeypatch.setattr(sys, "executable", "/nonexistent/python")
    assert fit_worker.fit_classes(jobs) == fit_worker.run(jobs)
