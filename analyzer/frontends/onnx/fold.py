"""Constant folding of the small shape arithmetic that ONNX exporters emit.

Only values that are known and small are computed (Shape -> Gather -> Concat
chains, Range of constants, ...).  Weights are never read: a constant whose value
is not known (external data, large initializers, ConstantOfShape of a big shape)
is still *constant* — its spec comes from shape inference — but has no value.

The cap: no value of more than ``MAX_VALUE_ELEMENTS`` (4096) elements is ever computed, and
the size of a node's output is worked out from its inputs' shapes and values *before* it is
evaluated (``output_elements``), so a 200-byte model with ``Range(0, 1e7)`` or an ``Expand``
to 1e8 elements costs no memory for the value.  Such a node is still constant (its output is
a constant the runtime computes ahead of time, counted like a ConstantOfShape output); only its
value is unknown.  ``fold_graph(oversized=...)`` reports these outputs with their shape and
dtype: the frontend then keeps ONNX data propagation from materialising a long one.
"""

from __future__ import annotations

from math import prod

import numpy as np
from onnx import TensorProto, numpy_helper

from analyzer.ir.ops import facts
from analyzer.errors import GraphError
from analyzer.ir.graph import FLOAT_DTYPES, Node, TensorSpec
from analyzer.frontends.onnx.types import DTYPES

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
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
    "Max", "Min", "ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "OneHot",
})


# ops whose output can be much bigger than their inputs (``output_shape`` sizes them)
AMPLIFYING = frozenset({"Range", "ConstantOfShape", "Expand", "Tile", "OneHot"})


# a one-element initializer of these dtypes is structure (an index, a threshold compared
# against), never a weight: not a param, as an integer Constant node is not.  int8/int4/int32
# initializers stay weights (quantized weights and biases); bigger int64/bool initializers
# (position-id and causal-mask buffers) are counted as the file's data constants
STRUCTURE_DTYPES = frozenset({"int64", "uint64", "bool"})


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


_BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Mod", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "BitwiseAnd",
                           "BitwiseOr", "BitwiseXor", "Where", "Max", "Min"})
_BOOL_OUT = frozenset({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And",
                       "Or", "Xor"})


def _output_dtype(op: str, vals: list, attrs: dict):
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


# ----------------------------------------------------------------------------- the graph pass
# Initializer values up to this many elements are read (they carry shapes, axes, scalars).
_SMALL = 4096
SMALL_ELEMENTS = _SMALL  # no tensor above this many elements has its value read


_INT_TYPES = frozenset({TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.INT8,
                        TensorProto.UINT8})
_FLOAT_TYPES = frozenset({TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16})


def small_value(t: TensorProto):
    """The value of an in-file tensor that can steer shapes: integer tensors of up to
    ``_SMALL`` elements and float scalars/short vectors (Resize scales). Weights are
    never converted, and external data is never touched."""
    dt = t.data_type
    if dt in _INT_TYPES:
        limit = _SMALL
    elif dt in _FLOAT_TYPES:
        limit = 16
    else:
        return None
    if t.data_location == TensorProto.EXTERNAL or prod(t.dims) > limit:
        return None
    try:
        return numpy_helper.to_array(t)
    except Exception:
        return None


def constant_node_value(n: Node):
    """(spec, value) of a Constant node's output."""
    for name, a in n.attrs.items():
        if name == "value":
            return TensorSpec(tuple(a.dims), DTYPES.get(a.data_type, "?")), small_value(a)
        if name == "sparse_value":
            return TensorSpec(tuple(a.dims), DTYPES.get(a.values.data_type, "?")), None
        if name in ("value_float", "value_int", "value_floats", "value_ints"):
            is_f = name.startswith("value_float")
            v = np.asarray(a, dtype=np.float32 if is_f else np.int64)
            return TensorSpec(tuple(v.shape), "float32" if is_f else "int64"), v
        if name in ("value_string", "value_strings"):
            return TensorSpec(() if name == "value_string" else (len(a),), "string"), None
    raise GraphError(f"Constant node '{n.name}' has no value attribute")


# ----------------------------------------------------------------------------- the graph

NP_DTYPES = {"int64": np.int64, "int32": np.int32, "float32": np.float32, "float64": np.float64,
             "bool": np.bool_, "float16": np.float16, "int8": np.int8, "uint8": np.uint8,
             "int16": np.int16, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}


def _brief(v: np.ndarray) -> str:
    """A value for a message: small ones in full, others by shape."""
    return str(v.tolist()) if v.size <= 8 else f"a {v.dtype} array of shape {list(v.shape)}"


def fold_graph(nodes: list[Node], specs, initial: tuple[set[str], dict], lookup=None,
               failures: dict[str, str] | None = None, oversized: dict | None = None):
    """Mark constant tensors, compute the small values, and name the folded nodes.

    ``specs`` receives specs for folded values; ``lookup`` (default ``specs``) is where
    input specs are read from (a sub-graph reads through to its outer scope); ``failures``
    receives {output: why} for nodes whose evaluation on known values failed (an Expand that
    cannot broadcast: the model rejects the bound dims, or the evaluator is partial);
    ``oversized`` receives {output: (shape, numpy dtype)} for nodes whose known inputs give an
    output over ``MAX_VALUE_ELEMENTS`` elements, which is then not computed."""
    constants, values = initial
    lookup = specs if lookup is None else lookup
    folded: set[str] = set()
    sized: set[str] = set()  # folded tensors computed from the shapes of inputs / activations
    # folded tensor -> the file constants it is computed from (its params); a weight
    # transposed or gathered ahead of time is still the weight in the file
    sources: dict[str, tuple[str, ...]] = {}
    for k in constants:  # an int64 / bool scalar initializer: an index or a threshold
        s = lookup.get(k)
        if s is not None and s.dtype in STRUCTURE_DTYPES and s.is_static and s.numel() == 1:
            sources[k] = ()
    foldable = FOLDABLE
    for n in nodes:
        op = n.op
        if op not in foldable or n.domain:
            continue
        out0 = n.outputs[0] if n.outputs else ""
        if op == "Constant":
            spec, v = constant_node_value(n)
            if out0 not in specs:
                specs[out0] = spec
            constants.add(out0)
            if spec.dtype not in FLOAT_DTYPES:
                sources[out0] = ()  # an index, mask or shape constant: structure, not a weight
            if v is not None:
                values[out0] = v
            folded.add(n.name)
            continue
        if op in ("Shape", "Size"):
            s = lookup.get(n.inputs[0])
            if s is not None and s.is_static:
                shape = s.shape
            elif n.inputs[0] in values:  # folded earlier in this pass: its value has the shape
                shape = values[n.inputs[0]].shape
            else:
                continue
            if op == "Size":
                v = np.asarray(prod(shape), dtype=np.int64)
            else:
                v = np.asarray(shape, dtype=np.int64)[n.attrs.get("start", 0):n.attrs.get("end", None)]
            values[out0] = v
            constants.add(out0)
            folded.add(n.name)
            sources[out0] = ()  # derived from shapes, not from any constant's data
            if n.inputs[0] not in constants:
                sized.add(out0)  # the shape of an input or activation
            continue
        ins = [x for x in n.inputs if x]
        if not ins or not all(x in constants for x in ins):
            continue
        constants.update(o for o in n.outputs if o)
        folded.add(n.name)
        if sized and any(x in sized for x in ins):
            sized.update(o for o in n.outputs if o)
        if op == "ConstantOfShape":
            s0 = lookup.get(out0)
            if s0 is not None and s0.dtype not in FLOAT_DTYPES:
                sources[out0] = ()  # an integer/bool fill (a mask): structure, not a weight
            elif out0 in sized:  # zeros sized by an input (an RNN's h0, zeros_like): a buffer
                sources[out0] = ()  # the runtime fills, not a weight: never params
        else:  # a float ConstantOfShape output is itself the constant (a weight)
            skip = facts("", op).shape_inputs
            src = tuple(dict.fromkeys(
                leaf for i, x in enumerate(n.inputs) if x and i not in skip
                for leaf in sources.get(x, (x,))))
            for o in n.outputs:
                if o:
                    sources[o] = src
        if len(n.outputs) != 1 or not all(x in values for x in ins):
            continue
        attrs = n.attrs
        vals = [values[x] if x else None for x in n.inputs]
        big = output_shape(op, vals, attrs)
        if big is not None and prod(big) > MAX_VALUE_ELEMENTS:
            if oversized is not None:
                oversized[out0] = (big, _output_dtype(op, vals, attrs))
            continue  # constant, but its value is not computed (the module docstring's cap)
        if op == "ConstantOfShape":
            shape = [int(d) for d in vals[0]]
            if prod(shape) <= MAX_VALUE_ELEMENTS:
                t = attrs.get("value")
                fill = numpy_helper.to_array(t) if t is not None else np.zeros(1, np.float32)
                values[out0] = np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)
            continue
        if op in ("Cast", "CastLike"):
            to = attrs.get("to") if op == "Cast" else None
            dt = NP_DTYPES.get(DTYPES.get(to, "")) if to is not None else vals[1].dtype
            if dt is not None:
                values[out0] = vals[0].astype(dt)
            continue
        errs: list[str] | None = [] if failures is not None else None
        v = evaluate(op, vals, attrs, errors=errs)
        if v is not None:
            values[out0] = v
        elif errs:
            failures[out0] = (f"node '{n.name}' ({op}) fails on its known input values "
                              f"({', '.join(_brief(x) for x in vals if x is not None)}): "
                              f"{errs[0].strip()}")
    for k, v in values.items():
        s = lookup.get(k)
        if s is None or not s.is_static:
            specs[k] = TensorSpec(tuple(int(d) for d in v.shape), str(v.dtype))
    return constants, values, folded, sources
