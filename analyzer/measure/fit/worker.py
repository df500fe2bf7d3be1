"""``calibrate``'s fits of the op classes, over the machine's cores: ``fit_classes`` deals the
classes out to workers, each ``python -m analyzer.measure.fit.worker`` running
``cpu_model.fit_class`` over pickled jobs read from standard input, the results pickled to
standard output.

A fresh interpreter started as ``python -m analyzer.measure.fit.worker`` imports nothing of
the caller's script. (A ``multiprocessing`` "spawn" pool re-imports the caller's ``__main__``:
a script that calls ``calibrate()`` without an ``if __name__ == "__main__"`` guard ran the
whole calibration again in every worker. "fork" is not an option: JAX's threads do not survive
it.)
"""

from __future__ import annotations

import os
import pickle
import sys


def fit_classes(jobs: dict[str, tuple[tuple, dict]]) -> dict[str, dict]:
    """``cpu_model.fit_class(*args, **kw)`` per class, over the machine's cores (half of a 2-thread
    calibration went to fitting one class after another), in fresh interpreters that import
    nothing of the caller's script (this module); where one fails, in this process, one after
    another: the same numbers."""
    import subprocess

    workers = min(len(jobs), os.cpu_count() or 1, 8)
    if workers > 1:
        # the classes dealt out by row count, largest first, each to the least loaded worker
        groups: list[dict] = [{} for _ in range(workers)]
        load = [0] * workers
        for cls, job in sorted(jobs.items(), key=lambda kv: -len(kv[1][0][2])):
            w = load.index(min(load))
            groups[w][cls] = job
            load[w] += len(job[0][2])
        procs: list = []
        try:
            for g in groups:   # (a worker writes nothing before it has read all its jobs)
                procs.append(subprocess.Popen([sys.executable, "-m", "analyzer.measure.fit.worker"],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL))
                procs[-1].stdin.write(pickle.dumps(g))
                procs[-1].stdin.close()
            out: dict[str, dict] = {}
            for p in procs:
                data = p.stdout.read()
                if p.wait() != 0:
                    raise OSError("fit worker failed")
                out.update(pickle.loads(data))
            return out
        except (OSError, pickle.UnpicklingError, EOFError):
            pass   # (fitted here instead, below: the same numbers)
        finally:
            for p in procs:   # none left running after a failure
                if p.poll() is None:
                    p.kill()
                    p.wait()
    return run(jobs)


def run(jobs: dict) -> dict:
    from analyzer.measure.fit import class_fit as cpu_model

    return {cls: cpu_model.fit_class(*a, **kw) for cls, (a, kw) in jobs.items()}


def main() -> int:
    pickle.dump(run(pickle.load(sys.stdin.buffer)), sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
