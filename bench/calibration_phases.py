"""Where a CPU calibration's time goes on this machine: the share of each phase, for the
progress line's ``analyzer.measure.calibrate.PHASE_END``.

    PYTHONPATH=$PWD python bench/calibration_phases.py [--threads 2] [--out phases.json]

Runs one onnxruntime calibration (1-7 minutes on a 2-core machine; the `measure` extra), notes
when each progress message arrives, and prints the seconds and share of each phase (the row
classes summed over their passes).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections import OrderedDict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=None, help="also write the timed messages as JSON")
    args = ap.parse_args(argv)
    from analyzer.measure.calibrate import calibrate

    log: list[tuple[float, float, str]] = []
    t0 = time.perf_counter()
    calibrate(threads=args.threads, progress=lambda f, s: log.append((time.perf_counter() - t0, f, s)))
    log.append((time.perf_counter() - t0, 1.0, "returned"))
    phases: OrderedDict[str, float] = OrderedDict()
    for (t, _f, s), (t_next, _g, _n) in itertools.pairwise(log):
        key = "timing the rows" if s.startswith("measuring ") and s.endswith(")") else s.split(" (")[0]
        phases[key] = phases.get(key, 0.0) + (t_next - t)
    total = sum(phases.values())
    for k, v in phases.items():
        print(f"{v:8.1f} s  {100 * v / total:5.1f} %  {k}")
    print(f"{total:8.1f} s  total ({args.threads} threads)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump([{"t_s": t, "fraction": fr, "message": s} for t, fr, s in log], f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
