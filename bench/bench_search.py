"""Throughput of the library API in a model-search loop: candidate architectures per second.

A search loop scores many small candidates (here: transformer stacks of 1-4 blocks, width
64-512, sequence 32-256, built in memory with bench/make_large_graph.py's builder) with
``analyzer.analyze(model_bytes, hw=...)``. Printed, all measured in the same run:

  candidates/s for counts only, with one hardware profile, with three profiles;
  each as a ratio to ``onnx.shape_inference.infer_shapes`` of the same bytes (the floor any
  ONNX-based scorer pays), so the numbers compare across machines.

Also checks every candidate's mac_flops against the builder's closed form.

    python bench/bench_search.py [--candidates 48] [--seconds 3]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def candidates(n: int) -> list[tuple[bytes, dict]]:
    from make_large_graph import NODES_PER_BLOCK, TAIL_NODES, closed_form, make_large_graph

    grid = itertools.product((1, 2, 4), (64, 128, 256, 512), (32, 64, 128, 256))
    out = []
    for blocks, d, s in itertools.islice(itertools.cycle(grid), n):
        nodes = blocks * NODES_PER_BLOCK + TAIL_NODES
        m = make_large_graph(nodes, d_model=d, seq_len=s, n_heads=8)
        out.append((m.SerializeToString(), closed_form(blocks, d_model=d, seq_len=s, n_heads=8)))
    return out


def rate(fn, items, seconds: float) -> float:
    """Items per second, cycling through ``items`` for about ``seconds``."""
    t0, n = time.perf_counter(), 0
    while True:
        for it in items:
            fn(it)
            n += 1
        if time.perf_counter() - t0 >= seconds:
            return n / (time.perf_counter() - t0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=48)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args(argv)

    import onnx

    import analyzer

    models = candidates(args.candidates)
    ok = all(analyzer.analyze(b).totals.mac_flops == cf["mac_flops"] for b, cf in models)
    blobs = [b for b, _ in models]
    analyzer.analyze(blobs[0], hw=["a100", "h100", "tpu-v5e"])  # warm-up: imports, jit compile

    base = rate(lambda b: onnx.shape_inference.infer_shapes(b), blobs, args.seconds)
    print(f"{len(blobs)} candidates (1-4 transformer blocks, width 64-512, seq 32-256)")
    print(f"onnx infer_shapes(bytes)      : {base:8.0f} /s (baseline)")
    for label, hw in (("analyze (counts)             ", None),
                      ("analyze, hw=a100             ", "a100"),
                      ("analyze, hw=a100,h100,v5e    ", ["a100", "h100", "tpu-v5e"])):
        r = rate(lambda b: analyzer.analyze(b, hw=hw), blobs, args.seconds)
        print(f"{label}: {r:8.0f} /s  ({base / r:.2f}x the baseline's time per candidate)")
    print(f"mac_flops match the closed form: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
