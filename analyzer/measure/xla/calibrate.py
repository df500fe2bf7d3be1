"""``calibrate --runtime xla``: time synthetic JAX programs on this machine's XLA CPU backend and
fit the CPU kernel-time model per op class, for predictions with ``runtime="xla"``.

The rows (``xla_rows``) run in a worker process (``python -m analyzer.measure.xla.calibrate``)
with JAX's CPU async dispatch off (``jax_cpu_enable_async_dispatch = False``): the program runs
on the calling thread, and its wall-clock is its execution, with no hand-off to another thread
in it. (With dispatch on, JAX's default, timings on a 2-vCPU VM
had the quartiles of one 5 us row 2-5x apart, and two timings of the rows minutes apart
disagreed by more than 20 % on 49 of 117 rows, against 22 of 117 with it off (scratch timings);
hours later ``bench/xla_diagnose.py dispatch on|off`` measured the two modes
alike. The hand-off's cost is a state of the host, not of the program.) Each row's time is the
``q`` quantile of its wall-clock runs, the fastest of ``passes`` passes (each in a fresh worker
process: ``measure_in_processes``), less the run overhead
(the same statistic for the smallest program: one add on 8 floats) and less what a kernel costs
more as a program's result than inside a program (``own_result_s``: 0.06-0.1 us here, from a
chain of 200 small dots, whose time per link, 0.11 us, is also the least a row is fitted at).

A row's kernels are what opcost's ``xla`` lowering makes of its program (``lowering.lower``):
most rows are one kernel; where a row is more (a softmax's max and its exp-sum-divide, a
convolution input gradient's kernel flip), its heaviest kernel takes the row's time less the
others' times under the classes fitted without such rows. Then as ``calibrate``:

    t_kernel = floor_s + max(F / (peak * e_c), (B + b_half) / (bw * e_bw * cache))
    F        = mac + vec + trans_weight * transcendentals
    t_run    = run_overhead_s + sum over kernels t_kernel

A kernel outside a loop costs ``program_launch_s`` (the chain's time per link over its planned
launches) in place of ``floor_s``, and the run adds the largest ``floor_s - program_launch_s`` of
its kernels' classes once (``prediction.cpu.loop_launch.straight_fixed``).
A launch inside a loop body costs ``loop_launch_s`` in place of ``floor_s``
(``prediction.cpu.loop_launch``): a scan over a tiny body (``rows.scan_program``) timed at the
two trip counts of ``rows.SCAN_TRIPS`` after each pass over the rows, its time per trip (the
median over timings and passes) over the launches opcost plans a trip (``loop_scan.launches_per_trip``).
A loop body's vector kernels cost ``loop_work_scale`` of their work (``prediction.cpu.loop_work``),
fitted on scans over elementwise-only bodies (``loop_work``, ``rows.ew_scan_program``) timed once a pass.
A dot XLA runs through YNNPACK (gemm class, m > 1 and n > 1) pays ``dot_call_us`` outside loops
(fitted with the class) and in a loop body ``dot_trip_us`` a trip plus ``dot_loop_us`` once a loop
(``prediction.cpu.ynn_dot``), fitted on scans holding one such dot (``dot_scans``) timed with them.

(the fits: ``xla_fit``). ``trans_weight`` (what a tanh, exp or erf costs in vector FLOPs) is the value of
``xla_fit.TRANS_WEIGHTS`` that fits the elementwise class's rows best (fused GELUs, norms, softmaxes and
plain adds in one class). The worker imports nothing of the caller's script."""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import time
import zlib
from typing import Any, Callable

import numpy as np

from analyzer.measure.xla import dot_scans, loop_scan, loop_work

QUANTILE = 0.25          # of a row's runs (the program's steady time without the slow tail)
PASSES = 3
ROW_MIN_S = 0.04         # seconds of runs per row and pass (and at least MIN_RUNS runs)
MIN_RUNS = 15
REFERENCE_PROFILE = "epyc-9654"   # any CPU profile: lowering's counts do not depend on it
ANCHOR_REPEATS = 3       # timings of the run overhead and the chains after each pass over the rows


def _rng(label: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(label.encode()))


def row_kernels(fn: Callable, args: tuple, threads: int = 1) -> list[dict[str, Any]]:
    """The kernels opcost's ``xla`` lowering on a CPU (``runtimes.XLA_CPU``) makes of ``fn(*args)``:
    class, counts per launch, the matrix view of the heaviest member
    (``cpu_model.node_features``'s seven numbers) and the parts XLA splits it into on ``threads``
    cores (``prediction.cpu.xla_partition``); then each launch the plan inserts (``FusionPlan.
    extra_ops``: layout copies, tree reduction rounds, a GEMV's copy) as a kernel of its own."""
    import jax

    import hardware_db
    from analyzer.api import analyze_jax
    from analyzer.prediction.efficiency import kernel_time as eff
    from analyzer.prediction import lowering, runtimes
    from analyzer.prediction.cpu import xla_partition
    from analyzer.prediction.kernel_rows import fusion_nodes
    from analyzer.prediction.node_shapes import node_view

    sds = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
    rep = analyze_jax(fn, *sds)
    nodes = list(rep.nodes)
    outputs = frozenset((rep.model.get("outputs") if isinstance(rep.model, dict) else None) or ())
    low = lowering.lower(nodes, [hardware_db.get(REFERENCE_PROFILE)], None, runtimes.XLA_CPU, graph_outputs=outputs)
    f = low.feats
    parts = xla_partition.kernel_parts(nodes, fusion_nodes(nodes, None)[0], low.plan, f, low.runs, threads)
    out = []
    for k, members in enumerate(low.plan.members):
        head = max(members, key=lambda i: (nodes[i].cost.mac_flops, nodes[i].cost.flops))
        out.append({"op_class": eff.OP_CLASSES[int(f["op_class"][k])], "mac": float(f["mac_flops"][k]),
                    "vec": float(f["vec_flops"][k]), "trans": float(f["trans_flops"][k]),
                    "bytes": float(f["bytes"][k]), "runs": float(low.runs[k]),
                    "view": [float(f["mac_flops"][k])] + [float(v) for v in node_view(nodes[head])],
                    "parts": int(parts[k])})
    moved = [b for bs in low.plan.extra_bytes for b in bs] or [0] * sum(map(len, low.plan.extra_ops))
    for (k, code), nbytes in zip(lowering.extra_classes(low.plan, runtimes.XLA_CPU, ()), moved):
        # a launch the plan inserts with no node (a layout copy, a tree reduction's round): its
        # own kernel, as the predictions price it (its class's fixed cost and its bytes)
        out.append({"op_class": eff.OP_CLASSES[code], "mac": 0.0, "vec": 0.0, "trans": 0.0,
                    "bytes": float(nbytes), "runs": float(low.runs[k]), "view": [0.0] * 7, "parts": 1})
    return out


def time_program(fn: Callable, args: tuple, q: float, min_s: float = ROW_MIN_S,
                 min_runs: int = MIN_RUNS) -> float:
    """Quantile ``q`` of the jitted ``fn(*args)``'s wall-clock seconds (compiled and warmed first)."""
    import jax

    f = jax.jit(fn)
    for _ in range(3):
        jax.block_until_ready(f(*args))
    w = []
    t_end = time.perf_counter() + min_s
    while len(w) < min_runs or time.perf_counter() < t_end:
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        w.append(time.perf_counter() - t0)
    return float(np.quantile(w, q))


def measure(q: float = QUANTILE, passes: int = PASSES, say: Callable[[float, str], None] | None = None,
            only: tuple[str, ...] = ()) -> dict[str, Any]:
    """In this process (the worker): every row's kernels and fastest ``q`` quantile over
    ``passes`` passes (``only``: the rows of these labels), the run overhead, and the tiny-kernel
    chain. JAX's CPU async dispatch must already be off (``worker_main``)."""
    import jax

    from analyzer.measure.xla import rows as xr
    from analyzer.prediction.cpu.host import cpu_name, l2_cache_bytes, simd

    say = say or (lambda f, s: None)
    groups = xr.xla_rows()
    rows = [(g, label, build) for g, rs in groups.items() for label, build in rs
            if not only or label in only]
    built = []
    for i, (g, label, build) in enumerate(rows):
        say(0.3 * i / len(rows), f"tracing {label}")
        fn, args = build(_rng(label))
        built.append((g, label, fn, xr.as_jax_args(args), row_kernels(fn, args, os.cpu_count() or 1)))
    small, sargs = xr.run_overhead_program()
    sargs = xr.as_jax_args(sargs)
    chains = {n: xr.dot_chain(n, m=1, k=8) for n in (1, xr.TINY_CHAIN)}
    chains = {n: (f, xr.as_jax_args(a)) for n, (f, a) in chains.items()}
    scans = {t: xr.scan_program(t) for t in xr.SCAN_TRIPS}
    scans = {t: (f, xr.as_jax_args(a)) for t, (f, a) in scans.items()}
    best = [np.inf] * len(built)
    overheads, lone, links, trips, dots, ews = [], [], [], [], [], []
    for p in range(passes):
        order = range(len(built)) if p % 2 == 0 else range(len(built) - 1, -1, -1)
        for j, i in enumerate(order):
            say(0.3 + 0.6 * (p * len(built) + j) / (passes * len(built)),
                f"timing {built[i][0]} rows ({p + 1}/{passes})")
            best[i] = min(best[i], time_program(built[i][2], built[i][3], q))
        # the run overhead and the two chains: each difference between timings a fraction of a
        # second apart, their medians kept (a lone tiny dot's time over the run overhead is a
        # difference of two 4 us timings; taken once, at the end, two calibrations had it at
        # 0.17 and 0.37 us, and their predictions of small programs 19-38 % apart)
        for _ in range(ANCHOR_REPEATS):
            o = time_program(small, sargs, q, min_s=0.05)
            c1 = time_program(*chains[1], q, min_s=0.05)
            cn = time_program(*chains[xr.TINY_CHAIN], q, min_s=0.05)
            overheads.append(o)
            lone.append(c1 - o)
            links.append((cn - c1) / (xr.TINY_CHAIN - 1))
            lo, hi = (time_program(*scans[t], q, min_s=0.05) for t in xr.SCAN_TRIPS)
            trips.append((lo, (hi - lo) / (xr.SCAN_TRIPS[1] - xr.SCAN_TRIPS[0])))
            dots.append(loop_scan.time_dot_scans(q, time_program))
        ews.append(loop_scan.time_ew_scans(q, time_program))   # (once a pass)
    say(0.9, "done timing")
    overhead = float(min(overheads))
    c1 = overhead + float(np.median(lone))
    chain = {1: c1, xr.TINY_CHAIN: c1 + float(np.median(links)) * (xr.TINY_CHAIN - 1)}
    return {"run_overhead_s": overhead, "chain_s": {str(k): v for k, v in chain.items()},
            "scan_s": loop_scan.scan_s([t[0] for t in trips], [t[1] for t in trips]),
            "dot_scan_s": loop_scan.merge_dot_scans(dots), "ew_scan_s": loop_scan.merge_dot_scans(ews),
            "q": q, "passes": passes, "cores": os.cpu_count() or 1,
            "measured_on": _dt.date.today().isoformat(), "cpu": cpu_name(), "l2_core_bytes": l2_cache_bytes(),
            "simd": simd(),
            "rows": [{"group": g, "label": label, "seconds": t, "kernels": ks}
                     for (g, label, _, _, ks), t in zip(built, best)],
            "jax_version": jax.__version__}


def worker_main() -> None:
    """``python -m analyzer.measure.xla.calibrate``: read ``{"q", "passes", "only"}`` as JSON
    from standard input; write ``progress <fraction> <text>`` lines, then ``result <json>``."""
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    opts = json.loads(sys.stdin.read() or "{}")

    def say(f, s):
        print(f"progress {f:.4f} {s}", flush=True)

    out = measure(float(opts.get("q", QUANTILE)), int(opts.get("passes", PASSES)), say,
                  tuple(opts.get("only", ())))
    print("result " + json.dumps(out), flush=True)


def run_worker(q: float, passes: int, progress: Callable[[float, str], None],
               only: tuple[str, ...] = ()) -> dict[str, Any]:
    """``measure`` in a fresh interpreter (``worker_main``); its progress reaches ``progress``."""
    from analyzer.errors import AnalyzerError

    # (the worker imports this package as the caller does: its folder first on the path;
    # the folder holding the analyzer package: this file is analyzer/measure/xla/calibrate.py)
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    import tempfile

    with tempfile.TemporaryFile("w+") as errf:   # (a file: a full stderr pipe would block the worker)
        proc = subprocess.Popen([sys.executable, "-m", "analyzer.measure.xla.calibrate"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf,
                                text=True, env=env)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"q": q, "passes": passes, "only": list(only)}))
        proc.stdin.close()
        result = None
        for line in proc.stdout:
            if line.startswith("progress "):
                _, f, text = line.rstrip("\n").split(" ", 2)
                progress(float(f), text)
            elif line.startswith("result "):
                result = json.loads(line[7:])
        code = proc.wait()
        errf.seek(0)
        err = errf.read()
    if code != 0 or result is None:
        tail = err.strip().splitlines()[-1:] or ["no output"]
        raise AnalyzerError(f"calibrate (runtime xla): the measuring process failed ({tail[0]})")
    return result


def measure_in_processes(q: float, passes: int, progress: Callable[[float, str], None]) -> dict[str, Any]:
    """``passes`` passes over the rows, each in a fresh worker process (``run_worker`` with one
    pass), merged by ``merge_passes``. Why not all passes in one process: a process's timing of
    a row can sit in one state for all its passes. On a 2-vCPU VM four
    workers of 3 passes each timed the same rows at 79-120 us (a 1x1024x1024 GEMV), 200-296 us (a
    3x3 conv) and 559-1118 us (relu over 4 M floats), and two calibrations minutes apart had a
    depthwise conv at 1471 and 812 us, three 1x1 convs 1.4-1.5x apart, and predicted the CNN
    programs 11-29 % apart (``bench/xla_calibration_spread.py`` measures both ways)."""
    runs = []
    for i in range(passes):
        runs.append(run_worker(q, 1, lambda f, s, i=i: progress((i + f) / passes, s)))
    return merge_passes(runs)


def merge_passes(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One measurement of several workers' (``measure``'s output each): a row's fastest time
    over them; the least run overhead; the lone tiny dot's excess over the run overhead and the
    chain's time per link, each the median over the workers (as ``measure`` takes medians of
    such differences within one)."""
    first = runs[0]
    labels = [row["label"] for row in first["rows"]]
    if any([row["label"] for row in r["rows"]] != labels for r in runs):
        from analyzer.errors import InternalError

        raise InternalError("calibrate (runtime xla)",
                            ValueError("the worker processes timed different rows"))
    overhead = min(r["run_overhead_s"] for r in runs)
    n = max(int(k) for k in first["chain_s"])
    lone = float(np.median([r["chain_s"]["1"] - r["run_overhead_s"] for r in runs]))
    link = float(np.median([(r["chain_s"][str(n)] - r["chain_s"]["1"]) / (n - 1) for r in runs]))
    rows = [{**row, "seconds": min(r["rows"][i]["seconds"] for r in runs)}
            for i, row in enumerate(first["rows"])]
    scan = {}
    if all("scan_s" in r for r in runs):   # the in-loop scans: medians as the chain's
        lo, hi = sorted(first["scan_s"], key=int)
        scan = {"scan_s": loop_scan.scan_s([r["scan_s"][lo] for r in runs],
                                  [(r["scan_s"][hi] - r["scan_s"][lo]) / (int(hi) - int(lo)) for r in runs])}
    if all("dot_scan_s" in r for r in runs):   # the YNNPACK-dot scans: the fastest, as a row's
        scan["dot_scan_s"] = loop_scan.merge_dot_scans([r["dot_scan_s"] for r in runs], np.min)
    if all("ew_scan_s" in r for r in runs):   # the elementwise-only scans: the fastest, as a row's
        scan["ew_scan_s"] = loop_scan.merge_dot_scans([r["ew_scan_s"] for r in runs], np.min)
    return {**first, **scan, "run_overhead_s": overhead,
            "chain_s": {"1": overhead + lone, str(n): overhead + lone + link * (n - 1)},
            "passes": sum(int(r["passes"]) for r in runs), "rows": rows}


def import_jax():
    """JAX, or an ``AnalyzerError`` that says how to install it."""
    from analyzer.errors import AnalyzerError

    try:
        import jax
    except ImportError as e:
        raise AnalyzerError("calibrate (runtime xla) needs JAX: pip install jax") from e
    return jax


def calibrate_xla(threads: int | None = None, progress: Callable[[float, str], None] | None = None,
                  q: float = QUANTILE, passes: int = PASSES) -> dict:
    """Measure this machine's XLA CPU backend (JAX) and return a TOML-ready profile document whose
    default runtime is ``xla``. ``threads`` is not a setting of XLA's CPU backend (it runs on
    every core); a value is checked against the machine's cores."""
    from analyzer.errors import InputSpecError

    import_jax()
    cores = os.cpu_count() or 1
    if threads is not None and int(threads) != cores:
        raise InputSpecError(f"calibrate (runtime xla): XLA's CPU backend runs on all {cores} cores; "
                             f"a thread count ({threads}) cannot be set for it")
    say = progress or (lambda f, s: None)
    t0 = time.perf_counter()
    measured = measure_in_processes(q, passes, lambda f, s: say(0.85 * f, s))
    say(0.85, "fitting the op classes")
    doc = profile_doc(measured, t0)
    say(1.0, "done")
    return doc


def timed_on(measured: dict[str, Any], refit: bool) -> tuple[str, str, int | None]:
    """(day, CPU name, L2 bytes per core) of the machine that timed ``measured``'s rows, as its
    worker recorded them; rows saved before it did take this machine's, and a ``refit`` of them
    says its day is the refit's."""
    from analyzer.prediction.cpu.host import cpu_name, l2_cache_bytes

    date = measured.get("measured_on") or (_dt.date.today().isoformat()
                                           + (" (refitted; measured earlier)" if refit else ""))
    l2 = measured["l2_core_bytes"] if "l2_core_bytes" in measured else l2_cache_bytes()
    return date, measured.get("cpu") or cpu_name(), l2


def profile_doc(measured: dict[str, Any], t0: float | None = None) -> dict:
    """The profile document of ``measure``'s output (a calibration's, or saved rows refitted with
    the current code: ``bench/accuracy_xla_cpu.py --rows``); ``t0``: when the measurement began
    (``time.perf_counter``), for the seconds it took (else the saved figure)."""
    from analyzer.measure.fit import options as calibration_fit
    from analyzer.measure.xla import rows as xr
    from analyzer.prediction.cpu.host import cache_level_bytes, cpu_family, host_id, vendor
    from analyzer.measure.xla.fit import fit_tables

    cores = int(measured.get("cores") or os.cpu_count() or 1)
    q, passes = float(measured.get("q", QUANTILE)), int(measured.get("passes", PASSES))
    date, cpu, l2_core = timed_on(measured, refit=t0 is None)
    l2_bytes = float(l2_core * cores) if l2_core else 0.0
    fits, fig = fit_tables(measured, l2_bytes)
    # (rows measured before the suite had the scans: no in-loop figure)
    per_trip_launches = loop_scan.launches_per_trip() if "scan_s" in measured else None
    tables = {cls: calibration_fit.table_of(f) for cls, f in fits.items()}
    elapsed = time.perf_counter() - t0 if t0 is not None else float(measured.get("seconds", 0.0))
    ver = measured["jax_version"]
    head = (f"measured by analyze hw calibrate (runtime xla) on {date}, {cpu}, JAX {ver} (XLA CPU, "
            f"{cores} cores, async dispatch off)")
    n_rows = len(measured["rows"])
    doc = {
        "schema_version": 1,
        "id": f"calibrated-{host_id()}-xla",
        "name": f"{cpu} (XLA CPU, calibrated)",
        "vendor": vendor(cpu),
        "kind": "cpu",
        "family": cpu_family(),
        "default_runtime": "xla",
        "notes": (f"Calibrated with JAX {ver}'s XLA CPU backend on {cores} cores in {elapsed:.0f} s: "
                  f"{n_rows} synthetic jitted programs (analyzer/measure/xla/rows.py), each the "
                  f"{q:g} quantile of its wall-clock runs with async dispatch off, the fastest of "
                  f"{passes} passes (each in a fresh process), less the run overhead. Kernel time per op class = floor + "
                  "max(F/(peak*e_c), (B + b_half)/(bw*e_bw*(1 + l2_gain*s(B/cache_bytes)))), "
                  "F = mac + vec + trans_weight * transcendentals (a kernel XLA splits into p tasks: F / p, "
                  "B * s / min(p * s, 1), s = core_bw_share, analyzer/prediction/cpu/xla_partition.py); a run adds "
                  "run_overhead_us and the largest floor - program_launch_us once; a kernel outside a loop costs "
                  "program_launch_us, one in a loop body loop_launch_us, in place of floor (a loop body's vector kernel: "
                  "loop_work_scale x its work). See analyzer/measure/xla/calibrate.py."),
        "matrix_tflops": {"fp32": fig["peak"] / 1e12},
        "vector_tflops": {"fp32": fig["peak"] / 1e12},
        "memory": {"mem_bw_gbs": fig["bw"] / 1e9},
        "overhead": {"launch_overhead_us": fig["per_kernel_s"] * 1e6},
        "sources": {
            "matrix_tflops.fp32": f"{head}: best FLOP/s over the {fig['rows'].get('gemm', 0)} dot rows",
            "vector_tflops.fp32": f"{head}: same SIMD FMA units as the matrix figure (set equal to it)",
            "memory.mem_bw_gbs": f"{head}: add (2 reads + 1 write) bytes / kernel time, median of the 3 largest",
            "overhead.launch_overhead_us": (f"{head}: (a chain of {xr.TINY_CHAIN} dependent 1x8x8 dots - a "
                                            f"chain of 1) / {xr.TINY_CHAIN - 1}: one more small kernel in a program"),
        },
        "calibration": {
            "measured_on": date, "runtime": "xla", "jax_version": ver, "threads": cores,
            "quantile": q, "passes": passes, "cpu": cpu, "seconds": round(elapsed, 1),
            # (rows saved before the worker recorded it leave it out: unknown)
            **({"simd": measured["simd"]} if "simd" in measured else {}),
            "dispatch": "synchronous (jax_cpu_enable_async_dispatch = False)",
            "run_overhead_us": fig["run_overhead_s"] * 1e6, "own_result_us": fig["own_result_s"] * 1e6,
            # (the launch figures: loop_scan.net_launch_figures)
            **({} if per_trip_launches is None else {"loop_launch_us": 0.0}),
            "program_launch_us": 0.0, "cache_bytes": l2_bytes,
            "llc_bytes": float(cache_level_bytes(3) or 0), "trans_weight": fig["trans_weight"],
            **({} if fig["core_bw_share"] is None else {"core_bw_share": fig["core_bw_share"]}),
            "models": "synthetic jitted JAX programs only (analyzer.measure.xla.rows)",
            "tables": tables,
        },
        "_rows": measured["rows"],
        "_measured": {**{k: v for k, v in measured.items() if k != "rows"}, "seconds": round(elapsed, 1)},
    }
    loop_scan.net_launch_figures(doc, measured, head, per_trip_launches)
    loop_work.set_loop_work_scale(doc, measured, head)
    dot_scans.set_dot_loop_figures(doc, measured, head)
    _share_source(doc, fig, head)
    doc["_warnings"] = []
    return doc


def _share_source(doc: dict, fig: dict, head: str) -> None:
    """``doc``'s source of ``calibration.core_bw_share`` (``fit.fit_share``; none: left out)."""
    if fig["core_bw_share"] is not None:
        doc["sources"]["calibration.core_bw_share"] = (
            f"{head}: fitted (analyzer.measure.xla.fit.fit_share): of "
            f"{', '.join(f'{s:g}' for s in fig['share_losses'])}, the one with the lowest sum of fit error x rows "
            f"({', '.join(f'{v:.0f}' for v in fig['share_losses'].values())}) over the classes with a split "
            f"row ({', '.join(fig['split_classes'])}): one core's share of mem_bw (xla_partition.memory_share)")


if __name__ == "__main__":
    worker_main()
