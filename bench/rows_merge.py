"""Merge timings measured later into saved XLA CPU calibration rows (the ``*_rows_*.json`` of
``bench/accuracy_xla_cpu.py``'s run), each file written beside its source as
``<stem><suffix>.json``, with a note of where the merged timings came from."""

from __future__ import annotations

import json
from typing import Callable


def merge_into(paths: str, suffix: str, update: Callable[[dict], None]) -> list[str]:
    """For each of the comma-separated ``paths``: read the rows, apply ``update(rows)`` (it adds
    the timings and their note), write ``<stem><suffix>.json``; returns the files written."""
    written = []
    for path in filter(None, paths.split(",")):
        with open(path) as f:
            rows = json.load(f)
        update(rows)
        dst = path[:-5] + suffix + ".json" if path.endswith(".json") else path + suffix
        with open(dst, "w") as f:
            json.dump(rows, f)
        written.append(dst)
    return written


def merge_timed(paths: str, suffix: str, fields: dict, prefix: str, note: Callable[[dict], str]) -> int:
    """``merge_into`` for one kind of timed rows: each file gets ``fields`` and
    ``<prefix>_measured_on = note(rows)`` (the note names the tool and the day the rows were timed);
    prints each file written; returns 0 (an exit code)."""
    def update(rows: dict) -> None:
        rows.update(fields)
        rows[f"{prefix}_measured_on"] = note(rows)

    for dst in merge_into(paths, suffix, update):
        print(f"merged into {dst}")
    return 0


def worker_passes(script: str, passes: int, repeats: int, describe: Callable[[dict], str]) -> list[dict]:
    """Run ``script --worker --repeats <repeats>`` ``passes`` times, each in a fresh Python process
    with the repository on PYTHONPATH; each pass's result is the JSON object on its last stdout line.
    Prints ``pass i: describe(result)`` as each ends; returns the results in order."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    out = []
    for i in range(passes):
        run = subprocess.run([sys.executable, script, "--worker", "--repeats", str(repeats)],
                             capture_output=True, text=True, check=True, env=env)
        out.append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(f"pass {i + 1}: {describe(out[-1])}", flush=True)
    return out
