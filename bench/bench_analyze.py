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


def best_of_interleaved(fns: dict, repeat: int) -> dict[str, float]:
    """Best wall time of each function, running them round-robin so that a load spike
    on the machine hits all of them alike (ratios are taken within the same run)."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            gc.collect()
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
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
            onnx.shape_inference.infer_shapes(onnx.load(path))

        report = analyzer.analyze(path, hw="a100")  # warm-up: imports, jit compile
        best = best_of_interleaved({
            "base": baseline,
            "analyze": lambda: analyzer.analyze(path),
            "predict": lambda: analyzer.analyze(path, hw="a100"),
        }, args.repeat)
        t_base, t_an, t_pred = best["base"], best["analyze"], best["predict"]

    blocks = sum(1 for n in report.nodes if n.op == "Softmax")
    cf = closed_form(blocks)
    expected = (cf["params"], cf["mac_flops"])
    print(f"graph: {n_nodes} nodes, {size_mb:.1f} MB file")
    print(f"onnx.load + infer_shapes : {t_base:.3f} s (baseline)")
    print(f"analyzer.analyze          : {t_an:.3f} s  ratio {t_an / t_base:.2f}x  (target <= 2x)")
    print(f"analyze + predict (a100)  : {t_pred:.3f} s  ratio {t_pred / t_base:.2f}x")
    ok = (report.totals.params, report.totals.mac_flops) == expected
    print(f"counts match closed form : {ok} (params {report.totals.params}, "
          f"mac_flops {report.totals.mac_flops})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
