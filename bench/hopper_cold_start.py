"""Hopper's cold start: what a kernel whose floor was measured L2-warm adds when its first loads wait
for DRAM (``kernel_time``'s ``cold_start_s``), measured on this repository's H200 run.

Data: ``bench/data/hopper_mem/h200_ops_2026-12-04.csv`` (README there): PyTorch 2.11's own kernels,
each timed twice in one run, ``kernel_sum_us`` (inputs reused: L2 warm) and ``kernel_sum_l2cold_us``
(a 256 MiB buffer overwritten before each call: L2 flushed).  Per class, the cold start is the
median of the two's difference over the calls whose working set (``bytes_min``) is under 5 % of the
L2 (62,914,560 B on the lent board): there the bytes are too few for the cache share to matter,
and what is left is the first loads' wait.  The classes are the Hopper sets fitted on the same
run's warm kernel sums (elementwise: add; activation: GELU; norm_row: layer and RMS norm;
softmax_row and softmax_block_row: softmax); the gather has its own cold id load
(``gather_latency``) and the GEMM classes' floors are CUDA-graph replays', so they take none.
The repeat run on a fresh machine (``*_run2.csv``) is printed beside, not used.

Usage: ``PYTHONPATH=$PWD python bench/hopper_cold_start.py [--write]`` (``--write``: the values
into ``nvidia-hopper.json``'s sets and Blackwell's inherited softmax sets).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

ROWS = os.path.join(ROOT, "bench", "data", "hopper_mem", "h200_ops_2026-12-04.csv")
L2_BYTES = 62914560          # the lent H200's L2 (torch device properties: bench/data/hopper_mem meta)
TINY = 0.05                  # working set under 5 % of the L2
SETS = {"elementwise": ("add",), "activation": ("gelu",), "norm_row": ("layernorm", "rmsnorm"),
        "softmax_row": ("softmax",), "softmax_block_row": ("softmax",)}
INHERITED = {"nvidia-blackwell": ("softmax_row", "softmax_block_row")}


def cold_starts(path: str = ROWS) -> dict:
    """set -> median (cold - warm kernel sum) in seconds over its tiny calls (4 significant digits)."""
    h = pd.read_csv(path)
    h = h[h.bytes_min < TINY * L2_BYTES]
    d = h.kernel_sum_l2cold_us - h.kernel_sum_us
    return {s: float(f"{d[h.op.isin(ops)].median() * 1e-6:.4g}") for s, ops in SETS.items()}


def write(values: dict) -> None:
    from neusight_report import _dump   # (validated against the schema, then written)

    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

    for family, sets in (("nvidia-hopper", tuple(SETS)), *INHERITED.items()):
        path = os.path.join(EFFICIENCY_DIR, f"{family}.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for s in sets:
            doc["sets"][s]["constants"]["cold_start_s"] = values[s]
        _dump(doc, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    got, repeat = cold_starts(), cold_starts(ROWS.replace(".csv", "_run2.csv"))
    for s in SETS:
        print(f"{s}: cold start {got[s] * 1e6:.3f} us (repeat run {repeat[s] * 1e6:.3f} us)")
    if args.write:
        write(got)
    return 0


if __name__ == "__main__":
    sys.exit(main())
