"""XLA's GPU DotMerger in the ``xla`` plan (``dot_merge``): dots that read the same operand at
the same side run as one dot of the merged shape on a GPU profile (``MergeDots`` /
``TryMergeSameOperand``, xla/hlo/transforms/simplifiers/dot_merger.cc, run by
xla/service/gpu/gpu_compiler.cc with ``xla_gpu_dot_merger_threshold_mb``); the TPU's and the
other runtimes' plans are unchanged.

Programs (f32): x [8, 64]; wq, wk, wv [64, 32].  One dot x @ w: 2*8*32*64 = 32,768 MAC FLOPs;
bytes x 8*64*4 = 2,048 + w 64*32*4 = 8,192 + out 8*32*4 = 1,024 = 11,264 (its candidate size).
Merged: x @ [wq | wk | wv] = [8, 64] x [64, 96]: 2*8*96*64 = 98,304 MAC FLOPs; bytes 2,048 +
3*8,192 + 3*1,024 = 29,696 (x read once).  Kernels counted in closed form beside each case."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
from analyzer.prediction import dot_merge
from analyzer.render.explain import render_explain

GPU, TPU = "a100", "tpu-v5e"
F32 = jnp.float32
X = jax.ShapeDtypeStruct((8, 64), F32)
W = jax.ShapeDtypeStruct((64, 32), F32)


def qkv(x, wq, wk, wv):
    return jnp.tanh(x @ wq) + (x @ wk) * (x @ wv)


def _pred(fn, *args, hw=GPU):
    rep = analyzer.analyze_jax(fn, *args, hw=hw)
    return rep, rep.predictions[0]


def _dot_kernel_s(m, n, k, hw=GPU):
    """The kernel seconds of one plain dot [m, k] x [k, n] alone on ``hw`` (its only kernel)."""
    _, p = _pred(lambda a, b: a @ b, jax.ShapeDtypeStruct((m, k), F32), jax.ShapeDtypeStruct((k, n), F32), hw=hw)
    assert p.launches == 1
    return float(p.kernel_table.time[0])


def _merged_kernel(rep, p):
    (k,) = {int(p.kernel_table.kernel_of[i]) for i, n in enumerate(rep.nodes) if n.op == "dot_general"}
    return k


def test_three_dots_on_one_input_run_as_one_gemm(monkeypatch):
    # merged: [x @ (wq|wk|wv)] + [tanh, mul, add] = 2 kernels; apart: 3 dots + 1 loop fusion = 4
    rep, p = _pred(qkv, X, W, W, W)
    assert p.launches == 2
    k = _merged_kernel(rep, p)
    t = p.kernel_table
    assert (float(t.mac[k]), float(t.nbytes[k])) == (98_304.0, 29_696.0)
    assert [float(t.feats[f][k]) for f in ("m", "n", "k")] == [8.0, 96.0, 64.0]
    # the merged kernel is priced as the one dot [8, 64] x [64, 96]
    merged_s = _dot_kernel_s(8, 96, 64)
    assert float(t.time[k]) == pytest.approx(merged_s, rel=1e-6)
    # the old plan (no dot a candidate: threshold 0): 4 kernels, each dot one [8, 64] x [64, 32];
    # latency new = old - 3 x t(8 x 32 x 64) + t(8 x 96 x 64), the loop fusion unchanged
    monkeypatch.setattr(dot_merge, "THRESHOLD_BYTES", 0)
    _, old = _pred(qkv, X, W, W, W)
    assert old.launches == 4
    assert p.latency_s == pytest.approx(old.latency_s - 3 * _dot_kernel_s(8, 32, 64) + merged_s, rel=1e-6)
    assert "merged dot: dot_general, dot_general#2, dot_general#3" in render_explain(rep, 0)
    assert "m x n x k = 8 x 96 x 64" in render_explain(rep, 0)


def test_candidate_size_is_the_pass_threshold(monkeypatch):
    # each dot takes 11,264 B: under 11,263 none is a candidate (4 kernels); at 11,264 the first
    # pair merges (both candidates) and the merged dot (2,048 + 2 x 9,216 = 20,480 B, no
    # candidate) still takes the third, a candidate: one of a pair suffices (2 kernels)
    monkeypatch.setattr(dot_merge, "THRESHOLD_BYTES", 11_263)
    assert _pred(qkv, X, W, W, W)[1].launches == 4
    monkeypatch.setattr(dot_merge, "THRESHOLD_BYTES", 11_264)
    assert _pred(qkv, X, W, W, W)[1].launches == 2


def test_a_tpu_plan_keeps_the_dots():
    # the rule is read from XLA's GPU compiler: the TPU's xla plan is unchanged (4 kernels)
    _, p = _pred(qkv, X, W, W, W, hw=TPU)
    assert p.launches == 4 and not p.kernel_table.merged


def test_a_dot_that_reads_the_other_stays_apart():
    # d2 = x @ tanh(x @ w) reaches d1: no merge, d1 + tanh + d2 = 3 kernels
    sq = jax.ShapeDtypeStruct((64, 64), F32)
    _, p = _pred(lambda x, w: x @ jnp.tanh(x @ w), sq, sq)
    assert p.launches == 3 and not p.kernel_table.merged


def test_dimension_numbers_must_match():
    # x @ w and x @ v^T written as one dot (rhs contracted over dim 1: its kernel word
    # rhs_transposed) have other dimension numbers: 2 GEMMs + 1 add = 3 kernels; two of the
    # transposed form merge: 1 GEMM + 1 add = 2
    sq = jax.ShapeDtypeStruct((64, 64), F32)
    xs = jax.ShapeDtypeStruct((8, 64), F32)
    mixed = _pred(lambda x, w, v: x @ w + jnp.einsum("md,nd->mn", x, v), xs, sq, sq)[1]
    both_t = _pred(lambda x, w, v: jnp.einsum("md,nd->mn", x, w) + jnp.einsum("md,nd->mn", x, v), xs, sq, sq)[1]
    assert (mixed.launches, both_t.launches) == (3, 2)
    # a non-square v [32, 64] contracted over dim 1: the shapes tell it (no word): 3 kernels
    wide = jax.ShapeDtypeStruct((64, 32), F32)
    narrow = jax.ShapeDtypeStruct((32, 64), F32)
    assert _pred(lambda x, w, v: x @ w + jnp.einsum("md,nd->mn", x, v), xs, wide, narrow)[1].launches == 3
    # of a rank-3 x both are rewritten by DotDecomposer as [8, 64] x [64, 64] (v transposed):
    # one dot's dimension numbers, merged: 1 GEMM + 1 add = 2
    x3 = jax.ShapeDtypeStruct((2, 4, 64), F32)
    assert _pred(lambda x, w, v: x @ w + jnp.einsum("bsd,nd->bsn", x, v), x3, sq, sq)[1].launches == 2


def test_a_shared_weight_sums_the_rows():
    # x1 @ w + x2 @ w (w shared at the second operand): [x1; x2] @ w = [16, 64] x [64, 32], one
    # GEMM (m summed) + the add = 2 kernels
    rep, p = _pred(lambda a, b, w: a @ w + b @ w, X, X, W)
    assert p.launches == 2
    k = _merged_kernel(rep, p)
    assert [float(p.kernel_table.feats[f][k]) for f in ("m", "n", "k")] == [16.0, 32.0, 64.0]
    assert float(p.kernel_table.time[k]) == pytest.approx(_dot_kernel_s(16, 32, 64), rel=1e-6)


def _onnx():
    # y = tanh(x @ wq) + (x @ wk) * (x @ wv), weights as initializers
    nodes = [helper.make_node("MatMul", ["x", w], [w + "_y"], name="mm_" + w) for w in ("wq", "wk", "wv")]
    nodes += [helper.make_node("Tanh", ["wq_y"], ["t"], name="tanh"),
              helper.make_node("Mul", ["wk_y", "wv_y"], ["m"], name="mul"),
              helper.make_node("Add", ["t", "m"], ["y"], name="add")]
    rng = np.random.default_rng(0)
    inits = {w: rng.standard_normal((64, 32)).astype(np.float32) for w in ("wq", "wk", "wv")}
    return graph(nodes, {"x": (8, 64)}, ["y"], inits)


def test_onnx_matmuls_merge_under_xla_on_a_gpu():
    # 1 GEMM + 1 loop fusion = 2 kernels on a GPU; 3 + 1 = 4 on a TPU; 6 under kernel
    assert analyzer.analyze(_onnx(), hw=GPU, runtime="xla").predictions[0].launches == 2
    assert analyzer.analyze(_onnx(), hw=TPU, runtime="xla").predictions[0].launches == 4
    assert analyzer.analyze(_onnx(), hw=GPU, runtime="kernel").predictions[0].launches == 6


def test_search_scores_equal_analyze():
    # the fast path (``xla_gpu.merged``) plans the same merge as the lowering
    assert_search_scores_equal_analyze(_onnx(), GPU, "xla")
