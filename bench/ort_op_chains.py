#!/usr/bin/env python3
"""Per-node in-graph time of small elementwise ops under onnxruntime (CPU), measured against a
profile's prediction.

    PYTHONPATH=$PWD python bench/ort_op_chains.py PROFILE.toml [--ops add_s,div_s,...] \
        [--shapes 1x16x80x80,1x576x5x5] [--threads 1]

For each op and shape, a chain of 16 nodes and a chain of 1 (``x -> op -> op ...``); per node =
(wall-clock of the 16 - of the 1) / 15, each the fastest of 5 session medians; the prediction
is the same difference of ``analyze``'s latencies of the two chain models. Ops: ``add_s``,
``mul_s``, ``div_s`` (a rank-0 constant), ``clip`` (0, 6), ``relu``, ``mul_t`` (times the input),
``mul_pc``, ``add_pc`` (a ``[1, C, 1, 1]`` constant), ``hswish`` (Add 3, Clip, Mul, Div 6: one
node of the chain is the 4). Inputs are 1 + U(0, 0.01): no denormals. Prints the load average
before and after; ratios within one run are what to read on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

L = 16
OPS = "add_s,mul_s,div_s,clip,relu,mul_t,mul_pc,add_pc,hswish"


def _step(op: str, prev: str, out: str, i: int, c: int, const):
    from onnx import helper

    def node(kind, ins, o=out):
        return helper.make_node(kind, ins, [o])
    simple = {"add_s": ("Add", 0.001), "mul_s": ("Mul", 1.0001), "div_s": ("Div", 1.0001)}
    if op in simple:
        return [node(simple[op][0], [prev, const(f"c{i}", simple[op][1])])]
    if op in ("mul_pc", "add_pc"):
        v = np.full((1, c, 1, 1), 1.0001 if op == "mul_pc" else 0.001)
        return [node("Mul" if op == "mul_pc" else "Add", [prev, const(f"c{i}", v)])]
    if op == "clip":
        return [node("Clip", [prev, const(f"lo{i}", 0.0), const(f"hi{i}", 6.0)])]
    if op == "relu":
        return [node("Relu", [prev])]
    if op == "mul_t":
        return [node("Mul", [prev, "x"])]
    a, cl, m = f"a{i}", f"cl{i}", f"m{i}"
    return [node("Add", [prev, const(f"three{i}", 3.0)], a),
            node("Clip", [a, const(f"lo{i}", 0.0), const(f"hi{i}", 6.0)], cl),
            node("Mul", [prev, cl], m), node("Div", [m, const(f"six{i}", 6.0)])]


def chain(op: str, shape: tuple[int, ...], n: int):
    """A model of ``n`` steps of ``op`` on ``x`` of ``shape``."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes, prev = [], [], "x"

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        nodes += _step(op, prev, out, i, shape[1], const)
        prev = out
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def wall(model, shape, threads: int, reps: int = 5) -> float:
    from analyzer.prediction.onnxruntime.graph import import_ort, session_options

    ort = import_ort()
    s = ort.InferenceSession(model.SerializeToString(), session_options("default", threads),
                             providers=["CPUExecutionProvider"])
    x = {"x": (1.0 + 0.01 * np.random.default_rng(0).random(shape)).astype(np.float32)}
    best = []
    for _ in range(reps):
        for _ in range(3):
            s.run(None, x)
        w, t_end = [], time.perf_counter() + 0.1
        while len(w) < 20 or time.perf_counter() < t_end:
            t0 = time.perf_counter()
            s.run(None, x)
            w.append(time.perf_counter() - t0)
        best.append(np.median(w))
    return float(np.min(best))


def main(argv=None) -> None:
    from analyzer import analyze

    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("--ops", default=OPS)
    ap.add_argument("--shapes", default="1x16x80x80,1x96x20x20,1x576x5x5")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    shapes = [tuple(int(v) for v in s.split("x")) for s in a.shapes.split(",")]
    print("load average", os.getloadavg())
    print(f"{'op':8s} {'shape':16s} {'measured us':>11s} {'predicted us':>12s} {'ratio':>6s} {'ns/element':>10s}")
    for shape in shapes:
        for op in a.ops.split(","):
            m1, mL = chain(op, shape, 1), chain(op, shape, L)
            meas = (wall(mL, shape, a.threads) - wall(m1, shape, a.threads)) / (L - 1)
            pred = (analyze(mL, hw=a.profile).predictions[0].latency_s
                    - analyze(m1, hw=a.profile).predictions[0].latency_s) / (L - 1)
            print(f"{op:8s} {'x'.join(map(str, shape)):16s} {meas * 1e6:11.2f} {pred * 1e6:12.2f} "
                  f"{pred / meas:6.2f} {meas / np.prod(shape) * 1e9:10.3f}", flush=True)
    print("load average", os.getloadavg())


if __name__ == "__main__":
    main()
