"""Constant folding of the small shape arithmetic that ONNX exporters emit.

Only values that are known and small are computed (Shape -> Gather -> Concat
chains, Range of constants, ...).  Weights are never read: a constant whose value
is not known (external data, large initializers, ConstantOfShape of a big shape)
is still *constant* — its spec comes from shape inference — but has no value.

The cap: no value of more than ``MAX_VALUE_ELEMENTS`` (4096) elements is ever computed, and
the size of a node's output is worked out from its inputs' shapes and values *before* it is
evaluated (``evaluators.output_shape``), so a 200-byte model with ``Range(0, 1e7)`` or an ``Expand``
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
from analyzer.ir.graph import FLOAT_DTYPES, STRUCTURE_DTYPES, Node, TensorSpec
from analyzer.frontends.onnx.evaluators import (  # fold.evaluate, fold.output_shape
    MAX_VALUE_ELEMENTS,
    evaluate,
    output_dtype,
    output_shape,
)
from analyzer.frontends.onnx.types import DTYPES


# Ops whose outputs are constant when all their inputs are constant. Quantize /
# Dequantize are deliberately absent: a runtime runs them on the weights it reads.
FOLDABLE = frozenset({
    "Constant", "ConstantOfShape", "Shape", "Size", "Identity", "Cast", "CastLike",
    "Gather", "GatherElements", "Concat", "Unsqueeze", "Squeeze", "Reshape", "Flatten",
    "Slice", "Range", "Transpose", "Expand", "Tile",
    "Add", "Sub", "Mul", "Div", "Neg", "Abs", "Floor", "Ceil", "Sqrt", "Mod",
    "Clip", "Round", "Sign", "Reciprocal", "Pow",
    "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where",
    "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot",
    "Max", "Min", "ReduceProd", "ReduceSum", "ReduceMax", "ReduceMin", "OneHot",
})


# ops whose output can be much bigger than their inputs (``output_shape`` sizes them)
AMPLIFYING = frozenset({"Range", "ConstantOfShape", "Expand", "Tile", "OneHot"})


# a one-element initializer of a structure dtype (``ir.graph.STRUCTURE_DTYPES``: an index, a
# threshold compared against) is folded as a Constant node would be: no file constant behind it.
# Bigger ones stay the file's data constants (their bytes are weight bytes) and are left out of
# params where they are counted (``counting.traffic.new_params``)


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
            _fold_constant(n, out0, specs, constants, values, sources)
            folded.add(n.name)
            continue
        if op in ("Shape", "Size"):
            v = _shape_value(n, lookup, values)
            if v is None:
                continue
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
        _trace_sources(n, out0, lookup, sized, sources)
        if len(n.outputs) == 1 and all(x in values for x in ins):
            _compute_value(n, out0, values, failures, oversized)
    for k, v in values.items():
        s = lookup.get(k)
        if s is None or not s.is_static:
            specs[k] = TensorSpec(tuple(int(d) for d in v.shape), str(v.dtype))
    return constants, values, folded, sources


def _fold_constant(n: Node, out0: str, specs, constants: set[str], values: dict, sources: dict) -> None:
    """A Constant node: its spec, its value (where small enough) and, for an index, mask or shape
    constant, no weight sources."""
    spec, v = constant_node_value(n)
    if out0 not in specs:
        specs[out0] = spec
    constants.add(out0)
    if spec.dtype not in FLOAT_DTYPES:
        sources[out0] = ()  # an index, mask or shape constant: structure, not a weight
    if v is not None:
        values[out0] = v


def _shape_value(n: Node, lookup, values: dict) -> np.ndarray | None:
    """Shape (with its start/end) or Size of the input, when its shape is known; else None."""
    s = lookup.get(n.inputs[0])
    if s is not None and s.is_static:
        shape = s.shape
    elif n.inputs[0] in values:  # folded earlier in this pass: its value has the shape
        shape = values[n.inputs[0]].shape
    else:
        return None
    if n.op == "Size":
        return np.asarray(prod(shape), dtype=np.int64)
    return np.asarray(shape, dtype=np.int64)[n.attrs.get("start", 0):n.attrs.get("end", None)]


def _trace_sources(n: Node, out0: str, lookup, sized: set[str], sources: dict) -> None:
    """The file constants a folded node's outputs are computed from (its params)."""
    if n.op == "ConstantOfShape":
        s0 = lookup.get(out0)
        if s0 is not None and s0.dtype not in FLOAT_DTYPES:
            sources[out0] = ()  # an integer/bool fill (a mask): structure, not a weight
        elif out0 in sized:  # zeros sized by an input (an RNN's h0, zeros_like): a buffer
            sources[out0] = ()  # the runtime fills, not a weight: never params
        return  # a float ConstantOfShape output is itself the constant (a weight)
    skip = facts("", n.op).shape_inputs
    src = tuple(dict.fromkeys(
        leaf for i, x in enumerate(n.inputs) if x and i not in skip
        for leaf in sources.get(x, (x,))))
    for o in n.outputs:
        if o:
            sources[o] = src


def _compute_value(n: Node, out0: str, values: dict, failures: dict[str, str] | None,
                   oversized: dict | None) -> None:
    """The value of a one-output node whose inputs all have values, unless it would exceed
    ``MAX_VALUE_ELEMENTS`` (then its shape and dtype go to ``oversized``); an evaluation that
    fails on known values is explained in ``failures``."""
    op, attrs = n.op, n.attrs
    vals = [values[x] if x else None for x in n.inputs]
    big = output_shape(op, vals, attrs)
    if big is not None and prod(big) > MAX_VALUE_ELEMENTS:
        if oversized is not None:
            oversized[out0] = (big, output_dtype(op, vals, attrs))
        return  # constant, but its value is not computed (the module docstring's cap)
    if op == "ConstantOfShape":
        shape = [int(d) for d in vals[0]]
        if prod(shape) <= MAX_VALUE_ELEMENTS:
            t = attrs.get("value")
            fill = numpy_helper.to_array(t) if t is not None else np.zeros(1, np.float32)
            values[out0] = np.full(shape, fill.reshape(-1)[0], dtype=fill.dtype)
        return
    if op in ("Cast", "CastLike"):
        to = attrs.get("to") if op == "Cast" else None
        dt = NP_DTYPES.get(DTYPES.get(to, "")) if to is not None else vals[1].dtype
        if dt is not None:
            values[out0] = vals[0].astype(dt)
        return
    errs: list[str] | None = [] if failures is not None else None
    v = evaluate(op, vals, attrs, errors=errs)
    if v is not None:
        values[out0] = v
    elif errs:
        failures[out0] = (f"node '{n.name}' ({op}) fails on its known input values "
                          f"({', '.join(_brief(x) for x in vals if x is not None)}): "
                          f"{errs[0].strip()}")
