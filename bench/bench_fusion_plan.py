"""Time of ``fusion.plan`` (the kernel partition a lowering and a model search make per
candidate) on real graphs, as a ratio to a reference ``fusion.py`` taken in the same run.

For each model (bert, gpt2 and mobilenet_v2 of tests/fixtures/torch, resnet50 of
tests/fixtures/accel, samples/transformer.onnx) and policy (``xla``, ``onnxruntime``,
``coreml``, ``qnn``): the median of ``--repeat`` timed calls of this tree's ``fusion.plan`` and
of the reference's on the same ``FusionNode``s, their ratio, and the kernels each plans with
how many of them lie on a cycle of the kernel graph (``xla_gpu_plan.cyclic_kernels``).  The reference is a ``fusion.py`` file given by path (e.g. an earlier
version: ``git show REV:analyzer/prediction/fusion.py > /tmp/fusion_ref.py``), loaded as a
module of its own beside this tree's package.

Usage: ``PYTHONPATH=$PWD python bench/bench_fusion_plan.py --reference /tmp/fusion_ref.py
[--repeat 30]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

MODELS = ("tests/fixtures/torch/bert.onnx", "tests/fixtures/torch/gpt2.onnx", "samples/transformer.onnx",
          "tests/fixtures/accel/resnet50.onnx", "tests/fixtures/torch/mobilenet_v2.onnx")
POLICIES = ("xla", "onnxruntime", "coreml", "qnn")


def _median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _counts(plan, nodes, edges) -> str:
    """'kernels (on a cycle)' of ``plan``."""
    from xla_gpu_plan import cyclic_kernels
    names = [f"k{k}" if k >= 0 else None for k in plan.kernel_of]
    return f"{plan.kernels} ({len(cyclic_kernels([str(i) for i in range(len(nodes))], names, edges))})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, help="path of the reference fusion.py")
    ap.add_argument("--repeat", type=int, default=30)
    a = ap.parse_args(argv)
    import analyzer
    from analyzer.prediction import fusion, kernel_rows

    spec = importlib.util.spec_from_file_location("fusion_reference", a.reference)
    ref = sys.modules["fusion_reference"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    print("| model | nodes | policy | plan ms | reference ms | ratio | kernels (on a cycle) | reference kernels (on a cycle) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    ratios = []
    for path in MODELS:
        r = analyzer.analyze(os.path.join(ROOT, path))
        fnodes, _ = kernel_rows.fusion_nodes(r.nodes, None)
        rnodes = [ref.FusionNode(*nd) for nd in fnodes]
        made = {(nd.level, t): i for i, nd in enumerate(fnodes) for t in nd.outputs if t}
        edges = [(made[(nd.level, t)], j) for j, nd in enumerate(fnodes) for t in nd.inputs
                 if t and made.get((nd.level, t), j) != j]
        for policy in POLICIES:
            new = _median_s(lambda: fusion.plan(fnodes, policy), a.repeat)
            old = _median_s(lambda: ref.plan(rnodes, policy), a.repeat)
            ratios.append(new / old)
            print(f"| {path} | {len(fnodes)} | {policy} | {new * 1e3:.3f} | {old * 1e3:.3f} | {new / old:.2f} "
                  f"| {_counts(fusion.plan(fnodes, policy), fnodes, edges)} "
                  f"| {_counts(ref.plan(rnodes, policy), rnodes, edges)} |")
    print(f"\ngeometric mean ratio: {statistics.geometric_mean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
