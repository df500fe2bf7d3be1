"""GPU accuracy: opcost's predictions against measured single-op latencies.

Every case is a one-op ONNX model (``bench/op_models.py``) predicted the way a user would:
``analyzer.analyze(model, hw=<profile>, runtime=<runtime of the measurement's timing>,
l2=<the L2 state it measured>)``: cold (the L2 flushed before each call, every byte from DRAM)
for Liger's do_bench rows and the H100 ``kernel_l2cold`` rows, warm for the others.

Data:
- ``../shared/measurements/gpu/`` (public): aiconfigurator bf16 GEMMs (CUDA-graph replay ->
  ``runtime="kernel"``) on A100 SXM, H200, B200, GB200, L40S; vidur in-model fp16 ops (profiler
  kernel sums -> ``runtime="kernel"``) on A100 80GB and A40: GEMM (+bias), add, layer norm, GELU,
  embedding gather; and RMS norm, timed on sarathi-serve's own kernel, which no constant is fitted
  on (scored in a table of its own).  Rows are sampled deterministically, spread over each group's
  sizes (``--per-group``).  Left out, and why: fp8/fp8_block/nvfp4 GEMMs (they include
  activation-quantization kernels), silu_and_mul/rope/add3 (no one-op ONNX equivalent),
  attention (the aiconfigurator rows time a vLLM layer, not an op), devices without a profile
  (B300, GB300, RTX PRO 6000, Arc B60).
- ``bench/data/liger/torch_single_ops.csv`` (public, never fitted on): Liger-Kernel's benchmark
  rows for plain-PyTorch single ops (nn.LayerNorm and nn.Embedding fp32 on three A100s, softmax
  fp32/bf16 on an RTX 3090), timed by triton's do_bench (``runtime="kernel"``, ``l2="cold"``:
  do_bench zeroes a 256 MB buffer before each call).
- ``bench/data/liger_multi/torch_multi_kernel_ops.csv`` (public, never fitted on): the same benchmark's
  multi-kernel PyTorch baselines (CrossEntropyLoss fp32 on a B200 and two A100s, Hugging Face's eager
  LlamaRMSNorm bf16 on two A100s), one ONNX node per PyTorch kernel, the same timing and L2 state.
- ``bench/results/h100_ops_*.csv`` (measured here on a lent H100 SXM, held out: never fitted
  on): GEMM, batched GEMM, add, layer/RMS norm, softmax, GELU, embedding, fp16 and bf16, as
  profiler kernel sums (``runtime="kernel"``; the same inputs every call, so L2-warm below 50 MB),
  the same with the L2 flushed before each call (timing ``kernel_l2cold``, ``runtime="kernel"``,
  ``l2="cold"``)
  and eager wall-clock of one call at a time (``runtime="eager-op"``: dispatch + kernel +
  synchronize per op).

Rows timed on PyTorch's 2024 gather kernel (vidur; Liger's rows before 2025-08) are predicted with
the family's ``-pytorch2.3`` variant (``Case.kernels``; README "Which gather kernel"); every other
row, and every class but the gather, with the family itself.

Three scorings:
- ``fitted``: each device's own family constants (for the shared data: in-device, constants
  FITTED ON THAT SAME DATA; for H100: the Hopper constants fitted on H200 only, so out of
  sample);
- ``cross``: the constants of another family (fit on one device, score on another);
- ``datasheet``: the datasheet roofline with the profile's launch figure (the old model).

Usage: ``python bench/accuracy.py [--shared ../shared/measurements/gpu] [--per-group 60]
[--liger-l2 warm|cold] [--out bench/results/accuracy_gpu_<date>]``.  Prints the tables and writes .md and .json.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import glob
import json
import os
import platform
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from op_models import OP_CLASS, build  # noqa: E402

from analyzer.prediction.efficiency.constants import PYTORCH23  # noqa: E402

AIC_PROFILE = {"a100_sxm": "a100-80gb-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200-hgx",
               "gb200": "gb200-gpu", "l40s": "l40s"}
VIDUR_PROFILE = {"a100_80gb": "a100-80gb-sxm", "a40": "a40"}
VIDUR_OPS = {"gemm": "gemm", "gemm_bias": "gemm_bias", "add": "add", "rmsnorm": "rmsnorm",
             "layernorm_affine": "layernorm", "gelu_erf": "gelu", "embedding": "embedding"}
# cross-device scoring: the family whose constants score each device (fit on one, score on another)
CROSS = {"a100_sxm": "nvidia-hopper", "a100_80gb": "nvidia-ampere-ga10x", "a40": "nvidia-ampere",
         "h200_sxm": "nvidia-blackwell", "b200_sxm": "nvidia-hopper", "gb200": "nvidia-hopper",
         "l40s": "nvidia-ampere", "h100_sxm": "nvidia-blackwell",
         # Liger-Kernel's devices (by the name its rows record)
         "NVIDIA A100 80GB PCIe": "nvidia-ampere-ga10x", "NVIDIA A100-SXM4-80GB": "nvidia-ampere-ga10x",
         "NVIDIA A100-SXM4-40GB": "nvidia-ampere-ga10x", "NVIDIA GeForce RTX 3090": "nvidia-ampere",
         "NVIDIA B200": "nvidia-hopper"}


@dataclass(frozen=True)
class Case:
    source: str          # aic_gemm | vidur | h100 (this project's measurement)
    device: str          # the measurement's device name
    profile: str         # hardware_db id
    op: str              # op_models op
    dtype: str
    dims: tuple          # ((name, value), ...)
    timing: str          # kernel | eager
    measured_s: float
    # the kernels' era where it is not today's: "pytorch2.3" (PyTorch's 2024 index_select gather,
    # predicted with the family's "-pytorch2.3" variant, bench/fit_efficiency.py); "": current
    kernels: str = ""

    @property
    def op_class(self) -> str:
        return OP_CLASS[self.op]


@dataclass
class Scored:
    case: Case
    predicted_s: float
    error: float = field(init=False)   # signed relative error of the prediction

    def __post_init__(self):
        self.error = (self.predicted_s - self.case.measured_s) / self.case.measured_s


def _spread(rows, key, n):
    """n rows spread evenly over ``key`` (deterministic)."""
    rows = sorted(rows, key=key)
    if len(rows) <= n:
        return rows
    step = (len(rows) - 1) / (n - 1)
    return [rows[round(i * step)] for i in range(n)]


def shared_cases(shared: str, per_group: int) -> list[Case]:
    cases: list[Case] = []
    groups: dict[tuple, list] = {}
    with open(os.path.join(shared, "aic_gemm.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["device_system"] in AIC_PROFILE and r["dtype"] == "bfloat16" and r["timing"] == "graph":
                groups.setdefault(("aic_gemm", r["device_system"], "gemm"), []).append(r)
    for (src, dev, _op), rows in sorted(groups.items()):
        for r in _spread(rows, lambda r: (int(r["m"]) * int(r["n"]) * int(r["k"]), r["m"], r["n"]), per_group):
            cases.append(Case(src, dev, AIC_PROFILE[dev], "gemm", "bf16",
                              (("M", int(r["m"])), ("N", int(r["n"])), ("K", int(r["k"]))),
                              "kernel", float(r["latency_us"]) * 1e-6))
    groups = {}
    with open(os.path.join(shared, "vidur_a100_a40.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["gpu"] in VIDUR_PROFILE and r["op"] in VIDUR_OPS:
                groups.setdefault(("vidur", r["gpu"], r["op"]), []).append(r)
    for (src, dev, op), rows in sorted(groups.items()):
        # one row per distinct shape (vidur repeats shapes across models)
        uniq = {(r["M"], r["N"], r["K"]): r for r in rows}
        pick = _spread(list(uniq.values()),
                       lambda r: (int(float(r["M"] or 0)) * int(float(r["N"] or 1)) * int(float(r["K"] or 1)),
                                  r["M"], r["N"], r["K"]), per_group)
        for r in pick:
            M, N, K = (int(float(r[c])) if r[c] else 0 for c in ("M", "N", "K"))
            o = VIDUR_OPS[op]
            dims = ((("M", M), ("N", N), ("K", K)) if o in ("gemm", "gemm_bias") else
                    (("M", M), ("N", N), ("V", K)) if o == "embedding" else (("M", M), ("N", N)))
            # vidur's rmsnorm is sarathi-serve's own CUDA kernel, which the norm class is not
            # fitted on (bench/fit_efficiency.py SERVING_KERNELS): scored in a table of its own
            cases.append(Case("vidur_vllm" if op == "rmsnorm" else src, dev, VIDUR_PROFILE[dev], o, "fp16",
                              dims, "kernel", float(r["measured_us"]) * 1e-6, LEGACY_KERNELS))
    return cases


# the runtime each timing is predicted with: "kernel_l2cold" (the H100 rows' kernel sum with a
# 256 MiB buffer overwritten before each call; bench/h100/README.md) is kernel time too; "eager"
# (perf_counter around one op call and a synchronize) is the per-op eager definition, not the
# whole-model stream
RUNTIME_OF = {"kernel_l2cold": "kernel", "eager": "eager-op"}
# the L2 state each timing is predicted with (``analyzer.Options.l2``): "kernel_l2cold" flushes the
# L2 before each call (cold: every byte from DRAM); Liger's rows are timed by triton's do_bench,
# which zeroes a 256 MB buffer before each call (LIGER_L2, main's --liger-l2); every other timing
# re-runs one op on the same inputs or runs it in a model (warm)
L2_OF = {"kernel_l2cold": "cold"}
LIGER_L2 = "cold"
LIGER = os.path.join(HERE, "data", "liger", "torch_single_ops.csv")
# vidur's rows (2024) and Liger's rows before PyTorch 2.8 (released 2025-08; the vectorized gather
# of pytorch/pytorch PRs 151490 and 151753 was merged in April 2025) ran the older gather kernel
LEGACY_KERNELS, VECTORIZED_GATHER_RELEASE = PYTORCH23, "2025-08"


def liger_cases(path: str = LIGER) -> list[Case]:
    """Liger-Kernel's public PyTorch baselines (bench/data/liger/README.md): triton's do_bench
    median (CUDA events around one call, L2 flushed before each) -> ``runtime="kernel"``."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            dims = tuple((c, int(r[c])) for c in ("M", "N", "V") if int(r[c]))
            out.append(Case("liger", r["gpu_name"], r["profile"], r["op"], r["dtype"], dims, "kernel",
                            float(r["time_us_p50"]) * 1e-6,
                            LEGACY_KERNELS if r["timestamp"] < VECTORIZED_GATHER_RELEASE else ""))
    return out


LIGER_MULTI = os.path.join(HERE, "data", "liger_multi", "torch_multi_kernel_ops.csv")


def liger_multi_cases(path: str = LIGER_MULTI) -> list[Case]:
    """Liger-Kernel's multi-kernel PyTorch baselines (bench/data/liger_multi/README.md), each a
    graph of one node per PyTorch kernel (``op_models.MULTI``); do_bench as ``liger_cases``."""
    with open(path, newline="") as f:
        return [Case("liger_multi", r["gpu_name"], r["profile"], r["op"], r["dtype"],
                     (("M", int(r["M"])), ("N", int(r["N"]))), "kernel", float(r["time_us_p50"]) * 1e-6)
                for r in csv.DictReader(f)]


def h100_cases(path: str) -> list[Case]:
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            dims = tuple((c, int(r[c])) for c in ("M", "N", "K", "B", "V") if r[c] and int(r[c]))
            if r["op"] == "bmm" and not any(c == "B" for c, _ in dims):
                continue
            for timing, col in (("kernel", "kernel_sum_us"), ("eager", "eager_wall_us"),
                                ("kernel_l2cold", "kernel_sum_l2cold_us")):
                if r[col]:
                    out.append(Case("h100", "h100_sxm", "h100-sxm", r["op"], r["dtype"], dims,
                                    timing, float(r[col]) * 1e-6))
    return out


def l2_of(case: Case, liger_l2: str | None = None) -> str:
    """The L2 state ``case``'s timing measured (``L2_OF``; Liger's rows, one-op and multi-kernel:
    ``liger_l2``, default ``LIGER_L2``)."""
    if case.source in ("liger", "liger_multi"):
        return liger_l2 or LIGER_L2
    return L2_OF.get(case.timing, "warm")


def score(cases: list[Case], mode: str = "fitted", liger_l2: str | None = None) -> list[Scored]:
    """Predict every case through ``analyzer.analyze`` (``mode``: fitted | cross | datasheet) with
    its timing's runtime and L2 state (``l2_of``)."""
    import analyzer
    import hardware_db
    from analyzer.prediction.efficiency.constants import family_of, variant_of

    profiles: dict[tuple[str, str], object] = {}
    out = []
    for c in cases:
        key = (c.profile, c.device, c.kernels)
        prof = profiles.get(key)
        if prof is None:
            base = hardware_db.get(c.profile)
            if mode == "datasheet":
                base = dataclasses.replace(base, family="datasheet")
            else:
                fam = CROSS[c.device] if mode == "cross" else (base.family or family_of(base.id))
                base = dataclasses.replace(base, family=variant_of(fam, c.kernels))
            prof = profiles[key] = base
        model = build(c.op, c.dtype, **dict(c.dims))
        runtime = RUNTIME_OF.get(c.timing, c.timing) if mode != "datasheet" else "kernel"
        r = analyzer.analyze(model, hw=[prof], runtime=runtime, l2=l2_of(c, liger_l2))
        out.append(Scored(c, r.predictions[0].latency_s))
    return out


def stats(scored: list[Scored]) -> dict:
    e = [s.error for s in scored]
    a = sorted(abs(x) for x in e)
    n = len(e)
    return {"rows": n, "mape": 100 * sum(a) / n, "median_ape": 100 * a[n // 2],
            "bias": 100 * sum(e) / n, "within10": 100 * sum(x <= 0.10 for x in a) / n,
            "within25": 100 * sum(x <= 0.25 for x in a) / n}


def table(scored: list[Scored], by=("device", "op_class", "timing")) -> list[tuple]:
    groups: dict[tuple, list] = {}
    for s in scored:
        groups.setdefault(tuple(getattr(s.case, k) for k in by), []).append(s)
    return [(k, stats(v)) for k, v in sorted(groups.items())]


def _md(rows, head) -> list[str]:
    out = ["| " + " | ".join(head) + " | rows | MAPE % | median % | bias % | ±10% | ±25% |",
           "|" + "---|" * (len(head) + 6)]
    for k, s in rows:
        out.append("| " + " | ".join(map(str, k)) + f" | {s['rows']} | {s['mape']:.1f} | "
                   f"{s['median_ape']:.1f} | {s['bias']:+.1f} | {s['within10']:.0f} | {s['within25']:.0f} |")
    return out


def write_cases(cases: list[Case], path: str) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "device", "profile", "op", "dtype", "dims", "timing", "measured_s", "kernels"])
        for c in cases:
            w.writerow([c.source, c.device, c.profile, c.op, c.dtype, json.dumps(dict(c.dims)),
                        c.timing, repr(c.measured_s), c.kernels])


def read_cases(path: str) -> list[Case]:
    with open(path, newline="") as f:
        return [Case(r["source"], r["device"], r["profile"], r["op"], r["dtype"],
                     tuple(json.loads(r["dims"]).items()), r["timing"], float(r["measured_s"]),
                     r.get("kernels", ""))
                for r in csv.DictReader(f)]


def write_guard(shared: str, h100: str | None, folder: str) -> int:
    """A small committed sample (8 cases per group) and its errors today: the regression guard."""
    os.makedirs(folder, exist_ok=True)
    cases = (shared_cases(shared, 8) + _spread_groups(liger_cases(), 8)
             + _spread_groups(h100_cases(h100) if h100 else [], 8))
    write_cases(cases, os.path.join(folder, "cases.csv"))
    scored = score(cases)
    rec = {"overall": stats(scored), "groups": [[list(k), s] for k, s in
                                                table(scored, ("source", "op_class", "timing"))],
           "command": "python bench/accuracy.py --write-guard " + folder,
           "date": str(datetime.date.today())}
    with open(os.path.join(folder, "recorded.json"), "w") as f:
        json.dump(rec, f, indent=1)
    print(f"wrote {len(cases)} cases to {folder}")
    return 0


def _spread_groups(cases: list[Case], n: int) -> list[Case]:
    groups: dict[tuple, list] = {}
    for c in cases:
        groups.setdefault((c.op, c.dtype, c.timing), []).append(c)
    return [x for _, g in sorted(groups.items()) for x in _spread(g, lambda c: c.dims, n)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--h100", default=max(glob.glob(os.path.join(HERE, "results", "h100_ops_*.csv")),
                                          default=None))
    ap.add_argument("--per-group", type=int, default=60)
    ap.add_argument("--liger-l2", choices=("warm", "cold"), default=LIGER_L2,
                    help="the L2 state Liger's rows are predicted with (do_bench flushes the L2 before "
                         f"each call; default {LIGER_L2})")
    ap.add_argument("--out", default=os.path.join(HERE, "results",
                                                  f"accuracy_gpu_{datetime.date.today()}"))
    ap.add_argument("--write-guard", metavar="DIR", default=None,
                    help="write a small sample of the cases (8 per group) and their recorded "
                         "errors for tests/prediction/test_accuracy_guard.py")
    args = ap.parse_args(argv)
    if args.write_guard:
        return write_guard(args.shared, args.h100, args.write_guard)
    shared = shared_cases(args.shared, args.per_group)
    h100 = h100_cases(args.h100) if args.h100 else []
    doc: dict = {"date": str(datetime.date.today()), "machine": platform.platform(),
                 "command": "python bench/accuracy.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                 "per_group": args.per_group, "tables": {}}
    md = [f"# GPU accuracy ({doc['date']})", "",
          f"Command: `{doc['command']}`. Each row: a one-op ONNX model predicted with "
          "`analyzer.analyze(model, hw=profile, runtime=..., l2=...)` against its measured time "
          "(l2: the L2 state the timing measured: cold for the H100 `kernel_l2cold` rows and, with "
          f"--liger-l2 {args.liger_l2}, Liger's do_bench rows; warm for the others).", ""]
    for title, cases, modes in (
            ("Shared public measurements (constants fitted on this same data: in-sample)",
             [c for c in shared if c.source != "vidur_vllm"], ("fitted", "cross", "datasheet")),
            ("Shared public measurements of vLLM's rms_norm kernel (vidur; not fitted on: the norm class "
             "is fitted on PyTorch's own LayerNorm kernel)", [c for c in shared if c.source == "vidur_vllm"],
             ("fitted", "cross", "datasheet")),
            ("Public, not fitted on: Liger-Kernel's PyTorch baselines (A100 fp32 LayerNorm and Embedding, "
             "RTX 3090 fp32/bf16 softmax; 2024-2025 torch; B200 bf16 LayerNorm, 2026; do_bench with L2 flushed)", liger_cases(),
             ("fitted", "cross", "datasheet")),
            ("Public, not fitted on: Liger-Kernel's multi-kernel PyTorch baselines (CrossEntropyLoss fp32: "
             "B200 2026, A100s 2024-2025; HF LlamaRMSNorm bf16: A100s 2024-2025; do_bench with L2 flushed)",
             liger_multi_cases(), ("fitted", "cross", "datasheet")),
            ("H100 SXM, measured here, held out (Hopper constants fitted on H200 only)", h100,
             ("fitted", "cross", "datasheet"))):
        if not cases:
            continue
        md += [f"## {title}", ""]
        for mode in modes:
            scored = score(cases, mode, args.liger_l2)
            overall = stats(scored)
            by_cls = table(scored, ("device", "op_class", "timing"))
            doc["tables"][f"{title} / {mode}"] = {"overall": overall,
                                                  "groups": [[list(k), s] for k, s in by_cls]}
            md += [f"### {mode}: overall MAPE {overall['mape']:.1f}%, median {overall['median_ape']:.1f}%, "
                   f"bias {overall['bias']:+.1f}%, within ±10% {overall['within10']:.0f}%, "
                   f"±25% {overall['within25']:.0f}% ({overall['rows']} rows)", ""]
            timings = sorted({x.case.timing for x in scored})
            if len(timings) > 1:   # each time definition on its own (the acceptance states them apart)
                for t in timings:
                    st = stats([x for x in scored if x.case.timing == t])
                    doc["tables"][f"{title} / {mode} / {t}"] = {"overall": st}
                    md += [f"- {t} rows only: MAPE {st['mape']:.1f}%, median {st['median_ape']:.1f}%, "
                           f"bias {st['bias']:+.1f}%, within ±10% {st['within10']:.0f}%, "
                           f"±25% {st['within25']:.0f}% ({st['rows']} rows)"]
                md += [""]
            md += _md(by_cls, ("device", "op class", "timing")) + [""]
            print("\n".join(md[-len(by_cls) - 4:]))
    with open(args.out + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    with open(args.out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {args.out}.md and .json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
