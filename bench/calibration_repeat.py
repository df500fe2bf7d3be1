#!/usr/bin/env python3
"""How far apart two calibrations' predictions are, on the CPU accuracy bench's models.

    analyze hw calibrate --threads 1 --out A.toml
    analyze hw calibrate --threads 1 --out B.toml
    PYTHONPATH=$PWD python bench/calibration_repeat.py A.toml B.toml

Prints each model's predicted latency under both profiles and their relative difference, then
the largest and mean absolute difference and how many models lie within 5% (issue #10: two
calibration runs predict within 5% of each other). Nothing is measured here: run the two
calibrations on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("first", help="a calibrated profile (.toml)")
    ap.add_argument("second", help="another calibrated profile of the same machine")
    args = ap.parse_args(argv)
    import onnx

    import accuracy_cpu as bench
    from analyzer import analyze

    diffs = []
    for path in bench.models():
        dims = bench.sym_dims(onnx.load(path, load_external_data=False)) or None
        a = analyze(path, hw=args.first, dims=dims).predictions[0].latency_s
        b = analyze(path, hw=args.second, dims=dims).predictions[0].latency_s
        diffs.append(b / a - 1)
        print(f"{os.path.relpath(path, ROOT):45s} {a * 1e3:10.4f} {b * 1e3:10.4f} ms  "
              f"{(b / a - 1) * 100:+6.1f}%")
    d = np.abs(np.array(diffs)) * 100
    print(f"models {len(d)}: max {d.max():.1f}%, mean {d.mean():.1f}%, within 5%: "
          f"{int((d <= 5).sum())}/{len(d)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
