"""Time scans that tell a loop body's per-trip costs apart on XLA's CPU backend: elementwise-only
bodies of 1, 2 and 4 kernels (``rows.ew_scan_program``) and bodies of one YNNPACK dot + tanh
(``rows.dot_scan_program``), at several trip counts and sizes, each as the calibration times a row
(``calibrate.time_program``: the 0.25 quantile of the jitted call's wall-clock, async dispatch off),
the median of ``--repeats`` timings in a process, the fastest over ``--passes`` fresh processes;
each pass also times the run-overhead program (one add on 8 floats). Writes ``--out`` (JSON:
``{"ew_scan_s": {kernels: {m: {trips: s}}}, "dot_scan_s": {m: {trips: s}}, "run_overhead_s"}``)
and, with ``--merge``, adds them to saved calibration rows (``bench/rows_merge.py``): the
elementwise scans the calibration times (``rows.EW_SCAN_*``) as ``ew_scan_s`` (the fit's,
``measure.xla.loop_work``), the others as ``ew_scan_extra_s`` (scored by ``bench/xla_program_launch.py``,
not fitted on); ``--from`` merges a saved ``--out`` without timing.

    PYTHONPATH=$PWD python bench/xla_loop_scans.py --passes 9 --repeats 3 --out /tmp/loop_scans.json
    PYTHONPATH=$PWD python bench/xla_loop_scans.py --from /tmp/loop_scans.json --merge R_rows_1_loop_dot.json --suffix _ew
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys

import numpy as np

from rows_merge import merge_timed, worker_passes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

EW_KERNELS = (1, 2, 4)
EW_ROWS = (1, 16, 64)
DOT_ROWS = (4, 8, 16)
TRIPS = (8, 64, 256)


def programs():
    """``[(kind, key, trips, builder)]`` of every scan timed."""
    from analyzer.measure.xla import rows as xr

    out = [("ew", f"{k}/{m}", t, lambda t=t, m=m, k=k: xr.ew_scan_program(t, m, k))
           for k in EW_KERNELS for m in EW_ROWS for t in TRIPS]
    out += [("dot", str(m), t, lambda t=t, m=m: xr.dot_scan_program(t, m)) for m in DOT_ROWS for t in TRIPS]
    return out


def one_pass(repeats: int) -> dict:
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import time_program

    small, sargs = xr.run_overhead_program()
    sargs = xr.as_jax_args(sargs)
    out = {}
    for kind, key, t, build in programs():
        fn, args = build()
        args = xr.as_jax_args(args)
        out[f"{kind} {key} {t}"] = float(np.median([time_program(fn, args, 0.25, min_s=0.03) for _ in range(repeats)]))
    over = float(np.median([time_program(small, sargs, 0.25, min_s=0.05) for _ in range(repeats)]))
    return {"s": out, "run_overhead_s": over, "load": os.getloadavg()}


def nest(flat: dict[str, float]) -> dict:
    ew, dot = {}, {}
    for name, s in flat.items():
        kind, key, t = name.split()
        if kind == "ew":
            k, m = key.split("/")
            ew.setdefault(k, {}).setdefault(m, {})[t] = s
        else:
            dot.setdefault(key, {})[t] = s
    return {"ew_scan_s": ew, "dot_scan_s": dot}


def split_fitted(ew: dict) -> tuple[dict, dict]:
    """(the scans the calibration times, the others) of ``{kernels: {m: {trips: s}}}``, each as
    ``{"kernels/m": {trips: s}}`` (``loop_scan.ew_scan_times``' form)."""
    from analyzer.measure.xla import rows as xr

    fitted, extra = {}, {}
    for k, per_m in ew.items():
        for m, d in per_m.items():
            for t, s in d.items():
                cal = int(k) in xr.EW_SCAN_KERNELS and int(m) in xr.EW_SCAN_ROWS and int(t) in xr.EW_SCAN_TRIPS
                (fitted if cal else extra).setdefault(f"{k}/{m}", {})[t] = s
    return fitted, extra


def time_passes(a) -> dict:
    passes = worker_passes(__file__, a.passes, a.repeats, lambda p: (
        f"run overhead {p['run_overhead_s'] * 1e6:.2f} us, load average {p['load'][0]:.2f}; "
        + ", ".join(f"{n} {s * 1e6:.1f}" for n, s in p["s"].items())))
    best = {n: float(np.min([p["s"][n] for p in passes])) for n in passes[0]["s"]}
    over = float(np.min([p["run_overhead_s"] for p in passes]))
    res = {**nest(best), "run_overhead_s": over, "passes": a.passes, "repeats": a.repeats,
           "measured_on": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
           "loads": [p["load"][0] for p in passes], "per_pass": [p["s"] for p in passes]}
    for n, s in best.items():
        print(f"{n}: {s * 1e6:.2f} us")
    print(f"run overhead (fastest of the passes) {over * 1e6:.2f} us")
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default="")
    ap.add_argument("--from", dest="src", default="", help="a saved --out to merge instead of timing")
    ap.add_argument("--merge", default="", help="comma-separated saved rows files to merge the elementwise scans into")
    ap.add_argument("--suffix", default="_ew")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(one_pass(a.repeats)))
        return 0
    if a.src:
        with open(a.src) as f:
            res = json.load(f)
    else:
        res = time_passes(a)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
    fitted, extra = split_fitted(res["ew_scan_s"])
    over = res["run_overhead_s"]

    return merge_timed(
        a.merge, a.suffix, {"ew_scan_s": fitted, "ew_scan_extra_s": extra, "ew_scan_run_overhead_s": over},
        "ew_scan", lambda rows: (
            f"{res['measured_on']} (bench/xla_loop_scans.py, {res['passes']} passes x {res['repeats']} repeats, merged "
            f"into rows timed on {rows.get('measured_on', 'an earlier day')}; run overhead then {over * 1e6:.2f} us "
            f"against the rows' {rows['run_overhead_s'] * 1e6:.2f})"))


if __name__ == "__main__":
    raise SystemExit(main())
