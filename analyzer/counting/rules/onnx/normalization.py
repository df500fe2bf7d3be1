"""Normalization and softmax.

Counted as a kernel evaluates them in inference, per element and per normalized
group (a row, a channel, a group):
- mean-and-variance normalizations (LayerNorm, InstanceNorm, GroupNorm): per element
  sum (1), subtract mean (1), square (1), sum (1), multiply by 1/std (1), scale (1),
  bias (1, when present); per group: divide for the mean (1) and the variance (1),
  add eps (1), reciprocal (1), and one sqrt (transcendental).
- BatchNormalization (inference, running statistics): per element subtract mean,
  multiply by 1/std, scale, add bias (4); per channel add eps, reciprocal (2) and sqrt.
- RMS normalizations (RMSNormalization, ORT's SimplifiedLayerNormalization): per element
  square (1), sum (1), multiply by 1/rms (1), scale (1); per normalized row: divide for the
  mean square (1), add eps (1), reciprocal (1), and one sqrt (transcendental).
- Softmax: per element max (1), subtract (1), exp (T), sum (1), divide (1).
  LogSoftmax: per element max, subtract, exp (T), sum, subtract (4 + T); per row one log.
- LpNormalization: |x| or x² (1), sum (1), divide (1) per element, a sqrt per row for p = 2.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import axis_index


def _axis_split(shape: tuple[int, ...], axis: int) -> tuple[int, int]:
    """(outer, inner) element counts around ``axis`` (inner includes axis..end)."""
    axis = axis + len(shape) if axis < 0 else axis
    return prod(shape[:axis]), prod(shape[axis:])


def meanvar_work(n: int, groups: int, has_bias: bool) -> Work:
    per_elem = 6 + (1 if has_bias else 0)
    return Work(vector_flops=per_elem * n + 4 * groups, transcendentals=groups, functions=(("rsqrt", groups),))


def _present(ins, i: int) -> bool:
    return len(ins) > i and ins[i] is not None


@register("LayerNormalization")
def layer_norm(ins, outs, ctx, *, axis=-1):
    shape = ins[0].dims()
    rows, _inner = _axis_split(shape, axis)
    # optional outputs Mean and InvStdDev are written too (default writes cover them)
    return meanvar_work(prod(shape), rows, _present(ins, 2))


def rms_work(n: int, rows: int) -> Work:
    return Work(vector_flops=4 * n + 3 * rows, transcendentals=rows, functions=(("rsqrt", rows),))


@register("RMSNormalization")
def rms_norm(ins, outs, ctx, *, axis=-1):
    shape = ins[0].dims()
    rows, _inner = _axis_split(shape, axis)
    return rms_work(prod(shape), rows)


@register("InstanceNormalization")
def instance_norm(ins, outs, ctx):
    shape = ins[0].dims()
    return meanvar_work(prod(shape), shape[0] * shape[1], True)


@register("GroupNormalization")
def group_norm(ins, outs, ctx, *, num_groups):
    shape = ins[0].dims()
    return meanvar_work(prod(shape), shape[0] * num_groups, True)


@register("BatchNormalization")
def batch_norm(ins, outs, ctx, *, training_mode=0):
    shape = ins[0].dims()
    n = prod(shape)
    c = shape[1] if len(shape) > 1 else 1
    # opsets 9-13 have no training_mode attribute: asking for the statistics outputs is the
    # training form (TorchScript's F.batch_norm(training=True), e.g. weight standardization)
    if training_mode or (ctx.opset < 14 and any(o is not None for o in outs[1:])):
        # batch statistics first: per element sum, subtract, square, sum; per channel 2 divides
        return Work(vector_flops=4 * n + 4 * n + 4 * c, transcendentals=c,
                    note="training_mode: batch statistics computed")
    return Work(vector_flops=4 * n + 2 * c, transcendentals=c)


@register("LRN")
def lrn(ins, outs, ctx, *, size):
    n = ins[0].numel()
    # square (1), window sum (size-1), * alpha/size (1), + bias (1), divide (1); pow beta (T)
    return Work(vector_flops=n * (size + 3), transcendentals=n)


def softmax_rows(shape, axis, opset: int) -> tuple[int, str | None]:
    """(rows, ``Work.kernel``) of a (Log)Softmax over ``shape``: opsets 1-12 flatten to 2-D at
    ``axis`` (default 1), rows = prod(shape[:axis]); opset >= 13 normalizes one axis (default -1),
    rows = elements / that axis' length.  The kernel word ``row=<length>`` names the length of a
    row that is contiguous (the normalized dims are the innermost: the row-wise kernels GPU
    libraries pick by that length); None where the axis is not the innermost."""
    n = prod(shape)
    if opset < 13:
        ax = 1 if axis is None else axis
        ax = ax + len(shape) if ax < 0 else ax
        rows = prod(shape[:ax])
        return rows, f"row={n // rows}" if rows else None
    ax = -1 if axis is None else axis
    ax = ax + len(shape) if ax < 0 else ax
    rows = n // shape[ax] if shape[ax] else 0
    return rows, f"row={shape[ax]}" if ax == len(shape) - 1 else None


@register("Softmax")
def softmax(ins, outs, ctx, *, axis=None):
    n = ins[0].numel()
    _, kernel = softmax_rows(ins[0].dims(), axis, ctx.opset)
    return Work(vector_flops=4 * n, transcendentals=n, kernel=kernel, functions=(("exp", n),))


@register("LogSoftmax")
def log_softmax(ins, outs, ctx, *, axis=None):
    shape = ins[0].dims()
    n = prod(shape)
    rows, kernel = softmax_rows(shape, axis, ctx.opset)
    return Work(vector_flops=4 * n, transcendentals=n + rows, kernel=kernel,
                functions=(("exp", n), ("log", rows)))


@register("Hardmax")
def hardmax(ins, outs, ctx):
    n = ins[0].numel()
    return Work(vector_flops=2 * n)  # argmax compare + one-hot write select


@register("LpNormalization")
def lp_normalization(ins, outs, ctx, *, axis=-1, p=2):
    shape = ins[0].dims()
    n = prod(shape)
    length = shape[axis_index(axis, len(shape))]
    rows = n // length if length else 0
    return Work(vector_flops=3 * n, transcendentals=rows if p == 2 else 0,
                functions=(("sqrt", rows if p == 2 else 0),))
