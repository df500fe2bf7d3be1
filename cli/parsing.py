"""Parsers of the model command's repeatable specs (--input, --value, --dim) and the one
writer of command output (stdout, or a file written atomically).  Parsing only: the values go
to the library unchanged."""

from __future__ import annotations

import os
import re
import tempfile

import click

from analyzer.errors import InputSpecError

INT64_MAX = 2**63 - 1   # ONNX dims and --value integers are int64
_DIGITS = re.compile(r"\d+")


def parse_inputs(values: tuple[str, ...]) -> dict[str, str]:
    """--input NAME=DIMS -> {NAME: DIMS} (the library parses DIMS)."""
    out: dict[str, str] = {}
    for v in values:
        name, eq, shape = v.partition("=")
        if not eq or not name or not shape:
            raise InputSpecError(f"--input '{v}': expected NAME=DIMS, e.g. --input x=1x3x224x224")
        big = next((d for d in _DIGITS.findall(shape) if int(d) > INT64_MAX), None)
        if big is not None:
            raise InputSpecError(f"--input '{v}': dim {big} is beyond int64 (at most {INT64_MAX})")
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
                n = int(part)
                if not -INT64_MAX - 1 <= n <= INT64_MAX:
                    raise InputSpecError(f"--value '{v}': {part} is beyond int64")
                nums.append(n)
            except ValueError:
                try:
                    x = float(part)
                except ValueError:
                    raise InputSpecError(f"--value '{v}': '{part}' is not a number") from None
                if x != x or x in (float("inf"), float("-inf")):
                    raise InputSpecError(f"--value '{v}': '{part}' is not a finite number") from None
                nums.append(x)
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
            if n > INT64_MAX:
                raise InputSpecError(f"--dim '{v}': {n} is beyond int64 (at most {INT64_MAX})")
            out[name].append(n)
    return out


def kwargs_json_text(value: str | None) -> str | None:
    """--kwargs-json JSON, or @FILE: the JSON text of a regular file (at most 16 MiB)."""
    if not value or not value.startswith("@"):
        return value
    from analyzer.userfiles import CAPS, read_regular

    raw = read_regular(value[1:], f"--kwargs-json {value}", CAPS["kwargs"], InputSpecError)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputSpecError(f"--kwargs-json {value}: not UTF-8 text (byte {e.start})") from None


def writable_path(path: str, flag: str) -> str:
    """``path`` if a file can be written there: its folder exists and is writable, and the path
    is not a folder or another non-file (a device, a FIFO: it would be replaced by the rename);
    else an ``InputSpecError`` naming ``flag``."""
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except (OSError, ValueError) as e:
        raise InputSpecError(f"{flag} {path}: cannot write there "
                             f"({getattr(e, 'strerror', None) or e})") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise InputSpecError(f"{flag} {path}: is a folder; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputSpecError(f"{flag} {path}: is not a regular file; give a file name "
                             f"(or - for stdout)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputSpecError(f"{flag} {path}: folder '{folder}' "
                             f"{'is not a folder' if os.path.exists(folder) else 'does not exist'}")
    try:   # a real probe: permissions, a read-only file system, /proc
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".opcost-", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputSpecError(f"{flag} {path}: folder '{folder}' is not writable "
                             f"({e.strerror or e})") from None
    return path


def _umask_mode() -> int:
    """0o666 less the process umask: the mode ``open()`` gives a new file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str, write, flag: str) -> None:
    """Write a file atomically: ``write(tmp)`` fills a temp file in ``path``'s own folder (so the
    rename never crosses file systems), which gets the user's umask (mkstemp makes it 0600) and
    is renamed over ``path``.  A place that cannot be written is an ``InputSpecError`` naming
    ``flag``; the temp file never stays behind."""
    writable_path(path, flag)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".opcost-", suffix=".tmp")
        os.close(fd)
        write(tmp)
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise InputSpecError(f"{flag} {path}: cannot write it ({e.strerror or e})") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def write_output(text: str, path: str | None, flag: str = "--output") -> None:
    """Write to stdout, or atomically to ``path`` (``atomic_write``)."""
    if path is None or path == "-":
        click.echo(text, nl=False)
        return

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)

    atomic_write(path, write, flag)
