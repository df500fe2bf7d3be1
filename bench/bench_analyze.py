"""Speed of the ONNX analysis, as a ratio to what any tool must do first.

Builds a >= 50,000-node transformer-chain graph (bench/make_large_graph.py), then
times, in the same run and on the same file:

  baseline = onnx.load + onnx.shape_inference.infer_shapes
  analyze  = analyzer.analyze(path)            (load, bind, infer, fold, cost, report)
  predict  = analyzer.analyze(path, hw="a100") (+ lowering and the jitted roofline)

and prints each as a ratio to the baseline (best of --repeat runs each). The target
of issue 2 is analyze/baseline <= 2. Also checks the counts against the graph's
closed form so a fast-but-wrong analyzer cannot pass.

    python bench/bench_analyze.py [--nodes 50000] [--repeat 3]
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


def rounds(fns: dict, repeat: int) -> list[dict[str, float]]:
    """Wall times of each function per round, the functions run back to back in every round,
    so each round's ratios compare runs that saw the same machine load."""
    out = []
    for _ in range(repeat):
        r = {}
        for k, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            result = fn()  # held until after the clock stops: freeing it is not analysis time
            r[k] = time.perf_counter() - t0
            del result
        out.append(r)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args(argv)

    import onnx

    import analyzer
    from make_large_graph import closed_form, make_large_graph

    model = make_large_graph(args.nodes)
    n_nodes = len(model.graph.node)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "large.onnx")
        onnx.save(model, path)
        size_mb = os.path.getsize(path) / 1e6
        del model

        def baseline():
            return onnx.shape_inference.infer_shapes(onnx.load(path))

        report = analyzer.analyze(path, hw="a100")  # warm-up: imports, jit compile
        rs = rounds({
            "base": baseline,
            "analyze": lambda: analyzer.analyze(path),
            "predict": lambda: analyzer.analyze(path, hw="a100"),
        }, args.repeat)

    blocks = sum(1 for n in report.nodes if n.op == "Softmax")
    cf = closed_form(blocks)
    expected = (cf["params"], cf["mac_flops"])
    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    print(f"graph: {n_nodes} nodes, {size_mb:.1f} MB file; {args.repeat} rounds, median [min-max]")
    print(f"onnx.load + infer_shapes : {med([r['base'] for r in rs]):.3f} s (baseline)")
    for key, label, extra in (("analyze", "analyzer.analyze         ", "  (target <= 2x)"),
                              ("predict", "analyze + predict (a100) ", "")):
        ratios = [r[key] / r["base"] for r in rs]
        print(f"{label}: {med([r[key] for r in rs]):.3f} s  ratio {med(ratios):.2f}x "
              f"[{min(ratios):.2f}-{max(ratios):.2f}]{extra}")
    ok = (report.totals.params, report.totals.mac_flops) == expected
    print(f"counts match closed form : {ok} (params {report.totals.params}, "
          f"mac_flops {report.totals.mac_flops})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
