"""JAX dense linear algebra and FFT primitives (domain ``"jax"``).

Every count is per matrix (or per transform) and multiplied by the batch, the product of the
leading dims.  The factorizations are ``vector_flops`` (as ONNX ``Det`` in ``rules/onnx/linalg.py``:
LAPACK-style kernels, not one product on the MAC array).  A complex dtype costs 6 real flops per
multiply and 2 per add (LAWN 41's convention for the complex routines).

Sources and conventions (real, per ``m x n`` matrix, ``k = min(m, n)``):

- ``cholesky`` (xPOTRF), LAPACK Working Note 41 (Blackford & Dongarra, "Installation Guide for
  LAPACK", operation counts table; the same polynomials as MAGMA's ``testing/flops.h``):
  mults ``n^3/6 + n^2/2 + n/3`` = n(n+1)(n+2)/6, adds ``n^3/6 - n/6`` = (n-1)n(n+1)/6.
- ``lu`` (xGETRF), LAWN 41: m >= n: mults ``mn^2/2 - n^3/6 + mn/2 - n^2/2 + 2n/3``, adds
  ``mn^2/2 - n^3/6 - mn/2 + n/6`` (m < n: m and n swap roles).  Pivot-search compares are not
  counted (LAWN does not).
- ``triangular_solve`` (xTRSM), LAWN 41: a triangle of size t and r right-hand sides: mults
  ``r*t(t+1)/2``, adds ``r*t(t-1)/2`` (``left_side``: r = columns of b, else r = rows of b; the
  unit-diagonal variant is counted as the general one, as LAWN does).
- ``qr``: xGEQRF then xORGQR (LAWN 41) to form Q (``full_matrices``: Q is m x m, else m x k),
  k = min(m, n) reflectors.  GEQRF m > n: mults ``n^2(1/2 - n/3 + m) + mn + 23n/6``, adds
  ``n^2(1/2 - n/3 + m) + 5n/6``; m <= n: mults ``m^2(-1/2 - m/3 + n) + 2mn + 23m/6``, adds
  ``m^2(-1/2 - m/3 + n) + mn + 5m/6``.  ORGQR (m x n from k): mults
  ``k(2mn + 2n - 5/3 + k(2k/3 - (m+n) - 1))``, adds ``k(2mn + n - m + 1/3 + k(2k/3 - (m+n)))``.
  Column pivoting (xGEQP3) is counted as GEQRF.
- ``eigh`` (symmetric/Hermitian eigenvalues and vectors, always both in JAX): Golub & Van Loan,
  *Matrix Computations* (4th ed., section 8.3, "symmetric QR algorithm"): ``9n^3`` flops with
  vectors (``4n^3/3`` for eigenvalues only).  Iterative: the count is the textbook estimate.
- ``svd``: Golub & Van Loan (Figure 8.6.1, Golub-Reinsch SVD), for m >= n (else the transpose):
  singular values only ``4mn^2 - 4n^3/3``; with U (m x m) and V ``4m^2n + 8mn^2 + 9n^3``; with a
  thin U (m x n) and V ``14mn^2 + 8n^3``.
- ``eig`` (general): Golub & Van Loan (section 7.5.6, Francis QR with Hessenberg reduction):
  ``10n^3`` for eigenvalues, ``25n^3`` with eigenvectors (left or right).
- ``fft``: the benchFFT convention (FFTW, "FFT benchmark methodology", fftw.org/speed/method.html),
  also ``rules/onnx/spectral.py``'s: ``5 N lg N`` real ops for a complex transform of N points
  (``lg`` = ceil(log2)); a d-dimensional transform over lengths n_1..n_d of N = prod(n_i) points
  is 5 N sum(lg n_i) (each axis's 1-D transforms); a real transform (RFFT, IRFFT) half of that;
  an inverse (IFFT, IRFFT) adds the 1/N scaling, N multiplies.

The textbook (LAWN, Golub & Van Loan) polynomials have fractional terms: a count is the exact
rational value rounded to the nearest integer, per matrix, before the batch multiplies it.
``custom_linear_solve`` has no rule: the frontend inlines its ``solve`` jaxpr (what runs; the
``matvec`` is only for differentiation).
"""

from __future__ import annotations

from fractions import Fraction as F
from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import lg
from analyzer.errors import ShapeError

D = "jax"
_COMPLEX = ("complex64", "complex128")


def _round(x: F) -> int:
    return int(x + F(1, 2)) if x >= 0 else 0


def _flops(dtype: str, mults: F, adds: F) -> int:
    """Real flops of ``mults`` multiplies and ``adds`` adds in ``dtype`` (complex: 6 and 2)."""
    if dtype in _COMPLEX:
        return _round(6 * mults + 2 * adds)
    return _round(mults + adds)


def _matrices(spec, what: str) -> tuple[int, int, int]:
    """(batch, m, n) of a ``[..., m, n]`` operand."""
    d = spec.dims()
    if len(d) < 2:
        raise ShapeError(f"{what} needs a [..., m, n] operand, got {spec}")
    return prod(d[:-2]), d[-2], d[-1]


# ----------------------------------------------------------------------------- LAWN 41 polynomials


def potrf(n: int) -> tuple[F, F]:
    return F(n * (n + 1) * (n + 2), 6), F((n - 1) * n * (n + 1), 6)


def getrf(m: int, n: int) -> tuple[F, F]:
    if m < n:
        return (F(m) / 2 * (m * (n - F(m) / 3 - 1) + n) + F(2 * m, 3),
                F(m) / 2 * (m * (n - F(m) / 3) - n) + F(m, 6))
    return (F(n) / 2 * (n * (m - F(n) / 3 - 1) + m) + F(2 * n, 3),
            F(n) / 2 * (n * (m - F(n) / 3) - m) + F(n, 6))


def geqrf(m: int, n: int) -> tuple[F, F]:
    if m > n:
        return (n * (n * (F(1, 2) - F(n, 3) + m) + m + F(23, 6)),
                n * (n * (F(1, 2) - F(n, 3) + m) + F(5, 6)))
    return (m * (m * (F(-1, 2) - F(m, 3) + n) + 2 * n + F(23, 6)),
            m * (m * (F(-1, 2) - F(m, 3) + n) + n + F(5, 6)))


def orgqr(m: int, n: int, k: int) -> tuple[F, F]:
    return (k * (2 * m * n + 2 * n - F(5, 3) + k * (F(2 * k, 3) - (m + n) - 1)),
            k * (2 * m * n + n - m + F(1, 3) + k * (F(2 * k, 3) - (m + n))))


def trsm(t: int, r: int) -> tuple[F, F]:
    return F(r * t * (t + 1), 2), F(r * t * (t - 1), 2)


# ----------------------------------------------------------------------------- rules


@register("cholesky", domain=D)
def cholesky(ins, outs, ctx):
    b, m, n = _matrices(ins[0], "cholesky")
    if m != n:
        raise ShapeError(f"cholesky needs square matrices, got {ins[0]}")
    return Work(vector_flops=b * _flops(ins[0].dtype, *potrf(n)), note="LAWN 41 xPOTRF")


@register("lu", domain=D)
def lu(ins, outs, ctx):
    b, m, n = _matrices(ins[0], "lu")
    return Work(vector_flops=b * _flops(ins[0].dtype, *getrf(m, n)), note="LAWN 41 xGETRF")


@register("triangular_solve", domain=D)
def triangular_solve(ins, outs, ctx, *, left_side=False):
    a, rhs = ins[0], ins[1]
    t = a.dim(-1)
    bd = rhs.dims()
    r = bd[-1] if left_side else bd[-2]
    batch = prod(bd[:-2])
    return Work(vector_flops=batch * _flops(rhs.dtype, *trsm(t, r)), note="LAWN 41 xTRSM")


@register("qr", domain=D)
def qr(ins, outs, ctx, *, full_matrices=False):
    b, m, n = _matrices(ins[0], "qr")
    k = min(m, n)
    fm, fa = geqrf(m, n)
    qm, qa = orgqr(m, m if full_matrices else k, k)
    return Work(vector_flops=b * _flops(ins[0].dtype, fm + qm, fa + qa), note="LAWN 41 xGEQRF + xORGQR")


def _whole(dtype: str, flops: F) -> int:
    """A textbook total (not split into multiplies and adds): a complex flop as 4 real ones
    (the mean of a complex multiply, 6, and add, 2)."""
    return _round(flops * (4 if dtype in _COMPLEX else 1))


@register("eigh", domain=D)
def eigh(ins, outs, ctx):
    b, _m, n = _matrices(ins[0], "eigh")
    return Work(vector_flops=b * _whole(ins[0].dtype, F(9 * n ** 3)),
                note="Golub & Van Loan 8.3: 9n^3 (eigenvalues and vectors)")


@register("eig", domain=D)
def eig(ins, outs, ctx, *, compute_left_eigenvectors=True, compute_right_eigenvectors=True):
    b, _m, n = _matrices(ins[0], "eig")
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    return Work(vector_flops=b * _whole(ins[0].dtype, F((25 if vectors else 10) * n ** 3)),
                note="Golub & Van Loan 7.5.6: 10n^3 (values), 25n^3 (with vectors)")


@register("svd", domain=D)
def svd(ins, outs, ctx, *, full_matrices=True, compute_uv=True):
    b, m, n = _matrices(ins[0], "svd")
    m, n = max(m, n), min(m, n)
    if not compute_uv:
        f = 4 * m * n * n - F(4 * n ** 3, 3)
    elif full_matrices:
        f = F(4 * m * m * n + 8 * m * n * n + 9 * n ** 3)
    else:
        f = F(14 * m * n * n + 8 * n ** 3)
    return Work(vector_flops=b * _whole(ins[0].dtype, f), note="Golub & Van Loan Figure 8.6.1")


FFT = 5  # real ops per N lg N of a complex transform


@register("fft", domain=D)
def fft(ins, outs, ctx, *, fft_type, fft_lengths):
    kind = getattr(fft_type, "name", str(fft_type)).rsplit(".", 1)[-1].upper()
    lengths = tuple(int(n) for n in fft_lengths)
    x = ins[0].dims()
    batch = prod(x[:len(x) - len(lengths)])
    points = prod(lengths)
    per = FFT * points * sum(lg(n) for n in lengths)
    if kind in ("RFFT", "IRFFT"):
        per //= 2
    if kind in ("IFFT", "IRFFT"):
        per += points  # the 1/N scaling
    return Work(vector_flops=batch * per)
