"""One part of the plan on one CUDA GPU, in one process, rows written case by case.

Pass A (eager wall-clock, CUDA events, CUDA graphs, torch.compile's first call) runs over the part's
cases before pass B (torch.profiler) starts, so CUPTI was never enabled while pass A's times were
taken. Pass A may use ``A_SHARE`` of the part's budget; pass B the rest. A case that fails leaves
its error in the row and the run goes on. Writes under the output folder:

  <part>_a.csv          pass A rows (gpu_plan.ID_COLS + times), flushed after every case
  <part>_b.csv          pass B rows (kernel sums, kernel counts, first/main kernel names)
  <part>_kernels.json   per case key: every kernel name and its median duration in one call
  <part>_meta.json      GPU, versions, settings, nvidia-smi before/after, cuts, time definitions
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import time

import torch

import gpu_plan
import gpu_timing as T

DEVICE = "cuda"
A_SHARE = {"ops": 0.5, "gemm": 0.5, "conv": 0.5, "models": 0.6, "compile": 0.85}
RESULT_A = ("eager_wall_us", "eager_wall_min_us", "event_us", "graph_us", "graph_rep_us", "graph_x20_us",
            "compile_s", "params", "attn_implementation", "note")
A_COLS = (*gpu_plan.ID_COLS, *RESULT_A, "times", "counts", "settings", "error_a", "t_s")
B_COLS = (*gpu_plan.ID_COLS, *T.PROF_KEYS, "kernel_sum_l2cold_us", "n_kernels_l2cold", "error_b", "t_s")


def environment() -> dict:
    """The GPU, the software versions and torch's numerics switches as found."""
    props = torch.cuda.get_device_properties(0)
    env = {"date_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "python": platform.python_version(), "gpu_name": torch.cuda.get_device_name(0),
           "sm_count": props.multi_processor_count, "total_mem_bytes": props.total_memory,
           "l2_cache_bytes": getattr(props, "L2_cache_size", None), "capability": f"{props.major}.{props.minor}",
           "torch": torch.__version__, "cuda_runtime": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
           "settings_found": {"matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                              "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
                              "cudnn_benchmark": torch.backends.cudnn.benchmark,
                              "fp16_reduced_precision_reduction":
                                  torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
                              "bf16_reduced_precision_reduction":
                                  torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}}
    from importlib import metadata

    for dist in ("torchvision", "transformers", "triton", "numpy", "nvidia-cudnn-cu13", "nvidia-cublas"):
        try:
            env[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            env[dist] = "not installed"
    return env


def warm_clock(seconds: float) -> None:
    """bf16 8192^3 matmuls for ``seconds`` so the SM clock is up before the first case."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()
    del a
    torch.cuda.empty_cache()


class Maker:
    """Builds a case's (fn, context factory, info); keeps built models between cases of a part and
    compiled functions between the passes of ``compile``."""

    def __init__(self, part: str):
        self.part, self.models, self.compiled = part, {}, {}

    def __call__(self, c: dict):
        import gpu_cases

        settings = gpu_cases.set_tf32(c["tf32"])
        if self.part in ("ops", "gemm", "conv"):
            fn, ctx = gpu_cases.make(c, DEVICE)
            return fn, ctx, {"settings": settings}
        import gpu_models

        if self.part == "models":
            fn, ctx, info = gpu_models.make(c, DEVICE, cache=self.models)
        else:
            if c["key"] not in self.compiled:
                self.compiled[c["key"]] = gpu_models.make(c, DEVICE, compiled=True)
            fn, ctx, info = self.compiled[c["key"]]
        return fn, ctx, info | {"settings": settings}


def _id(c: dict) -> dict:
    return {k: c[k] for k in gpu_plan.ID_COLS}


def _release(c: dict) -> None:
    """Hand a large case's cached blocks back (a failing device is left to the health check)."""
    if c["bytes_alloc"] > 2**28:
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()


def run_case_a(make, c: dict, t_start: float) -> dict:
    row = _id(c) | {"times": ";".join(c["times"]), "counts": json.dumps(c["counts"], sort_keys=True)}
    errors = []
    try:
        fn, ctx, info = make(c)
        row.update({k: info.get(k) for k in ("params", "attn_implementation", "note")},
                   settings=json.dumps(info["settings"]))
        with ctx():
            if "compile_s" in c["times"]:
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                row["compile_s"] = time.perf_counter() - t0
            vals, errors = T.pass_a(fn, c)
        row.update(vals)
        del fn
    except Exception as e:  # noqa: BLE001  (the row keeps the error; the next case runs)
        errors.append(f"make: {e!r}"[:300])
    row["error_a"] = " | ".join(errors)
    row["t_s"] = round(time.perf_counter() - t_start, 2)
    _release(c)
    return row


def run_case_b(make, c: dict, t_start: float) -> tuple[dict, dict]:
    row, kern, errors = _id(c), {}, []
    try:
        fn, ctx, _info = make(c)
        with ctx():
            vals, kern, errors = T.pass_b(fn, c)
        row.update(vals)
        del fn
    except Exception as e:  # noqa: BLE001
        errors.append(f"make: {e!r}"[:300])
    row["error_b"] = " | ".join(errors)
    row["t_s"] = round(time.perf_counter() - t_start, 2)
    _release(c)
    return row, kern


def write_json(path: str, doc) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, default=str)
    os.replace(tmp, path)


def healthy() -> bool:
    """Whether this process's device still runs a kernel (a failed capture can leave it unusable)."""
    try:
        torch.ones(1, device=DEVICE).add_(1).item()
        return True
    except Exception:  # noqa: BLE001
        return False


def _loop(cases, deadline, do, log, label):
    """Run ``do(case)`` (-> its error text) over ``cases`` while the case's planning estimate fits
    before ``deadline`` (perf_counter), and until an error leaves the device unusable; (cases done,
    index where it stopped or None)."""
    done = []
    for i, c in enumerate(cases):
        if time.perf_counter() + c["est_s"] > deadline:
            log(f"{label}: budget reached after {i} of {len(cases)} cases")
            return done, i
        error = do(c)
        done.append(c)
        if error:
            log(f"{label} ERROR {c['key']}: {error}")
            if not healthy():
                log(f"{label}: the device no longer runs a kernel after {c['key']}; part stopped")
                return done, i + 1
        if i % 50 == 0 or i == len(cases) - 1:
            log(f"{label} {i + 1}/{len(cases)} {c['key']}")
    return done, None


def _pass_b(part: str, out: str, make, done_a: list, deadline: float, t_start: float, log) -> tuple[list, object]:
    """Pass B over the cases pass A did; (cases done, where it stopped)."""
    try:
        if any("kernel_sum_l2cold_us" in c["times"] for c in done_a):
            T.l2_flush()              # allocate the flush buffer before the first profiled case
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001
        log(f"{part} B: not started, the device fails: {e!r}")
        return [], 0
    wb, kernels = T.Writer(os.path.join(out, f"{part}_b.csv"), list(B_COLS)), {}

    def do_b(c):
        row, kern = run_case_b(make, c, t_start)
        wb.row({k: T.fmt(v) for k, v in row.items()})
        kernels[c["key"]] = kern
        if len(kernels) % 50 == 1:
            write_json(os.path.join(out, f"{part}_kernels.json"), kernels)
        return row["error_b"]

    done_b, cut = _loop(done_a, deadline, do_b, log, f"{part} B")
    wb.close()
    write_json(os.path.join(out, f"{part}_kernels.json"), kernels)
    return done_b, cut


def run_part(part: str, out: str, budget_s: float, smoke: bool, log) -> dict:
    """Measure every case of ``part`` that fits in ``budget_s``; returns the part's meta."""
    t_start = time.perf_counter()
    cases = gpu_plan.plan((part,), smoke=smoke)
    meta = {"part": part, "smoke": smoke, "budget_s": budget_s, "planned_cases": len(cases),
            "time_definitions": {t: gpu_plan.TIME_DEFS[t] for t in gpu_plan.PART_TIMES[part]},
            "environment": environment(), "smi_before": T.smi(), "smi_clock_before": T.smi_clock_csv()}
    meta_path = os.path.join(out, f"{part}_meta.json")
    write_json(meta_path, meta)
    if part in ("ops", "gemm", "conv"):
        warm_clock(0.3 if smoke else 1.0)
    make = Maker(part)
    wa = T.Writer(os.path.join(out, f"{part}_a.csv"), list(A_COLS))

    def do_a(c):
        row = run_case_a(make, c, t_start)
        wa.row({k: T.fmt(v) for k, v in row.items()})
        return row["error_a"]

    done_a, meta["pass_a_cut_at"] = _loop(cases, t_start + A_SHARE[part] * budget_s, do_a, log, f"{part} A")
    wa.close()
    meta["pass_a_s"] = round(time.perf_counter() - t_start, 1)
    write_json(meta_path, meta)
    done_b, meta["pass_b_cut_at"] = _pass_b(part, out, make, done_a, t_start + budget_s, t_start, log)
    meta.update(cases_a=len(done_a), cases_b=len(done_b), total_s=round(time.perf_counter() - t_start, 1),
                smi_after=T.smi(), smi_clock_after=T.smi_clock_csv())
    write_json(meta_path, meta)
    return meta
