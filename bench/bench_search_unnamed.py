"""Model search on candidates built with ``onnx.helper``: nodes without names.

``onnx.helper.make_node`` leaves a node's name empty unless given one, so a search that builds
its candidates in Python hands ``CostModel.score`` graphs of unnamed nodes.  The frontend names
them ``<op>_<index>`` (``frontends.onnx.read.read_nodes``); the fast path gives them the same
names.  Printed, all measured in the same run on the same profiles (a100, tpu-v5e):

  score: candidates/s of ``--candidates`` candidates, half MLPs and half CNNs (ModelProto
    objects, weights inline, every node unnamed) not scored before, after a CostModel has scored
    as many others of the same spaces (a search's steady state; the median of 3 batches), and
    how many of them took the fast path (``CostModel.stats()``, with the reasons of those that
    did not); then the same batches with every node named, for comparison;
  analyze loop: candidates/s of ``analyzer.analyze`` over the first ``--loop`` of the same
    candidates, and the ratio score / loop;
  and checks that those candidates' scores equal analyze's latencies (1e-6 relative).

Acceptance (issue 30): >= 2,000 candidates/s and >= 8x the analyze loop.

    python bench/bench_search_unnamed.py [--candidates 200] [--loop 40]
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

HW = ["a100", "tpu-v5e"]
WIDTHS = (64, 128, 256, 512)
CHANNELS = (16, 32, 64)


def mlp(rng):
    """An MLP of 2-5 MatMul + Add + Relu layers (widths from ``WIDTHS``), batch 1 or 8, then a
    10-way MatMul + Softmax head; every node unnamed."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    batch = int(rng.choice((1, 8)))
    widths = [int(rng.choice(WIDTHS)) for _ in range(int(rng.integers(3, 7)))]
    nodes, inits = [], []
    x = "x"
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        inits += [numpy_helper.from_array(rng.standard_normal((a, b)).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array(np.zeros(b, np.float32), f"b{i}")]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"h{i}"])]
        x = f"h{i}"
    inits.append(numpy_helper.from_array(rng.standard_normal((widths[-1], 10)).astype(np.float32),
                                         "wo"))
    nodes += [helper.make_node("MatMul", [x, "wo"], ["logits"]),
              helper.make_node("Softmax", ["logits"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, widths[0]])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def cnn(rng):
    """A CNN on 1x3x32x32: 2-4 Conv (3x3, padding 1, channels from ``CHANNELS``) + Relu, a
    MaxPool after the second, then GlobalAveragePool, Flatten and a 10-way Gemm; every node
    unnamed."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    chans = [3] + [int(rng.choice(CHANNELS)) for _ in range(int(rng.integers(2, 5)))]
    nodes, inits = [], []
    x = "x"
    for i, (a, b) in enumerate(itertools.pairwise(chans)):
        inits += [numpy_helper.from_array(rng.standard_normal((b, a, 3, 3)).astype(np.float32),
                                          f"w{i}"),
                  numpy_helper.from_array(np.zeros(b, np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x = f"r{i}"
        if i == 1:
            nodes.append(helper.make_node("MaxPool", [x], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
            x = "p"
    inits += [numpy_helper.from_array(rng.standard_normal((10, chans[-1])).astype(np.float32), "wo"),
              numpy_helper.from_array(np.zeros(10, np.float32), "bo")]
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"]),
              helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("Gemm", ["flat", "wo", "bo"], ["y"], transB=1)]
    g = helper.make_graph(nodes, "cnn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def space(rng, n: int) -> list:
    """``n`` candidates: MLPs and CNNs, alternating."""
    return [(mlp, cnn)[i % 2](rng) for i in range(n)]


def named(m):
    """A copy of ``m`` with every node named."""
    c = type(m)()
    c.CopyFrom(m)
    for i, n in enumerate(c.graph.node):
        n.name = f"n{i}"
    return c


def main(argv=None) -> int:
    import numpy as np

    import analyzer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=200, help="per batch (half MLPs, half CNNs)")
    ap.add_argument("--loop", type=int, default=40, help="candidates in the analyze loop")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    teach = space(rng, args.candidates)
    batches = [space(rng, args.candidates) for _ in range(3)]
    assert not any(n.name for m in teach + batches[0] for n in m.graph.node)
    analyzer.analyze(teach[0], hw=HW)             # imports, jit compile
    cm = analyzer.CostModel(HW)
    cm.score(teach)                               # a search's first candidates: it learns
    before = cm.stats()
    rates = []
    for batch in batches:
        t = time.perf_counter()
        lat = cm.score(batch)
        rates.append(len(batch) / (time.perf_counter() - t))
        if batch is batches[0]:
            first = lat
    after = cm.stats()
    rate = float(np.median(rates))
    named_batches = [[named(m) for m in batch] for batch in batches]
    named_rates = []
    for batch in named_batches:
        t = time.perf_counter()
        cm.score(batch)
        named_rates.append(len(batch) / (time.perf_counter() - t))
    named_rate = float(np.median(named_rates))
    loop_items = batches[0][:args.loop]
    t = time.perf_counter()
    ref = [[p.latency_s for p in analyzer.analyze(m, hw=HW).predictions] for m in loop_items]
    loop = len(loop_items) / (time.perf_counter() - t)
    equal = bool(np.allclose(first[:len(loop_items)], np.array(ref), rtol=1e-6, atol=0))
    fast = after["fast"] - before["fast"]
    slow = {k: v - before.get("slow", {}).get(k, 0) for k, v in after.get("slow", {}).items()}
    slow = {k: v for k, v in slow.items() if v}
    n = sum(len(b) for b in batches)
    print(f"{args.candidates} MLP and CNN candidates per batch (onnx.helper, unnamed nodes, "
          f"ModelProto, weights inline) on {', '.join(HW)}; this run")
    print(f"score        : {rate:10,.0f} candidates/s (unseen, after {len(teach)} others; median "
          f"of 3 batches; fast path {fast}/{n}; left it: {slow or 'none'})")
    print(f"score named  : {named_rate:10,.0f} candidates/s (the same batches, every node named; "
          f"median of 3)")
    print(f"analyze loop : {loop:10,.0f} candidates/s ({len(loop_items)} of the same candidates)")
    print(f"ratio        : {rate / loop:10.1f}x the analyze loop")
    print(f"scores equal analyze's latencies (1e-6 relative): {equal}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
