"""The time definitions of gpu_plan.TIME_DEFS on one CUDA GPU.

eager_wall_us, graph_us, graph_x20_us and kernel_sum_us (+ the L2-cold variant) are the functions
of bench/h100/measure_ops.py, imported (one implementation for both GPUs' data); their call counts
are that module's globals, set per case by ``counts``. event_us (CUDA events around one eager call,
NeuSight's definition) is added here.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _load_h100():
    """bench/h100/measure_ops.py as a module (it makes the folder $OUT names on import: a scratch
    folder under bench/out/ when OUT is unset, which stays unset)."""
    had = "OUT" in os.environ
    os.environ.setdefault("OUT", os.path.join(ROOT, "bench", "out", "gpu"))
    try:
        spec = importlib.util.spec_from_file_location("h100_measure_ops",
                                                      os.path.join(ROOT, "bench", "h100", "measure_ops.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if not had:
            del os.environ["OUT"]
    return mod


H = _load_h100()
GLOBALS = {"w_eager": "W_EAGER", "n_eager": "N_EAGER", "w_graph": "W_GRAPH", "n_graph": "N_GRAPH",
           "graph_reps": "GRAPH_REPS", "w_prof": "W_PROF", "n_prof": "N_PROF"}
smi, smi_clock_csv, Writer, fmt, l2_flush = H.smi, H.smi_clock_csv, H.Writer, H.fmt, H.l2_flush


@contextlib.contextmanager
def counts(n: dict):
    """Run the imported definitions with the call counts ``n`` (gpu_plan.call_counts)."""
    old = {g: getattr(H, g) for g in GLOBALS.values()}
    for k, g in GLOBALS.items():
        setattr(H, g, int(n[k]))
    try:
        yield
    finally:
        for g, v in old.items():
            setattr(H, g, v)


def time_events(fn, n: int) -> float:
    """Mean of the fastest ceil(n/5) of n samples of (e0.record(); fn(); e1.record(); e1.synchronize()),
    after 3 warm-up calls, in microseconds."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(n):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1000.0)
    ts.sort()
    k = math.ceil(n / 5)
    return sum(ts[:k]) / k


def pass_a(fn, c: dict) -> tuple[dict, list[str]]:
    """The case's wall-clock, event and graph times (no profiler), each definition on its own so
    that one failing (a capture error) leaves the others; (values, errors)."""
    row, errors = {}, []
    steps = {
        "eager_wall_us": lambda: dict(zip(("eager_wall_us", "eager_wall_min_us"), H.time_eager(fn), strict=True)),
        "event_us": lambda: {"event_us": time_events(fn, c["counts"]["n_events"])},
        "graph_us": lambda: _graph(fn),
        "graph_x20_us": lambda: {"graph_x20_us": H.time_graph_x20(fn)},
    }
    with counts(c["counts"]):
        for name in c["times"]:
            if name in steps:
                try:
                    row.update(steps[name]())
                except Exception as e:  # noqa: BLE001  (recorded in the row; the next definition runs)
                    errors.append(f"{name}: {e!r}"[:300])
                    with contextlib.suppress(Exception):
                        torch.cuda.synchronize()
    return row, errors


def _graph(fn) -> dict:
    us, reps = H.time_graph(fn)
    return {"graph_us": us, "graph_rep_us": ";".join(f"{v:.3f}" for v in reps)}


PROF_KEYS = ("kernel_sum_us", "kernel_sum_min_us", "kernel_sum_max_us", "n_kernels", "first_kernel",
             "main_kernel", "grouping")


def pass_b(fn, c: dict) -> tuple[dict, dict, list[str]]:
    """The case's profiler kernel sums: (values, kernel names and median durations, errors)."""
    row, kern, errors = {}, {}, []
    with counts(c["counts"]):
        if "kernel_sum_us" in c["times"]:
            try:
                r = H.profile_kernels(fn)
                row.update({k: r.get(k) for k in PROF_KEYS})
                kern = {"names": r.get("kernel_names"), "median_us": r.get("kernel_median_us"),
                        "n_gpu_events_total": r.get("n_gpu_events_total")}
            except Exception as e:  # noqa: BLE001
                errors.append(f"kernel_sum_us: {e!r}"[:300])
        if "kernel_sum_l2cold_us" in c["times"]:
            try:
                r = H.profile_kernels(fn, flush=True)
                row.update(kernel_sum_l2cold_us=r.get("kernel_sum_us"), n_kernels_l2cold=r.get("n_kernels"))
            except Exception as e:  # noqa: BLE001
                errors.append(f"kernel_sum_l2cold_us: {e!r}"[:300])
    return row, kern, errors
