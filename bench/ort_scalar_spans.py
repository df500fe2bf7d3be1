#!/usr/bin/env python3
"""Per-node wall-clock of onnxruntime's binary ops with a 1-element constant, by the shape of the
tensor and the rank of the constant (``analyzer/prediction/cpu/broadcast.py``).

    PYTHONPATH=$PWD python bench/ort_scalar_spans.py [--threads 1]

Per case: (wall of a chain of 17 nodes - a chain of 1) / 16, each the fastest of 2 sessions'
medians; the cases run one after the other in one process, so the ratios between them hold on a
busy host where the absolute figures do not. Synthetic models only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SHAPES = ([1, 64, 1, 1], [1, 576, 1, 1], [1, 2304, 1, 1], [1, 576], [1, 576, 1], [1, 1, 1, 576],
          [1, 576, 2, 2])
CONSTS = ([], [1], [1, 1], [1, 1, 1], [1, 1, 1, 1])


def chain(shape, n: int, op: str, cshape):
    from onnx import TensorProto, helper, numpy_helper

    c = numpy_helper.from_array(np.full(cshape, 0.5, np.float32), "c")
    nodes, x = [], "x"
    for i in range(n):
        nodes.append(helper.make_node(op, [x, "c"], [f"y{i}"], name=f"n{i}"))
        x = f"y{i}"
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)], [c])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def wall(model, threads: int, runs: int = 200) -> float:
    import onnxruntime as ort

    from analyzer.prediction.onnxruntime.graph import session_options

    s = ort.InferenceSession(model.SerializeToString(), session_options("default", threads),
                             providers=["CPUExecutionProvider"])
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"x": np.random.default_rng(0).random(shape, dtype=np.float32)}
    for _ in range(10):
        s.run(None, feeds)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feeds)
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--op", default="Add")
    a = ap.parse_args(argv)
    print("load average", os.getloadavg())
    print("tensor shape | " + " | ".join(f"c{c}" for c in CONSTS) + "   (us per node)")
    for shape in SHAPES:
        row = []
        for c in CONSTS:
            if len(c) > len(shape):
                row.append("-")
                continue
            one = min(wall(chain(shape, 1, a.op, c), a.threads) for _ in range(2))
            many = min(wall(chain(shape, 17, a.op, c), a.threads) for _ in range(2))
            row.append(f"{(many - one) / 16 * 1e6:.2f}")
        print(f"{shape} | " + " | ".join(row), flush=True)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
