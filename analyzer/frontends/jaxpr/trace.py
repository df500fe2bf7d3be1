"""Tracing a Python function to a ``ClosedJaxpr`` on abstract arguments (see ``jaxpr.py``):
arguments become ``jax.ShapeDtypeStruct``s, the ones in ``params_argnums`` are remembered as
weights, and argument names come from the function's signature."""

from __future__ import annotations

import inspect
import operator
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from analyzer.errors import Hint, InputSpecError, ModelLoadError
from analyzer.ir.graph import TensorSpec
from analyzer.frontends.jaxpr.inputs import ir_dtype
from analyzer.frontends.jaxpr.scopes import module_scopes


def _dim(d: Any) -> int | str:
    """An int dim (numpy ints too); a symbolic (shape-polymorphic) dim stays a symbol."""
    try:
        return operator.index(d)
    except TypeError:
        return str(d)


def spec_of_aval(aval: Any) -> TensorSpec:
    """A JAX abstract value -> ``TensorSpec``. Keys count as their uint32 key data, refs as their
    contents, tokens as nothing."""
    import jax

    inner = getattr(aval, "inner_aval", None)   # state refs (pallas kernels)
    if inner is not None:
        aval = inner
    shape = getattr(aval, "shape", None)
    dtype = getattr(aval, "dtype", None)
    if shape is None or dtype is None:            # tokens and other non-array values
        return TensorSpec((0,), "bool")
    dims = tuple(_dim(d) for d in shape)
    if jax.dtypes.issubdtype(dtype, jax.dtypes.extended):
        impl = getattr(dtype, "_impl", None)
        key_shape = tuple(getattr(impl, "key_shape", ()))
        return TensorSpec(dims + key_shape, "uint32")
    return TensorSpec(dims, ir_dtype(dtype))



def _is_array_leaf(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _abstract(x: Any) -> Any:
    import jax

    if isinstance(x, jax.ShapeDtypeStruct):
        return x
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def _arg_names(fn: Callable, n: int) -> list[str]:
    try:
        ps = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        ps = []
    return [ps[i].name if i < len(ps) else f"arg{i}" for i in range(n)]


def params_indices(fn: Callable, params_argnums: Any, n_args: int) -> set[int]:
    """The positions of the args ``params_argnums`` names (ints, negative from the end, or
    parameter names of ``fn``)."""
    if params_argnums is None:
        return set()
    items = (params_argnums,) if isinstance(params_argnums, (int, str)) else tuple(params_argnums)
    names = _arg_names(fn, n_args) if any(isinstance(i, str) for i in items) else []
    out: set[int] = set()
    for i in items:
        if isinstance(i, str):
            if i not in names:
                raise InputSpecError(f"{{params_argnums}}: '{i}' is not a positional parameter of "
                                     f"{getattr(fn, '__name__', 'the function')}({', '.join(names)})",
                                     hints=(Hint("params_argnums"),))
            out.add(names.index(i))
        else:
            j = int(i) + n_args if int(i) < 0 else int(i)
            if not 0 <= j < n_args:
                raise InputSpecError(f"{{params_argnums}}: {i} is out of range for {n_args} argument(s)",
                                     hints=(Hint("params_argnums"),))
            out.add(j)
    return out


@dataclass
class Traced:
    """A traced program: the closed jaxpr, one display name per flat input, and which are weights."""

    closed: Any
    in_names: list[str]
    in_params: list[bool]
    name: str
    inputs: dict[str, list]


def trace(fn: Any, args: Sequence[Any], kwargs: Mapping[str, Any], *,
          params_argnums: Any = None) -> Traced:
    """Trace ``fn(*args, **kwargs)`` abstractly. Args that hold no array are static (bound as
    they are); array leaves are traced from their shape and dtype only."""
    import jax
    from jax.extend.core import ClosedJaxpr, Jaxpr

    if isinstance(fn, (ClosedJaxpr, Jaxpr)):
        closed = fn if isinstance(fn, ClosedJaxpr) else ClosedJaxpr(fn, ())
        n = len(closed.jaxpr.invars)
        weights = params_indices(lambda *a: None, params_argnums, n)
        names = [f"in{i}" for i in range(n)]
        inputs = {nm: list(spec_of_aval(v.aval).shape or ()) for nm, v in zip(names, closed.jaxpr.invars)}
        return Traced(closed, names, [i in weights for i in range(n)], "<jaxpr>", inputs)
    if not callable(fn):
        raise ModelLoadError(f"cannot analyse a {type(fn).__name__}: pass a function or a ClosedJaxpr")

    weights = params_indices(fn, params_argnums, len(args))
    arg_names = _arg_names(fn, len(args))
    is_dyn = [any(_is_array_leaf(leaf) for leaf in jax.tree_util.tree_leaves(a)) for a in args]
    kw_dyn = {k: any(_is_array_leaf(leaf) for leaf in jax.tree_util.tree_leaves(v))
              for k, v in kwargs.items()}
    dyn_args = [jax.tree_util.tree_map(_abstract, a) for a, d in zip(args, is_dyn) if d]
    dyn_kwargs = {k: jax.tree_util.tree_map(_abstract, v) for k, v in kwargs.items() if kw_dyn[k]}

    def wrapped(dyn, dkw):
        it = iter(dyn)
        full = [next(it) if d else a for a, d in zip(args, is_dyn)]
        kw = {k: (dkw[k] if kw_dyn[k] else v) for k, v in kwargs.items()}
        return fn(*full, **kw)

    base = getattr(fn, "func", fn)   # functools.partial
    fname = getattr(base, "__name__", None) or type(base).__name__
    try:
        with module_scopes():   # flax.nnx module paths as layer names
            closed = jax.make_jaxpr(wrapped)(dyn_args, dyn_kwargs)
    except SystemExit as e:  # user code exiting while traced: bad input, not the analyzer's exit
        raise ModelLoadError(f"tracing {fname} failed: it called sys.exit({e.code!r})") from None
    except Exception as e:  # user code failing to trace is bad input, named in one line
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ModelLoadError(f"tracing {fname} failed: {type(e).__name__}: {msg}") from None

    names: list[str] = []
    flags: list[bool] = []
    inputs: dict[str, list] = {}
    dyn_idx = [i for i, d in enumerate(is_dyn) if d]
    for pos, a in zip(dyn_idx, dyn_args):
        for path, leaf in jax.tree_util.tree_leaves_with_path(a):
            nm = arg_names[pos] + jax.tree_util.keystr(path)
            names.append(nm)
            flags.append(pos in weights)
            inputs[nm] = list(leaf.shape)
    for k, v in dyn_kwargs.items():
        for path, leaf in jax.tree_util.tree_leaves_with_path(v):
            nm = k + jax.tree_util.keystr(path)
            names.append(nm)
            flags.append(False)
            inputs[nm] = list(leaf.shape)
    if len(names) != len(closed.jaxpr.invars):  # defensive: flattening orders must agree
        names = [f"in{i}" for i in range(len(closed.jaxpr.invars))]
        flags = [False] * len(names)
    return Traced(closed, names, flags, fname, inputs)


