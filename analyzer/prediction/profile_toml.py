"""Writing a profile document (a calibrated machine) as TOML that ``hardware_db`` loads."""

from __future__ import annotations

import os
from typing import Any, Mapping


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("TOML has no NaN/inf in profiles")
        return repr(float(v))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def toml_key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else toml_value(k)


def to_toml(doc: Mapping[str, Any]) -> str:
    """A small TOML writer for profile documents (scalars, arrays, nested tables)."""
    lines: list[str] = []

    def table(d: Mapping[str, Any], prefix: str):
        scalars = [(k, v) for k, v in d.items() if not isinstance(v, Mapping)]
        subs = [(k, v) for k, v in d.items() if isinstance(v, Mapping) and not k.startswith("_")]
        if prefix and (scalars or not subs):
            lines.append(f"\n[{prefix}]")
        for k, v in scalars:
            if not k.startswith("_"):
                lines.append(f"{toml_key(k)} = {toml_value(v)}")
        for k, v in subs:
            table(v, f"{prefix}.{toml_key(k)}" if prefix else toml_key(k))

    lines.append("# opcost hardware profile, written by analyze hw calibrate")
    table(doc, "")
    return "\n".join(lines) + "\n"


def write_profile(doc: Mapping[str, Any], path: str | os.PathLike) -> str:
    """Write ``doc`` as TOML at ``path``; returns the path."""
    text = to_toml(doc)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return os.fspath(path)
