"""Rendering never dominates: the time to render a 50,000-node model's report, as a ratio to
the time to analyse it (``analyzer.analyze(path, hw)``), best of --repeat runs each.

  default view (top 15 and rollups, 120 columns)   target <= 1.5
  --all (every row, a pipe: width None)            target <= 3
  csv, markdown, html                              (reported)

    python bench/bench_render.py [--nodes 50000] [--hw a100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def best(fn, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--hw", default="a100")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    import analyzer
    from analyzer.render.formats import render
    from make_large_graph import make_large_graph

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "large.onnx")
        import onnx

        onnx.save(make_large_graph(a.nodes), path)
        analyzer.analyze(path, a.hw)   # warm: imports and the jitted kernel
        report = None

        def analyse():
            nonlocal report
            report = analyzer.analyze(path, a.hw)

        t_an = best(analyse, a.repeat)
    print(f"{len(report.nodes)} nodes, analyze+predict on {a.hw}: {t_an:.2f} s")
    cases = {"default view": lambda: render(report, "table", width=120),
             "--all (pipe)": lambda: render(report, "table", width=None, all_rows=True),
             "csv": lambda: render(report, "csv"),
             "markdown": lambda: render(report, "markdown"),
             "html": lambda: render(report, "html")}
    targets = {"default view": 1.5, "--all (pipe)": 3.0}
    for name, fn in cases.items():
        t = best(fn, a.repeat)
        goal = f"  (target <= {targets[name]:g}: {'ok' if t / t_an <= targets[name] else 'MISSED'})" \
            if name in targets else ""
        print(f"{name:14s} {t:7.2f} s   ratio {t / t_an:5.2f}{goal}")


if __name__ == "__main__":
    main()
