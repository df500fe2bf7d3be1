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
from typing import Callable


def fit_classes(jobs: dict[str, tuple[tuple, dict]],
                done: Callable[[str], None] | None = None) -> dict[str, dict]:
    """``cpu_model.fit_class(*args, **kw)`` per class, over the machine's cores (half of a 2-thread
    calibration went to fitting one class after another), in fresh interpreters that import
    nothing of the caller's script (this module); where one fails, in this process, one after
    another: the same numbers. ``done(cls)`` is called as each class's fit finishes (a worker
    writes the class's name to its standard error then), for a caller's progress."""
    import subprocess
    import threading

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
        readers: list = []
        try:
            for g in groups:   # (a worker writes nothing before it has read all its jobs)
                procs.append(subprocess.Popen([sys.executable, "-m", "analyzer.measure.fit.worker"],
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE))
                procs[-1].stdin.write(pickle.dumps(g))
                procs[-1].stdin.close()
                # (its standard error read as it comes: the names of the classes it has fitted)
                readers.append(threading.Thread(target=_names, args=(procs[-1].stderr, set(g), done),
                                                daemon=True))
                readers[-1].start()
            out: dict[str, dict] = {}
            for p in procs:
                data = p.stdout.read()
                if p.wait() != 0:
                    raise OSError("fit worker failed")
                out.update(pickle.loads(data))
            for r in readers:
                r.join()
            return out
        except (OSError, pickle.UnpicklingError, EOFError):
            pass   # (fitted here instead, below: the same numbers)
        finally:
            for p in procs:   # none left running after a failure
                if p.poll() is None:
                    p.kill()
                    p.wait()
    return run(jobs, done)


def _names(stream, mine: set, done: Callable[[str], None] | None) -> None:
    """Each line a worker writes to its standard error that names one of its classes: ``done``."""
    for raw in stream:
        name = raw.decode(errors="replace").strip()
        if done is not None and name in mine:
            done(name)


def run(jobs: dict, done: Callable[[str], None] | None = None) -> dict:
    from analyzer.measure.fit import class_fit as cpu_model

    out = {}
    for cls, (a, kw) in jobs.items():
        out[cls] = cpu_model.fit_class(*a, **kw)
        if done is not None:
            done(cls)
    return out


def main() -> int:
    def said(cls: str) -> None:
        sys.stderr.write(cls + "\n")
        sys.stderr.flush()

    pickle.dump(run(pickle.load(sys.stdin.buffer), said), sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
