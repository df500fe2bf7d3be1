"""JAX linear algebra and FFT primitives against their stated conventions
(``analyzer/counting/rules/jax/linalg.py``: LAWN 41 for cholesky/lu/triangular_solve/qr, Golub &
Van Loan for eigh/svd/eig, benchFFT's 5 N lg N for fft); callbacks stay uncosted with a reason."""

from __future__ import annotations

from fractions import Fraction

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.linalg as jsl  # noqa: E402

import analyzer  # noqa: E402
from analyzer.counting.rules.jax import linalg  # noqa: E402

A = jax.ShapeDtypeStruct((4, 6, 6), jnp.float32)
B = jax.ShapeDtypeStruct((4, 6, 3), jnp.float32)


def node(fn, *args, op):
    r = analyzer.analyze_jax(fn, *args)
    assert r.coverage.uncosted == (), r.coverage.uncosted
    (n,) = [n for n in r.nodes if n.op == op]
    return n


def test_cholesky_is_lawn41_potrf():
    # n = 6: mults n(n+1)(n+2)/6 = 56, adds (n-1)n(n+1)/6 = 35: 91 per matrix, 4 matrices
    assert node(jnp.linalg.cholesky, A, op="cholesky").cost.vector_flops == 4 * 91


def test_lu_is_lawn41_getrf():
    # n = 6: mults n/2 (n (n - n/3 - 1) + n) + 2n/3 = 3*(6*3+6)+4 = 76; adds 3*(6*4 - 6) + 1 = 55
    assert node(jsl.lu_factor, A, op="lu").cost.vector_flops == 4 * (76 + 55)
    # the polynomial is LAWN's exactly: m >= n mults mn^2/2 - n^3/6 + mn/2 - n^2/2 + 2n/3
    m, n = 9, 4
    mults, adds = linalg.getrf(m, n)
    assert mults == Fraction(m * n * n, 2) - Fraction(n ** 3, 6) + Fraction(m * n, 2) - Fraction(n * n, 2) + Fraction(2 * n, 3)
    assert adds == Fraction(m * n * n, 2) - Fraction(n ** 3, 6) - Fraction(m * n, 2) + Fraction(n, 6)


def test_triangular_solve_is_lawn41_trsm():
    # triangle t = 6, r = 3 right-hand sides: mults 3*6*7/2 = 63, adds 3*6*5/2 = 45
    n = node(lambda a, b: jsl.solve_triangular(a, b), A, B, op="triangular_solve")
    assert n.cost.vector_flops == 4 * (63 + 45)


def test_qr_is_geqrf_plus_orgqr():
    # m = n = 6 (the m <= n branch): geqrf mults 6*(6*(-1/2 - 2 + 6) + 12 + 23/6) = 221,
    # adds 6*(6*3.5 + 6 + 5/6) = 167; orgqr(6, 6, 6): mults 6*(72 + 12 - 5/3 + 6*(4 - 13)) = 170,
    # adds 6*(72 + 0 + 1/3 + 6*(4 - 12)) = 146
    assert linalg.geqrf(6, 6) == (221, 167) and linalg.orgqr(6, 6, 6) == (170, 146)
    assert node(jnp.linalg.qr, A, op="qr").cost.vector_flops == 4 * (221 + 167 + 170 + 146)


def test_eigh_svd_eig_are_golub_van_loan():
    assert node(jnp.linalg.eigh, A, op="eigh").cost.vector_flops == 4 * 9 * 216       # 9n^3
    # full U, V: 4m^2n + 8mn^2 + 9n^3 = 21 * 216 = 4536
    assert node(jnp.linalg.svd, A, op="svd").cost.vector_flops == 4 * 21 * 216
    # values only: 4mn^2 - 4n^3/3 = 864 - 288 = 576
    vals = node(lambda a: jnp.linalg.svd(a, compute_uv=False), A, op="svd")
    assert vals.cost.vector_flops == 4 * 576
    # thin 8x6: 14*8*36 + 8*216 = 4032 + 1728 = 5760
    thin = node(lambda a: jnp.linalg.svd(a, full_matrices=False), jax.ShapeDtypeStruct((8, 6), jnp.float32),
                op="svd")
    assert thin.cost.vector_flops == 5760
    assert node(jnp.linalg.eig, A, op="eig").cost.vector_flops == 4 * 25 * 216         # 25n^3


def test_complex_operands_cost_6_per_multiply_and_2_per_add():
    c = jax.ShapeDtypeStruct((6, 6), jnp.complex64)
    assert node(jnp.linalg.cholesky, c, op="cholesky").cost.vector_flops == 6 * 56 + 2 * 35


def test_fft_is_5_n_lg_n():
    # complex FFT of length 6 (lg = 3) over 4*6 rows: 5*6*3 = 90 per transform
    x = jax.ShapeDtypeStruct((4, 6, 6), jnp.complex64)
    assert node(jnp.fft.fft, x, op="fft").cost.vector_flops == 24 * 90
    # inverse: + the 1/N scaling, 6 per transform
    assert node(jnp.fft.ifft, x, op="fft").cost.vector_flops == 24 * 96
    # real 2-D FFT over 8x8 (N = 64, lg 3 + 3): 5*64*6 / 2 = 960 per batch element
    r = jax.ShapeDtypeStruct((4, 8, 8), jnp.float32)
    assert node(jnp.fft.rfft2, r, op="fft").cost.vector_flops == 4 * 960


def test_custom_linear_solve_counts_what_runs_the_solve():
    # jnp.linalg.solve: lu, then custom_linear_solve whose solve jaxpr has 4 triangular solves
    # (2 forward, 2 for the transposed system are in transpose_solve and do not run)
    r = analyzer.analyze_jax(jnp.linalg.solve, A, B)
    assert r.coverage.uncosted == ()
    ops = [n.op for n in r.nodes]
    assert "custom_linear_solve" not in ops
    assert ops.count("triangular_solve") == 2
    assert ops.count("dot_general") == 0  # the matvec (only for derivatives) is not counted


@pytest.mark.parametrize("make", [
    lambda: (lambda x: jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct((8,), jnp.float32), x)),
    lambda: (lambda x: jax.experimental.io_callback(lambda v: v, jax.ShapeDtypeStruct((8,), jnp.float32), x)),
])
def test_callbacks_are_uncosted_with_a_reason(make):
    import jax.experimental

    r = analyzer.analyze_jax(make(), jax.ShapeDtypeStruct((8,), jnp.float32))
    (n,) = r.nodes
    assert r.coverage.uncosted == (n.name,)
    assert "runs on the host" in n.note
