#!/usr/bin/env python3
"""In-sample check of ``calibration.program_launch_us`` (a kernel outside a loop at the chain's
marginal cost per kernel, the largest class floor's excess once a run): each saved calibration's
rows are lowered again with the current code and refitted (as ``accuracy_xla_cpu.py --rows``),
then every calibration row's program, the run-overhead program, the chains of 1 and
``TINY_CHAIN`` links and the scans with a YNNPACK dot (where the rows have them) are predicted with the refit profile with the figure ("after") and without it
("before": every kernel at its class floor), against the rows' saved times. All of these are the
fit's own data (in-sample); nothing is timed.

    PYTHONPATH=$PWD python bench/xla_program_launch.py --rows A_rows_1.json[,B_rows_2.json] [--out PREFIX]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def programs(saved: dict) -> list[tuple[str, object, tuple, float, bool]]:
    """(label, fn, args, measured seconds, is_chain) of the rows, the run overhead, the chains, the
    scans with a YNNPACK dot in their body (``loop_scan.dot_scan_times``: where saved) and the
    elementwise-only scans (``loop_scan.ew_scan_times``: the fitted ones and the others, where saved)."""
    from analyzer.measure.xla import loop_scan
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.calibrate import _rng

    builders = {label: build for rs in xr.xla_rows().values() for label, build in rs}
    out = []
    for r in saved["rows"]:
        fn, args = builders[r["label"]](_rng(r["label"]))
        out.append((r["label"], fn, args, r["seconds"], False))
    fn, args = xr.run_overhead_program()
    out.append(("run overhead (add 8)", fn, args, saved["run_overhead_s"], False))
    for n, t in saved["chain_s"].items():
        fn, args = xr.dot_chain(int(n), m=1, k=8)
        out.append((f"chain of {n} (1x8x8 dot + tanh)", fn, args, t, True))
    for (m, trips), t in loop_scan.dot_scan_times(saved).items():   # (rows saved with them)
        fn, args = xr.dot_scan_program(trips, m)
        out.append((loop_scan.dot_scan_label(m, trips), fn, args, t, False))
    for key in ("ew_scan_s", "ew_scan_extra_s"):   # the elementwise scans, fitted and not
        for (k, m, trips), t in loop_scan.ew_scan_times(saved, key).items():
            fn, args = xr.ew_scan_program(trips, m, k)
            out.append((loop_scan.ew_scan_label(k, m, trips) + (" (not fitted)" if key != "ew_scan_s" else ""),
                        fn, args, t, False))
    return out


def predict_all(progs, doc: dict, path: str) -> list[float]:
    import jax

    from analyzer import analyze_jax
    from hardware_db.write import write_profile

    prof = write_profile(doc, path)
    out = []
    for _, fn, args, _, _ in progs:
        sds = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), args)
        out.append(analyze_jax(fn, *sds, hw=prof, runtime="xla").predictions[0].latency_s)
    return out


def mape(pred, meas) -> float:
    return float(100 * np.mean(np.abs(np.array(pred) / np.array(meas) - 1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", required=True)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    from accuracy_xla_cpu import relower

    from analyzer.measure.xla.calibrate import profile_doc

    result = {}
    for path in (p for p in a.rows.split(",") if p):
        with open(path) as f:
            saved = json.load(f)
        relower(saved["rows"], int(saved.get("cores") or 1))
        after = profile_doc(saved)
        for k in ("_rows", "_measured", "_warnings"):
            after.pop(k, None)
        before = copy.deepcopy(after)
        before["calibration"].pop("program_launch_us")
        before["sources"].pop("calibration.program_launch_us", None)
        progs = programs(saved)
        meas = [p[3] for p in progs]
        tmp = tempfile.mkdtemp()
        pb = predict_all(progs, before, os.path.join(tmp, "before.toml"))
        pa = predict_all(progs, after, os.path.join(tmp, "after.toml"))
        rows = [{"program": p[0], "measured_us": m * 1e6, "before_us": b * 1e6, "after_us": x * 1e6}
                for p, m, b, x in zip(progs, meas, pb, pa)]
        idx = {"all": range(len(progs)), "rows": [j for j, p in enumerate(progs) if not p[4]],
               "chains": [j for j, p in enumerate(progs) if p[4]]}
        summ = {k: {"cases": len(v), "before_mape_pct": mape([pb[j] for j in v], [meas[j] for j in v]),
                    "after_mape_pct": mape([pa[j] for j in v], [meas[j] for j in v])} for k, v in idx.items()}
        result[path] = {"program_launch_us": after["calibration"]["program_launch_us"], "summary": summ, "rows": rows}
        print(f"{path}: program_launch_us {after['calibration']['program_launch_us']:.4g}")
        for k, s in summ.items():
            print(f"  {k:7s} {s['cases']:4d}  MAPE before {s['before_mape_pct']:6.1f} %  after {s['after_mape_pct']:6.1f} %")
        for r in rows:
            if r["program"].startswith(("chain", "run overhead")) or abs(r["after_us"] / r["before_us"] - 1) > 1e-6:
                print(f"    {r['program'][:40]:40s} {r['measured_us']:9.2f} {r['before_us']:9.2f} {r['after_us']:9.2f}")
    if a.out:
        with open(a.out + ".json", "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
