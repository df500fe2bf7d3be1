#!/usr/bin/env python3
"""Write samples/cpu_models/hswish_net.onnx: a MobileNetV3-small-like convolution net whose
hard-swish and hard-sigmoid are written as separate small nodes, the way paddle2onnx exports
PaddleOCR's backbones.

    PYTHONPATH=$PWD python samples/cpu_models/make_hswish_net.py

No torch needed (onnx.helper). Random weights (seed 0), batch 1, fp32, opset 13, 1 x 3 x 160 x 160.

    hard_swish(x)   = x * Clip(x + 3, 0, 6) / 6   -> Add, Clip, Mul, Div   (4 nodes)
    hard_sigmoid(x) = Clip(x + 3, 0, 6) / 6       -> Add, Clip, Div        (3 nodes)

Every convolution is followed by a BatchNormalization (paddle2onnx keeps them; onnxruntime folds
them). Blocks: expand 1x1 -> depthwise kxk -> (squeeze-excite: GlobalAveragePool -> 1x1 -> Relu
-> 1x1 -> hard_sigmoid -> Mul) -> project 1x1 (-> residual Add when shapes match). The channel
counts (16, 24, 40, 48, 96, ...) are MobileNetV3-small's, several not a multiple of 16. The
model is a check model: opcost is never calibrated or tuned on it.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13
SIZE = 160
# (kernel, expand channels, out channels, squeeze-excite, activation, stride): MobileNetV3-small
BLOCKS = [(3, 16, 16, True, "relu", 2), (3, 72, 24, False, "relu", 2), (3, 88, 24, False, "relu", 1),
          (5, 96, 40, True, "hswish", 2), (5, 240, 40, True, "hswish", 1),
          (5, 120, 48, True, "hswish", 1), (5, 288, 96, True, "hswish", 2),
          (5, 576, 96, True, "hswish", 1)]


class Net:
    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.k = [], [], 0

    def _name(self, p: str) -> str:
        self.k += 1
        return f"{p}_{self.k}"

    def const(self, value: float) -> str:
        n = self._name("c")
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), n))
        return n

    def weight(self, shape) -> str:
        n = self._name("w")
        self.inits.append(numpy_helper.from_array(
            (self.rng.standard_normal(shape) * 0.1).astype(np.float32), n))
        return n

    def node(self, op: str, inputs, **attrs) -> str:
        name = self._name(op.lower())
        self.nodes.append(helper.make_node(op, list(inputs), [name + "_y"], name=name, **attrs))
        return name + "_y"

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1) -> str:
        w = self.weight((cout, cin // group, k, k))
        y = self.node("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4, group=group)
        scale, bias = self.weight((cout,)), self.weight((cout,))
        mean = self.weight((cout,))
        var = numpy_helper.from_array(np.ones(cout, dtype=np.float32), self._name("var"))
        self.inits.append(var)
        return self.node("BatchNormalization", [y, scale, bias, mean, var.name], epsilon=1e-5)

    def hard_sigmoid(self, x: str) -> str:
        a = self.node("Add", [x, self.const(3.0)])
        c = self.node("Clip", [a, self.const(0.0), self.const(6.0)])
        return self.node("Div", [c, self.const(6.0)])

    def hard_swish(self, x: str) -> str:
        a = self.node("Add", [x, self.const(3.0)])
        c = self.node("Clip", [a, self.const(0.0), self.const(6.0)])
        m = self.node("Mul", [x, c])
        return self.node("Div", [m, self.const(6.0)])

    def act(self, x: str, kind: str) -> str:
        return self.node("Relu", [x]) if kind == "relu" else self.hard_swish(x)

    def se(self, x: str, c: int) -> str:
        s = self.node("GlobalAveragePool", [x])
        mid = max(8, c // 4)
        s = self.node("Relu", [self.conv_bias(s, c, mid)])
        s = self.hard_sigmoid(self.conv_bias(s, mid, c))
        return self.node("Mul", [x, s])

    def conv_bias(self, x: str, cin: int, cout: int) -> str:
        return self.node("Conv", [x, self.weight((cout, cin, 1, 1)), self.weight((cout,))],
                         kernel_shape=[1, 1])

    def block(self, x: str, cin: int, spec) -> tuple[str, int]:
        k, exp, out, se, act, stride = spec
        y = self.act(self.conv_bn(x, cin, exp, 1), act) if exp != cin else x
        y = self.act(self.conv_bn(y, exp, exp, k, stride, group=exp), act)
        if se:
            y = self.se(y, exp)
        y = self.conv_bn(y, exp, out, 1)
        if stride == 1 and cin == out:
            y = self.node("Add", [y, x])
        return y, out


def build() -> onnx.ModelProto:
    net = Net()
    x = net.hard_swish(net.conv_bn("x", 3, 16, 3, 2))
    c = 16
    for spec in BLOCKS:
        x, c = net.block(x, c, spec)
    x = net.hard_swish(net.conv_bn(x, c, 576, 1))
    x = net.node("GlobalAveragePool", [x])
    x = net.hard_swish(net.conv_bias(x, 576, 1024))
    x = net.node("Flatten", [x], axis=1)
    w = net.weight((1024, 100))
    y = net.node("Gemm", [x, w, net.weight((100,))])
    g = helper.make_graph(
        net.nodes, "hswish_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 100])], net.inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="opcost-samples")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


if __name__ == "__main__":
    path = os.path.join(HERE, "hswish_net.onnx")
    onnx.save(build(), path)
    print(path, os.path.getsize(path), "bytes")
