"""JAX reductions, scans along an axis, window reductions and sorting (domain ``"jax"``).

Reductions follow ``rules/reduce.py`` (N elements into 1 cost N-1 combining ops; argmax is a
compare-and-select per step, as ONNX ArgMax); window reductions follow ``rules/pooling.py``
(per output element, over the full window with padded positions, window-1 ops).  A generic
``reduce``/``reduce_window`` multiplies by the number of operations in its reducer
(``jaxpr_ops``, from the frontend).
"""

from __future__ import annotations

from math import ceil, log2, prod

from analyzer.counting.cost import Work, register
from analyzer.counting.kernel_words import with_word

D = "jax"


# XLA's tree reduction rewriter (run by its CPU backend) cuts every reduced dim longer than
# this into windows of this length: a reduce-window of partial results, then the reduce of them
TREE_WINDOW = 32


@register("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
          "reduce_xor", domain=D)
def reduce_(ins, outs, ctx, *, axes=()):
    """N elements into 1 cost N - 1 combining ops.  The kernel: ``tree=B1,B2,...`` where a
    reduced dim is longer than ``TREE_WINDOW``: the bytes of the partial results of each round
    of windows XLA's CPU backend reduces first (a dim of length d becomes ceil(d / 32) partials,
    again while one is longer than 32: 3000 -> 94 -> 3), which its prediction plans as
    reduce-window kernels (``xla_cpu_fusion``); then ``axes=A,...``: the reduced axes (sorted,
    non-negative), which the shapes alone do not tell for a square input; counts never depend
    on it."""
    rank = len(ins[0].dims())
    word = "axes=" + ",".join(map(str, sorted({a % rank for a in axes}))) if rank and axes else None
    return Work(vector_flops=ins[0].numel() - outs[0].numel(), kernel=with_word(tree_rounds(ins[0], axes), word))


@register("argmax", "argmin", domain=D)
def arg_reduce(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel() - outs[0].numel())


def tree_rounds(spec, axes) -> str | None:
    """``tree=...`` (``reduce_``'s docstring) of reducing ``spec`` over ``axes``; None where no
    reduced dim is longer than ``TREE_WINDOW``."""
    dims = list(spec.dims())
    red = sorted({a % len(dims) for a in axes}) if dims else []
    item = spec.nbytes() // max(spec.numel(), 1) if spec.numel() else 0
    rounds = []
    while any(dims[a] > TREE_WINDOW for a in red):
        for a in red:
            dims[a] = -(-dims[a] // TREE_WINDOW) if dims[a] > TREE_WINDOW else dims[a]
        rounds.append(prod(dims) * item)
    return "tree=" + ",".join(map(str, rounds)) if rounds else None


@register("reduce", domain=D)
def reduce_generic(ins, outs, ctx, *, jaxpr_ops=1):
    # operands come first, then one init value each; every combining step runs the reducer
    k = len(outs)
    n_in, n_out = ins[0].numel(), outs[0].numel()
    return Work(vector_flops=(n_in - n_out) * max(jaxpr_ops, 1),
                reads={i: 0 for i in range(k, len(ins))})


def _rows(spec, axis: int) -> tuple[int, int]:
    """(number of 1-D lanes along ``axis``, their length)."""
    d = spec.dims()
    return (spec.numel() // d[axis] if d[axis] else 0), d[axis]


@register("cumsum", "cumprod", "cummax", "cummin", domain=D)
def cumulative(ins, outs, ctx, *, axis=0):
    # a running combine along the axis: each element but the first of its lane costs one op
    rows, _n = _rows(ins[0], axis)
    return Work(vector_flops=ins[0].numel() - rows)


@register("cumlogsumexp", domain=D)
def cumlogsumexp(ins, outs, ctx, *, axis=0):
    # exp of each element, the running sum (n - lanes adds), log of each partial sum
    n = ins[0].numel()
    rows, _n = _rows(ins[0], axis)
    return Work(vector_flops=n - rows, transcendentals=2 * n, functions=(("exp", n), ("log", n)))


@register("reduce_window_sum", "reduce_window_max", "reduce_window_min", domain=D)
def reduce_window(ins, outs, ctx, *, window_dimensions):
    return Work(vector_flops=outs[0].numel() * (prod(window_dimensions) - 1))


@register("reduce_window", domain=D)
def reduce_window_generic(ins, outs, ctx, *, window_dimensions, jaxpr_ops=1):
    k = len(outs)
    return Work(vector_flops=outs[0].numel() * (prod(window_dimensions) - 1) * max(jaxpr_ops, 1),
                reads={i: 0 for i in range(k, len(ins))})


@register("select_and_scatter_add", domain=D)
def select_and_scatter_add(ins, outs, ctx, *, window_dimensions):
    """Max-pool backward: per source element (one window) window-1 compares pick the position,
    then one add scatters the gradient there.  The kernel: ``rank=R``, the operand's rank (XLA's
    CPU backend expands the op into R iotas, a reduce-window and a scatter: ``xla_cpu_fusion``);
    counts never depend on it."""
    return Work(vector_flops=ins[0].numel() * prod(window_dimensions), kernel=f"rank={len(ins[1].dims())}")


@register("select_and_gather_add", domain=D)
def select_and_gather_add(ins, outs, ctx, *, window_dimensions):
    # max-pool forward-mode derivative: per output window-1 compare-and-selects
    return Work(vector_flops=outs[0].numel() * (prod(window_dimensions) - 1))


def _log2_ceil(n: int) -> int:
    return ceil(log2(n)) if n > 1 else 0


@register("sort", domain=D)
def sort(ins, outs, ctx, *, dimension=-1, num_keys=1):
    """A comparison sort of each lane of length L: L * ceil(log2 L) compares per key; the other
    operands (argsort's indices) move with the keys (bytes only)."""
    rows, n = _rows(ins[0], dimension)
    return Work(vector_flops=rows * n * _log2_ceil(n) * max(num_keys, 1))


@register("top_k", "approx_top_k", domain=D)
def top_k(ins, outs, ctx, *, k, axis=-1, reduction_dimension=None):
    """Keep a heap of k per lane: each of the L elements costs ceil(log2(k+1)) compares."""
    if reduction_dimension is not None:  # approx_top_k names its axis so
        axis = reduction_dimension
    rows, n = _rows(ins[0], axis if axis is not None else -1)
    return Work(vector_flops=rows * n * _log2_ceil(k + 1))
