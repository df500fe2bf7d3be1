"""The training step's backward, the FLOP/byte ratio method against the autograd kernel plan, per
torch fixture: a report, not a fit (nothing is chosen on it).

For bert, gpt2, vit and resnet18 (tests/fixtures/torch, their exported shapes) at batch 1 and 8,
fp32 (each tensor's own dtype), on a100, t4, l4 and h100, under the ``eager`` runtime (one
stream, host dispatch overlapping the device: the time between CUDA events around a forward
and ``loss.backward()``) and ``kernel`` (the device kernels' sum), prints per row:

- ``fwd``: the forward prediction (ms);
- ``bwd ratio``: backward by the forward kernels scaled by FLOP and byte ratios
  (``StepTime.backward_ratio_s``);
- ``bwd plan``: backward as the kernels PyTorch's autograd launches (``training.backward_*``);
- ``plan/ratio``, ``bwd/fwd`` (plan), the plan's kernels and the nodes it left to the ratio
  method; and once per model and batch, the kernels by kind.

Step = forward + backward (``optimizer="none"``).  Usage:
``PYTHONPATH=$PWD python bench/train_step_plan.py [--out FILE]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
FIX = os.path.join(ROOT, "tests", "fixtures", "torch")
MODELS = ("bert", "gpt2", "vit", "resnet18")
BATCHES = (1, 8)
HW = ("a100", "t4", "l4", "h100")
RUNTIMES = ("eager", "kernel")


def rows_of(model: str, batch: int, runtime: str):
    """(table rows, kernels by kind, fallback count) of one model, batch and runtime."""
    import analyzer

    r = analyzer.analyze(os.path.join(FIX, f"{model}.onnx"), list(HW), batch=batch, train=True,
                         optimizer="none", runtime=runtime)
    tr = r.training
    out = []
    for s in tr.steps:
        out.append((model, batch, runtime, s.hardware, s.forward_s * 1e3, s.backward_ratio_s * 1e3,
                    s.backward_s * 1e3, s.backward_kernels, s.backward_fallback, s.backward_method))
    return out, tr.backward_plan.by_kind(), len(tr.backward_plan.fallback)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write the markdown to FILE")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    lines = ["# Training step backward: ratio method vs autograd kernel plan", "",
             "Command: `PYTHONPATH=$PWD python bench/train_step_plan.py` (prediction only; "
             "fp32, optimizer none: step = forward + backward).", "",
             "| model | batch | runtime | hardware | fwd ms | bwd ratio ms | bwd plan ms | "
             "plan/ratio | bwd/fwd (plan) | kernels | fallback | method |",
             "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    kinds = []
    for model in MODELS:
        for batch in BATCHES:
            for runtime in RUNTIMES:
                rows, by_kind, fb = rows_of(model, batch, runtime)
                for m, b, rt, hw, f, br, bp, k, nfb, meth in rows:
                    lines.append(f"| {m} | {b} | {rt} | {hw} | {f:.4g} | {br:.4g} | {bp:.4g} | "
                                 f"{bp / br if br else float('nan'):.3f} | "
                                 f"{bp / f if f else float('nan'):.3f} | {k} | {nfb} | {meth} |")
                if runtime == RUNTIMES[0]:
                    kinds.append(f"- {model} batch {batch}: "
                                 + ", ".join(f"{kk} {v}" for kk, v in by_kind.items())
                                 + (f"; {fb} nodes by the ratio method" if fb else ""))
    lines += ["", "Backward kernels by kind (the plan, hardware-free):", ""] + kinds
    lines += ["", f"({time.perf_counter() - t0:.0f} s)"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
