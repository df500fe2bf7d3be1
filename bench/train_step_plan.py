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

Step = forward + backward (``optimizer="none"``).

``--torch`` (needs torch, torchvision, transformers; not opcost dependencies) adds a structural
check of the plan at batch 1 and 8 (the inputs repeated along dim 0): the aten ops eager PyTorch's autograd runs for the same modules
(rebuilt as bench/eager_kernel_counts.py does, eval mode, every floating output seeded with
ones; logged on the CPU with a ``TorchDispatchMode``, views and allocations excluded) against
the plan's kernels folded to aten ops: a CUDA op the CPU runs as one (layer norm's dX and
dgamma/dbeta, a convolution's dgrad, wgrad and bias sum, an embedding's or select's zero fill
and scatter) counts once.  Compared, nothing chosen on it.

Usage: ``PYTHONPATH=$PWD python bench/train_step_plan.py [--torch] [--out FILE]``
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


def plan_as_aten(plan, nodes) -> int:
    """The plan's kernels with each op the CPU runs as one counted once (module docstring)."""
    folded = 0
    per_conv: dict[int, int] = {}
    for k in plan.kernels:
        op = nodes[k.node].op if k.node >= 0 else ""
        if (op == "LayerNormalization" and k.kind == "dparams") or k.kind == "zero":
            folded += 1
        elif op in ("Conv", "ConvTranspose") and k.kind in ("dX", "dW", "dbias"):
            per_conv[k.node] = per_conv.get(k.node, 0) + 1
    folded += sum(v - 1 for v in per_conv.values())
    return len(plan.kernels) - folded


def _batched(x, batch: int):
    import torch

    return x.repeat(batch, *([1] * (x.dim() - 1))) if torch.is_tensor(x) and batch > 1 else x


def torch_backward_ops(name: str, batch: int = 1):
    """aten op -> calls of one backward of the fixture's module (module docstring)."""
    from collections import Counter

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    sys.path.insert(0, HERE)
    import eager_kernel_counts as ek

    skip = set(ek.NO_KERNEL) | {"new_empty_strided", "zeros_like", "ones_like"}
    ops: Counter = Counter()

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            base = func.overloadpacket.__name__
            if not func.is_view and base not in skip:
                ops[base] += 1
            return func(*args, **(kwargs or {}))

    model, args, kw = ek._build(name)
    model.eval()
    out = model(*[_batched(a, batch) for a in args], **{k: _batched(v, batch) for k, v in kw.items()})
    outs = [out] if torch.is_tensor(out) else list(out.values())
    ts = [t for t in outs if torch.is_tensor(t) and t.requires_grad]
    seeds = [torch.ones_like(t) for t in ts]
    with Log():
        torch.autograd.backward(ts, seeds)
    return ops


def torch_lines() -> list[str]:
    import analyzer
    from analyzer.training.backward_plan import backward_plan
    from analyzer.training.counts import gradient_plan

    lines = ["", "Structural check: autograd's aten ops (CPU log) against the plan", "",
             "| model | batch | plan kernels | plan as aten ops | torch aten ops | difference | torch ops |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for m in MODELS:
        for batch in BATCHES:
            r = analyzer.analyze(os.path.join(FIX, f"{m}.onnx"), batch=batch)
            plan = backward_plan(r.nodes, gradient_plan(r.nodes), r.model["outputs"])
            ops = torch_backward_ops(m, batch)
            mine, theirs = plan_as_aten(plan, r.nodes), sum(ops.values())
            lines.append(f"| {m} | {batch} | {len(plan.kernels)} | {mine} | {theirs} | {mine - theirs:+d} | "
                         + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())) + " |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="also write the markdown to FILE")
    ap.add_argument("--torch", action="store_true", help="add the aten-op check (needs torch)")
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
    if args.torch:
        lines += torch_lines()
    lines += ["", f"({time.perf_counter() - t0:.0f} s)"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
