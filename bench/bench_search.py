"""Throughput of the library API in a model-search loop: candidate architectures per second.

A search loop scores many small candidates (here: transformer stacks of 1-4 blocks, width
64-512, sequence 32-256, built in memory with bench/make_large_graph.py's builder) with
``analyzer.analyze(model_bytes, hw=...)``. Printed, all measured in the same run:

  candidates/s for counts only, with one hardware profile, with three profiles;
  each as a ratio to ``onnx.shape_inference.infer_shapes`` of the same bytes (the floor any
  ONNX-based scorer pays), so the numbers compare across machines.

Also checks every candidate's mac_flops against the builder's closed form.

Then the model-search API (``analyzer.CostModel``), each as a ratio to a plain loop of
``analyzer.analyze`` on the same work, same profiles (a100, tpu-v5e), same run:

  score: candidates/s on structurally different ONNX candidates of ~100 nodes, weights inline
  (samples/search_space.random_transformer), batched through one jitted call. A CostModel
  learns node signatures from what it counts in full (analyzer.search.fastpath: a whole
  candidate, or one new node as a model of its own), so the figure depends on what it has seen:
  it is taken on candidates it has NOT scored before, after 256 others (a search's steady
  state; median of 3 batches; the share the fast path answered is printed); also printed: a
  new CostModel's first batch (where it learns), the first unseen batch scored again, and unseen candidates handed over as ModelProto objects;
  score_dims: assignments/s of (batch, seq, width) for one symbolic transformer block (the
    median of 3 calls, fit included; and evaluation only, the fit's exact lowerings excluded);
  table.score: candidates/s of a 5-stage CNN latency table (samples/search_space.CNN_SPACE).

    python bench/bench_search.py [--candidates 48] [--seconds 3] [--search-only]
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
    ap.add_argument("--search-only", action="store_true")
    args = ap.parse_args(argv)
    if args.search_only:
        return search_api(args)

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
    search_api(args)
    return 0 if ok else 1


def search_api(args) -> int:
    import numpy as np

    import analyzer

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "samples"))
    import search_space as ss

    hw = ["a100", "tpu-v5e"]
    cm = analyzer.CostModel(hw)
    rng = np.random.default_rng(0)
    models = [ss.random_transformer(rng, 100) for _ in range(max(args.candidates, 64))]
    blobs = [m.SerializeToString() for m in models]
    n_nodes = np.mean([len(m.graph.node) for m in models])
    teach = [ss.random_transformer(rng, 100).SerializeToString() for _ in range(256)]
    analyzer.CostModel(hw).score(teach[:len(blobs)])   # compiles the bucket shapes once
    analyzer.analyze(blobs[0], hw=hw)
    t = time.perf_counter()
    cm.score(teach[:len(blobs)])          # a fresh model: mostly the full path, learning
    cold_rate = len(blobs) / (time.perf_counter() - t)
    cm.score(teach[len(blobs):])          # the rest of a search's first 256 candidates
    # three batches never scored before (the median rate: one batch takes ~0.1 s)
    fresh = [blobs] + [[ss.random_transformer(rng, 100).SerializeToString() for _ in blobs]
                       for _ in range(2)]
    before = cm.stats()
    rates = []
    for i, batch in enumerate(fresh):
        t = time.perf_counter()
        out = cm.score(batch)
        rates.append(len(batch) / (time.perf_counter() - t))
        if i == 0:
            lat = out
    score_rate = float(np.median(rates))
    fast = cm.stats()["fast"] - before["fast"]
    again_rates = []
    for _ in range(3):
        t = time.perf_counter()
        again = cm.score(blobs)
        again_rates.append(len(blobs) / (time.perf_counter() - t))
    known_rate = float(np.median(again_rates))
    assert np.array_equal(again, lat)
    # the same, candidates handed over as ModelProto objects (protobuf's own accessors read
    # them; its allocator now and then trims the heap when their wrappers are freed)
    proto_rates = []
    for _ in range(3):
        batch = [ss.random_transformer(rng, 100) for _ in blobs]
        t = time.perf_counter()
        cm.score(batch)
        proto_rates.append(len(batch) / (time.perf_counter() - t))
    proto_rate = float(np.median(proto_rates))
    loop = rate(lambda b: analyzer.analyze(b, hw=hw), blobs[:16], args.seconds / 2)
    print(f"\nmodel-search API on {', '.join(hw)} (this run)")
    print(f"score        : {score_rate:10,.0f} candidates/s ({len(blobs)} different ONNX candidates, "
          f"{n_nodes:.0f} nodes, weights inline; unseen, after 256 others, median of 3 batches: "
          f"{fast}/{3 * len(blobs)} on the fast path)  {score_rate / loop:7.1f}x analyze loop "
          f"({loop:,.0f}/s)")
    print(f"score cold   : {cold_rate:10,.0f} candidates/s (a new CostModel's first {len(blobs)})"
          f"  {cold_rate / loop:7.1f}x analyze loop")
    print(f"score again  : {known_rate:10,.0f} candidates/s (the first {len(blobs)} again, median of 3)"
          f"  {known_rate / loop:7.1f}x analyze loop")
    print(f"score proto  : {proto_rate:10,.0f} candidates/s (unseen, as ModelProto objects, median "
          f"of 3 batches)  {proto_rate / loop:7.1f}x analyze loop")
    sym = ss.symbolic_transformer()
    dims = {"batch": [1, 2, 4, 8], "seq": list(range(16, 16 * 257, 16)),
            "width": list(range(64, 64 * 257, 64))}
    n_assign = 4 * 256 * 256
    cm.score_dims(sym, {"batch": [1, 2], "seq": [16, 32, 48, 64], "width": [64, 128, 192, 256]})
    from analyzer.search.dims import polynomial

    fit_incl, eval_only = [], []
    for _ in range(3):   # medians of 3: the machine may be shared
        t = time.perf_counter()
        out = cm.score_dims(sym, dims)
        fit_incl.append(time.perf_counter() - t)
        names, assign, uniq = polynomial.assignments(dims, True)
        f = polynomial.fit(cm, sym, names, assign, values=uniq)
        t = time.perf_counter()
        polynomial.evaluate(cm, f, assign)
        eval_only.append(time.perf_counter() - t)
    dims_rate = n_assign / float(np.median(fit_incl))
    pts = [{"batch": b, "seq": s, "width": w} for b, s, w in ((1, 16, 64), (8, 4096, 16384), (2, 512, 768))]
    dloop = rate(lambda d: analyzer.analyze(sym, hw=hw, dims=d), pts, args.seconds / 2)
    print(f"score_dims   : {dims_rate:10,.0f} assignments/s ({n_assign:,} assignments of batch x seq x "
          f"width, fit included, median of 3)  {dims_rate / dloop:7.0f}x analyze loop ({dloop:,.0f}/s)")
    print(f"  evaluation only: {n_assign / float(np.median(eval_only)):10,.0f} assignments/s "
          f"(the fit's {len(f.exps)} + checks exact lowerings excluded)")
    table = cm.table(ss.CNN_SPACE, ss.CNN_INPUT)
    choices = np.stack([rng.integers(len(s), size=1_000_000) for s in ss.CNN_SPACE], axis=1)
    table.score(choices[:10])
    t = time.perf_counter()
    table.score(choices)
    table_rate = len(choices) / (time.perf_counter() - t)
    from analyzer.search.table import compose
    composed = [compose(ss.CNN_SPACE, c, ss.CNN_INPUT) for c in choices[:8]]
    tloop = rate(lambda m: analyzer.analyze(m, hw=hw), composed, args.seconds / 2)
    print(f"table.score  : {table_rate:10,.0f} candidates/s (1,000,000 choices of a 5-stage CNN)  "
          f"{table_rate / tloop:7.0f}x analyze loop of the composed models ({tloop:,.0f}/s)")
    assert np.isfinite(lat).all() and np.isfinite(out).all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
