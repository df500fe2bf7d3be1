#!/usr/bin/env python3
"""How many threads onnxruntime gives a small GEMM: per-node time of MatMul chains at 1 and 2 threads.

    PYTHONPATH=$PWD python bench/mlas_threads.py [--shapes 15x64,16x64,1x255,1x257]

Each shape MxK is a chain of MatMuls [M, K] x [K, K] (distinct weights); a node's time is
(chain of 11 - chain of 1) / 10, the faster of 2 sessions, median of 600 runs each. MLAS
(onnxruntime's CPU GEMM) runs a GEMM of M*N*K multiplies on M*N*K / 65536 + 1 threads, up to the
session's (``MLAS_SGEMM_THREAD_COMPLEXITY`` in ``onnxruntime/core/mlas/lib/mlasi.h``, used in
``sgemm.cpp``): below 64 K multiplies a node takes its 1-thread time at 2 threads, above it the
2-thread time (halved work plus the pool's fork/join). Prints the thread probe's state before
and after (``thread_mode``): compare only runs in the fast state.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

SHAPES = "1x128,1x181,1x255,1x257,1x362,3x128,4x128,15x64,16x64,8x64,2x181,64x64,1x512"


def chain(m: int, k: int, n_nodes: int):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(k)
    nodes, inits, prev = [], [], "x"
    for i in range(n_nodes):
        inits.append(numpy_helper.from_array((rng.random((k, k)) * 0.01).astype(np.float32), f"W{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [f"t{i}"]))
        prev = f"t{i}"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                         [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [m, k])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def median_us(model, threads: int, m: int, k: int, runs: int = 600) -> float:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(0).random((m, k)).astype(np.float32)
    for _ in range(50):
        s.run(None, {"x": x})
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, {"x": x})
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


def main(argv=None) -> None:
    import accuracy_cpu as bench

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=SHAPES, help="comma-separated MxK (default: %(default)s)")
    a = ap.parse_args(argv)
    print("thread mode before:", bench.thread_mode(2))
    for shape in a.shapes.split(","):
        m, k = (int(v) for v in shape.split("x"))
        per = []
        for threads in (1, 2):
            one, eleven = (min(median_us(chain(m, k, c), threads, m, k) for _ in range(2)) for c in (1, 11))
            per.append((eleven - one) / 10)
        mnk = m * k * k
        print(f"{m:4d} x {k:4d} x {k:4d}  multiplies {mnk:8d}  MLAS threads {min(2, mnk // 65536 + 1)}  "
              f"per node: 1 thread {per[0]:6.2f} us, 2 threads {per[1]:6.2f} us ({per[1] / per[0]:.2f}x)", flush=True)
    print("thread mode after:", bench.thread_mode(2))


if __name__ == "__main__":
    main()
