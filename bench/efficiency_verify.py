"""The check of ``bench/efficiency_data.py``'s closed-form counts: each sampled row's one-op
ONNX model counted by ``analyzer.analyze`` (``verify_counts``, run by ``bench/fit_efficiency.py``
before every fit; a mismatch stops it).
"""

from __future__ import annotations

import os

import numpy as np

from efficiency_data import FILES, counts_attention, counts_gemm, counts_vidur


def _onnx_counts(op, dims):
    """Counts opcost gives for the one-op ONNX model of a row: (mac, vec, trans, bytes)."""
    import onnx  # noqa: F401
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper

    import analyzer

    H = TP.FLOAT16
    ms = "com.microsoft"

    def model(node, inputs, inits, opset=23, oshape=None, domains=()):
        g = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info(k, t, s) for k, (s, t) in inputs.items()],
            [helper.make_tensor_value_info(o, H, oshape) for o in node.output],
            [numpy_helper.from_array(v, k) for k, v in inits.items()])
        ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
        return helper.make_model(g, opset_imports=ops)

    w = lambda *s: np.zeros(s, np.float16)  # noqa: E731
    mk = helper.make_node
    if op == "gemm":
        M, N, K = dims
        mdl = model(mk("MatMul", ["x", "w"], ["y"]), {"x": ([M, K], H)}, {"w": w(K, N)})
    elif op == "gemm_bias":
        M, N, K = dims
        mdl = model(mk("Gemm", ["x", "w", "b"], ["y"], transB=1), {"x": ([M, K], H)}, {"w": w(N, K), "b": w(N)})
    elif op == "rmsnorm":
        M, N, _ = dims
        mdl = model(mk("SimplifiedLayerNormalization", ["x", "s"], ["y"], axis=-1, epsilon=1e-6,
                       domain=ms), {"x": ([M, N], H)}, {"s": w(N)}, domains=(ms,))
    elif op == "layernorm_affine":
        M, N, _ = dims
        mdl = model(mk("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1), {"x": ([M, N], H)},
                    {"s": w(N), "b": w(N)})
    elif op == "gelu_erf":
        M, N, _ = dims
        mdl = model(mk("Gelu", ["x"], ["y"]), {"x": ([M, N], H)}, {})
    elif op == "silu_and_mul":
        M, N, _ = dims
        # ONNX SwiGLU (opset 28) takes the gate and the value as two [M, N] inputs: the same
        # 2*M*N elements read as vidur's one [M, 2N] input
        mdl = model(mk("SwiGLU", ["a", "b"], ["y"]), {"a": ([M, N], H), "b": ([M, N], H)}, {},
                    opset=28, oshape=[M, N])
    elif op == "add":
        M, N, _ = dims
        mdl = model(mk("Add", ["x", "z"], ["y"]), {"x": ([M, N], H), "z": ([M, N], H)}, {})
    elif op == "embedding":
        M, N, K = dims
        mdl = model(mk("Gather", ["w", "i"], ["y"]), {"i": ([M], TP.INT64)}, {"w": w(K, N)})
    elif op == "rope":
        M, N, K = dims
        mdl = model(mk("RotaryEmbedding", ["x", "c", "s", "p"], ["y"]),
                    {"x": ([1, N, M, K], H), "p": ([1, M], TP.INT64)},
                    {"c": w(max(M, 1), K // 2), "s": w(max(M, 1), K // 2)})
    elif op in ("attn_context", "attn_generation"):
        b, hq, hkv, s, L, d = dims
        mdl = model(mk("Attention", ["q", "k", "v"], ["y"], is_causal=int(op == "attn_context")),
                    {"q": ([b, hq, s, d], H), "k": ([b, hkv, L, d], H), "v": ([b, hkv, L, d], H)}, {})
    else:
        raise KeyError(op)
    (node,) = [n for n in analyzer.analyze(mdl).nodes]
    c = node.cost
    return (c.mac_flops, c.vector_flops, c.transcendentals,
            c.weight_bytes + c.activation_bytes_read + c.activation_bytes_written)


def verify_counts(meas_dir: str, per_op: int = 3) -> list[str]:
    """Check the closed forms against analyzer.analyze on ``per_op`` small rows per op."""
    import pandas as pd

    lines = []
    v = pd.read_csv(os.path.join(meas_dir, FILES["vidur"]))
    v = v[(v.op != "add3")]
    v = v.assign(size=v.M * v.N * v.K.fillna(1))
    for op, e in v.groupby("op"):
        e = e.assign(w=e.N * e.K.fillna(1)).sort_values(["w", "size", "M", "N", "K"]).drop_duplicates(["M", "N", "K"])
        pick = e.iloc[np.linspace(0, min(len(e), 60) - 1, per_op).astype(int)]
        for r in pick.itertuples():
            K = int(r.K) if r.K == r.K else 0
            want = tuple(float(x[0]) for x in counts_vidur(op, [r.M], [r.N], [K])[1:5])
            got = _onnx_counts(op, (int(r.M), int(r.N), K))
            ok = all(abs(a - b) <= 1e-9 * max(1, b) for a, b in zip(want, got))
            lines.append(f"{'ok ' if ok else 'BAD'} vidur {op} M={r.M} N={r.N} K={K}: closed {want} analyze {got}")
    g = pd.read_csv(os.path.join(meas_dir, FILES["aic_gemm"]), dtype={"version": str}, nrows=400)
    for r in g.iloc[[0, 37, 211]].itertuples():
        want = tuple(float(x[0]) for x in counts_gemm([r.m], [r.n], [r.k])[1:5])
        got = _onnx_counts("gemm", (r.m, r.n, r.k))
        ok = all(abs(a - b) <= 1e-9 * max(1, b) for a, b in zip(want, got))
        lines.append(f"{'ok ' if ok else 'BAD'} aic_gemm m={r.m} n={r.n} k={r.k}: closed {want} analyze {got}")
    a = pd.read_csv(os.path.join(meas_dir, FILES["aic_attention"]), dtype={"version": str}, nrows=20000)
    a = a[(a.batch_size * a.kv_len * a.num_heads <= 2_000_000)]
    for op in ("context", "generation"):
        for r in a[a.op == op].iloc[[3, 101, 517]].itertuples():
            s = r.isl if op == "context" else 1
            dims = (r.batch_size, r.num_heads, r.num_kv_heads, s, r.kv_len, r.head_dim)
            want = tuple(float(x[0]) for x in counts_attention(*[[x] for x in dims], np.array([op == "context"]))[1:5])
            got = _onnx_counts("attn_" + op, dims)
            ok = all(abs(a_ - b_) <= 1e-9 * max(1, b_) for a_, b_ in zip(want, got))
            lines.append(f"{'ok ' if ok else 'BAD'} aic_attention {op} {dims}: closed {want} analyze {got}")
    return lines
