"""Installed means tested: every file the package reads at run time ships in the wheel. Each data
file under the packages must match a ``[tool.setuptools.package-data]`` pattern of pyproject.toml
(a baseline check once exited 3 after ``pip install .``: its schema was not package data).
.ci/user_stories.sh runs the installed wheel; this catches a new data file before CI does."""

from __future__ import annotations

import fnmatch
import os
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOT_READ = {"README.md"}   # documentation beside the data, never read by the code


def test_every_data_file_is_package_data():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        patterns = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    missing = []
    for top in ("analyzer", "hardware_db", "cli"):
        for dp, _dirs, files in os.walk(os.path.join(ROOT, top)):
            if "__pycache__" in dp:
                continue
            for name in files:
                if name.endswith((".py", ".pyc")) or name in NOT_READ:
                    continue
                rel = os.path.relpath(os.path.join(dp, name), ROOT).replace(os.sep, "/")
                ok = any(rel.startswith(pkg.replace(".", "/") + "/")
                         and any(fnmatch.fnmatch(rel[len(pkg) + 1:], p) for p in pats)
                         for pkg, pats in patterns.items())
                if not ok:
                    missing.append(rel)
    assert not missing, f"not package data (add to pyproject.toml): {missing}"
