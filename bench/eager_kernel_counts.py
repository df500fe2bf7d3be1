"""Kernel counts of the eager plan against eager PyTorch, per torch fixture.

For each PyTorch export in tests/fixtures/torch/ (bert, gpt2, vit, resnet18, mobilenet_v2,
efficientnet_b0, convnext_tiny at their exported shapes), prints:

- ``plan``: the kernels opcost launches under ``runtime="eager"`` (``Prediction.launches``:
  the eager plan's kernels and its extra copy/bias launches); ``none``: one kernel per node that
  does work (the plan before the eager rules, the ``kernel`` runtime's count);
- ``eager CPU``: the aten ops eager PyTorch runs for the same module rebuilt from
  reference.json's recorded source and config (random weights, eval, no grad), logged with a
  ``TorchDispatchMode`` on the CPU: every op that reaches a kernel, views and ops that launch
  nothing (empty, detach, alias, scalar reads) excluded.  A CPU op is one CUDA kernel except
  where the CUDA path adds its own (cuBLASLt/cuDNN helpers, split-K reduces, cuBLAS memsets,
  cuDNN layout conversions) or removes one (the bias a cuBLASLt epilogue takes);
- ``H100 profiler``: the kernels CUPTI recorded per forward in bench/h100's check data
  (bench/results/h100_models_*.csv, fp32 batch 1; resnet18 and mobilenet_v2 only).  Check data:
  compared, never tuned on.

Needs torch, torchvision and transformers in the environment (not opcost dependencies).
Usage: ``python bench/eager_kernel_counts.py [--no-torch]``
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
FIX = os.path.join(ROOT, "tests", "fixtures", "torch")
MODELS = ("bert", "gpt2", "vit", "resnet18", "mobilenet_v2", "efficientnet_b0", "convnext_tiny")
# aten ops that allocate, alias or read a scalar: no kernel
NO_KERNEL = {"empty", "empty_strided", "detach", "alias", "lift_fresh", "_local_scalar_dense",
             "_unsafe_view", "scalar_tensor", "sym_size", "sym_stride", "sym_numel", "new_empty",
             "_to_copy_noop", "is_nonzero", "resolve_conj", "resolve_neg", "sym_storage_offset"}


def _build(name: str):
    import torch

    with open(os.path.join(FIX, "reference.json")) as f:
        ref = json.load(f)["fixtures"][f"{name}.onnx"]["source"]
    torch.manual_seed(0)
    if ref["library"] == "torchvision":
        import torchvision

        model = getattr(torchvision.models, name)(weights=None)
        return model, (torch.randn(1, 3, 224, 224),), {}
    import transformers

    cls = ref["class"]
    cfg = getattr(transformers, cls.replace("Model", "Config"))(**ref["config"])
    model = getattr(transformers, cls)(cfg)
    if cls == "ViTModel":
        return model, (), {"pixel_values": torch.randn(1, 3, 32, 32)}
    ids = torch.randint(0, ref["config"]["vocab_size"], (1, 32))
    mask = torch.ones(1, 32, dtype=torch.int64)
    mask[:, 28:] = 0
    kw = {"input_ids": ids, "attention_mask": mask}
    if cls == "GPT2Model":
        kw["use_cache"] = False
    return model, (), kw


def eager_ops(name: str) -> Counter:
    """aten op name -> calls that launch a kernel, for one forward of the fixture's module."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    ops: Counter = Counter()

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            base = func.overloadpacket.__name__
            if not func.is_view and base not in NO_KERNEL:
                ops[base] += 1
            return func(*args, **(kwargs or {}))

    model, args, kw = _build(name)
    model.eval()
    with torch.no_grad(), Log():
        model(*args, **kw)
    return ops


def h100_counts() -> dict:
    out = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "results", "h100_models_*.csv"))):
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["framework"] == "torch" and r["dtype"] == "fp32" and r["batch"] == "1":
                    out[r["model"]] = r["n_kernels"]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-torch", action="store_true", help="skip the eager PyTorch column")
    ap.add_argument("--ops", action="store_true", help="print each model's eager aten ops")
    args = ap.parse_args(argv)
    import analyzer

    h100 = h100_counts()
    print("| model | none (1 per node) | eager plan | eager CPU aten ops | plan - CPU | H100 profiler |")
    print("|---|---:|---:|---:|---:|---:|")
    for m in MODELS:
        path = os.path.join(FIX, f"{m}.onnx")
        plan = analyzer.analyze(path, hw="h100", runtime="eager").predictions[0].launches
        none = analyzer.analyze(path, hw="h100", runtime="kernel").predictions[0].launches
        cpu = diff = "-"
        if not args.no_torch:
            ops = eager_ops(m)
            cpu = sum(ops.values())
            diff = f"{plan - cpu:+d}"
            if args.ops:
                print(m, dict(sorted(ops.items())), file=sys.stderr)
        print(f"| {m} | {none} | {plan} | {cpu} | {diff} | {h100.get(m, '-')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
