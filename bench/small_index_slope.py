"""The cycles one id costs PyTorch's small-index gather kernel (``indexSelectSmallIndex``).

PyTorch's CUDA ``index_select`` (``aten/src/ATen/native/cuda/Indexing.cu``; ``at::embedding`` calls
it on the flattened ids) runs ``indexSelectSmallIndex`` for 16 ids or fewer: every thread walks all
the ids one after the other (``analyzer/prediction/small_index.py``), so the kernel's time grows by
one dependent load chain per id.  The slope of vidur's fp16 embedding rows (torch 2.2/2.3, profiler
kernel sums, ``../shared/measurements/gpu/vidur_a100_a40.csv``) over M = 1 ... 16 ids, per device, is
that cost in seconds; times the profile's clock it is a number of cycles.  ``small_index.ITER_CYCLES``
is the mean of the two devices' figures.  No H100 row is read.

    PYTHONPATH=$PWD python bench/small_index_slope.py [MEASUREMENTS_DIR] [--out bench/results/small_index_slope.md]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from analyzer.prediction import small_index  # noqa: E402
from hardware_db import get  # noqa: E402

PROFILES = {"a100_80gb": "a100-80gb-sxm", "a40": "a40"}   # bench/efficiency_data.DEVICES


def rows(meas_dir: str) -> dict:
    """device -> (ids, seconds) of vidur's embedding rows with at most SMALL_INDEX_MAX_IDS ids."""
    out: dict = {d: ([], []) for d in PROFILES}
    with open(os.path.join(meas_dir, "vidur_a100_a40.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["op"] == "embedding" and r["gpu"] in PROFILES and int(r["M"]) <= small_index.SMALL_INDEX_MAX_IDS:
                out[r["gpu"]][0].append(int(r["M"]))
                out[r["gpu"]][1].append(float(r["measured_us"]) * 1e-6)
    return out


def slope_cycles(meas_dir: str) -> list[tuple]:
    """Per device: (device, rows, intercept s, slope s per id, clock Hz, slope in cycles)."""
    got = []
    for dev, (m, t) in rows(meas_dir).items():
        b, a = np.polyfit(np.asarray(m, float), np.asarray(t, float), 1)
        clock = get(PROFILES[dev]).clock_ghz * 1e9
        got.append((dev, len(m), a, b, clock, b * clock))
    return got


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measurements", nargs="?", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "small_index_slope.md"))
    args = ap.parse_args(argv)
    got = slope_cycles(args.measurements)
    mean = float(np.mean([g[5] for g in got]))
    lines = ["# PyTorch's small-index gather: cycles per id (vidur fp16 embedding rows, M <= 16)", "",
             "`PYTHONPATH=$PWD python bench/small_index_slope.py` (public rows only; least squares of the "
             "kernel time on the id count, per device)", "",
             "| device | rows | intercept | slope per id | clock | cycles per id |", "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {d} | {n} | {a * 1e6:.3f} us | {b * 1e6:.4f} us | {c / 1e9:.2f} GHz | {cy:.0f} |"
              for d, n, a, b, c, cy in got]
    lines += ["", f"Mean: {mean:.0f} cycles per id (`small_index.ITER_CYCLES` = {small_index.ITER_CYCLES:g})."]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
