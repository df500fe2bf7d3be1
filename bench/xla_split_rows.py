#!/usr/bin/env python3
"""In-sample error of the calibration programs XLA splits over the cores against the others:
reads ``bench/xla_program_launch.py --out``'s JSON (each saved calibration's 151 programs: the
148 rows, the run overhead and the two chains, measured and predicted by the refit profile) and
the rows whose optimized HLO has a split thunk (``bench/xla_partitions.py``'s table, the rows
with a non-empty "XLA's split thunks" column), and prints the MAPE (mean |predicted / measured -
1|, %) of its ``after_us`` predictions over all programs, the split rows and the others (and
the groups of ``groups``: the YNNPACK dot rows, the elementwise rows, the dot scans, the
elementwise-only scans fitted on and not), per calibration; "all" leaves the elementwise-only
scans out (the 151 programs and the dot scans). Nothing is timed or compiled.

    PYTHONPATH=$PWD python bench/xla_split_rows.py INSAMPLE.json [INSAMPLE2.json ...] \\
        [--partitions bench/results/xla_partitions_2026-12-03.md]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTITIONS = os.path.join(ROOT, "bench", "results", "xla_partitions_2026-12-03.md")


def split_labels(path: str) -> set[str]:
    """The calibration rows (``row: LABEL``) whose XLA column lists parts, of a
    ``bench/xla_partitions.py`` table."""
    out = set()
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0].startswith("row: ") and cells[1].startswith("["):
                out.add(cells[0][len("row: "):])
    return out


def mape(rows: list[dict]) -> float:
    return float(100 * np.mean([abs(r["after_us"] / r["measured_us"] - 1) for r in rows]))


def ynn_dot(label: str) -> bool:
    """Whether a calibration row is a dot XLA runs in YNNPACK (opcost's ``gemm`` class: ``x @ w``
    and ``g w^T``; not the ``x^T g`` rows, which run through Eigen, nor the batched dots)."""
    return label.startswith("dot ") and not label.endswith("(x^T g)")


def dot_scan(label: str) -> bool:
    """Whether a program is one of the scans with a YNNPACK dot in their body
    (``loop_scan.dot_scan_label``)."""
    return label.startswith("scan of h[")


def ew_scan(label: str) -> bool:
    """Whether a program is one of the elementwise-only scans (``loop_scan.ew_scan_label``)."""
    return label.startswith("scan of ") and " x tanh(h[" in label


ELEMENTWISE = ("add ", "relu ", "bias add ", "sgd update ", "multiply-add ", "gelu ", "layer norm ", "softmax ")


def elementwise(label: str) -> bool:
    """Whether a calibration row is one of the loop-fusion rows opcost's ``elementwise`` class is
    fitted on (adds, ReLUs, SGD updates, erf GELUs, layer norms, softmaxes; not the tanh, exp and
    sigmoid rows of the ``activation`` class)."""
    return label.startswith(ELEMENTWISE)


def groups(rows: list[dict], split: set[str]) -> dict[str, tuple[int, float]]:
    """``{group: (programs, MAPE %)}`` of all programs, the split rows and the others, the
    YNNPACK dot rows and the programs that are not those (neither the scans with a YNNPACK dot),
    the elementwise rows, and those scans (where the rows have them)."""
    ew_all = [r for r in rows if ew_scan(r["program"])]
    rows = [r for r in rows if not ew_scan(r["program"])]
    sc = [r for r in rows if dot_scan(r["program"])]
    rest = [r for r in rows if not dot_scan(r["program"])]
    s = [r for r in rest if r["program"] in split]
    o = [r for r in rest if r["program"] not in split]
    d = [r for r in rest if ynn_dot(r["program"])]
    nd = [r for r in rest if not ynn_dot(r["program"])]
    out = {"all": (len(rows), mape(rows)), "split": (len(s), mape(s)), "others": (len(o), mape(o)),
           "ynn dots": (len(d), mape(d)), "not dots": (len(nd), mape(nd))}
    ew = [r for r in rest if elementwise(r["program"])]
    out["elementwise"] = (len(ew), mape(ew))
    if sc:
        out.update({"without scans": (len(rest), mape(rest)), "dot scans": (len(sc), mape(sc))})
    fit = [r for r in ew_all if not r["program"].endswith("(not fitted)")]
    if fit:
        out["ew scans"] = (len(fit), mape(fit))
    if len(fit) < len(ew_all):
        other = [r for r in ew_all if r["program"].endswith("(not fitted)")]
        out["ew not fitted"] = (len(other), mape(other))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("insample", nargs="+")
    ap.add_argument("--partitions", default=PARTITIONS)
    a = ap.parse_args()
    split = split_labels(a.partitions)
    for path in a.insample:
        with open(path) as f:
            doc = json.load(f)
        for cal, res in doc.items():
            missing = split - {r["program"] for r in res["rows"]}
            print(f"{path}: {os.path.basename(cal)}" + (f" ({len(missing)} split rows not found)" if missing else ""))
            for g, (n, m) in groups(res["rows"], split).items():
                print(f"  {g:13s} {n:4d}  MAPE {m:5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
