#!/usr/bin/env python3
"""Refit a calibrated profile's op classes from the rows its calibration saved, with this code.

    PYTHONPATH=$PWD python bench/cpu_refit.py ROWS.json PROFILE.toml OUT.toml [--classes gemm,conv]
        [--no-k-blocks]

``bench/accuracy_cpu.py`` keeps each calibration's fitted rows beside its profile
(``<out>_rows_<level>_<threads>t.json``: per class, the rows after the dispatch and the NCHWc
reorders came out). This refits the named classes (default: the matrix classes,
``cpu_model.TILED_CLASSES``) exactly as ``calibrate`` does (``calibration_fit``), keeps every
other number of PROFILE, and writes OUT.toml; nothing is measured. Compare a change of the fit
on the same measurement: refit with and without it, then replay both profiles on one recording
(``bench/cpu_replay.py replay REC.json OUT.toml``). ``--no-k-blocks``: fit the pointwise
convolutions without input-channel blocks (the form before 2026-11-25). Prints each refitted
class's table beside the profile's own.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tomllib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def refit(rows_path: str, profile: str, out: str, classes: list[str] | None, k_blocks: bool = True) -> dict:
    from analyzer.measure.fit import options as calibration_fit
    from analyzer.measure.fit import class_fit as cpu_model
    from analyzer.prediction.onnxruntime.graph import LAYOUT_LEVELS
    from hardware_db.write import calibration_sources, to_toml

    with open(rows_path) as f:
        rows = json.load(f)
    with open(profile, "rb") as f:
        doc = tomllib.load(f)
    cal = doc["calibration"]
    threads, level = int(cal["threads"]), cal.get("level", "default")
    peak, bw = doc["matrix_tflops"]["fp32"] * 1e12, doc["memory"]["mem_bw_gbs"] * 1e9
    l2 = float(cal.get("cache_bytes", 0.0))
    done = {}
    for cls in ([c for c in rows if c != "reorder"] if classes == ["all"] else classes or cpu_model.TILED_CLASSES):
        if cls not in rows:
            raise SystemExit(f"cpu_refit: {rows_path} has no rows of class '{cls}' (it has: {', '.join(rows)})")
        r = rows[cls]
        F, B, t = (np.array([x[j] for x in r], np.float64) for j in (1, 2, 3))
        view = None if r[0][4] is None else np.array([x[4] for x in r], np.float64).T
        args, kw = calibration_fit.fit_job(cls, F, B, t, view, peak, bw, l2, threads, level in LAYOUT_LEVELS)
        if not k_blocks:
            kw["k_blocks"] = ()
        done[cls] = calibration_fit.table_of(cpu_model.fit_class(*args, **kw))
        print(f"{cls}: profile {_short(cal['tables'].get(cls, {}))}\n{' ' * len(cls)}  refit   {_short(done[cls])}")
    cal["tables"].update(done)
    head = doc["sources"]["calibration.threads"].split(":")[0]
    doc["sources"] = {k: v for k, v in doc["sources"].items() if not k.startswith("calibration.tables.")}
    doc["sources"].update(calibration_sources(cal, head))
    with open(out, "w") as f:
        f.write(to_toml(doc))
    print("wrote", out)
    return done


def _short(table: dict) -> str:
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in table.items())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", help="a calibration's saved rows (bench/results/*_rows_*.json)")
    ap.add_argument("profile", help="the profile those rows were fitted into (.toml)")
    ap.add_argument("out", help="where the refitted profile goes (.toml)")
    ap.add_argument("--classes", help="comma-separated op classes to refit, or all (default: the matrix classes)")
    ap.add_argument("--no-k-blocks", action="store_true", help="fit conv_1x1 without input-channel blocks")
    a = ap.parse_args(argv)
    refit(a.rows, a.profile, a.out, a.classes.split(",") if a.classes else None, not a.no_k_blocks)


if __name__ == "__main__":
    main()
