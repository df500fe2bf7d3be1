"""Data movement: no arithmetic, only bytes.

Views (``analyzer.ir.ops``: io "view") only relabel a buffer (Reshape, Flatten, Squeeze,
Unsqueeze, Identity): a runtime moves no bytes for them.  "meta" ops read only shapes
(Shape, Size).  Copying ops read what they copy and write their outputs; where a
kernel reads only part of an input (Slice, Gather) the rule says so with ``reads``.
Inputs that only steer the shape (Reshape.shape, Slice starts/ends/axes/steps,
Pad.pads/axes, Expand.shape, Tile.repeats, ...) are shape-like (``analyzer.ir.ops``): never
params.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError


def _nothing(ins, outs, ctx):
    return Work()


@register("Reshape")
def reshape(ins, outs, ctx):
    x, y = ins[0], outs[0]
    if x.is_static and y is not None and y.is_static and x.numel() != y.numel():
        raise ShapeError(
            f"reshapes {x.numel()} elements into {list(y.shape)} ({y.numel()} elements); the model's "
            f"target shape is fixed (often a batch of 1 hard-coded at export), so it cannot run with "
            f"these input dims")
    return Work()


register("Squeeze", "Unsqueeze")(_nothing)
register("Flatten", "Identity")(_nothing)
register("Shape", "Size")(_nothing)

register("Concat", "DepthToSpace", "SpaceToDepth")(_nothing)


@register("Transpose")
def transpose(ins, outs, ctx, *, perm=None):
    # no arithmetic; the permutation is named (``Work.kernel`` "perm=0,2,1,3"; ONNX's default:
    # the dims reversed) for a runtime whose transpose is a strided view that a later kernel
    # may have to copy (``prediction.eager_plan``); the counts never depend on it
    rank = len(ins[0].shape) if ins and ins[0] is not None and ins[0].shape is not None else None
    p = list(perm) if perm is not None else (list(range(rank))[::-1] if rank is not None else None)
    return Work(kernel=None if p is None else "perm=" + ",".join(str(int(a)) for a in p))
register("Split")(_nothing)  # split sizes (opset >= 13) are shape-like
register("Expand", "Tile")(_nothing)
# Pad: pads (1), constant_value (2, a scalar setting, not a weight) and axes (3)
register("Pad")(_nothing)
register("ConstantOfShape")(_nothing)
register("Constant")(_nothing)


@register("Slice")
def slice_(ins, outs, ctx, *, axes=None):
    # a strided copy: reads exactly the elements it keeps.  The step per dim is named
    # (``Work.kernel`` "steps=1,2,1": constant steps, or opset < 10 which has none) for a
    # runtime whose positive-step slice is a strided view (``prediction.eager_layout``); the
    # counts never depend on it
    return Work(reads={0: outs[0].nbytes()}, kernel=_slice_steps(ins, ctx, axes))


def _slice_steps(ins, ctx, attr_axes) -> str | None:
    """"steps=s0,s1,...": each dim's step (1 where no axis names it); None where the rank, the
    axes or the steps are not constants."""
    rank = len(ins[0].shape) if ins and ins[0] is not None and ins[0].shape is not None else None
    if rank is None:
        return None
    vals = list(ctx.values or ())
    if ctx.opset < 10:          # starts/ends/axes are attributes; no steps
        axes, steps = attr_axes, None
    else:               # axes (3) and steps (4): absent, or a known constant
        given = [p < len(ins) and ins[p] is not None for p in (3, 4)]
        axes, steps = (vals[p] if g and p < len(vals) else None for g, p in zip(given, (3, 4)))
        if (given[0] and axes is None) or (given[1] and steps is None):
            return None
    try:
        n = len(steps.reshape(-1)) if steps is not None else None
        ax = [int(a) % rank for a in (axes.reshape(-1) if hasattr(axes, "reshape") else axes)] \
            if axes is not None else list(range(n if n is not None else rank))
        st = [int(s) for s in steps.reshape(-1)] if steps is not None else [1] * len(ax)
    except (AttributeError, TypeError, ValueError):
        return None
    per = [1] * rank
    for a, s in zip(ax, st):
        per[a] = s
    return "steps=" + ",".join(str(s) for s in per)


@register("Gather", "GatherElements", "GatherND")
def gather(ins, outs, ctx):
    # reads the gathered rows (= the output's elements) and the indices
    return Work(reads={0: outs[0].nbytes()})


@register("Range")
def range_(ins, outs, ctx):
    return Work(vector_flops=outs[0].numel())  # start + i * delta, one FMA-like op each


@register("Resize", "Upsample")
def resize(ins, outs, ctx, *, mode="nearest"):
    x, y = ins[0].dims(), outs[0].dims()
    n = prod(y)
    d = sum(1 for a, b in zip(x, y) if a != b)  # dims actually resized
    if mode == "linear":
        # 2^d - 1 lerps of (sub, mul, add) per output element
        return Work(vector_flops=n * 3 * (2 ** d - 1))
    if mode == "cubic":
        # a 4-tap filter per resized dim applied separably: 4 mul + 3 add per tap set
        return Work(vector_flops=n * 7 * sum(4 ** i for i in range(d)))
    return Work()  # nearest: a gather
