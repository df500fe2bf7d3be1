#!/usr/bin/env python3
"""How many cores XLA's CPU GEMMs (YNNPACK fusions) use: synthetic jitted ``x @ w`` (both operands
arguments, fp32) of 0.5-268 MFLOP, timed on all the machine's cores and pinned to one
(``taskset -c 0``), side by side. A product that takes the same time pinned runs on one core.

    PYTHONPATH=$PWD python bench/xla_gemm_threads.py            # both columns (needs taskset)
    PYTHONPATH=$PWD python bench/xla_gemm_threads.py --one      # this process's cores only

Time: the 25th percentile of a jitted call's wall-clock (at least 20 calls and 0.3 s), JAX's CPU
async dispatch off, as ``bench/accuracy_xla_cpu.py`` times programs. Nothing is fitted; no
scored program's layer is among the shapes' (they are synthetic)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

SHAPES = [(1024, 64, 64), (256, 64, 256), (128, 128, 128), (1024, 64, 256), (512, 128, 512), (256, 256, 256),
          (512, 512, 512), (128, 1024, 1024)]


def times() -> dict[str, float]:
    """{'MxKxN': seconds} of each shape's jitted product on this process's cores."""
    import jax
    import numpy as np

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    rng = np.random.default_rng(0)
    out = {}
    for m, k, n in SHAPES:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((k, n)).astype(np.float32)
        f = jax.jit(lambda a, b: a @ b)
        for _ in range(3):
            jax.block_until_ready(f(x, w))
        runs, end = [], time.perf_counter() + 0.3
        while time.perf_counter() < end or len(runs) < 20:
            t0 = time.perf_counter()
            jax.block_until_ready(f(x, w))
            runs.append(time.perf_counter() - t0)
        out[f"{m}x{k}x{n}"] = float(np.quantile(runs, 0.25))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--one", action="store_true", help="time on this process's cores and print JSON")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(times()))
        return 0
    try:
        pinned = json.loads(subprocess.run(["taskset", "-c", "0", sys.executable, __file__, "--one"], check=True,
                                           capture_output=True, text=True).stdout.splitlines()[-1])
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"error: could not run pinned to one core with taskset: {e}", file=sys.stderr)
        return 2
    free = times()
    print("| M x K x N | MFLOP | all cores, us | GFLOP/s | one core, us | GFLOP/s | one / all |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for m, k, n in SHAPES:
        key, mf = f"{m}x{k}x{n}", 2 * m * k * n / 1e6
        print(f"| {key} | {mf:.1f} | {free[key] * 1e6:.1f} | {mf / free[key] / 1e3:.1f} | {pinned[key] * 1e6:.1f} | "
              f"{mf / pinned[key] / 1e3:.1f} | {pinned[key] / free[key]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
