"""One-op ONNX models for measured single-op latencies (shared by bench/accuracy.py and tests).

Each builder returns an ``onnx.ModelProto`` whose one node is the op as the measurement ran it,
with every tensor a graph input (no weight data is built: an 8192 x 8192 weight costs nothing
here; opcost counts a graph input's bytes the same way as a weight's).  Ops (the names used in
bench/accuracy.py and in the measurement CSVs):

gemm       y[M,N] = x[M,K] @ W[K,N]            MatMul
gemm_bias  y[M,N] = x[M,K] @ W[K,N] + b[N]     Gemm
bmm        y[B,M,N] = a[B,M,K] @ b[B,K,N]       MatMul
add        y[M,N] = a[M,N] + b[M,N]             Add
layernorm  LayerNormalization over N, weight and bias [N]           (opset 17)
rmsnorm    RMSNormalization over N, weight [N]                       (opset 23)
softmax    Softmax over N                                            (opset 13)
gelu       Gelu (erf form)                                           (opset 20)
embedding  y[M,N] = Gather(table[V,N], ids[M] int64)
"""

from __future__ import annotations

from onnx import TensorProto, helper

DTYPES = {"fp16": TensorProto.FLOAT16, "float16": TensorProto.FLOAT16,
          "bf16": TensorProto.BFLOAT16, "bfloat16": TensorProto.BFLOAT16,
          "fp32": TensorProto.FLOAT, "float32": TensorProto.FLOAT}
OPS = ("gemm", "gemm_bias", "bmm", "add", "layernorm", "rmsnorm", "softmax", "gelu", "embedding")
# op -> the op class the accuracy tables report it under
OP_CLASS = {"gemm": "GEMM", "gemm_bias": "GEMM", "bmm": "batched GEMM", "add": "add",
            "layernorm": "layer/RMS norm", "rmsnorm": "layer/RMS norm", "softmax": "softmax",
            "gelu": "GELU", "embedding": "embedding gather"}


def _model(node, inputs, outputs, opset: int):
    g = helper.make_graph([node], node.op_type.lower(), inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def build(op: str, dtype: str, M: int = 0, N: int = 0, K: int = 0, B: int = 0, V: int = 0):
    """The one-op model of a measured case (dims as the measurement names them)."""
    t = DTYPES[dtype]
    vi = helper.make_tensor_value_info
    if op == "gemm":
        n = helper.make_node("MatMul", ["x", "w"], ["y"], name="gemm")
        return _model(n, [vi("x", t, [M, K]), vi("w", t, [K, N])], [vi("y", t, [M, N])], 17)
    if op == "gemm_bias":
        n = helper.make_node("Gemm", ["x", "w", "b"], ["y"], name="gemm_bias")
        return _model(n, [vi("x", t, [M, K]), vi("w", t, [K, N]), vi("b", t, [N])],
                      [vi("y", t, [M, N])], 17)
    if op == "bmm":
        n = helper.make_node("MatMul", ["a", "b"], ["y"], name="bmm")
        return _model(n, [vi("a", t, [B, M, K]), vi("b", t, [B, K, N])], [vi("y", t, [B, M, N])], 17)
    if op == "add":
        n = helper.make_node("Add", ["a", "b"], ["y"], name="add")
        return _model(n, [vi("a", t, [M, N]), vi("b", t, [M, N])], [vi("y", t, [M, N])], 17)
    if op == "layernorm":
        n = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="layernorm",
                             axis=-1, epsilon=1e-5)
        return _model(n, [vi("x", t, [M, N]), vi("g", t, [N]), vi("b", t, [N])],
                      [vi("y", t, [M, N])], 17)
    if op == "rmsnorm":
        n = helper.make_node("RMSNormalization", ["x", "g"], ["y"], name="rmsnorm", axis=-1,
                             epsilon=1e-6)
        return _model(n, [vi("x", t, [M, N]), vi("g", t, [N])], [vi("y", t, [M, N])], 23)
    if op == "softmax":
        n = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1)
        return _model(n, [vi("x", t, [M, N])], [vi("y", t, [M, N])], 13)
    if op == "gelu":
        n = helper.make_node("Gelu", ["x"], ["y"], name="gelu")
        return _model(n, [vi("x", t, [M, N])], [vi("y", t, [M, N])], 20)
    if op == "embedding":
        n = helper.make_node("Gather", ["table", "ids"], ["y"], name="embedding", axis=0)
        return _model(n, [vi("table", t, [V, N]), vi("ids", TensorProto.INT64, [M])],
                      [vi("y", t, [M, N])], 17)
    raise ValueError(f"no one-op model for {op!r}; ops: {', '.join(OPS)}")
