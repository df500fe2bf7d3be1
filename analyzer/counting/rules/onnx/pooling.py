"""Pooling. Window ops are counted per output element over the full kernel window
(padded positions included, as a kernel evaluates them)."""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register


@register("MaxPool")
def max_pool(ins, outs, ctx, *, kernel_shape):
    window = prod(kernel_shape)
    # window-1 compares per output element; the optional Indices output is written too
    return Work(vector_flops=outs[0].numel() * (window - 1))


@register("AveragePool")
def average_pool(ins, outs, ctx, *, kernel_shape):
    window = prod(kernel_shape)
    return Work(vector_flops=outs[0].numel() * window)  # window-1 adds + 1 divide


@register("LpPool")
def lp_pool(ins, outs, ctx, *, kernel_shape):  # any p: the same abs, pow and root
    window = prod(kernel_shape)
    n = outs[0].numel()
    # |x|^p per window element (abs + pow), window-1 adds, then the 1/p root
    return Work(vector_flops=n * (2 * window - 1), transcendentals=n * (window + 1))


@register("GlobalAveragePool")
def global_average_pool(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), outs[0].numel()
    return Work(vector_flops=(n_in - n_out) + n_out)


@register("GlobalMaxPool")
def global_max_pool(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel() - outs[0].numel())


@register("GlobalLpPool")
def global_lp_pool(ins, outs, ctx):
    n_in, n_out = ins[0].numel(), outs[0].numel()
    return Work(vector_flops=n_in + (n_in - n_out), transcendentals=n_in + n_out)
