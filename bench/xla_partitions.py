#!/usr/bin/env python3
"""Which kernels XLA's CPU backend splits over the cores, against opcost's rule
(``analyzer/prediction/cpu/xla_partition.py``): compiles only, times nothing.

    PYTHONPATH=$PWD python bench/xla_partitions.py [--threads N] [--out FILE.md]

For every calibration row (``analyzer.measure.xla.rows``) and every program
``bench/accuracy_xla_cpu.py`` scores: the thunks of the optimized HLO whose ``backend_config``
has a non-empty ``outer_dimension_partitions`` (``xla_hlo.partitioned``: their parts) beside
the kernels of opcost's ``xla_cpu`` plan that ``xla_partition.kernel_parts`` splits on
``--threads`` cores, and the launches it inserts that move bytes (``xla_partition.tasks`` of them) (default: this machine's, the cores XLA compiled for here). A row or program
where the two lists of parts differ is marked."""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "samples"))


def opcost_parts(fn, shapes, threads: int, params_argnums=None) -> list[int]:
    """The parts (> 1) of each kernel of opcost's ``xla_cpu`` plan that XLA's rule splits."""
    import hardware_db
    from analyzer import analyze_jax
    from analyzer.measure.xla.calibrate import REFERENCE_PROFILE
    from analyzer.prediction import lowering, runtimes
    from analyzer.prediction.cpu import xla_partition
    from analyzer.prediction.kernel_rows import fusion_nodes

    kw = {} if params_argnums is None else {"params_argnums": params_argnums}
    nodes = list(analyze_jax(fn, *shapes, **kw).nodes)
    low = lowering.lower(nodes, [hardware_db.get(REFERENCE_PROFILE)], None, runtimes.XLA_CPU)
    parts = xla_partition.kernel_parts(nodes, fusion_nodes(nodes, None)[0], low.plan, low.feats, low.runs, threads)
    out = [int(p) for p, r in zip(parts, low.runs) for _ in range(int(r)) if p > 1]
    extra = zip(low.plan.extra_ops, low.plan.extra_bytes or [()] * low.plan.kernels, low.runs)
    out += [t for ops, bs, r in extra for b in bs for _ in range(int(r))
            if b > 0 and (t := xla_partition.tasks(b, 0.0, 0.0, threads)) > 1]
    return sorted(out)


def cases():
    """(name, fn, concrete args, example shapes, params_argnums) of the rows and the programs."""
    import jax

    import accuracy_xla_cpu as acc
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import _rng

    for rs in xr.xla_rows().values():
        for label, build in rs:
            fn, args = build(_rng(label))
            args = xr.as_jax_args(args)
            yield "row: " + label, fn, args, tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args), None
    for name, fn, shapes, pa in acc.programs():
        yield "program: " + name, fn, acc.concrete(shapes, np.random.default_rng(0)), shapes, pa


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    import jax

    import xla_hlo

    lines = [f"XLA partitions (optimized HLO, {os.cpu_count()} cores here) against opcost's rule on "
             f"{a.threads} threads", "", "| case | XLA's split thunks (parts) | opcost's split kernels (parts) | |",
             "|---|---|---|---|"]
    total = differs = 0
    for name, fn, args, shapes, pa in cases():
        total += 1
        xla = sorted(xla_hlo.partitioned(jax.jit(fn).lower(*args).compile().as_text()))
        ours = opcost_parts(fn, shapes, a.threads, pa)
        if xla or ours:
            differs += xla != ours
            lines.append(f"| {name} | {xla} | {ours} | {'' if xla == ours else 'differs'} |")
    lines += ["", f"{total - differs} of {total} cases agree (cases neither splits are left out of the table)"]
    text = "\n".join(lines)
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
