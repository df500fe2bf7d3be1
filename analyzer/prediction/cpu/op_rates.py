"""Div and Clip on onnxruntime's CPU provider cost per element what the elementwise class's rows
(Add, Mul by a 1-element constant, Relu) do not show.

Measured with onnxruntime 1.32 on a 2-core EPYC at 1 thread, per node of a chain of 16 against a
chain of 1, the same shapes (host loaded, load average 3-5; the ratios held across three runs):

- Div by a 1-element constant: 0.22-0.26 ns an element at 1 x 16 x 80 x 80, 1 x 96 x 20 x 20 and
  1 x 576 x 5 x 5, Mul by one 0.09-0.15 ns. A Div is a true division, whose vector throughput is
  a fraction of a multiply's on x86 cores; its counts equal Mul's, so the class priced it as a Mul:
  0.62-0.67 of its time.
- Clip(x, 0, 6): 0.09-0.12 ns an element, as Relu (0.08-0.18 ns): one pass of a min and a max. It
  is counted as 2 FLOPs an element, which the class, compute-bound on cache-resident tensors at
  its rows' rate of one FLOP an element, charged as two Relus: 2.5-3.1x its time.

A decomposed hard-swish (``x * Clip(x + 3, 0, 6) / 6``: paddle2onnx's export of PaddleOCR's
backbones, ``samples/cpu_models/hswish_net.onnx``) runs one of each per activation.

So ``calibrate`` times pairs of single-op models (``pair_models``: Mul against Div by the same
constant, Relu against Clip; shapes no evaluated model has) and stores the median (time of the
second - time of the first) / elements as ``calibration.divide_ns`` and ``calibration.clip_ns``.
``op_s`` prices, for a calibrated onnxruntime profile, a Div of an elementwise kernel as the class
prices it (a Mul's time) plus its elements x ``divide_ns``, and a Clip that is a kernel of its own
as the class prices a Relu of its bytes (one FLOP an element) plus its elements x ``clip_ns``. A
profile without a figure prices that op as before (Div as a Mul; Clip at two FLOPs an element).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from analyzer.prediction.cpu.epilogue import pair_difference
from analyzer.prediction.efficiency import kernel_time as eff

ELEMENTWISE = eff.CLASS_CODE["elementwise"]
# the calibrated figure of each op, and the single-op model each is timed against
FIGURES = {"Div": "divide_ns", "Clip": "clip_ns"}
REFERENCE = {"Div": "Mul", "Clip": "Relu"}
SHAPES = ([1, 40, 36, 36], [1, 120, 18, 18], [1, 300, 9, 9], [1, 24, 72, 72])


def pair_models(op: str) -> list[tuple[Any, Any, int]]:
    """(reference model, ``op`` model, elements) for ``op`` in ``FIGURES`` at ``SHAPES``: Mul and
    Div by a rank-0 constant (1.5), Relu and Clip(x, 0, 6)."""
    from onnx import TensorProto, helper, numpy_helper

    def one(kind, shape):
        c = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
             {"Mul": [("c", 1.5)], "Div": [("c", 1.5)], "Clip": [("lo", 0.0), ("hi", 6.0)], "Relu": []}[kind]]
        node = helper.make_node(kind, ["x"] + [t.name for t in c], ["y"])
        g = helper.make_graph([node], kind.lower(), [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], c)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        return m

    return [(one(REFERENCE[op], s), one(op, s), int(np.prod(s))) for s in SHAPES]


def measure(timer: Callable[[Any], float], tries: int = 3) -> dict[str, float]:
    """``{figure name: seconds per element}`` of each op in ``FIGURES``: the median over its
    ``pair_models`` of (fastest time of the op - fastest of its reference) / elements, at least 0.
    ``timer(model)``: one wall-clock measurement (seconds)."""
    return {FIGURES[op]: pair_difference(timer, pair_models(op), tries) for op in FIGURES}


def _elements(node) -> float:
    shape = node.out_specs[0].shape if node.out_specs and node.out_specs[0] is not None else None
    if shape is None or not all(type(d) is int for d in shape):
        return 0.0
    return float(np.prod(shape, dtype=np.float64))


def op_s(calibration: Mapping[str, Any] | None, nodes: Sequence, members: Sequence[Sequence[int]],
         feats: Mapping[str, np.ndarray], hw: Mapping[str, Any], consts: Mapping[str, Any]) -> np.ndarray:
    """Seconds per launch each kernel adds (or, for a Clip, takes back) for its Div and Clip
    members (0 where the profile lacks the figure). ``members``: each kernel's node indices
    (``fusion.plan``); ``feats``, ``hw``, ``consts``: the kernels' features and one profile's
    figures as ``kernel_time`` reads them. A Clip kernel's class time at its counted FLOPs is
    replaced by the class time at one FLOP an element (the same bytes)."""
    out = np.zeros(len(members))
    cal = calibration or {}
    per = {op: float(cal.get(name) or 0.0) * 1e-9 for op, name in FIGURES.items()}
    if not any(per.values()):
        return out
    cls = np.asarray(feats["op_class"])
    for k, mem in enumerate(members):
        if int(cls[k]) != ELEMENTWISE:
            continue
        for i in mem:
            n = nodes[i]
            if n.op == "Div" and per["Div"] > 0:
                out[k] += per["Div"] * _elements(n)
            elif n.op == "Clip" and per["Clip"] > 0 and len(mem) == 1 and _elements(n) > 0:
                out[k] += per["Clip"] * _elements(n) + _one_flop_s(feats, k, _elements(n), hw, consts)
    return out


def _one_flop_s(feats, k: int, elems: float, hw, consts) -> float:
    """Class time of kernel ``k`` at one vector FLOP an element less at its counted FLOPs
    (``max(compute_s, memory_s)`` of ``kernel_time``, the floor aside). ``hw``'s peaks may be
    per kernel."""
    def at(v):
        v = np.asarray(v, np.float64).reshape(-1)
        return v[k] if v.size > 1 else v[0]

    hw_k = {**hw, "matrix_peak": at(hw["matrix_peak"]), "vector_peak": at(hw["vector_peak"])}

    def t(vec: float) -> float:
        f = {"op_class": np.asarray([feats["op_class"][k]]), "mac_flops": np.zeros(1),
             "vec_flops": np.asarray([vec]), "trans_flops": np.zeros(1), "bytes": np.asarray([feats["bytes"][k]])}
        r = eff.kernel_time(np, f, hw_k, consts)
        return float(np.maximum(r["compute_s"], r["memory_s"])[0])
    return t(elems) - t(float(feats["vec_flops"][k]))
