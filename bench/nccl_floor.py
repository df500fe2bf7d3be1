"""The small-message floor of each system's collectives: what its per-call base and per-step
latency are, and whether a CUDA-graph run (no host launch) shows the same order.

From ``../shared/measurements/gpu/aic_nccl.csv`` (``--csv``), two tables per system:

- nccl-tests (fp16, all_reduce and all_gather, 2/4/8 GPUs, one node, no CUDA graph): the median
  time of each (collective, GPUs, size) for sizes of at most 4 KiB, least-squares fitted as
  ``a + b * steps`` with ``steps`` the ring's (all-reduce 2(n-1), all-gather n-1): ``a`` the
  per-call floor, ``b`` the time per ring step; also that floor by NCCL version folder, and the
  per-GPU term ``c`` of ``a + b * steps + c * (GPUs - 2)`` (a host launch per GPU would show there);
- the frameworks' one-shot all-reduce (TensorRT-LLM, vLLM, SGLang custom kernels, ``mode graph``:
  replayed CUDA graphs, so no host launch per call): the median over versions of the rows of at
  most 4 KiB, per library and GPU count.

No H100 row is in that file (its README); the script stops if one appears. Diagnostic only:
nothing is fitted on it.

    PYTHONPATH=$PWD python bench/nccl_floor.py [--csv PATH]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
from collections import defaultdict

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "..", "shared", "measurements", "gpu", "aic_nccl.csv")
SMALL = 4096
STEPS = {"all_reduce": lambda n: 2 * (n - 1), "all_gather": lambda n: n - 1}
GRAPH = ("trtllm_allreduce", "vllm_custom_allreduce", "sglang_custom_allreduce")


def load(path: str):
    tests, graph = defaultdict(list), defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["device_system"] == "h100_sxm" or "H100" in r["device_name"]:
                raise SystemExit("an H100 row is in the collective data; H100 is held out")
            if int(r["message_bytes"]) > SMALL:
                continue
            s, n, t = r["device_system"], int(r["num_gpus"]), float(r["latency_us"])
            if r["library"] == "nccl-tests" and r["dtype"] == "float16" and r["collective"] in STEPS:
                tests[(s, r["nccl_version"], r["collective"], n, r["message_bytes"])].append(t)
            elif r["library"] in GRAPH and r["mode"] == "graph":
                graph[(s, r["library"], n)].append(t)
    return tests, graph


def floor(items) -> tuple[float, float]:
    """(a, b) of the least-squares ``median = a + b * steps`` over ``items`` [(coll, n, times)]."""
    x = np.array([STEPS[c](n) for c, n, _ in items], float)
    y = np.array([statistics.median(t) for _, _, t in items])
    b, a = np.polyfit(x, y, 1)
    return float(a), float(b)


def per_gpu(items) -> float:
    """``c`` of the least-squares ``median = a + b * steps + c * (n - 2)`` over ``items``."""
    x = np.array([[1.0, STEPS[c](n), n - 2] for c, n, _ in items])
    y = np.array([statistics.median(t) for _, _, t in items])
    return float(np.linalg.lstsq(x, y, rcond=None)[0][2])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default=CSV)
    tests, graph = load(ap.parse_args().csv)
    systems = sorted({k[0] for k in tests})
    print("| system | nccl-tests floor a (us) | per ring step b (us) | per GPU c (us) "
          "| a by NCCL folder (us) | one-shot graph all-reduce, 2 / 4 / 8 GPUs (us): TRT-LLM; vLLM; SGLang |")
    print("|---|---:|---:|---:|---|---|")
    for s in systems:
        pooled = defaultdict(list)
        for (s_, _v, c, n, nb), t in tests.items():
            if s_ == s:
                pooled[(c, n, nb)] += t
        items = [(c, n, t) for (c, n, _), t in pooled.items()]
        a, b = floor(items)
        by_v = []
        for v in sorted({k[1] for k in tests if k[0] == s}):
            its = [(c, n, t) for (s_, v_, c, n, _), t in tests.items() if s_ == s and v_ == v]
            if len({(c, n) for c, n, _ in its}) > 1:
                by_v.append(f"{v or 'framework folder'}: {floor(its)[0]:.1f}")
        g = "; ".join(" / ".join(f"{statistics.median(graph[(s, lib, n)]):.1f}" if (s, lib, n) in graph
                                 else "-" for n in (2, 4, 8)) for lib in GRAPH)
        print(f"| {s} | {a:.1f} | {b:.2f} | {per_gpu(items):+.2f} | {', '.join(by_v)} | {g} |")


if __name__ == "__main__":
    main()
