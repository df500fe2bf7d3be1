"""``calibrate``: measure this machine with onnxruntime and fit the CPU kernel-time model.

Only synthetic single-op models built with ``onnx.helper`` run (never a user's): per op class,
single nodes of different sizes (graph inputs: nothing constant-folds; the output feeds a 1-element
Slice), at the user's session level and thread count; a row's time is the ``q`` quantile of
``session.run`` wall-clock less a baseline model's (input -> Slice), the fastest of 5 passes
(``time_rows``); wall-clock, not the profiler (1-3 us of its own per node; a tiny Add costs 0.18 us
a node in a chain here). FLOPs and bytes: opcost's counts. The form and its fit: ``cpu_model``:

    t_kernel = floor_s + max(F / (peak * e_c), (B + b_half) / (bw * e_bw * cache))
    cache    = 1 + l2_gain / (1 + (B / l2_bytes)**2)     (l2_bytes: the cores' L2)
    t_model  = run_overhead_s + sum over kernels (dispatch_s + t_kernel)
Machine constants:
- ``peak`` (``matrix_tflops.fp32``): the best FLOP/s of the GEMM shapes (kernel time);
- ``bw`` (``memory.mem_bw_gbs``): Add's bytes / kernel time at the largest sizes (DRAM);
- ``dispatch_s`` (``overhead.launch_overhead_us``): (a chain of N tiny Adds - a chain of 1) / (N-1),
  the Add's own time included; ``run_overhead_s``: the 1-node chain less its one node;
- ``cold_weight_bw_gbs`` (with ``llc_bytes``, the sysfs L3): weight bytes / kernel time of a
  1-row MatMul twice the LLC, ``llc_effective_bytes`` / ``llc_step_power``: how much of a model's
  weights stays cached (``cpu_cold``); ``clip_epilogue_ns``: a fused Clip per output (``cpu_epilogue``);
``scalar_span_ns``: an element of a tensor ending in 1 and a scalar, ``channel_span_ns``: a call
of the broadcast loop's per-channel spans (``cpu_broadcast``); ``divide_ns``, ``clip_ns``: an element
of a Div more than of a Mul, of a Clip more than of a Relu (``cpu_op_rates``).
The library never prints: ``progress(fraction, phase_text)`` is called between phases."""

from __future__ import annotations

import datetime as _dt
import os
import time
from typing import Any, Callable

import numpy as np

from analyzer.measure.fit import options as calibration_fit
from analyzer.measure.fit.reorders import without_reorders
from analyzer.measure.cpu import cold_cache
from analyzer.prediction.cpu import broadcast as cpu_broadcast
from analyzer.prediction.cpu import epilogue as cpu_epilogue
from analyzer.prediction.cpu import op_rates as cpu_op_rates
from analyzer.measure.fit import class_fit as cpu_model
from analyzer.measure.fit import worker as fit_worker
from analyzer.prediction.cpu import thread_notes as thread_mode
from analyzer.measure.cpu import thread_state
from analyzer.measure.cpu.models import baseline_model, calibration_models, split_rows
from analyzer.prediction.cpu.host import (cache_level_bytes, cpu_family, cpu_name, host_id,
                                          l2_cache_bytes, simd, vendor)
from analyzer.measure.onnx_build import build_model, extra_nodes, value_info
from hardware_db.write import calibration_sources, to_toml, write_profile  # noqa: F401  (re-exported)
from analyzer.prediction.onnxruntime.graph import LAYOUT_LEVELS, import_ort, session_options
from analyzer.measure.onnxruntime import profiled_reorders


def wall_time(model, threads: int, level: str, q: float = 0.5, min_s: float = 0.08,
              min_runs: int = 8, max_runs: int = 400) -> float:
    """Quantile ``q`` of ``session.run`` wall-clock seconds (after 3 warm-up runs)."""
    from analyzer.measure.onnxruntime import random_feeds

    ort = import_ort()
    s = ort.InferenceSession(model.SerializeToString(), session_options(level, threads),
                             providers=["CPUExecutionProvider"])
    feeds = random_feeds(s)
    for _ in range(3):
        s.run(None, feeds)
    w = []
    t_end = time.perf_counter() + min_s
    while len(w) < max_runs and (len(w) < min_runs or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        s.run(None, feeds)
        w.append(time.perf_counter() - t0)
    return float(np.quantile(w, q))

def _profile_model(model, threads: int, level: str, runs: int, warmup: int = 2,
                   q: float = 0.5) -> dict[str, float]:
    """Median kernel seconds per node ``k<i>`` (nchwc layout variants joined)."""
    from analyzer.measure.onnxruntime import profile_runs
    node_s, _ = profile_runs(model.SerializeToString(), level, threads, None, runs, warmup, q=q)
    out: dict[str, float] = {}
    for k, t in node_s.items():
        base = k[:-6] if k.endswith("_nchwc") else k
        if base.startswith("k") and base[1:].isdigit():
            out[base] = out.get(base, 0.0) + t
    return out


LAYOUT_CLASSES = ("conv", "conv_dw", "conv_1x1", "pooling")   # rows onnxruntime runs in its NCHWc layout
# passes time_rows adds above 1 thread while none ran fast (~6 s each); probes (2 s apart) before the reorders are profiled
# until one reads fast (rows timed in a slow state ran 2-7x a fast one's), and tries of the cache sweep until the
# probes around it do
EXTRA_PASSES, STATE_TRIES = 3, 5
# Where each phase ends on the progress line, as shares of a whole calibration's time: a
# 2-thread calibration on a 2-core VM spent 49 % timing the rows, 15 % in the cold-weight sweep,
# 1 % on the Clip epilogues and 35 % fitting the classes (bench/calibration_phases.py prints
# these shares for this machine). The fit advances the line as each class's fit finishes.
PHASE_END = {"rows": 0.49, "dispatch": 0.50, "cold": 0.64, "clip": 0.65, "fit": 1.0}


def time_rows(splits: dict[str, dict[str, Any]], timer: Callable[[Any, float], float], base_model,
              passes: int = 3, progress: Callable[[float, str], None] | None = None,
              state: Callable[[], float] | None = None, extra_passes: int = 0,
              seen: list | None = None, deadline: float = np.inf) -> dict[str, dict[str, float]]:
    """``{class: {row: seconds}}``: each row model's fastest ``timer(model, min_s)`` over
    ``passes`` passes (classes in alternating order) less the baseline model's, timed before
    each class: its median within a pass, fastest over passes (the same statistic as a row's,
    over as many passes). Another process only ever adds time, and at 2 threads it makes a row
    bimodal (on a 2-core EPYC a 3x3 conv row measured 34, 47 and 60 us in sessions minutes apart
    beside one busy process, tight within each session: the worker thread had or lacked a core),
    which one pass cannot tell. Not each pass's own baseline: a slowed one made small rows near
    zero (and the matrix peak, their best FLOP/s, 4x too high); nor the fastest of all its
    timings: a minimum over 3 x classes timings against a row's over 3 added 0.1-0.3 us to every
    row (30-kernel models +20 %).

    ``state`` (above 1 thread: ``thread_state.speedup``) is timed before each pass into ``seen``;
    where no pass ran between two fast probes, up to ``extra_passes`` more start before
    ``deadline`` until one did (a 2-thread calibration whose probe read fast before and after
    its rows measured its depthwise rows 2.9x a steady one's, 1x1 rows 2.0x: predictions 27 %
    slow)."""
    say = progress or (lambda f, s: None)
    best: dict[str, dict[str, float]] = {cls: {} for cls in splits}
    base = np.inf
    order = list(splits)
    seen = [] if seen is None else seen
    p = 0
    while thread_state.another_pass(p, passes, extra_passes, seen if state is not None else None) \
            and (p < passes or time.perf_counter() < deadline):
        if state is not None:
            seen.append(state())
        total = max(passes, p + 1)
        bases = []
        for j, cls in enumerate(order if p % 2 == 0 else order[::-1]):
            say((p * len(order) + j) / (len(order) * total), f"measuring {cls} kernels ({p + 1}/{total})")
            bases.append(timer(base_model, 0.05 / passes))
            for k, mk in splits[cls].items():
                best[cls][k] = min(best[cls].get(k, np.inf), timer(mk, 0.08 / passes))
        base = min(base, float(np.median(bases)))
        p += 1
    return {cls: {k: v - base for k, v in rows.items()} for cls, rows in best.items()}


def _chain(n: int, width: int = 8):
    from onnx import helper
    nodes = []
    prev = "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        nodes.append(helper.make_node("Add", [prev, "c"], [out], name=f"n{i}"))
        prev = out
    from onnx import numpy_helper
    c = numpy_helper.from_array(np.full((width,), 0.5, dtype=np.float32), "c")
    return build_model(nodes, [value_info("x", (width,))], [value_info("y", (width,))], [c])


def _wall(model, threads, level, runs, q=0.5) -> float:
    from analyzer.measure.onnxruntime import time_runs
    ort = import_ort()
    s = ort.InferenceSession(model.SerializeToString(), session_options(level, threads),
                             providers=["CPUExecutionProvider"])
    feeds = {"x": np.ones((8,), dtype=np.float32)}
    w = time_runs(s, feeds, runs, warmup=20)
    return float(np.quantile(w, q))


# the chain of tiny Adds whose wall-clock, less one Add's, gives the per-node dispatch
N_CHAIN = 200


def calibrate(runtime: str = "onnxruntime", threads: int | None = None,
              progress: Callable[[float, str], None] | None = None, budget_s: float = 100,
              level: str = "default", runs: int = 7, q: float = 0.5, passes: int = 5) -> dict:
    """Measure this machine with onnxruntime (or, ``runtime="xla"``, JAX's XLA CPU backend:
    ``calibrate_xla``, which takes ``progress`` and nothing else of the below) and return a
    TOML-ready profile document.

    ``threads``: ``intra_op_num_threads`` of the measured sessions (default: the machine's
    cores). ``level``: the session optimization level the predictions are for. ``runs``:
    profiled runs per calibration model. ``q``: the quantile over runs (0.5: medians; lower is
    robust to other processes on a shared machine). ``passes``: rows are timed once per pass and
    keep their fastest (``time_rows``); the extra passes above 1 thread start only in the first
    half of ``budget_s`` seconds.
    """
    if runtime == "xla":
        from analyzer.measure.xla.calibrate import calibrate_xla
        return calibrate_xla(threads, progress)
    if runtime != "onnxruntime":
        from analyzer.errors import AnalyzerError
        raise AnalyzerError(f"calibrate: runtime '{runtime}' is not supported (onnxruntime or xla)")
    ort = import_ort()
    threads = int(threads or os.cpu_count() or 1)
    say = progress or (lambda f, s: None)
    t_start = time.perf_counter()
    models = calibration_models()
    splits = {cls: split_rows(m) for cls, m in models.items()}

    def probe():   # the thread state (thread_mode): at the start, before each row pass, at the end
        return thread_state.speedup(threads, lambda m, t: wall_time(m, t, level, q, min_s=0.15))

    speeds: dict[str, Any] = {"start": probe() if threads > 1 else None, "passes": []}
    first = _chains(threads, level, q)   # (once before the rows and once after them: see below)
    best = time_rows(splits, lambda mk, min_s: wall_time(mk, threads, level, q, min_s=min_s),
                     baseline_model(), passes, lambda f, s: say(f * PHASE_END["rows"], s),
                     probe if threads > 1 else None, EXTRA_PASSES, speeds["passes"], t_start + budget_s / 2)
    speeds["reorders"] = (thread_state.wait_fast(probe, STATE_TRIES)
                          if threads > 1 and level in LAYOUT_LEVELS else [])
    rows, views, n_extra, moved = _measured_rows(models, splits, best, threads, level)
    say(PHASE_END["rows"], "measuring dispatch overhead")
    # the fastest of 5 sessions, as the rows are the fastest of their passes (one session's median
    # put a 1-thread run overhead 0.3 us above the baseline model's own time), before and after
    # the rows: 2 of the 24 2-thread calibrations in bench/results measured 5.2 us of run overhead
    # against 3.0-3.3 in the others (a third, 5.1 us, over-predicted the 10 us models by 26-32 %)
    w1, wn = (min(a, b) for a, b in zip(first, _chains(threads, level, q)))
    dispatch = max((wn - w1) / (N_CHAIN - 1), 1e-8)
    run_over = max(w1 - dispatch, 1e-6)
    # rows are wall-clock per node (kernel + dispatch, + a dispatch per extra sink node): fit
    # the kernel part
    rows = {c: (F, B, np.maximum(t - dispatch * (1 + n_extra[c]), 1e-8), o)
            for c, (F, B, t, o) in rows.items()}
    llc, cold, speeds["cache"] = _cold_weights(threads, level, q, dispatch, probe,
                                               lambda s: say(PHASE_END["dispatch"], s))
    say(PHASE_END["cold"], "measuring fused Clip epilogues")   # (cpu_epilogue)
    clip_s = cpu_epilogue.measure(lambda m: wall_time(m, threads, level, q, min_s=0.05))
    span_s = cpu_broadcast.measure(lambda m: wall_time(m, threads, level, q, min_s=0.05))
    call_s = cpu_broadcast.measure_channel(lambda m: wall_time(m, threads, level, q, min_s=0.05))
    op_s = cpu_op_rates.measure(lambda m: wall_time(m, threads, level, q, min_s=0.05))
    peak, bw = _machine_figures(rows)
    l2_core = l2_cache_bytes()   # the cache step's size: the L2 of the session's cores (cpu_model)
    l2_bytes = float(l2_core * min(threads, os.cpu_count() or threads)) if l2_core else 0.0
    fits = _fit_reorders(moved, rows, views, dispatch, peak, bw, l2_bytes)
    speeds["end"] = probe() if threads > 1 else None   # the end of the measurements
    jobs = {cls: calibration_fit.fit_job(cls, F, B, t, views.get(cls), peak, bw, l2_bytes, threads,
                                         level in LAYOUT_LEVELS)
            for cls, (F, B, t, _) in rows.items() if cls not in fits}
    fits.update(fit_worker.fit_classes(jobs, _fit_progress(jobs, say)))
    tables = {cls: calibration_fit.table_of(fits[cls]) for cls in rows}
    say(1.0, "done")
    elapsed = time.perf_counter() - t_start
    cal = _calibration(ort.__version__, threads, level, q, elapsed, run_over, l2_bytes, llc, cold, (clip_s, span_s, call_s, op_s),
                       tables, speeds)
    return _document(cal, elapsed, peak, bw, dispatch, rows, views)


def _fit_progress(jobs: dict, say: Callable[[float, str], None]) -> Callable[[str], None]:
    """The fit's ``done(cls)``: the line moves from the Clip phase's end to 1 as classes finish
    (each counted once: a class refitted here after a failed worker does not move it twice)."""
    import threading

    lo, hi = PHASE_END["clip"], PHASE_END["fit"]
    finished: set[str] = set()
    lock = threading.Lock()   # (workers' readers call it from their threads)
    say(lo, f"fitting the op classes (0/{len(jobs)})")

    def done(cls: str) -> None:
        with lock:
            finished.add(cls)
            say(lo + (hi - lo) * len(finished) / max(len(jobs), 1) * 0.999,
                f"fitting the op classes ({len(finished)}/{len(jobs)})")
    return done


def _chains(threads: int, level: str, q: float) -> tuple[float, float]:
    """(1-node, N_CHAIN-node) chain wall-clocks, the fastest of 5 sessions each."""
    return (min(_wall(_chain(1), threads, level, 400, q) for _ in range(5)),
            min(_wall(_chain(N_CHAIN), threads, level, 60, q) for _ in range(5)))


def _measured_rows(models, splits, best, threads: int, level: str):
    """(rows: class -> (flops, bytes, seconds, ops) in row order, views: class -> the rows'
    matrix views (cpu_model.node_features), n_extra: class -> extra sink nodes per row, moved:
    per layout class and row, (bytes, seconds) of each reorder around it) from the fastest
    times ``best`` of the rows."""
    from analyzer.api import analyze

    rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, list]] = {}
    views, n_extra = {}, {}
    moved: dict[str, list[list[tuple[int, float]]]] = {}
    for cls, m in models.items():
        split = splits[cls]
        meas = {k: max(v, 1e-8) for k, v in best[cls].items()}
        order = sorted(meas, key=lambda s: int(s[1:]))
        nodes = {n.name: n for n in analyze(m).nodes}
        if cls in LAYOUT_CLASSES and level in LAYOUT_LEVELS:
            moved[cls] = [profiled_reorders(split[k], nodes[k], threads, level) for k in order]
        _, F, B, V = cpu_model.node_features([nodes[k] for k in order], views=True)
        t = np.array([meas[k] for k in order])
        ops = [nodes[k].op for k in order]
        n_extra[cls] = np.array([extra_nodes(split[k]) for k in order])
        rows[cls] = (F, B, t, ops)
        views[cls] = V
    return rows, views, n_extra, moved


def _cold_weights(threads: int, level: str, q: float, dispatch: float, probe, say):
    """(last-level cache bytes (0: unknown), the cold-weight figures (cold_cache.measure: the
    DRAM rate of weights that overflow it and how much of them stays cached), the thread-state
    probes around the sweep). Above 1 thread the sweep runs in one thread state: this VM's slow
    one sees about twice the cache."""
    llc = cache_level_bytes(3) or cache_level_bytes(2)
    if not llc:
        return llc, {}, ()
    say("measuring cold-weight streaming and the effective cache size")
    base = wall_time(baseline_model(), threads, level, q, min_s=0.05)

    def sweep():
        return cold_cache.measure(lambda m: wall_time(m, threads, level, q, min_s=0.05) - base, llc, dispatch)

    cold, around = thread_state.bracketed(probe, sweep, STATE_TRIES) if threads > 1 else (sweep(), ())
    return llc, cold, around


def _machine_figures(rows) -> tuple[float, float]:
    """(peak FLOP/s: the best of the MatMul/Gemm rows, DRAM B/s: the median of the 3 largest Adds'
    bytes over their kernel times) from the measured rows."""
    F, _, t, _ = rows["gemm"]
    peak = float(np.max(F / t))
    _, Be, te, ope = rows["elementwise"]
    adds = np.array([o == "Add" for o in ope])
    big = adds & (Be >= np.sort(Be[adds])[-3])
    return peak, float(np.median(Be[big] / te[big]))


def _fit_reorders(moved, rows, views, dispatch: float, peak: float, bw: float, l2_bytes: float) -> dict:
    """``{"reorder": its fit}`` (empty with fewer than 4 reorders). A row's wall-clock includes the
    reorders into and out of the blocked layout around its one node, which a chain of blocked
    kernels does not run (lowering charges them where onnxruntime runs them): they are fitted
    as a class of their own from their profiled times (a "reorder" row added to ``rows``) and
    taken out of the layout classes' ``rows`` and ``views`` (in place) at that fit."""
    reorders = [r for per_row in moved.values() for rs in per_row for r in rs]
    if len(reorders) < 4:
        return {}
    b, t = np.array([r[0] for r in reorders], np.float64), np.array([r[1] for r in reorders])
    rows["reorder"] = (np.zeros_like(b), b, t, ["Reorder"] * len(b))
    mv = cpu_model.fit_class(np.zeros_like(b), b, t, peak, bw, l2_bytes)
    for cls, per_row in moved.items():
        rows[cls], views[cls] = without_reorders(rows[cls], views[cls], per_row, mv, dispatch, peak, bw, l2_bytes)
    return {"reorder": mv}


def _calibration(ver: str, threads: int, level: str, q: float, elapsed: float, run_over: float,
                 l2_bytes: float, llc, cold: dict, per_elem: tuple, tables: dict, speeds: dict) -> dict:
    """The profile's ``[calibration]`` table: what was measured, where and how (``speeds``: the
    thread-state probes at the start, over the row passes, around the reorders and the cache
    sweep, at the end)."""
    passes = speeds["passes"]
    return {
        "measured_on": _dt.date.today().isoformat(), "runtime": "onnxruntime", "onnxruntime_version": ver,
        "threads": threads, "level": level, "quantile": q, "cpu": cpu_name(), "simd": simd(),
        "seconds": round(elapsed, 1),
        "run_overhead_us": run_over * 1e6, "cache_bytes": l2_bytes,
        "llc_bytes": float(llc), "cold_weight_bw_gbs": 0.0, **cold, "clip_epilogue_ns": per_elem[0] * 1e9,
        "scalar_span_ns": per_elem[1] * 1e9, "channel_span_ns": per_elem[2] * 1e9,
        **{name: v * 1e9 for name, v in per_elem[3].items()},
        "models": "synthetic single-op models only (analyzer.measure.calibrate.calibration_models)",
        "tables": tables,
        **({"thread_speedup_start": speeds["start"], "thread_speedup_end": speeds["end"], "row_passes": len(passes),
            "thread_speedup_passes_min": min(passes), "thread_speedup_passes_max": max(passes)}
           if threads > 1 else {}),
        **({"thread_speedup_reorders": speeds["reorders"][-1]} if speeds["reorders"] else {}),
        **({"thread_speedup_cache": min(speeds["cache"])} if llc and threads > 1 else {}),
    }


def _document(cal: dict, elapsed: float, peak: float, bw: float, dispatch: float, rows, views) -> dict:
    """The TOML-ready profile document of a calibration (``cal``: its [calibration] table)."""
    date, cpu, ver, threads, level = (cal["measured_on"], cal["cpu"], cal["onnxruntime_version"],
                                      cal["threads"], cal["level"])
    head = f"measured by analyze hw calibrate on {date}, {cpu}, onnxruntime {ver}, {threads} threads"
    doc = {
        "schema_version": 1,
        "id": f"calibrated-{host_id()}-{threads}t",
        "name": f"{cpu} ({threads} threads, calibrated)",
        "vendor": vendor(cpu),
        "kind": "cpu",
        "family": cpu_family(),
        "default_runtime": "onnxruntime",
        "notes": (f"Calibrated with onnxruntime {ver} at {threads} intra-op threads, session level "
                  f"'{level}', in {elapsed:.0f} s. Kernel time per op class = floor + max(F/(peak*e_c), "
                  "(B + b_half)/(bw*e_bw*(1 + l2_gain*s(B/cache_bytes)))), the matrix classes' work "
                  "padded to tile_n output columns (x 1 + (n_half/n)^2) and k_block input channels, plus "
                  "par_us above b_par_bytes "
                  "where a class's kernels are split over threads, piece_us per extra piece of a "
                  "batched kernel and im2col_ns per im2col element (im2col_stride_ns more where the "
                  "convolution is strided), serial_ns per recurrent FLOP of an RNN; weights over "
                  "llc_bytes at cold_weight_bw_gbs, a fused Clip at clip_epilogue_ns per output, an element "
                  "of a tensor ending in 1 and a scalar at scalar_span_ns, a span of a per-channel broadcast at "
                  "channel_span_ns, a Div's element at a Mul's + divide_ns, a Clip's at a Relu's + clip_ns; see "
                  "analyzer/measure/fit/class_fit.py, analyzer/prediction/efficiency/kernel_time.py, "
                  "analyzer/prediction/cpu/cold.py, analyzer/prediction/cpu/epilogue.py, "
                  "analyzer/prediction/cpu/broadcast.py and analyzer/prediction/cpu/op_rates.py."),
        "matrix_tflops": {"fp32": peak / 1e12},
        "vector_tflops": {"fp32": peak / 1e12},
        "memory": {"mem_bw_gbs": bw / 1e9},
        "overhead": {"launch_overhead_us": dispatch * 1e6},
        "sources": {
            "matrix_tflops.fp32": f"{head}: best FLOP/s over {len(rows['gemm'][2])} MatMul/Gemm shapes (wall-clock per single-op model minus a baseline model)",
            "vector_tflops.fp32": f"{head}: same SIMD FMA units as the matrix figure (set equal to it)",
            "memory.mem_bw_gbs": f"{head}: Add (2 reads + 1 write) bytes / wall-clock kernel time, median of the 3 largest sizes (DRAM)",
            "overhead.launch_overhead_us": (f"{head}: (wall of a chain of {N_CHAIN} tiny Adds - chain of 1) / "
                                            f"{N_CHAIN - 1} (a tiny kernel's whole cost per node)"),
        },
        "calibration": cal,
        # the rows the fits saw, class -> [(op, flops, bytes, fitted seconds, matrix view (mac, m, n,
        # k, batch, strided, serial) or None)]; not
        # written to TOML (bench/accuracy_cpu.py keeps them beside its profiles: refits need them)
        "_rows": {cls: [(o, float(f), float(b_), float(x),
                         None if views.get(cls) is None else [float(v) for v in views[cls][:, i]])
                        for i, (o, f, b_, x) in enumerate(zip(r[3], r[0], r[1], r[2]))]
                  for cls, r in rows.items()},
    }
    doc["sources"].update(calibration_sources(doc["calibration"], head))
    doc["_warnings"] = thread_mode.notes(doc["calibration"])   # (not written to TOML)
    return doc


# ---------------------------------------------------------------------------------------------
# TOML
