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

Multi-kernel PyTorch calls, one node per kernel PyTorch launches (runtime ``kernel`` sums them):

cross_entropy  torch.nn.CrossEntropyLoss(x[M,N], target[M]), mean reduction: LogSoftmax over N
               (log_softmax's kernel), then NegativeLogLikelihoodLoss (mean) for nll_loss's one
               reduce kernel (the one-node SoftmaxCrossEntropyLoss is one kernel under runtime
               ``kernel``; eager's plan splits it the same way: docs/model.md)
hf_rmsnorm     Hugging Face's eager LlamaRMSNorm on a bf16 x[M,N] with an fp32 weight: x.to(fp32),
               pow(2), mean(-1), + eps, rsqrt (Pow -0.5), multiply, .to(bf16), weight * x: eight
               kernels; the last (bf16 in, fp32 out by type promotion) is modelled as a Cast to
               fp32, which moves the same bytes (the [N] weight read is left out)
"""

from __future__ import annotations

from onnx import TensorProto, helper

DTYPES = {"fp16": TensorProto.FLOAT16, "float16": TensorProto.FLOAT16,
          "bf16": TensorProto.BFLOAT16, "bfloat16": TensorProto.BFLOAT16,
          "fp32": TensorProto.FLOAT, "float32": TensorProto.FLOAT}
OPS = ("gemm", "gemm_bias", "bmm", "add", "layernorm", "rmsnorm", "softmax", "gelu", "embedding",
       "cross_entropy", "hf_rmsnorm")
# op -> the op class the accuracy tables report it under
OP_CLASS = {"gemm": "GEMM", "gemm_bias": "GEMM", "bmm": "batched GEMM", "add": "add",
            "layernorm": "layer/RMS norm", "rmsnorm": "layer/RMS norm", "softmax": "softmax",
            "gelu": "GELU", "embedding": "embedding gather",
            "cross_entropy": "cross-entropy (log_softmax + nll_loss)",
            "hf_rmsnorm": "HF RMSNorm (8 kernels)"}


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
    if op in MULTI:
        return MULTI[op](t, M, N)
    raise ValueError(f"no one-op model for {op!r}; ops: {', '.join(OPS)}")


def _cross_entropy(t, M: int, N: int):
    """log_softmax over N, then nll_loss (mean) as NegativeLogLikelihoodLoss."""
    vi = helper.make_tensor_value_info
    nodes = [helper.make_node("LogSoftmax", ["x"], ["logp"], name="log_softmax", axis=-1),
             helper.make_node("NegativeLogLikelihoodLoss", ["logp", "target"], ["loss"], name="nll_loss",
                              reduction="mean")]
    g = helper.make_graph(nodes, "cross_entropy",
                          [vi("x", t, [M, N]), vi("target", TensorProto.INT64, [M])],
                          [vi("loss", t, [])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _hf_rmsnorm(t, M: int, N: int):
    """LlamaRMSNorm's eight eager kernels on x[M,N] of dtype ``t``, computed in fp32."""
    f32, vi, mk = TensorProto.FLOAT, helper.make_tensor_value_info, helper.make_node
    nodes = [mk("Cast", ["x"], ["x32"], name="to_fp32", to=f32),
             mk("Pow", ["x32", "two"], ["sq"], name="pow"),
             mk("ReduceMean", ["sq"], ["var"], name="mean", axes=[-1], keepdims=1),
             mk("Add", ["var", "eps"], ["ve"], name="add_eps"),
             mk("Pow", ["ve", "minus_half"], ["r"], name="rsqrt"),
             mk("Mul", ["x32", "r"], ["h"], name="mul"),
             mk("Cast", ["h"], ["h16"], name="to_input_dtype", to=t),
             mk("Cast", ["h16"], ["y"], name="weight_mul", to=f32)]
    scalars = [vi(n, f32, []) for n in ("two", "eps", "minus_half")]
    g = helper.make_graph(nodes, "hf_rmsnorm", [vi("x", t, [M, N]), *scalars], [vi("y", f32, [M, N])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


MULTI = {"cross_entropy": _cross_entropy, "hf_rmsnorm": _hf_rmsnorm}
