"""Regenerate the small ONNX sample models of opcost, and state their closed-form counts.

Usage::

    python samples/make_samples.py [--out samples]

Every model is built with ``onnx.helper`` only (opset 17, IR version 8), with all weights drawn
from ``numpy.random.default_rng(0)`` (one fresh generator per model, so each file is reproducible on
its own), and every node has a stable name. Each model is validated with
``onnx.checker.check_model(full_check=True)`` and ``onnx.shape_inference.infer_shapes(strict_mode=True)``
before it is written.

Closed-form counts (cost semantics of ../shared/DESIGN.md: ``mac_flops`` = 2 x multiply-accumulates
of MatMul/Gemm/Conv; biases, BN, LN, softmax and activations are *not* MAC work; ``params`` = elements
of float constants consumed as data, each once; int64 shape tensors and perms are not params):

mlp.onnx (x [1,784])
    params    = (784*256 + 256) + (256*128 + 128) + (128*10 + 10)
              = 200960 + 32896 + 1290                                  = 235146
    mac_flops = 2*1*784*256 + 2*1*256*128 + 2*1*128*10
              = 401408 + 65536 + 2560                                  = 469504

cnn.onnx (x [1,3,32,32])
    params    = conv1 16*3*3*3=432 + bn1 4*16=64
              + conv2 16*16*3*3=2304 + bn2 64 + conv3 2304 + bn3 64
              + conv4 32*16*3*3=4608 + b 32
              + conv5 (group 4) 32*8*3*3=2304 + b 32
              + fc 10*32=320 + b 10                                    = 12538
    mac_flops = conv1 2*16*27*32*32=884736
              + conv2 2*16*144*32*32=4718592 + conv3 4718592
              + conv4 2*32*144*16*16=2359296
              + conv5 2*32*(8*9)*16*16=1179648
              + fc 2*32*10=640                                         = 13861504

transformer.onnx (x [1,16,64], 4 heads of 16)
    params    = ln1 2*64=128 + Wq,Wk,Wv 3*64*64=12288 + bq,bk,bv 3*64=192
              + sqrt(16) Constant 1 + Wo 4096 + bo 64 + ln2 128
              + W1 64*256=16384 + b1 256 + Gelu scalars (sqrt2, 1, 0.5) 3
              + W2 256*64=16384 + b2 64                                = 49988
    mac_flops = QKV 3*2*16*64*64=393216 + Q.K^T 2*4*16*16*16=32768
              + P.V 2*4*16*16*16=32768 + out proj 2*16*64*64=131072
              + MLP up 2*16*64*256=524288 + MLP down 2*16*256*64=524288 = 1638400

dynamic_batch.onnx (x ['batch',784]; the MLP above)
    params    = 235146 (independent of batch)
    mac_flops = 469504 per batch element, so batch*469504 (batch=8: 3756032)
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8

# Closed forms, written from the architecture (not from any cost rule). For dynamic_batch the numbers
# hold at the binding in "dims"; mac_flops scale linearly with batch, params do not.
EXPECTED: dict[str, dict] = {
    "mlp": {
        "params": (
            784 * 256 + 256  # Gemm1 W[256,784] (transB=1) + b[256]: 200704 + 256 = 200960
            + 256 * 128 + 128  # Gemm2 W[256,128] + b[128]: 32768 + 128 = 32896
            + 128 * 10 + 10  # Gemm3 W[128,10] + b[10]: 1280 + 10 = 1290
        ),  # = 235146
        "mac_flops": (
            2 * 1 * 784 * 256  # Gemm1: 2*1*784*256 = 401408
            + 2 * 1 * 256 * 128  # Gemm2: 2*1*256*128 = 65536
            + 2 * 1 * 128 * 10  # Gemm3: 2*1*128*10 = 2560
        ),  # = 469504
    },
    "cnn": {
        "params": (
            16 * 3 * 3 * 3  # conv1 W[16,3,3,3] = 432 (no bias, BN follows)
            + 4 * 16  # bn1 scale, bias, mean, var = 64
            + 16 * 16 * 3 * 3  # res conv2 W[16,16,3,3] = 2304
            + 4 * 16  # bn2 = 64
            + 16 * 16 * 3 * 3  # res conv3 W[16,16,3,3] = 2304
            + 4 * 16  # bn3 = 64
            + 32 * 16 * 3 * 3 + 32  # conv4 (stride 2) W[32,16,3,3] + b = 4608 + 32 = 4640
            + 32 * (32 // 4) * 3 * 3 + 32  # conv5 (group 4, dil 2) W[32,8,3,3] + b = 2304 + 32 = 2336
            + 10 * 32 + 10  # fc Gemm W[10,32] (transB=1) + b = 320 + 10 = 330
        ),  # = 12538
        "mac_flops": (
            2 * 16 * (3 * 3 * 3) * 32 * 32  # conv1: 2*16*27*1024 = 884736
            + 2 * 16 * (16 * 3 * 3) * 32 * 32  # conv2: 2*16*144*1024 = 4718592
            + 2 * 16 * (16 * 3 * 3) * 32 * 32  # conv3: 2*16*144*1024 = 4718592
            + 2 * 32 * (16 * 3 * 3) * 16 * 16  # conv4 s2 -> 16x16: 2*32*144*256 = 2359296
            + 2 * 32 * (8 * 3 * 3) * 16 * 16  # conv5 group 4 (8 in-ch/group): 2*32*72*256 = 1179648
            + 2 * 1 * 32 * 10  # fc Gemm: 2*1*32*10 = 640
        ),  # = 13861504
    },
    "transformer": {
        "params": (
            64 + 64  # ln1 scale + bias = 128
            + 3 * 64 * 64  # Wq, Wk, Wv [64,64] = 12288
            + 3 * 64  # bq, bk, bv = 192
            + 1  # Constant sqrt(16) = 4.0 (Div divisor) = 1
            + 64 * 64 + 64  # Wo + bo = 4096 + 64 = 4160
            + 64 + 64  # ln2 scale + bias = 128
            + 64 * 256 + 256  # W1 + b1 = 16384 + 256 = 16640
            + 3  # Gelu scalars sqrt(2), 1.0, 0.5 (scalar initializers) = 3
            + 256 * 64 + 64  # W2 + b2 = 16384 + 64 = 16448
        ),  # = 49988; Reshape shapes [4]+[3] int64 and Transpose perms are not params
        "mac_flops": (
            3 * 2 * 1 * 16 * 64 * 64  # Q, K, V projections: 3*2*16*64*64 = 393216
            + 2 * 1 * 4 * 16 * 16 * 16  # Q.K^T per head [16,16]x[16,16]: 2*4*16*16*16 = 32768
            + 2 * 1 * 4 * 16 * 16 * 16  # P.V per head [16,16]x[16,16]: 2*4*16*16*16 = 32768
            + 2 * 1 * 16 * 64 * 64  # output projection: 2*16*64*64 = 131072
            + 2 * 1 * 16 * 64 * 256  # MLP up: 2*16*64*256 = 524288
            + 2 * 1 * 16 * 256 * 64  # MLP down: 2*16*256*64 = 524288
        ),  # = 1638400
    },
    "dynamic_batch": {
        "params": 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10,  # same weights as mlp = 235146
        "mac_flops": (  # per batch element (batch=1); batch=B gives B times this
            2 * 784 * 256  # Gemm1: 2*784*256 = 401408
            + 2 * 256 * 128  # Gemm2: 2*256*128 = 65536
            + 2 * 128 * 10  # Gemm3: 2*128*10 = 2560
        ),  # = 469504 (batch=8: 3756032)
        "dims": {"batch": 1},
    },
}

assert EXPECTED["mlp"]["params"] == 235146 and EXPECTED["mlp"]["mac_flops"] == 469504
assert EXPECTED["cnn"]["params"] == 12538 and EXPECTED["cnn"]["mac_flops"] == 13861504
assert EXPECTED["transformer"]["params"] == 49988 and EXPECTED["transformer"]["mac_flops"] == 1638400
assert EXPECTED["dynamic_batch"]["params"] == 235146 and EXPECTED["dynamic_batch"]["mac_flops"] == 469504


class _Builder:
    """Collects nodes and initializers of one graph; weights come from one default_rng(0)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.05) -> str:
        arr = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def array(self, name: str, arr: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def scalar(self, name: str, value: float) -> str:
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
        return name

    def ints(self, name: str, values: list[int]) -> str:
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def node(self, op: str, inputs: list[str], name: str, n_out: int = 1, **attrs) -> str | list[str]:
        outs = [name] if n_out == 1 else [f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, graph_name: str, inputs, outputs, doc: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, graph_name, inputs, outputs, initializer=self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            ir_version=IR_VERSION,
            producer_name="opcost-samples",
            producer_version="1",
            doc_string=doc,
        )
        return model


def _tensor(name: str, dims: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def _mlp(batch_dim) -> onnx.ModelProto:
    b = _Builder()
    h = b.node("Gemm", ["x", b.weight("fc1.weight", (256, 784)), b.weight("fc1.bias", (256,))],
               "fc1", transB=1)
    h = b.node("Relu", [h], "relu1")
    h = b.node("Gemm", [h, b.weight("fc2.weight", (256, 128)), b.weight("fc2.bias", (128,))], "fc2")
    h = b.node("Relu", [h], "relu2")
    h = b.node("Gemm", [h, b.weight("fc3.weight", (128, 10)), b.weight("fc3.bias", (10,))], "fc3")
    b.node("Softmax", [h], "y", axis=-1)
    name = "mlp" if batch_dim == 1 else "dynamic_batch"
    return b.model(name, [_tensor("x", [batch_dim, 784])], [_tensor("y", [batch_dim, 10])],
                   "784-256-128-10 MLP (Gemm, Relu, Softmax)")


def make_mlp() -> onnx.ModelProto:
    return _mlp(1)


def make_dynamic_batch() -> onnx.ModelProto:
    return _mlp("batch")


def make_cnn() -> onnx.ModelProto:
    b = _Builder()

    def bn(x: str, c: int, name: str) -> str:
        scale = b.weight(f"{name}.scale", (c,), 0.1)
        bias = b.weight(f"{name}.bias", (c,), 0.1)
        mean = b.weight(f"{name}.mean", (c,), 0.1)
        var = b.array(f"{name}.var", (1.0 + 0.1 * np.abs(b.rng.standard_normal(c))).astype(np.float32))
        return b.node("BatchNormalization", [x, scale, bias, mean, var], name, epsilon=1e-5)

    h = b.node("Conv", ["x", b.weight("conv1.weight", (16, 3, 3, 3))], "conv1",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = bn(h, 16, "bn1")
    block_in = b.node("Relu", [h], "relu1")
    # residual block
    h = b.node("Conv", [block_in, b.weight("res.conv2.weight", (16, 16, 3, 3))], "res.conv2",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = bn(h, 16, "res.bn2")
    h = b.node("Relu", [h], "res.relu2")
    h = b.node("Conv", [h, b.weight("res.conv3.weight", (16, 16, 3, 3))], "res.conv3",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = bn(h, 16, "res.bn3")
    h = b.node("Add", [h, block_in], "res.add")
    h = b.node("Relu", [h], "res.relu3")
    # strided conv 16->32, 32x32 -> 16x16
    h = b.node("Conv", [h, b.weight("conv4.weight", (32, 16, 3, 3)), b.weight("conv4.bias", (32,))],
               "conv4", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    h = b.node("Relu", [h], "relu4")
    # grouped + dilated conv: effective kernel 1 + 2*(3-1) = 5, pads 2 keep 16x16
    h = b.node("Conv", [h, b.weight("conv5.weight", (32, 32 // 4, 3, 3)), b.weight("conv5.bias", (32,))],
               "conv5", kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2], group=4)
    h = b.node("MaxPool", [h], "maxpool", kernel_shape=[2, 2], strides=[2, 2])  # -> 8x8
    h = b.node("GlobalAveragePool", [h], "gap")  # -> [1,32,1,1]
    h = b.node("Flatten", [h], "flatten", axis=1)  # -> [1,32]
    b.node("Gemm", [h, b.weight("fc.weight", (10, 32)), b.weight("fc.bias", (10,))], "y", transB=1)
    return b.model("cnn", [_tensor("x", [1, 3, 32, 32])], [_tensor("y", [1, 10])],
                   "small CNN: conv+BN+relu, residual block, strided conv, grouped dilated conv, pools, FC")


def make_transformer() -> onnx.ModelProto:
    b = _Builder()
    S, D, H = 16, 64, 4
    DH = D // H
    heads_shape = b.ints("shape.heads", [1, S, H, DH])  # shared by the Q, K and V reshapes
    merge_shape = b.ints("shape.merge", [1, S, D])

    def linear(x: str, din: int, dout: int, name: str) -> str:
        h = b.node("MatMul", [x, b.weight(f"{name}.weight", (din, dout))], f"{name}.matmul")
        return b.node("Add", [h, b.weight(f"{name}.bias", (dout,))], f"{name}.add")

    def layernorm(x: str, name: str) -> str:
        scale = b.array(f"{name}.scale", (1.0 + 0.1 * b.rng.standard_normal(D)).astype(np.float32))
        bias = b.weight(f"{name}.bias", (D,), 0.1)
        return b.node("LayerNormalization", [x, scale, bias], name, axis=-1, epsilon=1e-5)

    x = "x"
    h = layernorm(x, "ln1")
    heads = {}
    for p, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        t = linear(h, D, D, f"attn.{p}")
        t = b.node("Reshape", [t, heads_shape], f"attn.{p}.reshape")  # [1,16,4,16]
        heads[p] = b.node("Transpose", [t], f"attn.{p}.transpose", perm=perm)  # q,v [1,4,16,16]; k^T [1,4,16,16]
    scores = b.node("MatMul", [heads["q"], heads["k"]], "attn.qk")  # [1,4,16,16]
    b.nodes.append(helper.make_node(
        "Constant", [], ["attn.scale"], name="attn.scale",
        value=numpy_helper.from_array(np.array(math.sqrt(DH), dtype=np.float32))))
    scores = b.node("Div", [scores, "attn.scale"], "attn.div")
    probs = b.node("Softmax", [scores], "attn.softmax", axis=-1)
    ctx = b.node("MatMul", [probs, heads["v"]], "attn.pv")  # [1,4,16,16]
    ctx = b.node("Transpose", [ctx], "attn.merge.transpose", perm=[0, 2, 1, 3])  # [1,16,4,16]
    ctx = b.node("Reshape", [ctx, merge_shape], "attn.merge.reshape")  # [1,16,64]
    attn = linear(ctx, D, D, "attn.out")
    x = b.node("Add", [x, attn], "residual1")

    h = layernorm(x, "ln2")
    h = linear(h, D, 4 * D, "mlp.up")
    # Gelu(h) = h * 0.5 * (1 + Erf(h / sqrt(2)))
    g = b.node("Div", [h, b.scalar("gelu.sqrt2", math.sqrt(2.0))], "gelu.div")
    g = b.node("Erf", [g], "gelu.erf")
    g = b.node("Add", [g, b.scalar("gelu.one", 1.0)], "gelu.add")
    g = b.node("Mul", [h, g], "gelu.mul")
    g = b.node("Mul", [g, b.scalar("gelu.half", 0.5)], "gelu.mul_half")
    h = linear(g, 4 * D, D, "mlp.down")
    b.node("Add", [x, h], "y")
    return b.model("transformer", [_tensor("x", [1, S, D])], [_tensor("y", [1, S, D])],
                   "one pre-LN transformer encoder block, d_model 64, 4 heads, MLP 256, erf Gelu")


SAMPLES = {
    "mlp": make_mlp,
    "cnn": make_cnn,
    "transformer": make_transformer,
    "dynamic_batch": make_dynamic_batch,
}


def validate(model: onnx.ModelProto) -> onnx.ModelProto:
    """Run the full checker and strict shape inference; return the inferred model."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def _self_check(name: str, model: onnx.ModelProto) -> None:
    """Recount params and MAC FLOPs straight from the protos and compare with EXPECTED.

    This is a guard against a typo in a builder above; it is deliberately simple (float
    initializers + float Constant nodes; MatMul/Gemm/Conv from inferred shapes).
    """
    inferred = validate(model)
    g = inferred.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else 1 for d in vi.type.tensor_type.shape.dim]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    params = sum(int(np.prod(t.dims)) for t in g.initializer if t.data_type == TensorProto.FLOAT)
    for n in g.node:
        if n.op_type == "Constant":
            params += int(np.prod(n.attribute[0].t.dims))
    macs = 0
    for n in g.node:
        if n.op_type in ("MatMul", "Gemm"):
            out = shapes[n.output[0]]
            a = shapes[n.input[0]]
            transa = any(at.name == "transA" and at.i for at in n.attribute)
            k = a[-2] if transa else a[-1]
            macs += int(np.prod(out)) * k
        elif n.op_type == "Conv":
            macs += int(np.prod(shapes[n.output[0]])) * int(np.prod(shapes[n.input[1]][1:]))
    exp = EXPECTED[name]
    if (params, 2 * macs) != (exp["params"], exp["mac_flops"]):
        raise SystemExit(f"{name}: recount params={params} mac_flops={2 * macs} != EXPECTED {exp}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="output folder (default: the folder of this script, samples/)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name, make in SAMPLES.items():
        model = make()
        _self_check(name, model)
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save_model(model, path)
        exp = EXPECTED[name]
        print(f"{path}: {len(model.graph.node)} nodes, params={exp['params']}, mac_flops={exp['mac_flops']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
