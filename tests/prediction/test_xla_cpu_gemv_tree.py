"""XLA CPU's tree reductions, the copies around its matrix-vector products and its expansion of a
max pool's gradient in the ``xla_cpu`` plan (``xla_cpu_fusion`` rules 7, 8 and 9): closed-form
launch counts of small programs, each beside
the thunks XLA 0.10.2 compiles for them (``bench/xla_hlo.py``; all equal), and the counting rules'
kernel words they rest on."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import analyzer
from analyzer.counting.rules.jax.reduce import tree_rounds
from analyzer.ir.graph import TensorSpec

CPU = "epyc-9654"
F32 = jnp.float32
S = jax.ShapeDtypeStruct


def _launches(fn, *shapes):
    return analyzer.analyze_jax(fn, *shapes, hw=CPU, runtime="xla").predictions[0].launches


def _word(fn, *shapes, op):
    return next(n.kernel for n in analyzer.analyze_jax(fn, *shapes).nodes if n.op == op)


def test_tree_rounds_cut_each_reduced_dim_longer_than_32():
    # [16, 64] over its last dim: 64 -> ceil(64 / 32) = 2 partials a row, 16 x 2 x 4 B = 128 B
    assert tree_rounds(TensorSpec((16, 64), "float32"), (1,)) == "tree=128"
    # 3000 -> 94 -> 3: two rounds, 94 x 4 = 376 B and 3 x 4 = 12 B
    assert tree_rounds(TensorSpec((3000,), "float32"), (0,)) == "tree=376,12"
    # 40 x 40 over both dims: one round of 2 x 2 partials (16 B); a dim of 32 is not cut
    assert tree_rounds(TensorSpec((40, 40), "float32"), (0, 1)) == "tree=16"
    assert tree_rounds(TensorSpec((16, 32), "float32"), (1,)) is None
    assert tree_rounds(TensorSpec((64, 16), "float32"), (1,)) is None   # the long dim is kept


def test_a_reduction_of_a_long_row_takes_no_producer_and_runs_its_windows_first():
    # sum(x * 2) / 3 over 8 x 64 (512 elements, under YNNPACK's 4096): [x * 2], the
    # reduce-window, [sum of the 2 partials / 3] = 3 (XLA: 3 loop fusions); over 8 x 32: 1 (XLA: 1)
    assert _launches(lambda x: jnp.sum(x * 2.0, axis=1) / 3.0, S((8, 64), F32)) == 3
    assert _launches(lambda x: jnp.sum(x * 2.0, axis=1) / 3.0, S((8, 32), F32)) == 1
    # sum(exp(x)) of 3000: [exp], 2 reduce-windows (94, then 3 partials), [sum] = 4 (XLA: 4)
    assert _launches(lambda x: jnp.sum(jnp.exp(x)), S((3000,), F32)) == 4


def test_a_layer_norm_of_1024_elements_plans_xlas_six_loop_fusions():
    # mean: reduce-window of x, [sum] (read twice: written); var: [(x - m)^2], its reduce-window,
    # [sum + eps, rsqrt] joined by the normalize: [(x - m) * rsqrt] -> 6 (XLA: 6); rows of 32: 3
    def ln(x):
        m = jnp.mean(x, -1, keepdims=True)
        v = jnp.mean((x - m) ** 2, -1, keepdims=True)
        return (x - m) * jax.lax.rsqrt(v + 1e-5)
    assert _launches(ln, S((16, 64), F32)) == 6
    assert _launches(ln, S((16, 32), F32)) == 3


def test_dot_words_name_the_matrix_vector_operand():
    w = S((64, 32), F32)
    assert _word(lambda x, w: x @ w, S((1, 64), F32), w, op="dot_general") == "gemv=0"
    assert _word(lambda x, w: x @ w, S((1, 1, 64), F32), w, op="dot_general") == "gemv=0"
    assert _word(lambda w, v: w @ v, S((32, 64), F32), S((64, 1), F32), op="dot_general") == "gemv=1"
    assert _word(lambda x, w: x @ w, S((2, 64), F32), w, op="dot_general") is None
    assert _word(lambda x, w: x @ w, S((64,), F32), w, op="dot_general") is None   # a 1-D vector: no copy


def test_a_gemv_copies_its_vector_and_its_result_as_a_program_output():
    # x[1, 64] @ W (closed over): [copy x], dot, [copy of the result, the program's output] = 3
    # (XLA: 3); + 1 after it: the add's fusion writes the output, 2 + 1 = 3 (XLA: 3)
    w = jnp.asarray(np.ones((64, 32), np.float32))
    assert _launches(lambda x: x @ w, S((1, 64), F32)) == 3
    assert _launches(lambda x: x @ w + 1.0, S((1, 64), F32)) == 3
    # W @ v[64, 1]: v copied, dot, result copied = 3 (XLA: 3); M = 2: one YNNPACK dot (XLA: 1)
    assert _launches(lambda w, v: w @ v, S((32, 64), F32), S((64, 1), F32)) == 3
    assert _launches(lambda x, w: x @ w, S((2, 64), F32), S((64, 32), F32)) == 1


def test_a_gemv_vector_from_a_loop_fusion_it_alone_reads_is_not_copied():
    # relu(x) @ W + 1: the relu's fusion writes the vector as the dot reads it: 3 (XLA: 3)
    w = S((64, 32), F32)
    assert _launches(lambda x, w: jax.nn.relu(x) @ w + 1.0, S((1, 64), F32), w) == 3
    # tanh(x) read by the dot and an add: [tanh], [copy], dot, [result copy], [tanh + 1] = 5 (XLA: 5)

    def f(x, w):
        t = jnp.tanh(x)
        return t @ w, t + 1.0
    assert _launches(f, S((1, 64), F32), w) == 5
    # a chain x @ W @ V, tanh: [copy x], dot, [copy of its result], dot, [tanh] = 5 (XLA: 5)
    assert _launches(lambda x, w, v: jnp.tanh((x @ w) @ v), S((1, 64), F32), w, S((32, 8), F32)) == 5


def _max_pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def test_a_max_pool_gradient_is_xlas_iotas_reduce_window_and_scatter():
    # rank 4: 4 iotas, the zero fill, the reduce-window (the node's own kernel), the concatenate
    # of the indices, the copy of g (a program input), the scatter = 4 + 5 = 9 (XLA: 9 thunks)
    x, g = S((4, 24, 16, 16), F32), S((4, 24, 8, 8), F32)
    assert _word(lambda x, g: jax.vjp(_max_pool, x)[1](g)[0], x, g, op="select_and_scatter_add") == "rank=4"
    assert _launches(lambda x, g: jax.vjp(_max_pool, x)[1](g)[0], x, g) == 4 + 5
    # g = 2 * h, a loop fusion the gradient alone reads: it writes g as the scatter reads it, 1 + 8 (XLA: 9)
    assert _launches(lambda x, h: jax.vjp(_max_pool, x)[1](2.0 * h)[0], x, g) == 1 + 8
