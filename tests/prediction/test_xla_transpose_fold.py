"""XLA's GPU transpose folding in the ``xla`` plan (``transpose_fold.xla_folded``): a rank-2 transpose
read only by matrix products of rank-2 operands and result launches nothing on a GPU profile
(``TransposeFolding`` with ``CanFoldTransposeOperandIntoDot``, xla/service/gpu/gpu_compiler.cc,
xla/service/gpu/matmul_utils.cc); anything else keeps the loop-fusion plan, and the TPU's and
the CPU's ``xla`` plans are unchanged.

Programs (f32): x [4, 8], w [16, 8]; ``x @ w.T`` is one product [4, 8] x [8, 16] -> [4, 16].
Kernels counted in closed form beside each case."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
from analyzer.render.explain import render_explain

GPU, TPU = "a100", "tpu-v5e"
X = jax.ShapeDtypeStruct((4, 8), jnp.float32)
W = jax.ShapeDtypeStruct((16, 8), jnp.float32)


def _launches(fn, *args, hw=GPU):
    rep = analyzer.analyze_jax(fn, *args, hw=hw)
    return rep, rep.predictions[0]


def linear_t(x, w):
    return x @ w.T


def test_rank2_transpose_into_a_product_launches_nothing():
    # 1 kernel: the product (the transpose is its operand layout); 2 without folding
    rep, p = _launches(linear_t, X, W)
    assert p.launches == 1
    (t, d), = p.kernel_table.folded.items()
    assert rep.nodes[t].op == "transpose" and rep.nodes[d].op == "dot_general"
    assert "folded into the operand layout of" in render_explain(rep, t)


def test_a_tpu_plan_keeps_the_transpose():
    # the rule is read from XLA's GPU compiler: the TPU's xla plan is unchanged (2 kernels)
    _, p = _launches(linear_t, X, W, hw=TPU)
    assert p.launches == 2 and not p.kernel_table.folded


def test_a_gpu_beside_a_tpu_still_folds():
    # one call, GPU and TPU side by side: the GPU's plan 1 kernel (folded), the TPU's 2, as
    # each alone: a profile's plan does not depend on the others listed with it
    rep = analyzer.analyze_jax(linear_t, X, W, hw=[GPU, TPU])
    assert [p.launches for p in rep.predictions] == [1, 2]


def test_a_transpose_with_another_reader_stays():
    # w.T read by the product and by a multiply: the transpose is a loop-fusion node with the
    # multiply (1 kernel) beside the product (1 kernel): 2 kernels
    def f(x, w):
        wt = w.T
        return x @ wt, wt * 2.0

    _, p = _launches(f, X, W)
    assert p.launches == 2 and not p.kernel_table.folded


def test_a_rank3_transpose_stays():
    # a [2, 8, 4] -> [2, 4, 8] transpose before a batched product: its folding depends on the
    # permutation and the dimension numbers, not planned: transpose + product = 2 kernels
    def f(a, b):
        return jnp.einsum("bij,bjk->bik", a.transpose(0, 2, 1), b)

    _, p = _launches(f, jax.ShapeDtypeStruct((2, 8, 4), jnp.float32), jax.ShapeDtypeStruct((2, 8, 3), jnp.float32))
    assert p.launches == 2 and not p.kernel_table.folded


def _onnx(outputs=("y",), extra=()):
    nodes = [helper.make_node("Transpose", ["w"], ["wt"], name="t", perm=[1, 0]),
             helper.make_node("MatMul", ["x", "wt"], ["y"], name="mm"), *extra]
    # (w an input: a Transpose of an initializer is folded as a constant by every runtime)
    return graph(nodes, {"x": (4, 8), "w": (16, 8)}, list(outputs))


def test_onnx_transpose_into_matmul():
    # Transpose(w) -> MatMul under runtime xla: 1 kernel on a GPU, 2 on a TPU; the transpose's
    # result as a graph output is written, so it stays (2 kernels)
    assert analyzer.analyze(_onnx(), hw=GPU, runtime="xla").predictions[0].launches == 1
    assert analyzer.analyze(_onnx(), hw=TPU, runtime="xla").predictions[0].launches == 2
    assert analyzer.analyze(_onnx(("y", "wt")), hw=GPU, runtime="xla").predictions[0].launches == 2


def test_other_runtimes_keep_their_plans():
    # kernel (one kernel per node that works): transpose + product = 2
    assert analyzer.analyze(_onnx(), hw=GPU, runtime="kernel").predictions[0].launches == 2


def test_search_scores_equal_analyze():
    # the fast path (``xla_gpu.folded``) plans the same folding as the lowering
    assert_search_scores_equal_analyze(_onnx(), GPU, "xla")
