"""Binding what the caller fixes before inference: input shapes (``inputs=``), symbolic dims
(``dims=``) and graph inputs made constants (``values=``)."""

from __future__ import annotations

import re
from typing import Any, Mapping

import numpy as np
import onnx
from onnx import numpy_helper

from analyzer.errors import Hint, InputSpecError, ShapeError
from analyzer.frontends.onnx import fold
from analyzer.frontends.onnx.types import DTYPES
from analyzer.ir import dims as dim_expr
from analyzer.ir.graph import DTYPE_BITS, SPEC_DTYPES


_BRACKETED = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)?\[(.*)\]$")
_SYMBOL = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\-]*$")


def parse_spec_text(text: str, name: str = "") -> tuple[str | None, tuple[int | str, ...]]:
    """An input's shape text -> (dtype or None, dims).

    Forms: ``1x3x224x224`` (x-separated), ``batch,3,224,224`` (comma-separated: needed for a
    symbol that contains an x), ``[1,3,224,224]`` and ``f32[1,3,224,224]`` (a dtype, checked
    against the model's).  A part is a non-negative integer or a symbol (letters, digits and
    ``_ . : -``, not starting with a digit), kept as written: ``Batch`` and ``batch`` differ."""
    where = f"shape '{text}' for input '{name}'"
    body, dtype = text.strip(), None
    m = _BRACKETED.match(body)
    if m:
        body = m.group(2).strip()
        if m.group(1):
            dt = m.group(1).lower()
            dtype = SPEC_DTYPES.get(dt, dt if dt in DTYPE_BITS else None)
            if dtype is None:
                raise InputSpecError(f"bad {where}: unknown dtype '{m.group(1)}'; use one of "
                                     f"{', '.join(SPEC_DTYPES)}")
    parts = [p.strip() for p in (body.split(",") if "," in body else re.split(r"[xX]", body))]
    if not body or any(not p for p in parts):
        raise InputSpecError(f"bad {where}: expected e.g. 1x3x224x224 or batch,3,224,224")
    out: list[int | str] = []
    for p in parts:
        if p.lstrip("-").isdigit():
            if int(p) < 0:
                raise InputSpecError(f"negative dim {int(p)} in {where}")
            out.append(int(p))
        elif _SYMBOL.match(p):
            out.append(p)
        else:
            raise InputSpecError(f"bad dim '{p}' in {where}: a dim is an integer or a symbol name "
                                 "(e.g. 1x3x224x224, batch,3,224,224 or f32[1,3,224,224])")
    return dtype, tuple(out)


def parse_shape(text: str, name: str = "") -> tuple[int | str, ...]:
    """'1x3x224x224' -> (1, 3, 224, 224); a non-numeric part stays a symbol (the dtype of a
    ``f32[...]`` form is dropped: :func:`parse_spec_text` keeps it)."""
    return parse_spec_text(text, name)[1]


def declared_dims(vi: onnx.ValueInfoProto) -> list:
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return []
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in t.shape.dim]


_BATCH_NAMES = frozenset({"b", "n", "bs"})


def _batch_advice(name: str, real) -> str:
    """For a batch-like dim name on inputs whose dim 0 the file fixes: how the batch of such
    a (static) export changes; else ''."""
    if "batch" not in name.lower() and name.lower() not in _BATCH_NAMES:
        return ""
    fixed = [vi for vi in real if len(vi.type.tensor_type.shape.dim)
             and vi.type.tensor_type.shape.dim[0].HasField("dim_value")]
    if not fixed:
        return ""
    was = fixed[0].type.tensor_type.shape.dim[0].dim_value
    return (f"; the inputs' dim 0 is fixed (a static export at batch {was}): set the batch with "
            "{batch}, which also rewrites the shapes the export fixed")


def _set_input_shapes(by_name: dict, inputs: Mapping[str, Any]) -> dict[str, int]:
    """Write each ``inputs`` shape into its graph input; returns the symbols those shapes bind
    (an input declared ``[batch, 784]`` given ``8x784`` binds batch = 8)."""
    bound: dict[str, int] = {}
    for name, shape in (inputs or {}).items():
        if name not in by_name:
            raise InputSpecError(
                f"{{inputs}} names '{name}', but the model's inputs are: "
                f"{', '.join(by_name) or 'none'}", hints=(Hint("inputs"),))
        t = by_name[name].type.tensor_type
        if isinstance(shape, str):
            dtype, shape = parse_spec_text(shape, name)
            declared = DTYPES.get(t.elem_type)
            if dtype is not None and declared is not None and dtype != declared:
                raise InputSpecError(
                    f"input '{name}' is {declared} in the model, but {{inputs}} gives {dtype}: an "
                    "ONNX input's dtype is the file's (give the dims only, e.g. 1x3x224x224)",
                    hints=(Hint("inputs"),))
        shape = tuple(shape)
        old = t.shape.dim
        if len(old) and len(old) != len(shape):
            raise InputSpecError(
                f"input '{name}' has rank {len(old)} {declared_dims(by_name[name])}, "
                f"but {{inputs}} gives {len(shape)} dims {list(shape)}", hints=(Hint("inputs"),))
        for d_old, v in zip(old, shape):
            if isinstance(v, int) and d_old.HasField("dim_param") and d_old.dim_param:
                bound[d_old.dim_param] = v
        t.shape.ClearField("dim")
        for v in shape:
            d = t.shape.dim.add()
            if isinstance(v, int):
                if v < 0:
                    raise InputSpecError(f"negative dim {v} for input '{name}'")
                d.dim_value = v
            else:
                d.dim_param = v
    return bound


def bind_inputs(m: onnx.ModelProto, inputs: Mapping[str, Any] | None,
                dims: Mapping[str, int] | None) -> dict[str, int]:
    """Write user shapes and dim values into the graph inputs before inference.

    Returns the dims that were bound (for the report)."""
    g = m.graph
    for vi in g.input:
        for i, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value == -1:
                # paddle2onnx and others write -1 for "any": a symbolic dim, which inputs= or
                # dims= binds like any other (named after the input and axis)
                d.dim_param = f"{vi.name}_dim{i}"
            elif d.HasField("dim_value") and d.dim_value < 0:
                raise ShapeError(f"input '{vi.name}' has a negative dim {d.dim_value} at axis {i}")
    if not inputs and not dims:
        return {}
    init_names = {t.name for t in g.initializer}
    real = [vi for vi in g.input if vi.name not in init_names]
    by_name = {vi.name: vi for vi in real}
    bound = _set_input_shapes(by_name, inputs or {})
    if bound:  # a symbol bound through one input means that value in the others too
        dims = {**bound, **(dims or {})}
    if dims:
        known = {d.dim_param for vi in real for d in vi.type.tensor_type.shape.dim if d.dim_param}
        known |= set(bound)
        for k, v in dims.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise InputSpecError("{dims}: the value must be a non-negative integer",
                                     hints=(Hint("dims", {k: v}),))
            if k not in known:
                advice = _batch_advice(k, real)
                raise InputSpecError(
                    f"{{dims}} names '{k}', but the model's symbolic dims are: "
                    f"{', '.join(sorted(known)) or 'none (all input dims are fixed)'}" + advice,
                    hints=(Hint("dims"), *((Hint("batch", v),) if advice else ())))
        for vi in real:
            for d in vi.type.tensor_type.shape.dim:
                if d.dim_param in dims:
                    v = dims[d.dim_param]
                    bound[d.dim_param] = v
                    d.dim_value = v
    if bound or inputs:
        # The file's value_info was written for the shapes it was traced with (an exporter
        # tracing at batch 1 declares every intermediate with batch 1): for standard ops ONNX
        # infers the outputs again, so their declarations go; the declarations of ops it
        # cannot type (onnxruntime contrib, custom domains) stay, with the bound symbols.
        std = {o for n in g.node if n.domain in ("", "ai.onnx") for o in n.output}
        keep = [vi for vi in g.value_info if vi.name not in std]
        if len(keep) != len(g.value_info):
            del g.value_info[:]
            g.value_info.extend(keep)
    if bound:  # a bound symbol means that value everywhere: in the file's own value_info too
        bind_declared(g, bound)  # (an exporter's declarations of ops inference cannot type)
    return bound


def bind_values(m: onnx.ModelProto, values: Mapping[str, Any] | None) -> dict[str, list]:
    """Make graph inputs constants with the given values (``{"axes": [1]}``), for inputs that
    decide shapes (reduce axes, a window length, a Loop's trip count, GQA's total length):
    each becomes an initializer of its declared dtype and shape (rank 0: a scalar).  Returns
    {name: values as given} for the report."""
    if not values:
        return {}
    g = m.graph
    inits = {t.name for t in g.initializer}
    real = {vi.name: vi for vi in g.input if vi.name not in inits}
    out: dict[str, list] = {}
    for name, v in values.items():
        vi = real.get(name)
        if vi is None:
            raise InputSpecError(f"{{values}} names '{name}', but the model's inputs are: "
                                 f"{', '.join(real) or 'none'}", hints=(Hint("values"),))
        t = vi.type.tensor_type
        dtype = fold.NP_DTYPES.get(DTYPES.get(t.elem_type, ""))
        if dtype is None:
            raise InputSpecError(f"{{values}}: input '{name}' is {DTYPES.get(t.elem_type, '?')}, "
                                 f"not a numeric tensor", hints=(Hint("values", name),))
        flat = [v] if isinstance(v, (int, float)) else list(v)
        try:
            arr = np.asarray(flat, dtype=dtype)
        except (TypeError, ValueError):
            raise InputSpecError(f"{{values}}: not {np.dtype(dtype).name} values",
                                 hints=(Hint("values", {name: flat}),)) from None
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        if t.HasField("shape") and not dims:          # a scalar input
            if arr.size != 1:
                raise InputSpecError(f"{{values}}: the input is a scalar, but {arr.size} values "
                                     f"were given", hints=(Hint("values", name),))
            arr = arr.reshape(())
        elif t.HasField("shape") and None not in dims:
            if arr.size != int(np.prod(dims)):
                raise InputSpecError(f"{{values}}: the input has shape {dims} "
                                     f"({int(np.prod(dims))} values), but {arr.size} were given",
                                     hints=(Hint("values", name),))
            arr = arr.reshape(dims)
        g.initializer.append(numpy_helper.from_array(arr, name=name))
        keep = [x for x in g.input if x.name != name]
        del g.input[:]
        g.input.extend(keep)
        out[name] = arr.reshape(-1).tolist()
    return out


def bind_declared(g: onnx.GraphProto, bound: Mapping[str, int]) -> None:
    for vi in (*g.value_info, *g.output):
        for d in vi.type.tensor_type.shape.dim:
            p = d.dim_param
            if not p:
                continue
            if p in bound:
                d.dim_value = bound[p]
            elif dim_expr.is_expression(p):  # dynamo's 'Min(512, s50)', '4*s77'
                v = dim_expr.evaluate(p, bound)
                if v is not None:
                    d.dim_value = v
                else:  # not evaluable: leave it to inference rather than keep a false symbol
                    d.ClearField("dim_param")
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                bind_declared(a.g, bound)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    bind_declared(sg, bound)
