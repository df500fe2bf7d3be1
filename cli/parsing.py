"""Parsers of the model command's repeatable specs (--input, --value, --dim) and the one
writer of command output (stdout, or a file written atomically).  Parsing only: the values go
to the library unchanged."""

from __future__ import annotations

import os
import tempfile

import click

from analyzer.errors import InputSpecError


def parse_inputs(values: tuple[str, ...]) -> dict[str, str]:
    """--input NAME=DIMS -> {NAME: DIMS} (the library parses DIMS)."""
    out: dict[str, str] = {}
    for v in values:
        name, eq, shape = v.partition("=")
        if not eq or not name or not shape:
            raise InputSpecError(f"--input '{v}': expected NAME=DIMS, e.g. --input x=1x3x224x224")
        out[name] = shape
    return out


def parse_values(values: tuple[str, ...]) -> dict[str, list[float | int]]:
    """--value NAME=V[,V...] -> {NAME: [numbers]} (ints stay ints)."""
    out: dict[str, list[float | int]] = {}
    for v in values:
        name, eq, text = v.partition("=")
        if not eq or not name or not text:
            raise InputSpecError(f"--value '{v}': expected NAME=V[,V...], e.g. --value axes=1")
        nums: list[float | int] = []
        for part in text.split(","):
            try:
                nums.append(int(part))
            except ValueError:
                try:
                    nums.append(float(part))
                except ValueError:
                    raise InputSpecError(f"--value '{v}': '{part}' is not a number") from None
        out[name] = nums
    return out


def parse_dims(values: tuple[str, ...]) -> dict[str, list[int]]:
    """--dim NAME=V or NAME=V1,V2,... (a sweep) -> {NAME: [values]}; one option may bind
    several dims: --dim batch=1,seq=16 (an item with '=' starts the next dim); NAME may join
    dims that move together, seq+total=16,64 (kept as one key for ``analyzer.sweep``)."""
    out: dict[str, list[int]] = {}
    for v in values:
        name = None
        for part in v.split(","):
            if "=" in part:
                name, _, part = part.partition("=")
                group = name.split("+")  # dims joined with + take the same values together
                if not all(group):
                    raise InputSpecError(
                        f"--dim '{v}': expected NAME=VALUE or NAME=V1,V2,..., e.g. --dim batch=8")
                twice = {n for k in out for n in k.split("+")} & set(group)
                if twice or len(set(group)) != len(group):
                    raise InputSpecError(f"--dim '{v}': '{min(twice or group)}' is given twice")
                out[name] = []
            if name is None or not part:
                raise InputSpecError(f"--dim '{v}': expected NAME=VALUE or NAME=V1,V2,..., e.g. --dim batch=8")
            try:
                n = int(part)
            except ValueError:
                raise InputSpecError(f"--dim '{v}': '{part}' is not an integer") from None
            if n < 0:
                raise InputSpecError(f"--dim '{v}': dims cannot be negative")
            out[name].append(n)
    return out


def writable_path(path: str, flag: str) -> str:
    """``path`` if a file can be written there: its folder exists and it is not a folder itself;
    else an ``InputSpecError`` naming ``flag``."""
    if os.path.isdir(path):
        raise InputSpecError(f"{flag} {path}: is a folder; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputSpecError(f"{flag} {path}: folder '{folder}' does not exist")
    return path


def write_output(text: str, path: str | None, flag: str = "--output") -> None:
    """Write to stdout, or atomically to ``path`` (a temp file in the same folder, then rename)."""
    if path is None or path == "-":
        click.echo(text, nl=False)
        return
    writable_path(path, flag)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".opcost-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
