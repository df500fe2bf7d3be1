"""Time the scans whose body holds a YNNPACK dot (``rows.dot_scan_program``: ``rows.DOT_SCAN_ROWS``
rows at the two trip counts of ``rows.DOT_SCAN_TRIPS``) alone, and merge them into saved calibration
rows (the ``*_rows_*.json`` of ``bench/accuracy_xla_cpu.py``'s run) for a refit of calibrations made
before the suite had them (``bench/accuracy_xla_cpu.py --rows``). Each pass is a fresh process (as
the calibration's); a program's time kept is the median of a pass's ``--repeats`` timings (each the 0.25 quantile of its runs,
``calibrate.time_program``), the fastest over the passes (as a calibration row's: a shared 2-core
machine's passes fall in two states, 10 and 13.5 us for one program). Each pass
also times the run-overhead program (one add on 8 floats): the merged rows keep its median over the
passes (``dot_scan_run_overhead_s``, the fastest), and the fit takes each scan as its excess over it
(``dot_scans.fit_dot_loop``), as every calibration row is net of the run overhead timed with it.
The merged rows say where the scans came from (``dot_scan_measured_on``).

    PYTHONPATH=$PWD python bench/xla_dot_scans.py --passes 5 --repeats 5 --merge R_rows_1_loop.json --suffix _dot
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


def one_pass(repeats: int) -> dict:
    """One process's timings: ``{"dot_scan_s": {m: {trips: s}}, "run_overhead_s", "load"}``."""
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from analyzer.measure.xla import loop_scan
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import time_program

    small, sargs = xr.run_overhead_program()
    sargs = xr.as_jax_args(sargs)
    reps = [loop_scan.time_dot_scans(0.25, time_program) for _ in range(repeats)]
    over = [time_program(small, sargs, 0.25, min_s=0.05) for _ in range(repeats)]
    return {"dot_scan_s": loop_scan.merge_dot_scans(reps), "run_overhead_s": float(np.median(over)),
            "load": os.getloadavg()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--merge", default="", help="comma-separated saved rows files to merge into")
    ap.add_argument("--suffix", default="_dot", help="the merged files: <rows file stem><suffix>.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(one_pass(a.repeats)))
        return 0
    from analyzer.measure.xla import loop_scan

    passes = worker_passes(__file__, a.passes, a.repeats, lambda p: (
        "; ".join(f"m={m}: " + ", ".join(f"{t} trips {s * 1e6:.2f} us" for t, s in d.items())
                  for m, d in p["dot_scan_s"].items())
        + f"; run overhead {p['run_overhead_s'] * 1e6:.2f} us; load average {p['load'][0]:.2f}"))
    scans = loop_scan.merge_dot_scans([p["dot_scan_s"] for p in passes], np.min)
    over = float(np.min([p["run_overhead_s"] for p in passes]))
    for m, d in scans.items():
        (lo, t_lo), (hi, t_hi) = sorted(d.items(), key=lambda x: int(x[0]))
        print(f"m={m}: {lo} trips {t_lo * 1e6:.2f} us, {hi} trips {t_hi * 1e6:.2f} us, "
              f"per trip {(t_hi - t_lo) / (int(hi) - int(lo)) * 1e6:.4f} us (fastest of {a.passes} passes)")
    print(f"run overhead (fastest of the passes) {over * 1e6:.2f} us")
    loads = ", ".join(f"{p['load'][0]:.2f}" for p in passes)

    return merge_timed(
        a.merge, a.suffix, {"dot_scan_s": scans, "dot_scan_run_overhead_s": over}, "dot_scan", lambda rows: (
            f"{dt.date.today().isoformat()} (bench/xla_dot_scans.py, {a.passes} passes x {a.repeats} repeats, "
            f"merged into rows timed on {rows.get('measured_on', 'an earlier day')}; run overhead then "
            f"{over * 1e6:.2f} us against the rows' {rows['run_overhead_s'] * 1e6:.2f}; load average at its "
            f"passes {loads})"))


if __name__ == "__main__":
    raise SystemExit(main())
