"""Evaluators for the constant folding of ``fold``: the value of one foldable node from its
known input values (``evaluate``), and its output's shape and dtype worked out *before*
evaluating (``output_shape``, ``output_dtype``), so that a value over ``MAX_VALUE_ELEMENTS``
elements is never materialised.
"""

from __future__ import annotations

from math import prod

import numpy as np
from onnx import numpy_helper

# Values with more elements than this are never materialised: folding exists for shape
# arithmetic, whose tensors are tiny; weights are constants without values.
MAX_VALUE_ELEMENTS = 1 << 12


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


def _clip(ins, attrs):
    """Clip: bounds as inputs 1 and 2 (opset >= 11, either omitted) or attributes (opset < 11)."""
    lo = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("min")
    hi = ins[2] if len(ins) > 2 and ins[2] is not None else attrs.get("max")
    x = ins[0]
    if lo is not None:
        x = np.maximum(x, np.asarray(lo, dtype=x.dtype))
    if hi is not None:
        x = np.minimum(x, np.asarray(hi, dtype=x.dtype))
    return x


def _reshape(ins, attrs):
    x, shape = ins[0], [int(s) for s in ins[1]]
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _one_hot(ins, attrs):
    # OneHot(indices, depth, values=[off, on]): a new axis of length depth (TorchScript builds
    # Tensor.repeat's repeats vector this way)
    idx, depth, vals = ins[0], int(np.asarray(ins[1]).reshape(-1)[0]), np.asarray(ins[2]).reshape(-1)
    idx = np.where(idx < 0, idx + depth, idx)
    hot = np.arange(depth) == np.asarray(idx)[..., None]
    out = np.where(hot, vals[1], vals[0])
    return np.moveaxis(out, -1, attrs.get("axis", -1))


def _reduce(fn):
    def run(ins, attrs):
        axes = _axes(ins[0], attrs, ins)
        keep = bool(attrs.get("keepdims", 1))
        return fn(ins[0], axis=None if not axes else tuple(axes), keepdims=keep)
    return run


_EVAL = {
    "Identity": lambda i, a: i[0],
    "Gather": lambda i, a: np.take(i[0], i[1], axis=a.get("axis", 0)),
    "GatherElements": lambda i, a: np.take_along_axis(i[0], i[1], axis=a.get("axis", 0)),
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
    "Clip": _clip,
    "Round": lambda i, a: np.round(i[0]),          # half to even, as ONNX Round
    "Sign": lambda i, a: np.sign(i[0]),
    "Reciprocal": lambda i, a: 1 / i[0],
    "Pow": lambda i, a: np.power(i[0], i[1]).astype(i[0].dtype),
    "Equal": lambda i, a: np.equal(i[0], i[1]),
    "Less": lambda i, a: np.less(i[0], i[1]),
    "Greater": lambda i, a: np.greater(i[0], i[1]),
    "LessOrEqual": lambda i, a: np.less_equal(i[0], i[1]),
    "GreaterOrEqual": lambda i, a: np.greater_equal(i[0], i[1]),
    "Not": lambda i, a: np.logical_not(i[0]),
    "And": lambda i, a: np.logical_and(i[0], i[1]),
    "Or": lambda i, a: np.logical_or(i[0], i[1]),
    "Xor": lambda i, a: np.logical_xor(i[0], i[1]),  # TorchScript's floor division at opsets 9-10
    "BitwiseAnd": lambda i, a: np.bitwise_and(i[0], i[1]),
    "BitwiseOr": lambda i, a: np.bitwise_or(i[0], i[1]),
    "BitwiseXor": lambda i, a: np.bitwise_xor(i[0], i[1]),
    "BitwiseNot": lambda i, a: np.invert(i[0]),
    "Where": lambda i, a: np.where(i[0], i[1], i[2]),
    "Max": lambda i, a: np.maximum.reduce(i),
    "Min": lambda i, a: np.minimum.reduce(i),
    "OneHot": lambda i, a: _one_hot(i, a),
    "ReduceProd": _reduce(np.prod),
    "ReduceSum": _reduce(np.sum),
    "ReduceMax": _reduce(np.max),
    "ReduceMin": _reduce(np.min),
}


def _range_count(vals) -> int:
    start, limit, delta = (np.asarray(v).reshape(-1)[0] for v in vals[:3])
    if delta == 0:
        return 0
    return max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)


def _broadcast(*shapes) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


def output_shape(op: str, vals: list, attrs: dict) -> tuple[int, ...] | None:
    """The output shape of a foldable node from its known input values, without evaluating
    it, for the ops whose output can be much bigger than their inputs (Range, Expand, Tile,
    ConstantOfShape, OneHot, broadcasting and gathering ops); None for the others, whose
    output is no bigger than an input (Reshape, Slice, Concat of values each under the cap)
    or which are not folded."""
    try:
        if op == "Range":
            return (_range_count(vals),)
        if op == "ConstantOfShape":
            return tuple(int(d) for d in np.asarray(vals[0]).reshape(-1))
        if op == "Expand":
            return _broadcast(np.shape(vals[0]), tuple(int(d) for d in np.asarray(vals[1]).reshape(-1)))
        if op == "Tile":
            reps = [int(r) for r in np.asarray(vals[1]).reshape(-1)]
            return tuple(d * r for d, r in zip(np.shape(vals[0]), reps))
        if op == "OneHot":
            depth = int(np.asarray(vals[1]).reshape(-1)[0])
            return (*np.shape(vals[0]), max(depth, 0))
        if op in ("Gather",):
            axis = attrs.get("axis", 0)
            shp = np.shape(vals[0])
            axis = axis + len(shp) if axis < 0 else axis
            return (*shp[:axis], *np.shape(vals[1]), *shp[axis + 1:])
        if op in _BROADCASTING:
            return _broadcast(*(np.shape(v) for v in vals if v is not None))
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return None


_BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Mod", "Pow", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitwiseAnd",
                           "BitwiseOr", "BitwiseXor", "Where", "Max", "Min"})
_BOOL_OUT = frozenset({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And",
                       "Or", "Xor"})


def output_dtype(op: str, vals: list, attrs: dict):
    """The numpy dtype of a foldable node's output (for an output too big to compute)."""
    if op in _BOOL_OUT:
        return np.dtype(np.bool_)
    if op == "ConstantOfShape":
        t = attrs.get("value")
        return numpy_helper.to_array(t).dtype if t is not None else np.dtype(np.float32)
    if op == "OneHot":
        return np.asarray(vals[2]).dtype
    if op == "Where":
        return np.asarray(vals[1]).dtype
    return np.asarray(vals[0]).dtype


def evaluate(op: str, values: list, attrs: dict, out_dtype=None, errors: list | None = None):
    """The value of a foldable node from known input values, or None if unknown/too big.
    ``errors`` receives why an evaluation failed (inputs the op rejects, e.g. a broadcast)."""
    fn = _EVAL.get(op)
    if fn is None:
        return None
    shape = output_shape(op, values, attrs)
    if shape is not None and prod(shape) > MAX_VALUE_ELEMENTS:
        return None  # decided before evaluating: a big value is never materialised
    try:
        with np.errstate(all="ignore"):
            v = np.asarray(fn(values, attrs))
    except Exception as e:  # an op we fold only partially (odd attrs): leave the value unknown
        if errors is not None:
            errors.append(f"{type(e).__name__}: {e}")
        return None
    if v.size > MAX_VALUE_ELEMENTS:
        return None
    if out_dtype is not None:
        v = v.astype(out_dtype, copy=False)
    return v
