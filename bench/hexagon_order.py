"""Check that the 8 Gen 3 profile is never predicted slower than the 8 Gen 2 one: every graph in
tests/fixtures/accel and tests/fixtures/torch that analyzes without input dims, at fp16 and int8,
with the shipped profiles and their default runtime (``qnn``).

    PYTHONPATH=$PWD python bench/hexagon_order.py

Prints each pair where the 8 Gen 3 is slower, then the pair count and the largest
8 Gen 3 / 8 Gen 2 latency ratio. Exit status 1 when any pair is slower.
"""

from __future__ import annotations

import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def main() -> int:
    import analyzer
    import hardware_db
    from analyzer.prediction.predict import predict

    old, new = hardware_db.get("hexagon-sd8gen2"), hardware_db.get("hexagon-sd8gen3")
    slower = n = 0
    worst = 0.0
    paths = sorted(glob.glob(os.path.join(ROOT, "tests", "fixtures", "accel", "*.onnx"))
                   + glob.glob(os.path.join(ROOT, "tests", "fixtures", "torch", "*.onnx")))
    for path in paths:
        try:
            rep = analyzer.analyze(path)
        except Exception as e:   # a graph with symbolic dims needs --input dims: not checked here
            print(f"skipped {os.path.relpath(path, ROOT)}: {str(e)[:80]}")
            continue
        for prec in ("fp16", "int8"):
            a, b = predict(rep, [old, new], precision=prec)
            n += 1
            worst = max(worst, b.latency_s / a.latency_s)
            if b.latency_s > a.latency_s:
                slower += 1
                print(f"slower: {os.path.relpath(path, ROOT)} {prec} {a.latency_s * 1e3:.3f} -> {b.latency_s * 1e3:.3f} ms")
    print(f"{n} graph-precision pairs, {slower} with the 8 Gen 3 slower; largest 8 Gen 3 / 8 Gen 2 ratio {worst:.3f}")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
