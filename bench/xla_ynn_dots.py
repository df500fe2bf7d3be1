#!/usr/bin/env python3
"""YNNPACK's tiling of XLA CPU's dots over the cores, against the calibration's dot rows: a
diagnostic of a rule that was tried in the ``xla`` CPU plan and not kept (docs/accuracy.md,
"Tried and not kept"). Nothing is timed or compiled.

    PYTHONPATH=$PWD python bench/xla_ynn_dots.py ROWS.json [INSAMPLE.json]

XLA's CPU backend runs a dot whose lhs is contracted over its last dim (``x @ w``, ``g w^T``:
opcost's ``gemm`` class) as a YNNPACK fusion (``bench/xla_diagnose.py dot-forms``:
``bench/results/xla_dot_forms_2026-11-29.txt``; a dot contracting the lhs over its leading dim,
``gemm_tn``, runs through Eigen). The fusion thunk hands YNNPACK XLA's intra-op thread pool on
every call (``YnnFusionThunk::Execute``, openxla/xla
``xla/backends/cpu/runtime/ynnpack/ynn_fusion_thunk.cc``), and YNNPACK cuts the dot's output into
tiles, ``split_m`` rows by ``split_n`` columns, that run as tasks on that pool
(``choose_split_factors`` in google/XNNPACK ``ynnpack/subgraph/dot.cc``, commit 00f1405b7f58;
its constants in ``RULE``). For an output of ``m`` x ``n`` with ``k`` contracted:

    split_n = min(n, block_n), split_m = min(m, 16); then, while the tile is under
    min(m, 64) x min(n, 64), or under both (split_m + split_n) min(k, 1024) < 65,536 and
    split_m split_n < 256 x 256: double split_n if 4 split_n <= split_m (or split_m has
    reached m) and split_n < n, else double split_m if split_m < m (stop where neither grows)

    tiles = ceil(m / split_m) ceil(n / split_n)

``block_n`` is the column block of the kernel YNNPACK picks for the CPU (``BLOCK_N``: taken as
16, one 512-bit vector of fp32; the calibration's 30 ``gemm`` rows get the same tile counts at
16, 32 and 64). Assumption: the tiles are spread evenly over ``threads`` cores, so the busiest
core runs ``ceil(tiles / threads)`` of them and the dot runs as

    parts = tiles / ceil(tiles / threads)      (at most ``threads``; 1 where tiles is 1)

e.g. 2 tiles on 2 cores: 2 parts; 3 tiles on 2: 1.5 parts. Where the stored YNNPACK source
differs from the one a jaxlib build carries, the tile rule may too.

The command prints, for each ``dot`` row of a saved calibration (``ROWS.json``, as
``bench/accuracy_xla_cpu.py`` writes them) that XLA runs in YNNPACK, its tile, tiles and parts on
the calibration's cores, its measured FLOP/s, and (with ``INSAMPLE.json``, ``bench/
xla_program_launch.py --out``'s) its in-sample error for each calibration there.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

# YNNPACK's dot tiling (google/XNNPACK ynnpack/subgraph/dot.cc, choose_split_factors, commit
# 00f1405b7f58) and the column block taken for this CPU's fp32 kernel
RULE = {
    "source": "google/XNNPACK ynnpack/subgraph/dot.cc (choose_split_factors), commit 00f1405b7f58",
    "k_cap": 1024,              # "If k gets big, we're going to tile k anyways"
    "min_tile_dim": 64,         # min_area = min(m, 64) x min(n, 64)
    "max_tile_area": 256 * 256,
    "max_tile_cost": 1024 * 64,  # (split_m + split_n) x k
    "aspect_ratio": 4,          # target split_m / split_n
    "first_split_m": 16,
}
BLOCK_N = 16
# a calibration row XLA runs as a YNNPACK dot: "dot MxKxN (weights constant | both arguments | g w^T)"
LABEL = re.compile(r"^dot (\d+)x(\d+)x(\d+) \((weights constant|both arguments|g w\^T)\)$")


def tile(m: int, n: int, k: int, block_n: int = BLOCK_N) -> tuple[int, int]:
    """(split_m, split_n): YNNPACK's output tile of an ``m`` x ``n`` dot over ``k`` (the module
    docstring's rule)."""
    r = RULE
    k = min(k, r["k_cap"])
    min_area = min(m, r["min_tile_dim"]) * min(n, r["min_tile_dim"])
    sn, sm = min(n, block_n), min(m, r["first_split_m"])
    while True:
        if sn * sm >= min_area and ((sm + sn) * k >= r["max_tile_cost"] or sm * sn >= r["max_tile_area"]):
            break
        if (r["aspect_ratio"] * sn <= sm or sm >= m) and sn < n:
            sn *= 2
        elif (sm <= r["aspect_ratio"] * sn or sn >= n) and sm < m:
            sm *= 2
        else:
            break
    return sm, sn


def tiles(m: int, n: int, k: int, block_n: int = BLOCK_N) -> int:
    """The tasks YNNPACK cuts an ``m`` x ``n`` dot over ``k`` into."""
    if m <= 0 or n <= 0:
        return 1
    sm, sn = tile(m, n, k, block_n)
    return math.ceil(m / sm) * math.ceil(n / sn)


def parts(m: int, n: int, k: int, threads: int) -> float:
    """The cores' worth of work a dot's tiles run on: ``tiles / ceil(tiles / threads)``."""
    t = tiles(m, n, k)
    if threads <= 1 or t <= 1:
        return 1.0
    return t / math.ceil(t / threads)


def dims(label: str) -> tuple[int, int, int] | None:
    """(m, n, k) of a calibration row XLA runs as a YNNPACK dot (its label ``dot MxKxN (...)``);
    None for any other row."""
    g = LABEL.match(label)
    if not g:
        return None
    m, k, n = (int(x) for x in g.groups()[:3])
    return m, n, k


def table(rows: dict, insample: dict | None = None) -> list[str]:
    """The printed lines: per YNNPACK dot row of ``rows`` (a saved calibration) its tile, tiles,
    parts on the calibration's cores, GFLOP/s measured (net of nothing: the row's saved seconds)
    and, from ``insample`` (``{calibration: {"rows": [{program, measured_us, after_us}]}}``),
    its in-sample error per calibration."""
    threads = int(rows.get("cores") or 1)
    errs = []
    for res in (insample or {}).values():
        errs.append({r["program"]: 100 * (r["after_us"] / r["measured_us"] - 1) for r in res["rows"]})
    out = [f"YNNPACK dot rows on {threads} cores: tile, tiles, parts, GFLOP/s measured"
           + ("".join(f", error {i + 1}" for i in range(len(errs))))]
    for r in rows["rows"]:
        d = dims(r["label"])
        if d is None:
            continue
        m, n, k = d
        sm, sn = tile(m, n, k)
        cells = [f"{r['label']:40s}", f"{sm:4d}x{sn:<4d}", f"{tiles(m, n, k):4d}", f"{parts(m, n, k, threads):4.2g}",
                 f"{2 * m * n * k / r['seconds'] / 1e9:7.1f}"]
        cells += [f"{e[r['label']]:+7.1f} %" for e in errs if r["label"] in e]
        out.append("  ".join(cells))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rows")
    ap.add_argument("insample", nargs="?")
    a = ap.parse_args()
    with open(a.rows) as f:
        rows = json.load(f)
    insample = None
    if a.insample:
        with open(a.insample) as f:
            insample = json.load(f)
    for line in table(rows, insample):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
