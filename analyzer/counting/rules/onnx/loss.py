"""Loss ops: NegativeLogLikelihoodLoss (opsets 12, 13, 22) and SoftmaxCrossEntropyLoss (12, 13).

Both take scores X of [N, C] or [N, C, d1..dk] and integer targets T of [N] or [N, d1..dk]; C is
axis 1. M = N x d1 x .. x dk target positions. Counted as the op's definition evaluates them
(the ONNX function bodies' arithmetic, with no materialised intermediates):

- per position: pick X[n, T[n, d], d] (a gather: no arithmetic) and negate it (1); times the
  class weight W[T[n, d]] when W is given (1); with ``ignore_index``: compare T with it (1) and
  select 0 for a match (1).
- reduction ``none``: no more. ``sum``: M - 1 adds. ``mean``: M - 1 adds and 1 divide, and, where
  the divisor is not the constant M (a weight or an ``ignore_index`` is given), M - 1 adds of the
  divisor: the sum of the picked weights W[T] (0 for an ignored position) or the count of the
  positions not ignored.
- SoftmaxCrossEntropyLoss first takes log_softmax over C, as normalization.py counts LogSoftmax
  (per element max, subtract, exp, sum, subtract: 4 vector + 1 exp; per (n, d) row 1 log), then
  the loss above of the log-probabilities.

Bytes: X is read at the M picked elements (NegativeLogLikelihoodLoss, as Gather reads its
gathered elements) or whole (SoftmaxCrossEntropyLoss: every score enters the softmax); T whole;
W at the M picked elements (one load per position); every output written whole (the loss, and
SoftmaxCrossEntropyLoss's optional log_prob, X's shape).
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.kernel_words import with_word
from analyzer.counting.rules.onnx.common import present
from analyzer.errors import ShapeError

_REDUCTIONS = ("none", "sum", "mean")
_INT_TARGETS = ("int32", "int64")


def loss_positions(ins, reduction: str, op: str) -> tuple[int, int]:
    """(M, C): target positions and classes, after checking the inputs' ranks, dtypes and shapes
    against the op's definition (``ShapeError`` naming the shapes otherwise)."""
    if reduction not in _REDUCTIONS:
        raise ShapeError(f"{op} reduction must be one of {', '.join(_REDUCTIONS)}, got {reduction!r}")
    x, t = ins[0], ins[1]
    xs, ts = x.dims(), t.dims()
    if len(xs) < 2:
        raise ShapeError(f"{op} scores must be [N, C] or [N, C, d1..dk], got {x}")
    if t.dtype not in _INT_TARGETS:
        raise ShapeError(f"{op} target must be int32 or int64, got {t}")
    if tuple(ts) != (xs[0], *xs[2:]):
        raise ShapeError(f"{op} target {t} does not match scores {x}: it must be "
                         f"[{', '.join(str(d) for d in (xs[0], *xs[2:]))}]")
    if present(ins, 2) and tuple(ins[2].dims()) != (xs[1],):
        raise ShapeError(f"{op} weight {ins[2]} must be [C] = [{xs[1]}] for scores {x}")
    return prod(ts), xs[1]


def nll_flops(m: int, reduction: str, weighted: bool, ignore: bool) -> int:
    """Vector FLOPs of the loss over ``m`` picked log-probabilities (the module docstring's form)."""
    per = 1 + (1 if weighted else 0) + (2 if ignore else 0)
    adds = max(m - 1, 0)
    if reduction == "none":
        return per * m
    if reduction == "sum":
        return per * m + adds
    return per * m + adds + 1 + (adds if weighted or ignore else 0)


def _picked_reads(ins, m: int, whole_scores: bool) -> dict[int, int]:
    """Bytes read per input: X's M picked elements (or X whole), W's M picked elements."""
    x = ins[0]
    reads = {0: x.nbytes() if whole_scores else m * x.nbytes() // max(x.numel(), 1)}
    if present(ins, 2):
        w = ins[2]
        reads[2] = m * w.nbytes() // max(w.numel(), 1)
    return reads


@register("NegativeLogLikelihoodLoss")
def negative_log_likelihood_loss(ins, outs, ctx, *, reduction="mean", ignore_index=None):
    m, _c = loss_positions(ins, reduction, "NegativeLogLikelihoodLoss")
    return Work(vector_flops=nll_flops(m, reduction, present(ins, 2), ignore_index is not None),
                reads=_picked_reads(ins, m, whole_scores=False), kernel=f"reduction={reduction}")


@register("SoftmaxCrossEntropyLoss")
def softmax_cross_entropy_loss(ins, outs, ctx, *, reduction="mean", ignore_index=None):
    m, c = loss_positions(ins, reduction, "SoftmaxCrossEntropyLoss")
    n = m * c                   # scores: one log_softmax row of C per position
    shape = ins[0].dims()
    row = f"row={c}" if len(shape) == 2 else None   # C innermost only for [N, C]
    kernel = with_word(row, f"reduction={reduction}")
    return Work(vector_flops=4 * n + nll_flops(m, reduction, present(ins, 2), ignore_index is not None),
                transcendentals=n + m, functions=(("exp", n), ("log", m)), kernel=kernel,
                reads=_picked_reads(ins, m, whole_scores=True))
