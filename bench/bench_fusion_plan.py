"""Time of ``fusion.plan`` (the kernel partition a lowering and a model search make per
candidate) on real graphs, as a ratio to a reference ``fusion.py`` taken in the same run.

For each model (bert and gpt2 of tests/fixtures/torch, samples/transformer.onnx) and policy
(``xla``, ``onnxruntime``, ``coreml``): the median of ``--repeat`` timed calls of this tree's
``fusion.plan`` and of the reference's on the same ``FusionNode``s, their ratio, and the kernel
counts each plans.  The reference is a ``fusion.py`` file given by path (e.g. an earlier
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

MODELS = ("tests/fixtures/torch/bert.onnx", "tests/fixtures/torch/gpt2.onnx", "samples/transformer.onnx")
POLICIES = ("xla", "onnxruntime", "coreml")


def _median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


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
    print("| model | nodes | policy | plan ms | reference ms | ratio | kernels | reference kernels |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    ratios = []
    for path in MODELS:
        r = analyzer.analyze(os.path.join(ROOT, path))
        fnodes, _ = kernel_rows.fusion_nodes(r.nodes, None)
        rnodes = [ref.FusionNode(*nd) for nd in fnodes]
        for policy in POLICIES:
            new = _median_s(lambda: fusion.plan(fnodes, policy), a.repeat)
            old = _median_s(lambda: ref.plan(rnodes, policy), a.repeat)
            ratios.append(new / old)
            print(f"| {path} | {len(fnodes)} | {policy} | {new * 1e3:.3f} | {old * 1e3:.3f} | {new / old:.2f} "
                  f"| {fusion.plan(fnodes, policy).kernels} | {ref.plan(rnodes, policy).kernels} |")
    print(f"\ngeometric mean ratio: {statistics.geometric_mean(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
