"""Constant folding of the small shape arithmetic that ONNX exporters emit.

Only values that are known and small are computed (Shape -> Gather -> Concat
chains, Range of constants, ...).  Weights are never read: a constant whose value
is not known (external data, large initializers, ConstantOfShape of a big shape)
is still *constant* — its spec comes from shape inference — but has no value.
"""

from __future__ import annotations

import numpy as np

# Values with more elements than this are never materialised: folding exists for shape
# arithmetic, whose tensors are tiny; weights are constants without values.
MAX_VALUE_ELEMENTS = 1 << 12

# Ops whose outputs are constant when all their inputs are constant. Quantize /
# Dequantize are deliberately absent: a runtime runs them on the weights it reads.
FOLDABLE = frozenset({
    "Constant", "ConstantOfShape", "Shape", "Size", "Identity", "Cast", "CastLike",
    "Gather", "GatherElements", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Flatten",
    "Slice", "Range", "Transpose", "Expand", "Tile",
    "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Floor", "Ceil", "Sqrt", "Mod",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where",
    "Max", "Min", "ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin",
})


def _axes(x, attrs, ins, idx=1):
    if len(ins) > idx and ins[idx] is not None:
        return [int(a) for a in np.asarray(ins[idx]).reshape(-1)]
    a = attrs.get("axes")
    return None if a is None else list(a)


def _slice(ins, attrs):
    x = ins[0]
    if len(ins) > 1:
        starts, ends = ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(len(starts))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    else:
        starts, ends = attrs["starts"], attrs["ends"]
        axes = attrs.get("axes", range(len(starts)))
        steps = [1] * len(starts)
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        sl[int(a)] = slice(int(s), int(e), int(st))
    return x[tuple(sl)]


def _reshape(ins, attrs):
    x, shape = ins[0], [int(s) for s in ins[1]]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _reduce(fn):
    def run(ins, attrs):
        axes = _axes(ins[0], attrs, ins)
        keep = bool(attrs.get("keepdims", 1))
        return fn(ins[0], axis=None if not axes else tuple(axes), keepdims=keep)
    return run


_EVAL = {
    "Identity": lambda i, a: i[0],
    "Gather": lambda i, a: np.take(i[0], i[1], axis=a.get("axis", 0)),
    "Concat": lambda i, a: np.concatenate([np.atleast_1d(v) if v.ndim == 0 else v for v in i], axis=a["axis"]),
    "Unsqueeze": lambda i, a: np.expand_dims(i[0], tuple(sorted(_axes(i[0], a, i)))),
    "Squeeze": lambda i, a: np.squeeze(i[0], axis=None if _axes(i[0], a, i) is None else tuple(_axes(i[0], a, i))),
    "Reshape": _reshape,
    "Flatten": lambda i, a: i[0].reshape(int(np.prod(i[0].shape[: a.get("axis", 1)])), -1),
    "Slice": _slice,
    "Range": lambda i, a: np.arange(i[0], i[1], i[2]).astype(np.asarray(i[0]).dtype),
    "Transpose": lambda i, a: np.transpose(i[0], a.get("perm")),
    "Expand": lambda i, a: i[0] * np.ones([int(s) for s in i[1]], dtype=i[0].dtype),
    "Tile": lambda i, a: np.tile(i[0], [int(s) for s in i[1]]),
    "Add": lambda i, a: i[0] + i[1],
    "Sub": lambda i, a: i[0] - i[1],
    "Mul": lambda i, a: i[0] * i[1],
    "Div": lambda i, a: (i[0] // i[1]) if np.issubdtype(i[0].dtype, np.integer) else i[0] / i[1],
    "Mod": lambda i, a: np.mod(i[0], i[1]),
    "Neg": lambda i, a: -i[0],
    "Abs": lambda i, a: np.abs(i[0]),
    "Floor": lambda i, a: np.floor(i[0]),
    "Ceil": lambda i, a: np.ceil(i[0]),
    "Sqrt": lambda i, a: np.sqrt(i[0]),
    "Equal": lambda i, a: np.equal(i[0], i[1]),
    "Less": lambda i, a: np.less(i[0], i[1]),
    "Greater": lambda i, a: np.greater(i[0], i[1]),
    "LessOrEqual": lambda i, a: np.less_equal(i[0], i[1]),
    "GreaterOrEqual": lambda i, a: np.greater_equal(i[0], i[1]),
    "Not": lambda i, a: np.logical_not(i[0]),
    "And": lambda i, a: np.logical_and(i[0], i[1]),
    "Or": lambda i, a: np.logical_or(i[0], i[1]),
    "Where": lambda i, a: np.where(i[0], i[1], i[2]),
    "Max": lambda i, a: np.maximum.reduce(i),
    "Min": lambda i, a: np.minimum.reduce(i),
    "ReduceProd": _reduce(np.prod),
    "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}


def evaluate(op: str, values: list, attrs: dict, out_dtype=None):
    """The value of a foldable node from known input values, or None if unknown/too big."""
    fn = _EVAL.get(op)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            v = np.asarray(fn(values, attrs))
    except Exception:  # an op we fold only partially (odd attrs): leave the value unknown
        return None
    if v.size > MAX_VALUE_ELEMENTS:
        return None
    if out_dtype is not None:
        v = v.astype(out_dtype, copy=False)
    return v
