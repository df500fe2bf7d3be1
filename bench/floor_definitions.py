"""Kernel floors under two time definitions, on the public GPU data only (no H100 row is read).

opcost's ``kernel`` runtime predicts "the sum of device kernel times, no host gaps" and is scored
against two kinds of public measurement (``../shared/measurements/gpu/README.md``):

- aiconfigurator (``aic_gemm.csv``, ``aic_elementwise.csv``): mean GPU time of CUDA-graph
  replays of several back-to-back executions, so each kernel's time includes the short gap to the
  next kernel inside the graph (``graph``);
- vidur (``vidur_a100_a40.csv``): the profiler's kernel durations summed, launch gaps excluded,
  1 us resolution (``kernel_sum``).

The class floors (``hardware_db/efficiency/nvidia-*.json``, pooled in cycles by
``constants.floor_cycles``) are fitted on both: GEMM, attention and quantize on graph rows; the
elementwise, activation and norm classes on kernel-sum rows.  If a graph replay carried an
inter-kernel gap g per kernel that a kernel sum does not, then (1) on shapes both sources measured
on one GPU the graph time would exceed the kernel sum by about g, and (2) the graph-fitted GEMM
floor would over-predict the kernel-sum GEMM rows at small sizes by about g.  This script prints:

1. the smallest measured row per GPU, source and op, in us and in cycles of the profile's clock;
2. A100: aiconfigurator bf16 graph GEMMs against vidur fp16 kernel-sum GEMMs on the same (M, N, K),
   per band of the graph time: median (graph - kernel sum) and median (kernel sum / graph);
3. opcost's ``kernel``-runtime error (``bench/accuracy.py``'s cases and scoring, fitted
   constants) on every distinct GEMM row measured below ``--small-us``, per source and GPU:
   median (predicted - measured) in us.

Usage: ``PYTHONPATH=$PWD python bench/floor_definitions.py [--shared ../shared/measurements/gpu]
[--small-us 12] [--out bench/results/floor_definitions.md]``.  Data and prediction only (about
40 s).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
from report_lines import emit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

# the profile whose clock converts a floor to cycles (hardware_db/profiles/<id>.toml clock_ghz)
PROFILE = {"a100_sxm": "a100-80gb-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200-hgx",
           "gb200": "gb200-gpu", "l40s": "l40s", "a100_80gb": "a100-80gb-sxm", "a40": "a40"}
BANDS_US = ((0.0, 10.0), (10.0, 20.0), (20.0, 50.0), (50.0, 200.0), (200.0, float("inf")))
VIDUR_FLOOR_OPS = ("gemm", "add", "gelu_erf", "layernorm_affine", "rmsnorm", "embedding")


def _held_out(name: str) -> bool:
    return "h100" in name.lower()


def read_aic_gemm(shared: str) -> dict[str, dict[tuple, float]]:
    """device_system -> {(m, n, k): latency_us} of the bf16 graph rows."""
    out: dict[str, dict[tuple, float]] = {}
    with open(os.path.join(shared, "aic_gemm.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if _held_out(r["device_system"]) or r["dtype"] != "bfloat16" or r["timing"] != "graph":
                continue
            out.setdefault(r["device_system"], {})[(int(r["m"]), int(r["n"]), int(r["k"]))] = float(r["latency_us"])
    return out


def read_aic_quantize(shared: str) -> dict[str, float]:
    """device_system -> smallest latency_us of the unflagged single-kernel quantize rows."""
    out: dict[str, float] = {}
    with open(os.path.join(shared, "aic_elementwise.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if _held_out(r["device_system"]) or r["flag"]:
                continue
            out[r["device_system"]] = min(out.get(r["device_system"], float("inf")), float(r["latency_us"]))
    return out


def read_vidur(shared: str) -> dict[tuple[str, str], dict[tuple, float]]:
    """(gpu, op) -> {(M, N, K): median measured_us over the rows of that shape}."""
    acc: dict[tuple[str, str], dict[tuple, list[float]]] = {}
    with open(os.path.join(shared, "vidur_a100_a40.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if _held_out(r["gpu"]):
                continue
            key = tuple(int(float(r[c])) if r[c] else 0 for c in ("M", "N", "K"))
            acc.setdefault((r["gpu"], r["op"]), {}).setdefault(key, []).append(float(r["measured_us"]))
    return {g: {k: statistics.median(v) for k, v in d.items()} for g, d in acc.items()}


def common_shape_gap(graph: dict[tuple, float], ksum: dict[tuple, float], bands=BANDS_US) -> list[tuple]:
    """Per band [lo, hi) of the graph time, over the shapes both hold: (lo, hi, shapes,
    median(graph - kernel sum) us, median(kernel sum / graph))."""
    rows = []
    for lo, hi in bands:
        pairs = [(graph[s], ksum[s]) for s in sorted(set(graph) & set(ksum)) if lo <= graph[s] < hi]
        if pairs:
            rows.append((lo, hi, len(pairs), statistics.median(g - k for g, k in pairs),
                         statistics.median(k / g for g, k in pairs)))
    return rows


def _clock_hz(device: str) -> float:
    """The profile's clock in Hz; NaN where the profile states none (unknown stays unknown)."""
    import hardware_db
    ghz = hardware_db.get(PROFILE[device]).clock_ghz
    return float(ghz) * 1e9 if ghz else float("nan")


def smallest_rows(aic: dict, quant: dict, vidur: dict) -> list[tuple]:
    """(device, source, op, definition, smallest us, cycles at the profile clock)."""
    rows = [(d, "aiconfigurator", "gemm bf16", "graph", min(t.values())) for d, t in aic.items() if d in PROFILE]
    rows += [(d, "aiconfigurator", "quantize bf16->fp8", "graph", v) for d, v in quant.items() if d in PROFILE]
    rows += [(g, "vidur", op, "kernel_sum", min(t.values())) for (g, op), t in vidur.items()
             if g in PROFILE and op in VIDUR_FLOOR_OPS]
    return [(d, s, op, dfn, us, us * 1e-6 * _clock_hz(d)) for d, s, op, dfn, us in sorted(rows)]


def model_small_gemm(shared: str, small_us: float, keep=None) -> list[tuple]:
    """Per (source, device): rows, median signed error %, median and quartiles of (predicted -
    measured) us of opcost's kernel runtime on every distinct GEMM row measured below small_us
    (and, when given, ``keep(case)``)."""
    import accuracy
    cases = [c for c in accuracy.shared_cases(shared, 10**9)
             if c.op in ("gemm", "gemm_bias") and c.measured_s < small_us * 1e-6 and (keep is None or keep(c))]
    groups: dict[tuple, list] = {}
    for s in accuracy.score(cases, "fitted"):
        groups.setdefault((s.case.source, s.case.device), []).append(s)
    out = []
    for key in sorted(groups):
        d = sorted((s.predicted_s - s.case.measured_s) * 1e6 for s in groups[key])
        q = statistics.quantiles(d, n=4) if len(d) > 1 else [d[0]] * 3
        out.append((*key, len(d), 100 * statistics.median(s.error for s in groups[key]), q[1], q[0], q[2]))
    return out


def fitted_floors() -> list[tuple]:
    """(family, class, floor us, cycles, the fit data's timing) of every fitted NVIDIA family set
    that states its clock, and ("pooled", class, -, ``floor_cycles``, -) per class."""
    import json

    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR, OP_CLASSES, floor_cycles
    rows = []
    for name in sorted(os.listdir(EFFICIENCY_DIR)):
        if not name.startswith("nvidia-") or "-pytorch" in name or not name.endswith(".json"):
            continue
        with open(os.path.join(EFFICIENCY_DIR, name), encoding="utf-8") as f:
            doc = json.load(f)
        for cls, entry in sorted(doc["sets"].items()):
            c, p = entry["constants"], entry.get("provenance", {})
            if p.get("kind") == "fit" and c.get("floor_clock_hz", 0.0) > 0:
                timing = str(p.get("timing", "")).split(" ")[0]
                rows.append((doc["family"], cls, c["floor_s"] * 1e6, c["floor_s"] * c["floor_clock_hz"], timing))
    pooled = floor_cycles()
    return rows + [("pooled", cls, float("nan"), float(pooled[i]), "-") for i, cls in enumerate(OP_CLASSES)
                   if pooled[i] == pooled[i] and cls in {r[1] for r in rows}]


def report(shared: str, small_us: float) -> list[str]:
    aic, vidur = read_aic_gemm(shared), read_vidur(shared)
    lines = ["# Kernel floors under two time definitions (public data, no H100 row)", "",
             f"`PYTHONPATH=$PWD python bench/floor_definitions.py --small-us {small_us:g}`", "",
             "## Class floors as fitted (the data's time definition) and as pooled (`floor_cycles`)", "",
             "| family | class | floor us | cycles | fit data timing |", "|---|---|---:|---:|---|"]
    for fam, cls, us, cyc, timing in fitted_floors():
        lines.append(f"| {fam} | {cls} | {'-' if us != us else f'{us:.3f}'} | {cyc:,.0f} | {timing} |")
    lines += ["", "## Smallest measured row per GPU and definition", "",
             "| device | source | op | definition | smallest us | cycles at profile clock |",
             "|---|---|---|---|---:|---:|"]
    for d, s, op, dfn, us, cyc in smallest_rows(aic, read_aic_quantize(shared), vidur):
        lines.append(f"| {d} | {s} | {op} | {dfn} | {us:.2f} | {'-' if cyc != cyc else f'{cyc:,.0f}'} |")
    lines += ["", "## A100: the same GEMM shapes, graph replay (aiconfigurator bf16) vs kernel sum (vidur fp16)",
              "", "| graph time band us | shapes | median graph - kernel sum us | median kernel sum / graph |",
              "|---|---:|---:|---:|"]
    for lo, hi, n, diff, ratio in common_shape_gap(aic["a100_sxm"], vidur[("a100_80gb", "gemm")]):
        lines.append(f"| [{lo:g}, {hi:g}) | {n} | {diff:+.2f} | {ratio:.3f} |")
    lines += ["", f"## opcost `kernel` runtime on every distinct GEMM row measured below {small_us:g} us "
              "(in-sample constants)", "",
              "| source (definition) | device | rows | median error % | median pred - meas us | q25 us | q75 us |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for src, dev, n, err, med, q25, q75 in model_small_gemm(shared, small_us):
        dfn = "graph" if src.startswith("aic") else "kernel_sum"
        lines.append(f"| {src} ({dfn}) | {dev} | {n} | {err:+.1f} | {med:+.2f} | {q25:+.2f} | {q75:+.2f} |")
    lines += ["", "## The same on the tiny GEMMs: M = 1, N x K <= 2^18 (a small MLP's dots at batch 1)", "",
              "| source (definition) | device | rows | median error % | median pred - meas us | q25 us | q75 us |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for src, dev, n, err, med, q25, q75 in model_small_gemm(shared, float("inf"), _tiny):
        dfn = "graph" if src.startswith("aic") else "kernel_sum"
        lines.append(f"| {src} ({dfn}) | {dev} | {n} | {err:+.1f} | {med:+.2f} | {q25:+.2f} | {q75:+.2f} |")
    return lines


def _tiny(case) -> bool:
    d = dict(case.dims)
    return d["M"] == 1 and d["N"] * d["K"] <= 2**18


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--small-us", type=float, default=12.0)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "floor_definitions.md"))
    a = ap.parse_args(argv)
    lines = report(a.shared, a.small_us)
    emit(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
