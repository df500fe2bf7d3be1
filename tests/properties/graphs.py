"""A hypothesis strategy of random checker-valid ONNX graphs with their closed-form counts.

A graph is a chain over a ``[batch, c]`` activation (``batch`` a symbolic dim), optionally
starting with a Conv over ``[batch, C, H, W]`` and a Flatten; each step is one of MatMul,
elementwise unary/binary, Reshape (a round trip through 3-D), Concat, Softmax,
LayerNormalization, If (on a boolean graph input: then MatMul, else Relu, same shapes) and Loop
(a constant trip count; the body adds an outer-scope weight).  Beside the model, ``Spec`` holds
what the counts must be per batch row: MAC FLOPs (the costlier If branch), and the parameter
elements (every initializer but the shape-like ones).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
STEPS = ("matmul", "unary", "binary", "reshape", "concat", "softmax", "layernorm", "if", "loop")


@dataclass
class Spec:
    model: onnx.ModelProto
    mac_per_row: int = 0      # mac_flops / batch
    params: int = 0           # weight elements consumed
    steps: list[str] = field(default_factory=list)


class _Builder:
    def __init__(self):
        self.nodes, self.inits, self.inputs = [], [], []
        self.mac_per_row = self.params = 0
        self._n = 0

    def name(self, p: str) -> str:
        self._n += 1
        return f"{p}{self._n}"

    def weight(self, shape, *, param=True) -> str:
        n = self.name("w")
        self.inits.append(numpy_helper.from_array(np.full(shape, 0.5, np.float32), n))
        if param:
            self.params += int(np.prod(shape))
        return n

    def shape_const(self, vals) -> str:
        n = self.name("shape")
        self.inits.append(numpy_helper.from_array(np.asarray(vals, np.int64), n))
        return n

    def node(self, op, ins, **attrs) -> str:
        out = self.name("t")
        self.nodes.append(helper.make_node(op, ins, [out], name=self.name(op.lower()), **attrs))
        return out


def _step(b: _Builder, kind: str, x: str, c: int, draw) -> tuple[str, int]:
    if kind == "matmul":
        c2 = draw(st.integers(1, 12))
        b.mac_per_row += 2 * c * c2
        return b.node("MatMul", [x, b.weight((c, c2))]), c2
    if kind == "unary":
        return b.node(draw(st.sampled_from(["Relu", "Tanh", "Exp", "Sigmoid", "Neg"])), [x]), c
    if kind == "binary":
        return b.node(draw(st.sampled_from(["Add", "Mul", "Sub"])), [x, b.weight((c,))]), c
    if kind == "reshape":
        y = b.node("Reshape", [x, b.shape_const([-1, 1, c])])
        return b.node("Reshape", [y, b.shape_const([-1, c])]), c
    if kind == "concat":
        return b.node("Concat", [x, x], axis=1), 2 * c
    if kind == "softmax":
        return b.node("Softmax", [x], axis=-1), c
    if kind == "layernorm":
        return b.node("LayerNormalization", [x, b.weight((c,)), b.weight((c,))], axis=-1), c
    if kind == "if":
        if not any(i.name == "cond" for i in b.inputs):
            b.inputs.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
        w = b.weight((c, c))
        then_out, else_out = b.name("then"), b.name("else")
        then_g = helper.make_graph([helper.make_node("MatMul", [x, w], [then_out])], b.name("then_g"), [],
                                   [helper.make_tensor_value_info(then_out, F32, ["batch", c])])
        else_g = helper.make_graph([helper.make_node("Relu", [x], [else_out])], b.name("else_g"), [],
                                   [helper.make_tensor_value_info(else_out, F32, ["batch", c])])
        b.mac_per_row += 2 * c * c  # the costlier branch
        out = b.name("t")
        b.nodes.append(helper.make_node("If", ["cond"], [out], name=b.name("if"),
                                        then_branch=then_g, else_branch=else_g))
        return out, c
    if kind == "loop":
        trips = draw(st.integers(1, 4))
        m = b.shape_const(trips)
        keep = b.name("keep")
        b.inits.append(numpy_helper.from_array(np.array(True), keep))
        w = b.weight((c,))
        it, ci, vi, co, vo = (b.name(p) for p in ("i", "cin", "v", "cout", "vout"))
        body = helper.make_graph(
            [helper.make_node("Identity", [ci], [co]), helper.make_node("Add", [vi, w], [vo])],
            b.name("body"),
            [helper.make_tensor_value_info(it, TensorProto.INT64, []),
             helper.make_tensor_value_info(ci, TensorProto.BOOL, []),
             helper.make_tensor_value_info(vi, F32, ["batch", c])],
            [helper.make_tensor_value_info(co, TensorProto.BOOL, []),
             helper.make_tensor_value_info(vo, F32, ["batch", c])])
        out = b.name("t")
        b.nodes.append(helper.make_node("Loop", [m, keep, x], [out], name=b.name("loop"), body=body))
        return out, c
    raise AssertionError(kind)


@st.composite
def graphs(draw, steps=STEPS) -> Spec:
    b = _Builder()
    kinds = draw(st.lists(st.sampled_from(steps), min_size=1, max_size=6))
    if draw(st.booleans()):  # a Conv stem, then Flatten
        cin, cout, hw, k = (draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(3, 6)),
                            draw(st.sampled_from([1, 3])))
        b.inputs.append(helper.make_tensor_value_info("x", F32, ["batch", cin, hw, hw]))
        y = b.node("Conv", ["x", b.weight((cout, cin, k, k))], pads=[k // 2] * 4, kernel_shape=[k, k])
        b.mac_per_row += 2 * cout * hw * hw * cin * k * k  # 'same' padding: every tap of every output
        x, c = b.node("Flatten", [y], axis=1), cout * hw * hw
    else:
        c = draw(st.integers(1, 12))
        b.inputs.insert(0, helper.make_tensor_value_info("x", F32, ["batch", c]))
        x = "x"
    for kind in kinds:
        x, c = _step(b, kind, x, c, draw)
    g = helper.make_graph(b.nodes, "random", b.inputs, [helper.make_tensor_value_info(x, F32, ["batch", c])],
                          initializer=b.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(m, full_check=True)
    return Spec(m, b.mac_per_row, b.params, kinds)
