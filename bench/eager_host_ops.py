"""Host time of eager PyTorch ops that launch no kernel (views) against a small op that does.

Every eager aten op, a view included, goes through Python, the C++ binding, the dispatcher and
(with grad) autograd's view bookkeeping on the host.  This script times those host costs on the
CPU build of PyTorch with tiny tensors (4 x 8 fp32: the CPU kernel of the reference ops is a few
dozen nanoseconds, so what is timed is the host path), and prints each op's time over the time of
``torch.add(a, b)`` taken in the same trial.  That ratio, not the absolute time (which depends on
this machine's clock), is what ``analyzer.prediction.runtimes.HOST_ONLY_RATIO`` ships: a view's
host time = ratio x the runtime's per-op dispatch figure of a small elementwise op.

Method: ``timeit`` (``perf_counter``) of the statement inlined in its loop, ``--number`` calls
per measurement; ``--trials`` trials, each timing every op once in a shuffled order between two
timings of ``torch.add`` (the pair's reference: their mean); per op the median over trials of its
per-call time and of its ratio to the reference of its pair, the ratio's spread (middle half,
min-max) and the ratio of the two minima over trials.  Rows ``no_grad`` run under ``torch.no_grad()`` with
plain tensors (inference); rows ``grad`` run with grad enabled on leaf tensors that require grad
(autograd records a view or a backward node).  One intra-op thread.  The floor is an empty Python
function call; ``net`` times subtract nothing (the statements are inlined, no call around them).

The shipped figure: the median, over the ops the eager plan runs as host-only steps
(``HOST_ONLY_OPS``: the aten ops behind Reshape/Flatten/Squeeze/Unsqueeze/Transpose/Split/
Expand/select-Gather views, eval Dropout and a Cast to the same dtype), of their no_grad ratios.

Usage: ``python bench/eager_host_ops.py [--trials 15] [--number 5000] [--no-write]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))

SETUP = {
    "x": "torch.randn(4, 8)", "a": "torch.randn(4, 8)", "b": "torch.randn(4, 8)",
    "x3": "torch.randn(2, 4, 8)", "y": "torch.randn(1, 4, 8)", "v": "torch.randn(1, 8)",
    "m1": "torch.randn(4, 8)", "m2": "torch.randn(8, 4)",
}

# name -> (statement, kind): "view" launches no kernel in eager CUDA; "kernel" launches one
OPS = {
    "empty_call": ("f()", "floor"),
    "x.view": ("x.view(8, 4)", "view"),
    "reshape": ("x.reshape(8, 4)", "view"),
    "transpose": ("x.transpose(0, 1)", "view"),
    "permute": ("x3.permute(0, 2, 1)", "view"),
    "unsqueeze": ("x.unsqueeze(0)", "view"),
    "squeeze": ("y.squeeze(0)", "view"),
    "flatten": ("x3.flatten(1)", "view"),
    "select x[:, 0]": ("x[:, 0]", "view"),
    "slice x[:, 1:]": ("x[:, 1:]", "view"),
    "expand": ("v.expand(4, 8)", "view"),
    "split": ("x.split(4, 1)", "view"),
    "dropout (eval)": ("F.dropout(x, 0.1, False)", "view"),
    "to (same dtype)": ("x.to(torch.float32)", "view"),
    "torch.add": ("torch.add(a, b)", "kernel"),
    "torch.relu": ("torch.relu(a)", "kernel"),
    "torch.matmul": ("torch.matmul(m1, m2)", "kernel"),
}
REFERENCE = "torch.add"
# the aten ops behind the nodes the eager plan runs as host-only steps (eager_plan.host_only)
HOST_ONLY_OPS = ("x.view", "reshape", "transpose", "permute", "unsqueeze", "squeeze", "flatten",
                 "select x[:, 0]", "expand", "split", "dropout (eval)", "to (same dtype)")


def _globals(grad: bool) -> dict:
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    g = {"torch": torch, "F": F, "f": lambda: None}
    for name, expr in SETUP.items():
        t = eval(expr, {"torch": torch})
        g[name] = t.requires_grad_(True) if grad else t
    return g


def trials(grad: bool, n_trials: int, number: int, seed: int = 0) -> dict[str, list[tuple]]:
    """op name -> [(op seconds per call, reference seconds per call)], one pair per trial: the
    reference timed just before and just after the op (their mean), so that a load change on
    the shared machine between measurements of a pair is small."""
    import torch

    g = _globals(grad)
    rng = random.Random(seed)
    out: dict[str, list[tuple]] = {k: [] for k in OPS}
    names = list(OPS)
    ref = timeit.Timer(OPS[REFERENCE][0], globals=g)
    with torch.set_grad_enabled(grad):
        for name in names:                                   # warm-up
            timeit.Timer(OPS[name][0], globals=g).timeit(number // 10 or 1)
        for _ in range(n_trials):
            rng.shuffle(names)
            for name in names:
                before = ref.timeit(number)
                t = timeit.Timer(OPS[name][0], globals=g).timeit(number)
                after = ref.timeit(number)
                out[name].append((t / number, (before + after) / 2 / number))
    return out


def summarize(pairs: dict[str, list[tuple]]) -> dict[str, dict]:
    """Per op: median per-call seconds, and its ratio to REFERENCE pair by pair (median, spread:
    min-max and the middle half), and the ratio of the two minima (the least disturbed calls)."""
    rows = {}
    for name, ps in pairs.items():
        ts = [t for t, _ in ps]
        ratios = sorted(t / r for t, r in ps)
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        rows[name] = {"kind": OPS[name][1], "median_us": statistics.median(ts) * 1e6,
                      "min_us": min(ts) * 1e6, "max_us": max(ts) * 1e6,
                      "ratio": statistics.median(ratios), "ratio_min": ratios[0],
                      "ratio_max": ratios[-1], "ratio_q1": q[0], "ratio_q3": q[2],
                      "ratio_of_min": min(ts) / min(r for _, r in ps)}
    return rows


def shipped(rows: dict[str, dict]) -> float:
    return statistics.median(rows[k]["ratio"] for k in HOST_ONLY_OPS)


def table(mode: str, rows: dict[str, dict]) -> list[str]:
    out = [f"### {mode}", "", f"| op | kind | median us/call | min-max us | / {REFERENCE} "
           "(median of pairs) | middle half | min-max | min / min |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows.items():
        out.append(f"| {name} | {r['kind']} | {r['median_us']:.3f} | {r['min_us']:.3f}-"
                   f"{r['max_us']:.3f} | {r['ratio']:.3f} | {r['ratio_q1']:.3f}-{r['ratio_q3']:.3f} | "
                   f"{r['ratio_min']:.3f}-{r['ratio_max']:.3f} | {r['ratio_of_min']:.3f} |")
    out += ["", f"median ratio of the host-only ops ({', '.join(HOST_ONLY_OPS)}): "
            f"**{shipped(rows):.3f}** (of their min / min: "
            f"{statistics.median(rows[k]['ratio_of_min'] for k in HOST_ONLY_OPS):.3f})", ""]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=15)
    ap.add_argument("--number", type=int, default=5000)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    result = {"torch": torch.__version__, "python": platform.python_version(),
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores "
                         f"({platform.platform()})",
              "trials": args.trials, "number": args.number, "reference": REFERENCE, "modes": {}}
    lines = ["# eager host time of ops without a kernel (bench/eager_host_ops.py)", "",
             f"torch {result['torch']}, Python {result['python']}, {result['machine']}; "
             f"{args.trials} trials x {args.number} calls per op, 1 intra-op thread", ""]
    for mode, grad in (("no_grad", False), ("grad", True)):
        rows = summarize(trials(grad, args.trials, args.number))
        result["modes"][mode] = {"rows": rows, "host_only_ratio": shipped(rows)}
        lines += table(mode, rows)
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        stem = os.path.join(HERE, "results", f"eager_host_ops_{datetime.date.today().isoformat()}")
        with open(stem + ".md", "w") as f:
            f.write(text + "\n")
        with open(stem + ".json", "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {stem}.md and .json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
