"""Small ONNX builders for model-search examples, benchmarks and tests (weights inline).

- ``conv_block(out_ch, kernel, stride, act)``: a block builder ``(input_shape) -> ModelProto``
  (Conv + BatchNormalization + activation) for a choice-based CNN space (``CNN_SPACE``).
- ``mlp_block(hidden)``: a transformer-style MLP block builder on ``[B, S, D]`` inputs.
- ``symbolic_transformer()``: one pre-LN transformer block whose ``batch``, ``seq`` and
  ``width`` are symbolic dims (weights are graph inputs shaped by ``width``), for
  ``CostModel.score_dims``.
- ``random_transformer(rng, target_nodes)``: a structurally random transformer-ish stack of
  about ``target_nodes`` nodes with inline weights, for ``CostModel.score``.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def _model(nodes, inputs, outputs, inits, name="block"):
    g = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    return m


def _w(name, shape, rng):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.02, name)


def conv_block(out_ch: int, kernel: int = 3, stride: int = 1, act: str = "Relu"):
    """A builder: ``(N, C, H, W) -> ModelProto`` of Conv(k, stride, same padding) + BN + act."""
    def build(shape):
        n, c, h, w = shape
        rng = np.random.default_rng(out_ch * 100 + kernel * 10 + stride)
        p = kernel // 2
        ho, wo = (h + 2 * p - kernel) // stride + 1, (w + 2 * p - kernel) // stride + 1
        inits = [_w("W", (out_ch, c, kernel, kernel), rng), _w("B", (out_ch,), rng),
                 _w("scale", (out_ch,), rng), _w("bias", (out_ch,), rng),
                 _w("mean", (out_ch,), rng),
                 numpy_helper.from_array(np.ones(out_ch, np.float32), "var")]
        nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[kernel, kernel],
                                  strides=[stride, stride], pads=[p] * 4, name="conv"),
                 helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"],
                                  ["bn"], name="bn"),
                 helper.make_node(act, ["bn"], ["y"], name="act")]
        return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, out_ch, ho, wo])],
                      inits)
    build.__name__ = f"conv{kernel}x{kernel}_s{stride}_{out_ch}_{act.lower()}"
    return build


def head_block(classes: int = 10):
    """GlobalAveragePool + Flatten + Gemm classifier: ``(N, C, H, W) -> (N, classes)``."""
    def build(shape):
        n, c = shape[0], shape[1]
        rng = np.random.default_rng(classes)
        nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"], name="gap"),
                 helper.make_node("Flatten", ["p"], ["f"], name="flat"),
                 helper.make_node("Gemm", ["f", "W", "B"], ["y"], transB=1, name="fc")]
        return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, classes])],
                      [_w("W", (classes, c), rng), _w("B", (classes,), rng)])
    build.__name__ = f"head{classes}"
    return build


# a small CNN space: 5 stages, 3-4 choices each (widths, kernel sizes, strides)
CNN_SPACE = [
    [conv_block(16, 3, 1), conv_block(24, 3, 1), conv_block(32, 3, 1)],
    [conv_block(32, 3, 2), conv_block(48, 3, 2), conv_block(32, 5, 2), conv_block(64, 3, 2)],
    [conv_block(64, 3, 1), conv_block(64, 5, 1), conv_block(96, 3, 1), conv_block(48, 1, 1)],
    [conv_block(128, 3, 2), conv_block(96, 3, 2), conv_block(160, 3, 2)],
    [head_block(10)],
]
CNN_INPUT = (1, 3, 32, 32)


def symbolic_transformer(heads: int = 4):
    """One pre-LN transformer block on ``x[batch, seq, width]``; weights are graph inputs shaped
    by ``width`` (the MLP is width x width), so every count is a polynomial in (batch, seq, width)."""
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", "width"])
    ins = [X] + [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in (
        ("wq", ["width", "width"]), ("wk", ["width", "width"]), ("wv", ["width", "width"]),
        ("wo", ["width", "width"]), ("w1", ["width", "width"]), ("w2", ["width", "width"]),
        ("g1", ["width"]), ("b1", ["width"]), ("g2", ["width"]), ("b2", ["width"]))]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["ln1"], axis=-1, name="ln1"),
        helper.make_node("MatMul", ["ln1", "wq"], ["q"], name="q"),
        helper.make_node("MatMul", ["ln1", "wk"], ["k"], name="k"),
        helper.make_node("MatMul", ["ln1", "wv"], ["v"], name="v"),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "v"], ["a"], name="attn"),
        helper.make_node("MatMul", ["a", "wo"], ["o"], name="o"),
        helper.make_node("Add", ["x", "o"], ["r1"], name="res1"),
        helper.make_node("LayerNormalization", ["r1", "g2", "b2"], ["ln2"], axis=-1, name="ln2"),
        helper.make_node("MatMul", ["ln2", "w1"], ["h"], name="up"),
        helper.make_node("Relu", ["h"], ["hr"], name="relu"),
        helper.make_node("MatMul", ["hr", "w2"], ["d"], name="down"),
        helper.make_node("Add", ["r1", "d"], ["y"], name="res2"),
    ]
    Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", "width"])
    return _model(nodes, ins, [Y], [], "symbolic_transformer")


def random_transformer(rng: np.random.Generator, target_nodes: int = 100):
    """A structurally random stack of about ``target_nodes`` nodes (attention or MLP or conv-
    like mixing blocks, random widths and activations), static shapes, weights inline."""
    B, S = 1, int(rng.choice([16, 32, 64, 128]))
    D = int(rng.choice([64, 96, 128, 192, 256]))
    nodes, inits = [], []
    cur = "x"
    i = 0

    def w(shape):
        nonlocal i
        i += 1
        inits.append(_w(f"w{i}", shape, rng))
        return f"w{i}"

    def node(op, ins, **attrs):
        nonlocal i
        i += 1
        out = f"t{i}"
        nodes.append(helper.make_node(op, ins, [out], name=f"n{i}_{op}", **attrs))
        return out

    while len(nodes) < target_nodes:
        kind = rng.integers(3)
        h = node("LayerNormalization", [cur, w((D,)), w((D,))], axis=-1)
        if kind == 0:       # attention
            q, k, v = (node("MatMul", [h, w((D, D))]) for _ in range(3))
            s = node("MatMul", [q, node("Transpose", [k], perm=[0, 2, 1])])
            s = node("Mul", [s, w((1,))])
            a = node("MatMul", [node("Softmax", [s], axis=-1), v])
            o = node("Add", [node("MatMul", [a, w((D, D))]), w((D,))])
        elif kind == 1:     # MLP with a random activation and width
            H = int(D * rng.choice([2, 3, 4]))
            u = node("Add", [node("MatMul", [h, w((D, H))]), w((H,))])
            u = node(str(rng.choice(["Relu", "Sigmoid", "Tanh", "Erf"])), [u])
            o = node("Add", [node("MatMul", [u, w((H, D))]), w((D,))])
        else:               # gated mixing
            g = node("Sigmoid", [node("MatMul", [h, w((D, D))])])
            o = node("Mul", [g, node("MatMul", [h, w((D, D))])])
            o = node("Div", [o, w((1,))])
        cur = node("Add", [cur, o])
    X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])
    Y = helper.make_tensor_value_info(cur, TensorProto.FLOAT, [B, S, D])
    return _model(nodes, [X], [Y], inits, "random_transformer")
