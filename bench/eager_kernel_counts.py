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
  compared, never tuned on;
- ``host-only``: the plan's host-only ops (``Prediction.host_ops``: views eager PyTorch runs as
  aten ops, no kernel); ``eager CPU Python views``: the view-type calls the module makes from
  Python (a ``TorchFunctionMode`` log: ``view``, ``transpose``, ``__getitem__``, ``dropout``...;
  a call inside another torch function is not logged), the calls that pay a view's host time.

``--latency h100,a100,t4,l4``: whole-model ``eager`` and ``eager-op`` predictions at batch 1 per
profile, before (``runtimes.HOST_ONLY_RATIO`` set to 0 in this process: host-only ops cost
nothing, the plan is unchanged) and after (the shipped ratio).

``--steps a100,t4,l4,h100``: per model and profile at batch 1, the whole-model ``eager`` and
``eager-op`` forward (us), the eager plan's launches, and the ``eager`` training step (forward
+ backward + SGD update, ms), with ``--dropout P`` also the step with dropout placed
(``analyzer.training.dropout``).  ``--library DIR`` imports ``analyzer`` from another checkout
(``git archive <commit> | tar -x -C DIR``) for before/after tables made by the same script.
A report: nothing is chosen on these numbers.

Needs torch, torchvision and transformers in the environment (not opcost dependencies).
Usage: ``python bench/eager_kernel_counts.py [--no-torch] [--latency h100,a100,t4,l4]
[--steps a100,t4,l4,h100 [--dropout P] [--library DIR]]``
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


# Python-level calls of a view-type op (Tensor methods and torch functions by name)
VIEW_CALLS = {"view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "flatten",
              "expand", "expand_as", "view_as", "split", "chunk", "narrow", "select", "t",
              "unflatten", "unbind", "__getitem__", "dropout", "to", "type_as", "contiguous",
              "movedim", "swapaxes", "detach"}


def python_views(name: str) -> Counter:
    """View-type call name -> calls the module makes from Python in one forward (no grad)."""
    import torch
    from torch.overrides import TorchFunctionMode

    calls: Counter = Counter()

    class Log(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            n = getattr(func, "__name__", "")
            if n in VIEW_CALLS:
                calls[n] += 1
            return func(*args, **(kwargs or {}))

    model, args, kw = _build(name)
    model.eval()
    with torch.no_grad(), Log():
        model(*args, **kw)
    return calls


def latency_rows(profiles: list[str]) -> list[str]:
    """Markdown rows: per model and profile, eager and eager-op latency (us) before/after."""
    import analyzer
    from analyzer.prediction import runtimes

    shipped = runtimes.HOST_ONLY_RATIO
    out = ["| model | profile | host-only ops | eager us before | after | change | "
           "eager-op us before | after |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for m in MODELS:
        path = os.path.join(FIX, f"{m}.onnx")
        got = {}
        for ratio in (0.0, shipped):
            runtimes.HOST_ONLY_RATIO = ratio
            try:
                for rt in ("eager", "eager-op"):
                    got[ratio, rt] = analyzer.analyze(path, hw=profiles, runtime=rt).predictions
            finally:
                runtimes.HOST_ONLY_RATIO = shipped
        for i, hw in enumerate(profiles):
            b, a = got[0.0, "eager"][i].latency_s * 1e6, got[shipped, "eager"][i].latency_s * 1e6
            bo, ao = got[0.0, "eager-op"][i].latency_s * 1e6, got[shipped, "eager-op"][i].latency_s * 1e6
            out.append(f"| {m} | {hw} | {got[shipped, 'eager'][i].host_ops} | {b:.0f} | {a:.0f} | "
                       f"{100 * (a / b - 1):+.1f}% | {bo:.0f} | {ao:.0f} |")
    return out


def step_rows(profiles: list[str], dropout: float | None) -> list[str]:
    """Markdown rows: per model and profile, eager / eager-op forward (us), launches, the eager
    training step (ms) and, with ``dropout``, the step with dropout placed."""
    import analyzer

    out = ["| model | profile | eager fwd us | eager-op fwd us | launches | train step ms | "
           "step with dropout ms | dropouts |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for m in MODELS:
        path = os.path.join(FIX, f"{m}.onnx")
        eager = analyzer.analyze(path, hw=profiles, runtime="eager", train=True)
        op = analyzer.analyze(path, hw=profiles, runtime="eager-op").predictions
        drop = analyzer.analyze(path, hw=profiles, runtime="eager", train=True,
                                dropout=dropout) if dropout is not None else None
        for i, hw in enumerate(profiles):
            p, s = eager.predictions[i], eager.training.steps[i]
            d = "-" if drop is None else f"{drop.training.steps[i].step_s * 1e3:.3f}"
            n = "-" if drop is None else str(drop.training.to_dict()["dropout"]["placed"])
            out.append(f"| {m} | {hw} | {p.latency_s * 1e6:.0f} | {op[i].latency_s * 1e6:.0f} | "
                       f"{p.launches} | {s.step_s * 1e3:.3f} | {d} | {n} |")
    return out


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
    ap.add_argument("--latency", default="", help="profiles (comma-separated) for the "
                    "before/after latency table of the host-only ops")
    ap.add_argument("--steps", default="", help="profiles (comma-separated) for the forward and "
                    "training-step table")
    ap.add_argument("--dropout", type=float, default=None, help="with --steps: also the step "
                    "with dropout of this probability")
    ap.add_argument("--library", default=None, help="import analyzer from this checkout")
    args = ap.parse_args(argv)
    if args.library:
        sys.path.insert(0, os.path.abspath(args.library))
    import analyzer

    if args.steps:
        print(f"analyzer from {os.path.dirname(os.path.dirname(analyzer.__file__))}")
        print("\n".join(step_rows(args.steps.split(","), args.dropout)))
        return 0

    h100 = h100_counts()
    print("| model | none (1 per node) | eager plan | eager CPU aten ops | plan - CPU | H100 profiler "
          "| host-only | eager CPU Python views |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m in MODELS:
        path = os.path.join(FIX, f"{m}.onnx")
        pred = analyzer.analyze(path, hw="h100", runtime="eager").predictions[0]
        none = analyzer.analyze(path, hw="h100", runtime="kernel").predictions[0].launches
        cpu = diff = views = "-"
        if not args.no_torch:
            ops = eager_ops(m)
            cpu = sum(ops.values())
            diff = f"{pred.launches - cpu:+d}"
            pv = python_views(m)
            views = sum(pv.values())
            if args.ops:
                print(m, dict(sorted(ops.items())), dict(sorted(pv.items())), file=sys.stderr)
        print(f"| {m} | {none} | {pred.launches} | {cpu} | {diff} | {h100.get(m, '-')} "
              f"| {pred.host_ops} | {views} |")
    if args.latency:
        print()
        print("\n".join(latency_rows(args.latency.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
