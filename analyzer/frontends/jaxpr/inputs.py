"""Inputs of the JAX path: dtype names, ``f32[8,224]`` specs, and importing ``file.py:function``.

The command line passes strings only; everything it needs to turn ``MODEL --input x=f32[8,784]
--kwargs-json '{...}'`` into ``analyze_jax(fn, *args, **kwargs)`` is here (``load_program``).
``jax`` is imported only inside functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
from typing import Any, Callable, Mapping

from analyzer.errors import Hint, InputSpecError, ModelLoadError, ShapeError
from analyzer.ir.graph import DTYPE_BITS, SPEC_DTYPES

# ----------------------------------------------------------------------------- dtypes and specs

# numpy/JAX dtype names that differ from the IR's
_NP_TO_IR = {
    "float8_e4m3fn": "float8e4m3fn", "float8_e4m3fnuz": "float8e4m3fnuz", "float8_e5m2": "float8e5m2",
    "float8_e5m2fnuz": "float8e5m2fnuz", "float8_e8m0fnu": "float8e8m0", "float4_e2m1fn": "float4e2m1",
}
# IR dtype -> the numpy/JAX name (for building ShapeDtypeStructs from specs)
_IR_TO_NP = {v: k for k, v in _NP_TO_IR.items()}

_SPEC_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[\s*([0-9,\s]*)\]\s*$")


def ir_dtype(dtype: Any) -> str:
    """A numpy/JAX dtype (or its name) -> the IR's dtype name (``"bfloat16"``, ``"int8"``, ...)."""
    name = getattr(dtype, "name", None) or str(dtype)
    name = _NP_TO_IR.get(name, name)
    if name not in DTYPE_BITS:
        raise ShapeError(f"unsupported JAX dtype '{name}'")
    return name


def parse_spec(text: str, name: str = "") -> "Any":
    """``"f32[8,224]"`` -> ``jax.ShapeDtypeStruct((8, 224), float32)``; ``"i32[]"`` is a scalar.

    Dtypes: f64 f32 f16 bf16 f8e4m3fn f8e5m2 i64 i32 i16 i8 i4 u64 u32 u16 u8 u4 bool c64 c128, or a
    full IR name (``float32[8]``).  Plain ``8x224`` means float32."""
    import jax
    import jax.numpy as jnp

    where, hints = ("{inputs}", (Hint("inputs", {name: text}),)) if name else (f"spec '{text}'", ())
    m = _SPEC_RE.match(text)
    if m is None:
        if re.fullmatch(r"\s*\d+(\s*x\s*\d+)*\s*", text):
            dims = tuple(int(d) for d in text.split("x"))
            return jax.ShapeDtypeStruct(dims, jnp.float32)
        raise InputSpecError(f"{where}: expected DTYPE[d0,d1,...] such as f32[8,224], bf16[2,16,64] "
                             f"or i32[] (a scalar)", hints=hints)
    dt, body = m.group(1), m.group(2).strip()
    ir = SPEC_DTYPES.get(dt.lower(), dt.lower() if dt.lower() in DTYPE_BITS else None)
    if ir is None:
        raise InputSpecError(f"{where}: unknown dtype '{dt}'; use one of {', '.join(SPEC_DTYPES)}",
                             hints=hints)
    try:
        dims = tuple(int(d) for d in body.split(",")) if body else ()
    except ValueError:
        raise InputSpecError(f"{where}: dims must be integers separated by commas",
                             hints=hints) from None
    return jax.ShapeDtypeStruct(dims, jnp.dtype(_IR_TO_NP.get(ir, ir)))


# ----------------------------------------------------------------------------- loading a function

def load_target(target: str) -> Callable:
    """``path/to/file.py:function`` or ``package.module:function`` (``:Class.method`` too) -> callable."""
    mod_part, colon, attr = target.rpartition(":")
    if not colon or not mod_part or not attr:
        raise ModelLoadError(f"'{target}': expected path/to/file.py:function or package.module:function")
    try:
        if mod_part.endswith(".py") or os.sep in mod_part or "/" in mod_part:
            path = os.path.abspath(mod_part)
            if not os.path.isfile(path):
                raise ModelLoadError(f"{mod_part}: no such file")
            mod_name = "opcost_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
            spec = importlib.util.spec_from_file_location(mod_name, path)
            if spec is None or spec.loader is None:
                raise ModelLoadError(f"{mod_part}: cannot import it as a Python module")
            module = importlib.util.module_from_spec(spec)
            folder = os.path.dirname(path)
            sys.path.insert(0, folder)   # sibling imports of the user's file
            try:
                spec.loader.exec_module(module)
            finally:
                if sys.path and sys.path[0] == folder:
                    sys.path.pop(0)
        else:
            module = importlib.import_module(mod_part)
    except ModelLoadError:
        raise
    except SystemExit as e:  # a script's sys.exit at import: not a quiet exit 0 of the analyzer
        raise ModelLoadError(f"{mod_part}: the module exited while being imported (sys.exit({e.code!r})); "
                             f"guard its script code with if __name__ == '__main__'") from None
    except Exception as e:  # any import-time failure of user code
        raise ModelLoadError(f"{mod_part}: import failed ({type(e).__name__}: {e})") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ModelLoadError(f"{mod_part} has no attribute '{attr}'") from None
    if not callable(obj):
        raise ModelLoadError(f"{target}: '{attr}' is not callable")
    return obj


def bind_inputs(fn: Callable, inputs: Mapping[str, str] | None,
                static_kwargs: Mapping[str, Any] | None = None) -> tuple[tuple, dict]:
    """Turn ``--input NAME=SPEC`` strings into example args for ``fn``, by parameter name.

    Positional parameters are filled in signature order; keyword-only ones go to kwargs;
    ``static_kwargs`` (``--kwargs-json``) are passed as they are (non-array settings)."""
    inputs = dict(inputs or {})
    static_kwargs = dict(static_kwargs or {})
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        raise InputSpecError(f"cannot read the signature of {getattr(fn, '__name__', fn)}") from None
    params = sig.parameters
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for k in list(inputs) + list(static_kwargs):
        if k not in params and not has_var_kw:
            raise InputSpecError(f"'{k}' is not a parameter of {getattr(fn, '__name__', 'the function')}"
                                 f"({', '.join(params)})")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional_open = True
    for p in params.values():
        given = p.name in inputs or p.name in static_kwargs
        value = parse_spec(inputs[p.name], p.name) if p.name in inputs else static_kwargs.get(p.name)
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and positional_open:
            if given:
                args.append(value)
                continue
            if p.default is p.empty:
                raise InputSpecError(f"missing {{inputs}} for parameter '{p.name}' of "
                                     f"{getattr(fn, '__name__', 'the function')}: give its dtype and shape, "
                                     f"e.g. {{inputs}} {p.name}=f32[8,128]", hints=(Hint("inputs"),))
            positional_open = False  # later positionals go by keyword
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if given:
            kwargs[p.name] = value
        elif p.default is p.empty:
            raise InputSpecError(f"missing {{inputs}} for parameter '{p.name}': give its dtype and shape, "
                                 f"e.g. {{inputs}} {p.name}=f32[8,128]", hints=(Hint("inputs"),))
    for k in list(inputs) + list(static_kwargs):   # extra names through **kwargs
        if k not in params:
            kwargs[k] = parse_spec(inputs[k], k) if k in inputs else static_kwargs[k]
    return tuple(args), kwargs


_TARGET_RE = re.compile(r"^(?P<mod>.+\.py|[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*):(?P<attr>[A-Za-z_][\w.]*)$")


def is_jax_target(model: str) -> bool:
    """True for ``path/to/file.py:function`` and ``package.module:function`` (not a file path)."""
    return (isinstance(model, str) and not os.path.exists(model)
            and _TARGET_RE.match(model) is not None)


def load_program(target: str, inputs: Mapping[str, str] | None = None,
                 kwargs_json: str | None = None) -> tuple[Callable, tuple, dict]:
    """The command line's JAX path: import ``target``, parse the ``--input`` specs and the
    ``--kwargs-json`` settings.  Returns ``(fn, args, kwargs)`` for ``analyze_jax(fn, *args,
    **kwargs)``: static settings are bound into ``fn`` (a ``functools.partial``) so they never
    clash with ``analyze_jax``'s own keywords; ``kwargs`` holds only array inputs."""
    import functools
    import json

    static: dict[str, Any] = {}
    if kwargs_json:
        try:
            static = json.loads(kwargs_json)
        except json.JSONDecodeError as e:
            raise InputSpecError(f"{{kwargs_json}}: not valid JSON ({e.msg} at column {e.colno})",
                                 hints=(Hint("kwargs_json"),)) from None
        if not isinstance(static, dict):
            raise InputSpecError("{kwargs_json}: expected a JSON object such as '{\"train\": false}'",
                                 hints=(Hint("kwargs_json"),))
    fn = load_target(target)
    args, kwargs = bind_inputs(fn, inputs, static)
    bound = {k: v for k, v in kwargs.items() if k in static}
    arrays = {k: v for k, v in kwargs.items() if k not in static}
    if bound:
        fn = functools.partial(fn, **bound)
    return fn, args, arrays
