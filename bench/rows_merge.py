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
