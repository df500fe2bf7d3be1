"""XLA GPU's kernel boundaries at reductions in the ``xla`` plan (``xla_gpu_reduce``): a
reduction whose producer a matrix kernel also reads is a kernel of its own (PriorityFusion fuses
a producer into all its users or none), and a reduction XLA runs with its reduction emitter takes
in no consumer but a one-operand intermediate op (``IsProducerConsumerFusible``); a GPU profile
only, the TPU's plan unchanged.

Programs (f32, the parameters as arguments), kernels beside each case:

- Bias gradient beside a GEMM: h, dy [8, 64], w [32, 64], b [64]; g = where(h > 0, dy, 0) (the
  ReLU backward select); dx = g @ w.T; b' = b - 0.01 * sum(g, axis 0).  Without the rules: the
  select, the reduction and the SGD update one kernel, the dot another: 2 (the TPU's plan: 3,
  the transpose of w not folded there).  With them: the
  select (gt, select) | the dot | the reduction + SGD update (8 rows: a column reduction of
  R = 8 < 32 rows XLA runs as an elemental loop fusion, which takes the update in) = 3.
- SGD update after an emitter reduction: dy [8, 16, 64]; b' = b - 0.01 * sum(2 * dy, axes 0, 1):
  a column reduction of R = 128 rows, K = 64 columns (R >= 32: the reduction emitter): the
  multiply and the reduction | the update (mul, sub) = 2 kernels.  At dy [8, 64] (R = 8, an
  elemental loop fusion) 1 kernel.  A unary epilogue (negate) joins: 1 kernel.
- A per-channel sum over N, H, W of an NCHW tensor [8, 16, 32, 32] (a row reduction with a
  reduced batch, R = 1024 >= 32) then the update: 2 kernels.
- The same rules on ONNX graphs (Relu, ReduceSum, Mul, Sub, MatMul), and the search's fast path
  (``search.fastpath.xla_gpu.reduce_refusal``) scoring them as ``analyze`` does.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
from analyzer.prediction.xla_gpu_reduce import reduce_form
from analyzer.render.explain import render_explain

GPU, TPU = "a100", "tpu-v5e"
F32 = jnp.float32


def _plan(fn, *shapes, hw=GPU):
    rep = analyzer.analyze_jax(fn, *(jax.ShapeDtypeStruct(s, F32) for s in shapes), hw=hw, runtime="xla")
    p = rep.predictions[0]
    kernels: dict[str, list[str]] = {}
    for i, nd in enumerate(rep.nodes):
        t = p.explain(i)
        if t is not None:
            kernels.setdefault(t.kernel, []).append(nd.name)
    return rep, p, kernels


def _bias_grad_beside_dot(h, dy, w, b):
    g = jnp.where(h > 0, dy, 0.0)
    return g @ w.T, b - 0.01 * g.sum(0)


def test_bias_gradient_beside_a_gemm_is_a_kernel_of_its_own():
    shapes = ((8, 64), (8, 64), (32, 64), (64,))
    rep, p, ks = _plan(_bias_grad_beside_dot, *shapes)
    assert len(ks) == 3
    red = next(m for m in ks.values() if any(n.endswith("reduce_sum") for n in m))
    assert [n.split("/")[-1] for n in red] == ["reduce_sum", "mul", "sub"]
    i = next(k for k, nd in enumerate(rep.nodes) if nd.name.endswith("reduce_sum"))
    j, why = p.kept_apart(i)
    assert rep.nodes[j].op == "select_n" and why == "reduction beside a matrix kernel"
    assert "kernel apart from" in render_explain(rep, i)
    # the TPU's plan: the select, the reduction and the update one kernel (the transpose of w,
    # not folded there, a kernel of its own)
    tpu = _plan(_bias_grad_beside_dot, *shapes, hw=TPU)[2]
    assert len(tpu) == 3 and any({"jit(_where)/select_n", "reduce_sum", "sub"} <= set(m) for m in tpu.values())


def _sgd_after_sum(dy, b):
    return b - 0.01 * (2.0 * dy).sum(axis=tuple(range(dy.ndim - 1)))


def test_sgd_update_after_an_emitter_column_reduction_is_apart():
    _, _, ks = _plan(_sgd_after_sum, (8, 16, 64), (64,))
    assert len(ks) == 2 and sorted(len(m) for m in ks.values()) == [2, 2]
    assert len(_plan(_sgd_after_sum, (8, 64), (64,))[2]) == 1        # R = 8: elemental
    assert len(_plan(_sgd_after_sum, (8, 16, 64), (64,), hw=TPU)[2]) == 1


def test_a_unary_epilogue_joins_the_reduction():
    _, _, ks = _plan(lambda dy: -(2.0 * dy).sum((0, 1)), (8, 16, 64))
    assert len(ks) == 1


def test_per_channel_sum_of_nchw_then_update():
    _, _, ks = _plan(lambda x, b: b - 0.01 * (x * x).sum((0, 2, 3)), (8, 16, 32, 32), (16,))
    assert len(ks) == 2


@pytest.mark.parametrize("ins, out, want", [
    ((8, 128), (128,), "elemental"),          # column, R = 8 < 32
    ((8, 16, 64), (64,), "emitter"),          # column, R = 128, K = 64
    ((40, 16), (16,), "elemental"),           # R < 64 and K < 32
    ((40, 64), (64,), "emitter"),
    ((100, 4), (4,), "elemental"),            # R < 128 and K < 8
    ((200, 2), (2,), "elemental"),            # R < 256 and K < 3
    ((200, 3), (3,), "emitter"),
    ((8, 128), (1, 128), "elemental"),        # kept dims (ONNX keepdims)
    ((8, 16, 32, 32), (16,), "emitter"),      # row with a reduced batch, R = 1024
    ((8, 3, 4, 4), (3,), "emitter"),          # R = 16 divides 32
    ((8, 3, 5, 5), (3,), "elemental"),        # R = 25
    ((1, 128), (128,), "trivial"),            # size-1 dims only
    ((8, 10), (8,), ""),                      # a row reduction over trailing dims: unplanned
    ((64, 64), (64,), ""),                    # reads two ways
])
def test_reduce_form(ins, out, want):
    assert reduce_form("reduce", ins, out) == want
    assert reduce_form("elementwise", ins, out) == ""


def _onnx_bias_grad(x_shape, axes):
    """x -> Relu -> g; g @ w (when x is rank 2); b - 0.01 * ReduceSum(g, axes)."""
    rng = np.random.default_rng(0)
    k = x_shape[-1]
    nodes = [helper.make_node("Relu", ["x"], ["g"]),
             helper.make_node("ReduceSum", ["g", "axes"], ["s"], keepdims=0),
             helper.make_node("Mul", ["s", "lr"], ["d"]), helper.make_node("Sub", ["b", "d"], ["b2"])]
    inits = {"axes": np.asarray(axes, np.int64), "lr": np.asarray(0.01, np.float32),
             "b": np.zeros(k, np.float32)}
    outs = ["b2"]
    if len(x_shape) == 2:
        nodes.append(helper.make_node("MatMul", ["g", "w"], ["y"]))
        inits["w"] = rng.standard_normal((k, 16)).astype(np.float32)
        outs.append("y")
    return graph(nodes, {"x": list(x_shape)}, outs, inits)


def test_onnx_rules_and_search_agree():
    # [8, 64] with a MatMul reading the Relu: Relu | MatMul | ReduceSum + Mul + Sub (R = 8,
    # elemental) = 3 (the TPU: Relu + ReduceSum + Mul + Sub | MatMul = 2)
    m = _onnx_bias_grad((8, 64), [0])
    assert analyzer.analyze(m, hw=GPU, runtime="xla").predictions[0].launches == 3
    assert analyzer.analyze(m, hw=TPU, runtime="xla").predictions[0].launches == 2
    # (a graph of two outputs the search's fast path does not lower: its score is the full one)
    got = analyzer.CostModel(GPU, runtime="xla").score([m.SerializeToString()])
    np.testing.assert_allclose(got, analyzer.analyze(m, hw=GPU, runtime="xla").predictions[0].latency_s, rtol=1e-6)
    # [8, 16, 64] over axes 0, 1 (R = 128, an emitter reduction), no MatMul: Relu + ReduceSum |
    # Mul + Sub = 2 (the TPU: 1)
    m = _onnx_bias_grad((8, 16, 64), [0, 1])
    assert analyzer.analyze(m, hw=GPU, runtime="xla").predictions[0].launches == 2
    assert analyzer.analyze(m, hw=TPU, runtime="xla").predictions[0].launches == 1
    assert_search_scores_equal_analyze(m, GPU, "xla")
