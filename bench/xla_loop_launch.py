"""Time the in-loop launch programs of ``analyze hw calibrate --runtime xla`` (``rows.scan_program``
at ``rows.SCAN_TRIPS`` trips) alone, and merge them into saved calibration rows (the
``*_rows_*.json`` of ``bench/accuracy_xla_cpu.py``'s run), for a refit of calibrations made before
the suite had them (``bench/accuracy_xla_cpu.py --rows``). Each pass is a fresh process (as the
calibration's); the per-trip difference kept is the median over passes of each pass's median
over ``--repeats`` back-to-back timings. The merged rows say where the scans came from
(``scan_measured_on``).

    PYTHONPATH=$PWD python bench/xla_loop_launch.py --passes 3 --repeats 5 \\
        --merge R_rows_1.json,R_rows_2.json --suffix _loop

``--check PROFILE``: the scan at more trip counts (none a calibration program but the two ends),
timed (median of ``--repeats`` timings in each of ``--passes`` fresh processes, then the median
over passes) beside its ``xla`` prediction on PROFILE: how straight the time per trip is, and how
the profile's in-loop launch figure reproduces it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys

import numpy as np

from rows_merge import merge_into


def one_pass(repeats: int) -> dict:
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import time_program

    progs = {t: xr.scan_program(t) for t in xr.SCAN_TRIPS}
    progs = {t: (f, xr.as_jax_args(a)) for t, (f, a) in progs.items()}
    lo, hi = xr.SCAN_TRIPS
    times = {t: [] for t in xr.SCAN_TRIPS}
    for _ in range(repeats):
        for t in xr.SCAN_TRIPS:
            times[t].append(time_program(*progs[t], 0.25, min_s=0.05))
    per_trip = float(np.median([(b - a) / (hi - lo) for a, b in zip(times[lo], times[hi])]))
    return {"scan_s": {str(t): float(np.median(v)) for t, v in times.items()}, "per_trip_s": per_trip,
            "load": os.getloadavg()}


CHECK_TRIPS = (8, 24, 72, 136, 264)


def check_pass(repeats: int) -> dict:
    import jax

    jax.config.update("jax_cpu_enable_async_dispatch", False)
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import time_program

    out = {}
    for t in CHECK_TRIPS:
        f, a = xr.scan_program(t)
        out[str(t)] = float(np.median([time_program(f, xr.as_jax_args(a), 0.25, min_s=0.05)
                                       for _ in range(repeats)]))
    return out


def check(profile: str, passes: list[dict]) -> None:
    import jax

    from analyzer import analyze_jax
    from analyzer.measure.xla import rows as xr

    meas = {t: float(np.median([p[str(t)] for p in passes])) for t in CHECK_TRIPS}
    slope, icpt = np.polyfit(CHECK_TRIPS, [meas[t] for t in CHECK_TRIPS], 1)
    print(f"measured: least squares over {len(CHECK_TRIPS)} trip counts {icpt * 1e6:.3f} us + "
          f"{slope * 1e6:.4f} us a trip")
    print("| trips | measured | line | predicted | predicted / measured |")
    print("|---:|---:|---:|---:|---:|")
    for t in CHECK_TRIPS:
        f, a = xr.scan_program(t)
        sds = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in a)
        pred = analyze_jax(f, *sds, hw=profile, runtime="xla").predictions[0].latency_s
        print(f"| {t} | {meas[t] * 1e6:.2f} us | {(icpt + slope * t) * 1e6:.2f} us | {pred * 1e6:.2f} us | "
              f"{pred / meas[t]:.2f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--merge", default="", help="comma-separated saved rows files to merge into")
    ap.add_argument("--suffix", default="_loop", help="the merged files: <rows file stem><suffix>.json")
    ap.add_argument("--check", default="", help="a profile: time the scan at more trip counts beside its prediction")
    ap.add_argument("--worker", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(one_pass(a.repeats) if a.worker == "merge" else check_pass(a.repeats)))
        return 0
    if a.check:
        passes = []
        for _ in range(a.passes):
            out = subprocess.run([sys.executable, __file__, "--worker", "check", "--repeats", str(a.repeats)],
                                 capture_output=True, text=True, check=True)
            passes.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"load average {os.getloadavg()[0]:.2f}")
        check(a.check, passes)
        return 0
    passes = []
    for i in range(a.passes):
        out = subprocess.run([sys.executable, __file__, "--worker", "merge", "--repeats", str(a.repeats)],
                             capture_output=True, text=True, check=True)
        passes.append(json.loads(out.stdout.strip().splitlines()[-1]))
        p = passes[-1]
        print(f"pass {i + 1}: " + ", ".join(f"{t} trips {s * 1e6:.2f} us" for t, s in p["scan_s"].items())
              + f"; per trip {p['per_trip_s'] * 1e6:.4f} us; load average {p['load'][0]:.2f}")
    lo, hi = sorted(int(t) for t in passes[0]["scan_s"])
    per_trip = float(np.median([p["per_trip_s"] for p in passes]))
    scan = {str(lo): float(np.median([p["scan_s"][str(lo)] for p in passes]))}
    scan[str(hi)] = scan[str(lo)] + per_trip * (hi - lo)
    print(f"per trip (median of {a.passes} passes): {per_trip * 1e6:.4f} us; "
          f"per-pass spread {min(p['per_trip_s'] for p in passes) * 1e6:.4f}-"
          f"{max(p['per_trip_s'] for p in passes) * 1e6:.4f} us")
    loads = ", ".join(f"{p['load'][0]:.2f}" for p in passes)

    def update(rows: dict) -> None:
        rows["scan_s"] = scan
        rows["scan_measured_on"] = (f"{dt.date.today().isoformat()} (bench/xla_loop_launch.py, merged into "
                                    f"rows timed on {rows.get('measured_on', 'an earlier day')}; load average "
                                    f"at its passes {loads})")

    for dst in merge_into(a.merge, a.suffix, update):
        print(f"merged into {dst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
