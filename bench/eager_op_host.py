"""The lent H200 host's side of one eager PyTorch call timed alone (``eager-op``): the per-class
table of ``runtimes.EAGER_HOSTS["torch2.11-h200"].op_call``, measured, and what it predicts.

Data: this repository's H200 SXM run (torch 2.11.0+cu130): ``bench/data/hopper_mem/h200_ops_2026-12-04.csv``
(780 single-op calls: GEMM, bmm, layer and RMS norm, softmax, GELU, add, embedding; fp16 and bf16)
and ``bench/results/h200_conv_2026-12-04.csv`` (318 nn.Conv2d calls).  Each row's host part is
its eager wall-clock (one call between CUDA events and a synchronize) minus its profiler kernel
sum; the table is the median per product op class (a measurement, no model in it).  The repeat
run on a fresh machine (``*_run2.csv``, not used for the table) shows the spread.

Scored through ``analyzer.analyze(..., runtime="eager-op", host=...)`` on the 780 ``eager`` rows
(``bench/hopper_mem.cases``): the default table (NeuSight's hosts, torch 2.1) against this one
(in-sample: the table is these rows' medians), and on the repeat run's rows (not fitted).

Usage: ``PYTHONPATH=$PWD python bench/eager_op_host.py [--out bench/results/eager_op_host.md]``;
exit 1 where the shipped table is not these rows' medians (0.05 us).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pandas as pd

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from report_lines import emit_text  # noqa: E402

OPS = os.path.join(ROOT, "bench", "data", "hopper_mem", "h200_ops_2026-12-04.csv")
CONV = os.path.join(ROOT, "bench", "results", "h200_conv_2026-12-04.csv")
HOST = "torch2.11-h200"
# the product op class each measured op runs as (its eager-op figure's class)
CLASS_OF = {"gemm": "gemm", "bmm": "bgemm", "layernorm": "norm", "rmsnorm": "norm", "softmax": "softmax",
            "gelu": "activation", "add": "elementwise", "embedding": "gather", "conv2d": "conv"}


def host_parts(paths=(OPS, CONV)) -> pd.DataFrame:
    """op class and host part (us: eager wall-clock - kernel sum) of every measured call."""
    frames = []
    for p in paths:
        d = pd.read_csv(p)
        d = d[d.op.isin(CLASS_OF) & d.eager_wall_us.notna() & d.kernel_sum_us.notna()]
        frames.append(pd.DataFrame({"cls": d.op.map(CLASS_OF), "host_us": d.eager_wall_us - d.kernel_sum_us}))
    return pd.concat(frames, ignore_index=True)


def table(parts: pd.DataFrame) -> dict:
    """Median host part per class, rounded to 0.1 us (the shipped table's precision)."""
    return {c: round(float(v), 1) for c, v in parts.groupby("cls").host_us.median().items()}


def score(rows_path: str, host: str | None) -> tuple[float, float, int]:
    """(MAPE %, bias %, rows) of the ``eager`` rows of ``rows_path`` under ``eager-op`` on ``h200-sxm``."""
    import analyzer
    from hopper_mem import cases, read_rows
    from op_models import build

    errs = []
    for c in (c for c in cases(read_rows(rows_path)) if c.timing == "eager"):
        kw = {"host": host} if host else {}
        p = analyzer.analyze(build(c.op, c.dtype, **dict(c.dims)), hw=[c.profile], runtime="eager-op", **kw)
        errs.append(p.predictions[0].latency_s / c.measured_s - 1.0)
    e = np.asarray(errs)
    return 100 * float(np.abs(e).mean()), 100 * float(e.mean()), len(e)


def main(argv=None) -> int:
    from analyzer.prediction import runtimes

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="", help="markdown file to write (default: print)")
    args = ap.parse_args(argv)
    got, shipped = table(host_parts()), runtimes.eager_host(HOST).op_call
    repeat = table(host_parts((OPS.replace(".csv", "_run2.csv"),)))
    lines = ["# The H200 host's eager-op table (one call timed alone: host part per op class)", "",
             "`PYTHONPATH=$PWD python bench/eager_op_host.py --out bench/results/eager_op_host.md`", "",
             "| op class | median host part (us) | shipped | repeat run (not used) | NeuSight's hosts (default) |",
             "|---|---:|---:|---:|---:|"]
    def us(t, c):
        return f"{t[c]:.1f}" if c in t else "-"

    for c in sorted(got):
        lines.append(f"| {c} | {got[c]:.1f} | {us(shipped, c)} | {us(repeat, c)} | {runtimes.eager_op_call_us(c):.1f} |")
    run2 = OPS.replace(".csv", "_run2.csv")
    lines += ["", "| eager rows through analyze (eager-op, h200-sxm) | rows | MAPE | bias |", "|---|---:|---:|---:|"]
    for label, path, host in (("run 1, default table", OPS, None), (f"run 1, {HOST} (in-sample)", OPS, HOST),
                              ("repeat run, default table", run2, None), (f"repeat run, {HOST} (not fitted)", run2, HOST)):
        m, b, n = score(path, host)
        lines.append(f"| {label} | {n} | {m:.1f} % | {b:+.1f} % |")
    emit_text(args.out, "\n".join(lines) + "\n")
    bad = [c for c in got if abs(got[c] - shipped.get(c, -1.0)) > 0.05]   # ("attention" takes bgemm's: no row)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
