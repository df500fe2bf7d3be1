"""Sampling and detection: RoiAlign, MaxRoiPool, GridSample, AffineGrid, Col2Im, DeformConv.

Counting conventions (vector_flops unless said otherwise):

- Interpolation: a linear tap set over d dims has 2^d taps (4^d cubic), ``2*taps - 1``
  multiply-adds per value.
- RoiAlign: per output value ``s*s`` bilinear samples (7 each) combined into the bin (1 each),
  averaged (1); an adaptive ``sampling_ratio=0`` depends on the box sizes and is counted as 2
  (noted).  MaxRoiPool: upper bound, every RoI spans the whole feature map.
- GridSample: taps per output value plus 2 ops per coordinate to unnormalize each grid point.
- DeformConv: Conv plus one bilinear sample (7) per input value it multiplies, and the
  modulation mask multiply (1).  Col2Im: one add per input element.
- AffineGrid (theta [N, r, r+1], output [N, *spatial, r]): each output point is theta times the
  homogeneous base coordinate (x, y[, z], 1): ``r*(r+1)`` multiply-accumulates, mac_flops
  ``2*N*prod(spatial)*r*(r+1)``; the base coordinates are one linspace per spatial axis, 2 ops
  (scale, shift) per value: ``2*sum(spatial)``.  The size input is shape-like.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx import linear
from analyzer.counting.rules.onnx.common import output, present


BILINEAR = 7  # 4 taps: 4 multiplies + 3 adds


@register("RoiAlign")
def roi_align(ins, outs, ctx, *, mode="avg", sampling_ratio=0):
    n = output(outs).numel()
    s = sampling_ratio if sampling_ratio > 0 else 2
    vec = n * s * s * (BILINEAR + 1) + (n if mode == "avg" else 0)
    note = "adaptive sampling_ratio depends on the boxes: counted as 2x2 samples per bin" \
        if sampling_ratio <= 0 else None
    return Work(vector_flops=vec, note=note, estimate=note is not None)


@register("MaxRoiPool")
def max_roi_pool(ins, outs, ctx, *, pooled_shape):
    x = ins[0].dims()
    window = prod(-(-d // p) for d, p in zip(x[2:], pooled_shape))
    return Work(vector_flops=output(outs).numel() * (window - 1),
                note="upper bound: every RoI spans the whole feature map", estimate=True)


_TAPS_PER_DIM = {"nearest": 1, "linear": 2, "bilinear": 2, "cubic": 4, "bicubic": 4}


@register("GridSample")
def grid_sample(ins, outs, ctx, *, mode="linear"):
    grid = ins[1]
    d = grid.dim(-1)
    locations = grid.numel() // d
    taps = _TAPS_PER_DIM.get(mode, 2) ** d
    n = output(outs).numel()
    return Work(vector_flops=(n * (2 * taps - 1) if taps > 1 else 0) + locations * 2 * d)


@register("Col2Im")
def col2im(ins, outs, ctx):
    return Work(vector_flops=ins[0].numel())


@register("DeformConv")
def deform_conv(ins, outs, ctx):
    # X, W, offset, B?, mask?
    x, w = ins[0], ins[1]
    bias = ins[3] if present(ins, 3) else None
    c = linear.conv((x, w, bias), (output(outs),), ctx)
    y = output(outs).dims()
    samples = (prod(y) // y[1]) * x.dim(1) * prod(w.dims()[2:])  # N*spatial_out * C_in * kernel
    vec = c.vector_flops + samples * (BILINEAR + (1 if present(ins, 4) else 0))
    return Work(mac_flops=c.mac_flops, vector_flops=vec)


@register("AffineGrid")
def affine_grid(ins, outs, ctx):
    y = output(outs).dims()             # [N, *spatial, r]
    n, spatial, r = y[0], y[1:-1], y[-1]
    return Work(mac_flops=2 * n * prod(spatial) * r * (r + 1), vector_flops=2 * sum(spatial))
