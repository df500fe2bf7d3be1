#!/usr/bin/env python3
"""Operator, GEMM, convolution and whole-model latencies on one NVIDIA GPU, in one command.

    python3 bench/gpu/measure.py --dry-run [--smoke] [--parts ops,gemm]   # list the plan (no GPU, no torch)
    python3 bench/gpu/measure.py --out DIR [--smoke] [--parts ...] [--total-s S]

Parts (gpu_plan.PARTS): ``ops`` memory-bound ops over 12 sizes 1 KiB..1 GiB in fp32/bf16/fp16;
``gemm`` small-M F.linear and attention bmm in fp32 (TF32 off and on) and bf16; ``conv`` every
distinct Conv2d of resnet50 and mobilenet_v2 at batch 1 and 32 (fp32 TF32 off/on, fp16
channels-last); ``models`` resnet50, mobilenet_v2, vit_b_16, BERT-base, GPT-2-small at batch 1 and 8,
bf16/fp32/TF32, inference and a training step; ``compile`` a few of those under torch.compile.
Every time definition is in gpu_plan.TIME_DEFS (and in each part's meta file).

Each part runs in its own process (``--run-part``) with a wall budget; a part past its budget plus
a grace is killed, and what it wrote stays. A background nvidia-smi trace (250 ms) is written to
``smi_trace.csv``. Budgets (seconds) come from the environment: GPU_BUDGET_<PART>_S (e.g.
GPU_BUDGET_OPS_S) and GPU_TOTAL_S for the whole run (default 255; each part's start is reserved
from it); SMOKE=1 equals --smoke. SIGTERM (an outer ``timeout``) kills the running part and writes
run.json.

Exit codes: 0 every part run timed at least one case; 1 a part timed none; 2 bad usage
or no CUDA GPU (without --dry-run); 124 stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gpu_plan  # noqa: E402

DEFAULT_PARTS = ("ops", "gemm", "conv", "models")
BUDGET_S = {"ops": 60.0, "gemm": 45.0, "conv": 30.0, "models": 75.0, "compile": 120.0}
SMOKE_BUDGET_S = {"ops": 8.0, "gemm": 5.0, "conv": 5.0, "models": 10.0, "compile": 60.0}
MIN_PART_S = {"ops": 5.0, "gemm": 5.0, "conv": 5.0, "models": 8.0, "compile": 50.0}
DEFAULT_TOTAL_S = 255.0
OVERHEAD_S = 10.0     # a part's process start (imports, CUDA context) and teardown, reserved from the total
GRACE_S = 40.0        # beyond its budget a part's process is killed
NO_CUDA = 2


def budgets(parts, smoke: bool, env=os.environ) -> dict:
    base = SMOKE_BUDGET_S if smoke else BUDGET_S
    return {p: float(env.get(f"GPU_BUDGET_{p.upper()}_S", base[p])) for p in parts}


def dry_run(parts, smoke: bool, out: str | None) -> int:
    cases = gpu_plan.plan(parts, smoke=smoke)
    summ = gpu_plan.summary(cases)
    b = budgets(parts, smoke)
    print(f"plan: {len(cases)} cases ({'smoke' if smoke else 'full'}), parts {', '.join(parts)}")
    for p in parts:
        s = summ.get(p, {"cases": 0, "est_s": 0.0, "tiers": {}, "ops": {}})
        print(f"  {p:8s} {s['cases']:5d} cases  est {s['est_s']:7.1f} s of GPU time  budget {b[p]:.0f} s  "
              f"tiers {dict(sorted(s['tiers'].items()))}")
        print("           ops: " + ", ".join(f"{k} {v}" for k, v in s["ops"].items()))
        print("           times: " + ", ".join(gpu_plan.PART_TIMES[p]))
    print("time definitions:")
    for name in sorted({t for p in parts for t in gpu_plan.PART_TIMES[p]}):
        print(f"  {name}: {gpu_plan.TIME_DEFS[name]}")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "plan.json"), "w", encoding="utf-8") as f:
            json.dump({"summary": summ, "budgets_s": b, "time_definitions": gpu_plan.TIME_DEFS,
                       "cases": cases}, f, indent=1)
    return 0


def _log_to(path: str):
    t0 = time.perf_counter()

    def log(*a):
        line = f"[{time.perf_counter() - t0:7.1f}s] " + " ".join(str(x) for x in a)
        print(line, flush=True)
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    return log


def run_part_here(part: str, out: str, budget_s: float, smoke: bool) -> int:
    """The ``--run-part`` process: one part on the CUDA GPU of this machine."""
    import torch

    if not torch.cuda.is_available():
        print(f"error: torch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False); "
              "bench/gpu/measure.py needs one (use --dry-run to list the plan)", file=sys.stderr)
        return NO_CUDA
    import gpu_runner

    log = _log_to(os.path.join(out, f"{part}_log.txt"))
    meta = gpu_runner.run_part(part, out, budget_s, smoke, log)
    log(f"{part}: pass A {meta['cases_a']} / pass B {meta['cases_b']} of {meta['planned_cases']} cases "
        f"in {meta['total_s']} s")
    return 0


def smi_trace(out: str):
    """Start nvidia-smi every 250 ms into smi_trace.csv; the Popen (or None without nvidia-smi)."""
    if not shutil.which("nvidia-smi"):
        return None
    reasons = "clocks_event_reasons.active"
    probe = subprocess.run(["nvidia-smi", f"--query-gpu={reasons}", "--format=csv"], capture_output=True, text=True)
    if probe.returncode != 0:
        reasons = "clocks_throttle_reasons.active"
    q = f"timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,memory.used,{reasons}"
    f = open(os.path.join(out, "smi_trace.csv"), "w", encoding="utf-8")  # noqa: SIM115  (closed with the process)
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={q}", "--format=csv", "-lms", "250"], stdout=f,
                            stderr=subprocess.STDOUT)


TIMES_A = ("eager_wall_us", "event_us", "graph_us", "graph_x20_us", "compile_s")


def rows_ok(path: str) -> tuple[int, int]:
    """(rows, rows with at least one time) of a pass-A CSV; (0, 0) when absent."""
    import csv

    if not os.path.exists(path):
        return 0, 0
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return len(rows), sum(1 for r in rows if any(r.get(t) for t in TIMES_A))


def ok_parts(run_dir: str) -> list[str]:
    """The parts of a finished run (its run.json) that timed at least one case."""
    try:
        with open(os.path.join(run_dir, "run.json"), encoding="utf-8") as f:
            parts = json.load(f)["parts"]
    except (OSError, ValueError, KeyError):
        return []
    return [p for p, r in parts.items() if r.get("rows_ok", 0) > 0]


def run_all(parts, out: str, smoke: bool, total_s: float) -> int:
    """Each part in its own process within its budget and what is left of ``total_s``."""
    os.makedirs(out, exist_ok=True)
    t0, b = time.perf_counter(), budgets(parts, smoke)
    log = _log_to(os.path.join(out, "run_log.txt"))
    run = {"argv": sys.argv, "date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "smoke": smoke, "total_s": total_s, "budgets_s": b, "parts": {}}
    trace = smi_trace(out)
    rc = 0
    # an outer `timeout` sends SIGTERM: leave through the finally below (subprocess.run kills the part)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    try:
        for part in parts:
            left = total_s - (time.perf_counter() - t0) - OVERHEAD_S
            budget = min(b[part], left)
            if budget < MIN_PART_S[part]:
                run["parts"][part] = {"skipped": f"{left:.0f} s left of GPU_TOTAL_S, under its minimum {MIN_PART_S[part]:.0f} s"}
                log(f"{part}: skipped ({run['parts'][part]['skipped']})")
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--run-part", part, "--out", out,
                   "--budget-s", f"{budget:.1f}"] + (["--smoke"] if smoke else [])
            tp = time.perf_counter()
            try:
                prc = subprocess.run(cmd, timeout=budget + GRACE_S).returncode
            except subprocess.TimeoutExpired:
                prc = "killed after budget + grace"
            n, ok = rows_ok(os.path.join(out, f"{part}_a.csv"))
            run["parts"][part] = {"budget_s": round(budget, 1), "wall_s": round(time.perf_counter() - tp, 1),
                                  "returncode": prc, "rows": n, "rows_ok": ok}
            log(f"{part}: {run['parts'][part]}")
            if prc == NO_CUDA:
                return NO_CUDA
            if ok == 0:
                rc = 1
    except SystemExit:
        run["stopped"] = "SIGTERM (an outer timeout)"
        rc = 124
    finally:
        if trace is not None:
            trace.terminate()
            trace.wait(timeout=10)
        run["wall_s"] = round(time.perf_counter() - t0, 1)
        with open(os.path.join(out, "run.json"), "w", encoding="utf-8") as f:
            json.dump(run, f, indent=1)
    return rc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default=",".join(DEFAULT_PARTS), help=f"comma-separated, of {', '.join(gpu_plan.PARTS)}")
    ap.add_argument("--smoke", action="store_true", default=os.environ.get("SMOKE") == "1")
    ap.add_argument("--dry-run", action="store_true", help="list the plan and its estimates; needs no GPU")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="output folder (default $OUT)")
    ap.add_argument("--total-s", type=float, default=float(os.environ.get("GPU_TOTAL_S", DEFAULT_TOTAL_S)))
    ap.add_argument("--ok-parts", metavar="DIR", help="print the parts of DIR's run that timed at least one "
                    "case, comma-separated (to run in full only what the smoke run showed working)")
    ap.add_argument("--run-part", help=argparse.SUPPRESS)
    ap.add_argument("--budget-s", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    parts = tuple(p for p in args.parts.split(",") if p)
    bad = [p for p in parts if p not in gpu_plan.PARTS]
    if bad:
        print(f"error: unknown part(s) {', '.join(bad)}; parts: {', '.join(gpu_plan.PARTS)}", file=sys.stderr)
        return 2
    if args.ok_parts:
        print(",".join(ok_parts(args.ok_parts)))
        return 0
    if args.dry_run:
        return dry_run(parts, args.smoke, args.out)
    if not args.out:
        print("error: give --out DIR (or set OUT)", file=sys.stderr)
        return 2
    if args.run_part:
        return run_part_here(args.run_part, args.out, args.budget_s, args.smoke)
    if importlib.util.find_spec("torch") is None:
        print("error: torch is not importable here; bench/gpu/measure.py needs torch with a CUDA GPU "
              "(use --dry-run to list the plan)", file=sys.stderr)
        return NO_CUDA
    return run_all(parts, args.out, args.smoke, args.total_s)


if __name__ == "__main__":
    sys.exit(main())
