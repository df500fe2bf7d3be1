"""Selection, scatter, scans and index-driven copies: TopK, NonZero, Unique, Compress, OneHot,
Trilu, NonMaxSuppression, Scatter*, TensorScatter, CumSum/CumProd, MaxUnpool, ReverseSequence,
EyeLike.

Counting conventions (vector_flops; ``lg(x)`` is ceil(log2 x)):

- TopK: a heap of k per row: ``L*lg(k)`` compares per row of length L (``L-1`` for k = 1), plus
  ``k*lg(k)`` to emit the heap sorted.  Unique: a sort (``n*lg(n)``) and an adjacent compare (n).
- NonZero / Compress / Unique / NonMaxSuppression: the output size depends on the data; when
  shape inference left it open, the bytes written are the upper bound (every element selected)
  and the node says so.
- One compare/select per element: NonZero (input), OneHot and Trilu (output), Compress (condition).
- Scatter*: copy data to the output (bytes only); a ``reduction`` is 1 op per update element.
  TensorScatter updates a cache in place: it writes only the update.
- CumSum/CumProd: 1 op per element (the scan axis is an input whose value a rule cannot see).
- NonMaxSuppression per (batch, class): a score sort (``N*lg(N)``), box areas (3 per box), the
  score threshold (1 per box) and, upper bound, an IoU test for every pair (13 ops).
- MaxUnpool, ReverseSequence, EyeLike: copies and fills, bytes only.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import axis_index, lg, output, upper_bound_writes

# ----------------------------------------------------------------------------- selection


@register("TopK")
def topk(ins, outs, ctx, *, axis=-1, sorted=1):
    x = ins[0]
    shape = x.dims()
    ax = axis_index(axis, len(shape))
    length = shape[ax]
    k = output(outs).dim(ax)
    rows = x.numel() // length if length else 0
    per_row = length - 1 if k <= 1 else length * lg(k)
    if sorted and k > 1:
        per_row += k * lg(k)
    return Work(vector_flops=rows * per_row)


@register("NonZero")
def nonzero(ins, outs, ctx):
    x = ins[0]
    n = x.numel()
    writes, note = upper_bound_writes(outs, lambda i: len(x.dims()) * n * 8)
    return Work(vector_flops=n, writes=writes, note=note, estimate=note is not None)


@register("Unique")
def unique(ins, outs, ctx):
    x = ins[0]
    n = x.numel()
    writes, note = upper_bound_writes(outs, lambda i: x.nbytes() if i == 0 else n * 8)
    return Work(vector_flops=n * lg(n) + n, writes=writes, note=note, estimate=note is not None)


@register("Compress")
def compress(ins, outs, ctx):
    x, cond = ins[0], ins[1]
    writes, note = upper_bound_writes(outs, lambda i: x.nbytes())
    return Work(vector_flops=cond.numel(), writes=writes, note=note, estimate=note is not None)


@register("OneHot")
def one_hot(ins, outs, ctx):
    return Work(vector_flops=output(outs).numel())


@register("Trilu")
def trilu(ins, outs, ctx):
    return Work(vector_flops=output(outs).numel())


@register("NonMaxSuppression")
def non_max_suppression(ins, outs, ctx):
    scores = ins[1]
    b, c, n = scores.dims()
    per_class = n * lg(n) + 3 * n + n + 13 * (n * (n - 1) // 2)
    writes, note = upper_bound_writes(outs, lambda i: b * c * n * 3 * 8)
    return Work(vector_flops=b * c * per_class, writes=writes,
                note="; ".join(x for x in ("IoU counted for every box pair (upper bound)", note) if x),
                estimate=True)


# ----------------------------------------------------------------------------- scatter / scan


@register("ScatterElements", "ScatterND")
def scatter(ins, outs, ctx, *, reduction="none"):
    updates = ins[2]
    return Work(vector_flops=updates.numel() if reduction != "none" else 0)


@register("Scatter")
def scatter_v9(ins, outs, ctx):
    return Work()  # the deprecated ScatterElements without a reduction: bytes only


@register("TensorScatter")
def tensor_scatter(ins, outs, ctx):
    update = ins[1]
    return Work(reads={0: 0}, writes=update.nbytes(), note="in-place cache update: writes the update only")


@register("CumSum", "CumProd")
def cumulative(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel())


# ----------------------------------------------------------------------------- copies and fills


@register("MaxUnpool")
def max_unpool(ins, outs, ctx):
    return Work()  # zero-fill and scatter: bytes only


@register("ReverseSequence")
def reverse_sequence(ins, outs, ctx):
    return Work()  # a permuted copy


@register("EyeLike")
def eye_like(ins, outs, ctx):
    return Work()  # a fill: writes its output
