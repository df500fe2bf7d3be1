"""Validation of a parsed profile document: ``schema.json`` (JSON Schema Draft 2020-12, checked by the
``jsonschema`` library) plus the rules a schema cannot express.

    check_document(data, where)   raises HardwareError with one line: "<where>: <field>: <what is wrong>"

The rules added here, beyond the schema: every number is finite (the schema's ``exclusiveMinimum``
lets ``inf`` and ``nan`` through); an ``integer`` is a TOML integer, never ``1.0``; and the sources rule
(``x-sources-rule`` in the schema): every number in the file has a ``[sources]`` entry under its dotted
path, and every ``[sources]`` entry names a number that is present.

``jsonschema`` is imported on the first validation, not when this module is imported, so importing
``hardware_db`` (and ``analyze --help``) does not pay for it.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from analyzer.errors import HardwareError

__all__ = ["SCHEMA_PATH", "check_document", "number_paths", "schema"]

SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"

_SCHEMA: dict | None = None
_VALIDATOR = None


def schema() -> dict:
    """The parsed ``schema.json`` (read once per process)."""
    global _SCHEMA
    if _SCHEMA is None:
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            _SCHEMA = json.load(f)
    return _SCHEMA


def _validator():
    """A Draft 2020-12 validator for ``schema.json`` whose ``integer`` excludes floats like 1.0."""
    global _VALIDATOR
    if _VALIDATOR is None:
        from jsonschema import Draft202012Validator, validators

        def is_integer(checker, value):
            return isinstance(value, int) and not isinstance(value, bool)

        checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_integer)
        cls = validators.extend(Draft202012Validator, type_checker=checker)
        _VALIDATOR = cls(schema())
    return _VALIDATOR


def check_document(data: Mapping, where: str) -> None:
    """Raise HardwareError naming ``where`` and the field for the first problem in ``data``."""
    from jsonschema.exceptions import best_match

    error = best_match(_validator().iter_errors(data))
    if error is not None:
        raise HardwareError(f"{where}: {_describe(error)}")
    for name, value in _numbers(data):
        if not math.isfinite(value):
            raise HardwareError(f"{where}: field '{name}' must be a finite number, got {_show(value)}")
    _check_sources(data, where)


# ----------------------------------------------------------------------------------------------
# one line per schema error


_TYPE_NAMES = {"object": "a table", "array": "an array", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false"}


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _dotted(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(error) -> str:
    """One line for a jsonschema ValidationError: the field's dotted path and what is wrong."""
    path = _dotted(error.absolute_path)
    label = f"field '{path}'" if path else "the file"
    kind, expected, value, node = error.validator, error.validator_value, error.instance, error.schema
    if "propertyNames" in error.absolute_schema_path:  # the key itself is wrong, not its value
        label = f"table name '{_dotted([*error.absolute_path, value])}'"
    if kind == "type":
        types = [_TYPE_NAMES.get(t, t) for t in ([expected] if isinstance(expected, str) else expected)]
        either = f"{', '.join(types[:-1])} or {types[-1]}" if len(types) > 1 else types[0]
        return f"{label} must be {either}, got {_show(value)}"
    if kind == "const":
        return f"{label} must be {expected!r}, got {_show(value)}"
    if kind == "enum":
        return f"{label} must be one of {', '.join(map(str, expected))}; got {_show(value)}"
    if kind == "minLength":
        return f"{label} must not be empty"
    if kind == "pattern":
        hint = node.get("x-pattern-hint")
        what = f"{hint} (pattern {expected})" if hint else f"text matching {expected}"
        return f"{label} must be {what}, got {_show(value)}"
    if kind in ("exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum"):
        op = {"exclusiveMinimum": ">", "minimum": ">=", "exclusiveMaximum": "<", "maximum": "<="}[kind]
        unit = f" {node['x-unit'].split(' ')[0]}" if node.get("x-unit") else ""
        rng = (f" (plausible range {node['minimum']:g}..{node['maximum']:g}{unit})"
               if "minimum" in node and "maximum" in node else "")
        return f"{label} must be {op} {expected:g}, got {_show(value)}{rng}"
    if kind == "uniqueItems":
        seen = set()
        for item in value:
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                return f"{label} lists {_show(item)} twice"
            seen.add(key)
    if kind == "required":
        missing = next(r for r in expected if r not in value)
        return f"missing required field '{_dotted([*error.absolute_path, missing])}'"
    if kind == "additionalProperties" and expected is False:
        allowed = list(node.get("properties", {}))
        key = next(k for k in value if k not in allowed)
        name = _dotted([*error.absolute_path, key])
        hint = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
        hint_text = f"; did you mean '{hint[0]}'?" if hint else ""
        if path:
            return f"unknown field '{name}' (allowed in [{path}]: {', '.join(allowed)}){hint_text}"
        kind_text = "table" if isinstance(value[key], dict) else "key"
        return f"unknown top-level {kind_text} '{key}' (allowed: {', '.join(allowed)}){hint_text}"
    return f"{label}: {error.message}"


# ----------------------------------------------------------------------------------------------
# the sources rule


def _numbers(value: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """(dotted path, number) for every number in a document, in file order; ``schema_version`` and
    ``[sources]`` are not data. Booleans are not numbers."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not prefix and key in ("schema_version", "sources"):
                continue
            yield from _numbers(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{prefix}[{i}]")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield prefix, value


def number_paths(data: Mapping) -> list[str]:
    """Dotted paths of every number in a document (the keys its ``[sources]`` table must have)."""
    return [name for name, _ in _numbers(data)]


def _check_sources(data: Mapping, where: str) -> None:
    paths = number_paths(data)
    sources = data.get("sources", {})
    for name in paths:
        if name not in sources:
            raise HardwareError(
                f"{where}: field '{name}' has no entry in [sources]; add \"{name}\" = \"<where the number "
                f"comes from>\" under [sources] (omit the field if the figure is unknown)")
    present = set(paths)
    for key in sources:
        if key not in present:
            hint = difflib.get_close_matches(key, paths, n=1, cutoff=0.6)
            hint_text = f"; did you mean '{hint[0]}'?" if hint else ""
            raise HardwareError(f"{where}: [sources] entry '{key}' names no number in the file{hint_text}")
