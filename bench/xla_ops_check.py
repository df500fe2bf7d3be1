#!/usr/bin/env python3
"""Score the ``xla`` runtime on XLA's single-op GPU programs (``bench/gpu/xla_cases.py``) measured
on one GPU (``bench/results/<gpu>_xla_ops_<date>.csv``, kernel sum per jitted call, L2-warm).

    PYTHONPATH=$PWD python bench/xla_ops_check.py [--csv ...] [--hw h200] [--col kernel_sum_us]
        [--rows] [--json OUT]

Prints per family: rows, MAPE, bias, and predicted against measured kernel counts; ``--rows`` every
case.  Each prediction is ``analyzer.analyze_jax(fn, *ShapeDtypeStructs, hw=HW)`` under its
default runtime for a JAX program (``xla``).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))


def predict_rows(rows: list[dict], hw: str, col: str) -> list[dict]:
    """One dict per measured case: key, family, dtype, measured/predicted us, kernel counts."""
    import analyzer
    import xla_cases
    by_key = {c["key"]: c for c in xla_cases.cases()}
    out = []
    for r in rows:
        c = by_key.get(r["key"])
        if c is None or not r.get(col):
            continue
        p = analyzer.analyze_jax(c["fn"], *xla_cases.abstract_args(c), hw=hw).predictions[0]
        meas = float(r[col])
        out.append({"key": r["key"], "family": r["family"], "dtype": r["dtype"], "measured_us": meas,
                    "predicted_us": p.latency_s * 1e6, "err": p.latency_s * 1e6 / meas - 1,
                    "n_measured": r.get("n_kernels", ""), "n_predicted": p.launches})
    return out


def summary(scored: list[dict]) -> dict:
    """Per family and overall: rows, MAPE and bias (fractions)."""
    groups: dict[str, list[float]] = {}
    for s in scored:
        groups.setdefault(s["family"], []).append(s["err"])
        groups.setdefault("all", []).append(s["err"])
    return {g: {"rows": len(es), "mape": sum(abs(e) for e in es) / len(es), "bias": sum(es) / len(es)}
            for g, es in groups.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--csv", default=None, help="default: the newest bench/results/<hw>_xla_ops_*.csv")
    ap.add_argument("--hw", default="h200")
    ap.add_argument("--col", default="kernel_sum_us", help="the measured column (kernel_sum_us_run2: the repeat)")
    ap.add_argument("--rows", action="store_true", help="print every case")
    ap.add_argument("--json", default=None, help="write the scored rows and summary here")
    a = ap.parse_args(argv)
    path = a.csv or max(glob.glob(os.path.join(ROOT, "bench", "results", f"{a.hw}_xla_ops_*.csv")))
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    scored = predict_rows(rows, a.hw, a.col)
    if a.rows:
        print("| case | measured us | predicted us | error | kernels measured / predicted |")
        print("|---|---:|---:|---:|---|")
        for s in scored:
            print(f"| {s['key']} | {s['measured_us']:.2f} | {s['predicted_us']:.2f} | {100 * s['err']:+.0f}% | "
                  f"{s['n_measured']} / {s['n_predicted']} |")
        print()
    summ = summary(scored)
    print(f"{os.path.relpath(path, ROOT)}, column {a.col}, hw {a.hw}\n")
    print("| family | rows | MAPE | bias |")
    print("|---|---:|---:|---:|")
    for g, v in sorted(summ.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        print(f"| {g} | {v['rows']} | {100 * v['mape']:.1f} % | {100 * v['bias']:+.1f} % |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"csv": os.path.relpath(path, ROOT), "col": a.col, "hw": a.hw, "rows": scored,
                       "summary": summ}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
