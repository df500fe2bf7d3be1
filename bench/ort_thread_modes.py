#!/usr/bin/env python3
"""How stable is onnxruntime's multi-threaded CPU latency on this machine? Session by session.

    PYTHONPATH=$PWD python bench/ort_thread_modes.py [--sessions 6] [--models a.onnx,b.onnx]
        [--seconds 0.3]

For each model: ``--sessions`` fresh ``InferenceSession`` objects at 1 thread, then at 2 threads
with the default spinning thread pool, then at 2 threads with spinning off
(``session.intra_op.allow_spinning = 0``); each session's median ``session.run`` wall-clock over
``--seconds`` (after 3 warm-up runs). Prints one line per session and, per setting, the
spread of the session medians (max / min). Nothing is fitted or predicted: this measures the
noise a 2-thread prediction is judged against. The sessions of one setting run back to back,
so a spread between them is the machine's (where the worker thread ran), not the model's.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

DEFAULT = ["tests/fixtures/ort/bert.onnx", "samples/transformer.onnx",
           "tests/fixtures/torch/mobilenet_v2.onnx", "samples/cpu_models/dw_separable.onnx"]


def session_median(data: bytes, threads: int, spin: bool, seconds: float) -> float:
    from analyzer.prediction.onnxruntime.graph import import_ort, session_options
    from analyzer.measure.onnxruntime import random_feeds, time_runs

    ort = import_ort()
    so = session_options("default", threads)
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    s = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    feeds = random_feeds(s, {"batch": 1, "seq": 128})
    w = time_runs(s, feeds, 20, warmup=3, min_time_s=seconds)
    return float(np.median(w))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=6)
    ap.add_argument("--models", default=",".join(DEFAULT))
    ap.add_argument("--seconds", type=float, default=0.3)
    a = ap.parse_args(argv)
    from analyzer.measure.onnxruntime import model_bytes

    print(f"# {datetime.date.today()} load {os.getloadavg()} cores {os.cpu_count()}")
    for p in a.models.split(","):
        data = model_bytes(os.path.join(ROOT, p))
        for threads, spin in ((1, True), (2, True), (2, False)):
            t = [session_median(data, threads, spin, a.seconds) * 1e3 for _ in range(a.sessions)]
            print(f"{p:45s} {threads}t spin={int(spin)}  session medians ms: "
                  + " ".join(f"{x:.4f}" for x in t) + f"   max/min {max(t) / min(t):.2f}")
    print(f"# load at the end {os.getloadavg()} ({time.strftime('%H:%M:%S')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
