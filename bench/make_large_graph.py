"""Build a deep, realistic ONNX graph of at least N nodes for analyzer speed/memory benchmarks.

Usage::

    python bench/make_large_graph.py OUT.onnx [--nodes 50000] [--seed 0]
                                     [--d-model 256] [--seq-len 128] [--heads 8] [--batch 1]

The graph is a chain of pre-LN transformer encoder blocks (opset 17, static shapes). Each block:

    LayerNormalization -> MatMul(W_qkv) -> Add(b_qkv) -> Split(q, k, v)
    -> 3 x Reshape [B,S,H,Dh] -> Transpose (q, v: [B,H,S,Dh]; k: [B,H,Dh,S])
    -> MatMul(q, k^T) -> Mul(1/sqrt(Dh)) -> Softmax -> MatMul(., v) -> Transpose -> Reshape [B,S,D]
    -> MatMul(W_o) -> Add(b_o) -> Add(residual)
    -> LayerNormalization -> MatMul(W_up) -> Add(b_up) -> erf-Gelu (Div, Erf, Add, Mul, Mul)
    -> MatMul(W_down) -> Add(b_down) -> Add(residual)

plus one ConstantOfShape node per big weight (W_qkv, W_o, W_up, W_down): the 12*D^2 weight elements
per block are never stored, so the file stays small (a few tens of MB for 50k nodes, dominated by
the real float initializers of biases and LN parameters, 13*D floats per block) while the analyzer
still sees ~1e9 parameters. Shape tensors, split sizes and scalar constants are shared initializers.

:func:`closed_form` gives the exact params and mac_flops of a generated graph from its configuration
(also recorded in the model's ``metadata_props``), for accuracy checks in benchmarks.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
NODES_PER_BLOCK = 34
TAIL_NODES = 1  # final LayerNormalization


def closed_form(n_blocks: int, d_model: int = 256, seq_len: int = 128, n_heads: int = 8,
                batch: int = 1) -> dict[str, int]:
    """Exact params and mac_flops of a graph built with these settings."""
    D, S, B = d_model, seq_len, batch
    dh = D // n_heads
    per_block_params = (
        D * 3 * D + 3 * D  # W_qkv (ConstantOfShape) + b_qkv
        + D * D + D  # W_o + b_o
        + 4 * D * D + 4 * D  # W_up + b_up
        + 4 * D * D + D  # W_down + b_down
        + 2 * D + 2 * D  # ln1, ln2 scale + bias
    )  # = 12*D^2 + 13*D
    shared_params = 1 + 3 + 2 * D  # 1/sqrt(dh), Gelu scalars (sqrt2, 1, 0.5), final LN
    per_block_macs = (
        B * S * D * 3 * D  # qkv projection
        + B * n_heads * S * S * dh  # q.k^T
        + B * n_heads * S * S * dh  # p.v
        + B * S * D * D  # output projection
        + B * S * D * 4 * D  # MLP up
        + B * S * 4 * D * D  # MLP down
    )
    return {
        "params": n_blocks * per_block_params + shared_params,
        "mac_flops": 2 * n_blocks * per_block_macs,
        "nodes": n_blocks * NODES_PER_BLOCK + TAIL_NODES,
    }


def make_large_graph(n_nodes: int = 50_000, seed: int = 0, *, d_model: int = 256, seq_len: int = 128,
                     n_heads: int = 8, batch: int = 1) -> onnx.ModelProto:
    """A chain of transformer blocks with at least ``n_nodes`` nodes (see the module docstring)."""
    if d_model % n_heads:
        raise ValueError("d_model must be divisible by n_heads")
    D, S, B, H = d_model, seq_len, batch, n_heads
    dh = D // H
    n_blocks = max(1, math.ceil((n_nodes - TAIL_NODES) / NODES_PER_BLOCK))
    rng = np.random.default_rng(seed)

    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def init(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def small(name: str, shape, base: float = 0.0, scale: float = 0.02) -> str:
        return init(name, (base + scale * rng.standard_normal(shape)).astype(np.float32))

    def node(op: str, inputs: list[str], name: str, outputs: list[str] | None = None, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, outputs or [name], name=name, **attrs))
        return (outputs or [name])[0]

    # shared shape-like tensors and scalars
    shp_qkv = init("shape.w_qkv", np.array([D, 3 * D], np.int64))
    shp_o = init("shape.w_o", np.array([D, D], np.int64))
    shp_up = init("shape.w_up", np.array([D, 4 * D], np.int64))
    shp_down = init("shape.w_down", np.array([4 * D, D], np.int64))
    split_sizes = init("split.qkv", np.array([D, D, D], np.int64))
    heads_shape = init("shape.heads", np.array([B, S, H, dh], np.int64))
    merge_shape = init("shape.merge", np.array([B, S, D], np.int64))
    inv_sqrt = init("const.inv_sqrt_dh", np.array(1.0 / math.sqrt(dh), np.float32))
    sqrt2 = init("const.sqrt2", np.array(math.sqrt(2.0), np.float32))
    one = init("const.one", np.array(1.0, np.float32))
    half = init("const.half", np.array(0.5, np.float32))

    def cos_weight(name: str, shape_name: str) -> str:
        value = numpy_helper.from_array(np.array([0.02 * (1.0 + rng.random())], np.float32), "value")
        return node("ConstantOfShape", [shape_name], name, value=value)

    def layernorm(x: str, name: str) -> str:
        g = small(f"{name}.scale", (D,), base=1.0)
        b = small(f"{name}.bias", (D,))
        return node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-5)

    x = "x"
    for i in range(n_blocks):
        p = f"block{i}"
        h = layernorm(x, f"{p}.ln1")
        h = node("MatMul", [h, cos_weight(f"{p}.attn.w_qkv", shp_qkv)], f"{p}.attn.qkv.matmul")
        h = node("Add", [h, small(f"{p}.attn.b_qkv", (3 * D,))], f"{p}.attn.qkv.add")
        qkv = [f"{p}.attn.q", f"{p}.attn.k", f"{p}.attn.v"]
        node("Split", [h, split_sizes], f"{p}.attn.split", outputs=qkv, axis=-1)
        heads = []
        for t, perm in zip(qkv, ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3])):
            r = node("Reshape", [t, heads_shape], f"{t}.reshape")
            heads.append(node("Transpose", [r], f"{t}.transpose", perm=perm))
        s = node("MatMul", [heads[0], heads[1]], f"{p}.attn.qk")  # [B,H,S,S]
        s = node("Mul", [s, inv_sqrt], f"{p}.attn.scale")
        s = node("Softmax", [s], f"{p}.attn.softmax", axis=-1)
        c = node("MatMul", [s, heads[2]], f"{p}.attn.pv")  # [B,H,S,dh]
        c = node("Transpose", [c], f"{p}.attn.merge.transpose", perm=[0, 2, 1, 3])
        c = node("Reshape", [c, merge_shape], f"{p}.attn.merge.reshape")
        c = node("MatMul", [c, cos_weight(f"{p}.attn.w_o", shp_o)], f"{p}.attn.out.matmul")
        c = node("Add", [c, small(f"{p}.attn.b_o", (D,))], f"{p}.attn.out.add")
        x = node("Add", [x, c], f"{p}.residual1")
        h = layernorm(x, f"{p}.ln2")
        h = node("MatMul", [h, cos_weight(f"{p}.mlp.w_up", shp_up)], f"{p}.mlp.up.matmul")
        h = node("Add", [h, small(f"{p}.mlp.b_up", (4 * D,))], f"{p}.mlp.up.add")
        g = node("Div", [h, sqrt2], f"{p}.gelu.div")
        g = node("Erf", [g], f"{p}.gelu.erf")
        g = node("Add", [g, one], f"{p}.gelu.add")
        g = node("Mul", [h, g], f"{p}.gelu.mul")
        g = node("Mul", [g, half], f"{p}.gelu.mul_half")
        h = node("MatMul", [g, cos_weight(f"{p}.mlp.w_down", shp_down)], f"{p}.mlp.down.matmul")
        h = node("Add", [h, small(f"{p}.mlp.b_down", (D,))], f"{p}.mlp.down.add")
        x = node("Add", [x, h], f"{p}.residual2")
    assert len(nodes) == n_blocks * NODES_PER_BLOCK, len(nodes)
    layernorm(x, "y")

    graph = helper.make_graph(
        nodes, "large_transformer_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                              producer_name="opcost-bench", producer_version="1",
                              doc_string=f"{n_blocks} pre-LN transformer blocks, weights by ConstantOfShape")
    expected = closed_form(n_blocks, d_model=D, seq_len=S, n_heads=H, batch=B)
    meta = {"n_blocks": n_blocks, "d_model": D, "seq_len": S, "n_heads": H, "batch": B, "seed": seed,
            "expected_params": expected["params"], "expected_mac_flops": expected["mac_flops"]}
    helper.set_model_props(model, {k: str(v) for k, v in meta.items()})
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write a deep transformer-chain ONNX graph for benchmarks.")
    ap.add_argument("out", help="output .onnx path")
    ap.add_argument("--nodes", type=int, default=50_000, help="minimum number of nodes (default 50000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--no-check", action="store_true", help="skip onnx.checker")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    model = make_large_graph(args.nodes, args.seed, d_model=args.d_model, seq_len=args.seq_len,
                             n_heads=args.heads, batch=args.batch)
    t1 = time.perf_counter()
    if not args.no_check:
        onnx.checker.check_model(model)
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    onnx.save_model(model, args.out)
    meta = {p.key: p.value for p in model.metadata_props}
    print(f"{args.out}: {len(model.graph.node)} nodes, {meta['n_blocks']} blocks, "
          f"{os.path.getsize(args.out) / 1e6:.1f} MB, params={meta['expected_params']}, "
          f"mac_flops={meta['expected_mac_flops']} (built in {t1 - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
