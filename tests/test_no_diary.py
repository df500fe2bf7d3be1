"""The library's comments and docstrings state forms, units and assumptions; when and on which run
a figure was measured belongs in git history and docs/accuracy.md. So no date, no run letter
("run ac's", "run w"), no result file of bench/results and no path of one machine in analyzer/,
cli/ or hardware_db/'s code."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIARY = {
    "a date": re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"),
    "a run letter": re.compile(r"\brun [a-z]{1,2}(?:'s|\b(?=[,;:)]))"),
    "a bench result file": re.compile(r"bench/results/\w"),
    "a machine path": re.compile(r"(?<![\w.])/(?:tmp|work|root|home)/\w"),
}


def _sources():
    for top in ("analyzer", "cli", "hardware_db"):
        for dp, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith(".py"):
                    yield os.path.join(dp, f)


def test_no_diary_in_the_code():
    found = []
    for path in _sources():
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        for n, line in enumerate(lines, start=1):
            for what, rx in DIARY.items():
                if rx.search(line):
                    found.append(f"{os.path.relpath(path, ROOT)}:{n}: {what}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_name():
    assert DIARY["a date"].search("measured 2026-11-24 on")
    assert DIARY["a run letter"].search("(run ac's 1-thread fit)") and DIARY["a run letter"].search("run p, the")
    assert not DIARY["a run letter"].search("a measured run is compared")
    assert not DIARY["a run letter"].search("which experts run is decided")
    assert DIARY["a bench result file"].search("bench/results/efficiency_fit.md")
    assert DIARY["a machine path"].search("python /tmp/venv/bin/x") and not DIARY["a machine path"].search("a/tmp/b")
