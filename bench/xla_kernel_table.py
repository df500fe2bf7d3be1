#!/usr/bin/env python3
"""Where an XLA CPU prediction or a calibration row puts its time (reads, times nothing, fits nothing).

    PYTHONPATH=$PWD python bench/xla_kernel_table.py kernels --programs heldout3 --profile P.toml NAME... [--top 8]
    PYTHONPATH=$PWD python bench/xla_kernel_table.py rates ROWS.json CLASS

``kernels``: each named program of a set ``bench/accuracy_xla_cpu.py`` scores (``samples``,
``heldout2``, ``heldout3``, ``heldout4``), predicted on ``--profile`` with ``runtime="xla"``: its
total and its ``--top`` kernels by predicted microseconds (launches included), with their class.

``rates``: a saved calibration's one-kernel rows of op class CLASS (``<out>_rows_<i>.json`` of
``bench/accuracy_xla_cpu.py``): each row's seconds net of the run overhead and the own-result cost
(as the fit takes them: ``analyzer.measure.xla.fit``), its matrix view (M, N, K) and FLOP/s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def kernels(programs: str, profile: str, names: list[str], top: int) -> int:
    import accuracy_xla_cpu as acc
    from analyzer import analyze_jax

    progs = acc.programs() if programs == "samples" else acc.heldout_programs(programs)
    known = {p[0] for p in progs}
    missing = [n for n in names if n not in known]
    if missing:
        print(f"error: no program {', '.join(missing)} in {programs} (it has {', '.join(sorted(known))})",
              file=sys.stderr)
        return 2
    for name, fn, shapes, pa in progs:
        if name not in names:
            continue
        p = analyze_jax(fn, *shapes, hw=profile, runtime="xla",
                        **({} if pa is None else {"params_argnums": pa})).predictions[0]
        t = p.kernel_table
        print(f"{name}: {p.latency_s * 1e6:.1f} us predicted")
        rows = sorted(((float(t.time[k]) * 1e6, t.names[k], t.op_class[k], float(t.runs[k]))
                       for k in range(len(t.names))), reverse=True)
        for us, kname, cls, runs in rows[:top]:
            print(f"  {us:9.1f} us  {kname}  {cls}  x{runs:g}")
    return 0


def rates(path: str, cls: str) -> int:
    from analyzer.measure.xla import fit as xf

    with open(path) as f:
        d = json.load(f)
    base = d["run_overhead_s"] + xf.own_result_s(d)
    print(f"| row | M | N | K | MFLOP | net us | GFLOP/s |  (run overhead + own result {base * 1e6:.2f} us)")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in d["rows"]:
        ks = r["kernels"]
        if len(ks) != 1 or ks[0]["op_class"] != cls:
            continue
        flops, m, n, k = ks[0]["view"][:4]
        t = r["seconds"] - base
        print(f"| {r['label']} | {m:.0f} | {n:.0f} | {k:.0f} | {flops / 1e6:.2f} | {t * 1e6:.1f} | {flops / t / 1e9:.1f} |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernels")
    k.add_argument("--programs", choices=("samples", "heldout2", "heldout3", "heldout4"), required=True)
    k.add_argument("--profile", required=True)
    k.add_argument("--top", type=int, default=8)
    k.add_argument("names", nargs="+")
    r = sub.add_parser("rates")
    r.add_argument("rows")
    r.add_argument("cls")
    a = ap.parse_args()
    return kernels(a.programs, a.profile, a.names, a.top) if a.cmd == "kernels" else rates(a.rows, a.cls)


if __name__ == "__main__":
    sys.exit(main())
