"""Reading a file the user named (a model, a hardware profile, a baseline, a settings file):
regular files only, up to a stated size.

A path can name something that is not a file: a FIFO (reading it waits for a writer that never
comes), ``/dev/zero`` or ``/dev/urandom`` (reading never ends, until memory runs out), a
terminal, a socket, a folder.  ``read_regular`` refuses all of them with one line, before
reading: ``os.stat`` says what the path is (``S_ISREG``), and the file is then opened without
blocking (``O_NONBLOCK``: opening a FIFO does not wait) and checked again with ``fstat``, so
that what is read is what was checked even if the path changed in between.  It reads at most
``cap`` bytes: a file over its cap is an error naming the cap, never a partial read.

The caps (``CAPS``), stated here and in the README:

- ``model``: 2 GiB - 1 byte, protobuf's limit for one message: an ONNX file whose weights are
  inline cannot be larger, and a graph-only file (weights in external ``.data`` files, which
  opcost never reads) is far below it (a 100,000-node graph is about 50 MB).
- ``profile`` and ``kwargs`` (hardware profile TOML, ``--kwargs-json @FILE``): 16 MiB; shipped
  profiles are a few KB.
- ``baseline``: 512 MiB; a baseline holds every layer's counts and times, about 300 bytes per
  layer and profile (a 100,000-node graph on two profiles: 30 MB).

This module imports nothing heavy (the CLI may use it at start-up).
"""

from __future__ import annotations

import os
import stat
from typing import Callable

MiB = 1 << 20
CAPS: dict[str, int] = {
    "model": (1 << 31) - 1,
    "profile": 16 * MiB,
    "kwargs": 16 * MiB,
    "baseline": 512 * MiB,
}

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISDIR, "a directory"))


def size_text(n: int) -> str:
    """1536 -> '1.5 KiB' (binary units, for the caps' messages)."""
    x, unit = float(n), "bytes"
    for u in ("KiB", "MiB", "GiB", "TiB"):
        if x < 1024:
            break
        x, unit = x / 1024, u
    return f"{n} bytes" if unit == "bytes" else f"{x:.3g} {unit}"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_regular(path: str | os.PathLike, label: str, cap: int,
                  error: Callable[[str], Exception], missing: str = "no such file") -> os.stat_result:
    """``os.stat(path)`` when ``path`` is a regular file of at most ``cap`` bytes; else raises
    ``error("<label>: <what is wrong>")``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{label}: {missing}") from None
    except (OSError, ValueError) as e:   # ENOTDIR, EACCES, ELOOP, a NUL byte in the name
        raise error(f"{label}: cannot read it ({getattr(e, 'strerror', None) or e})") from None
    _check_stat(st, label, cap, error)
    return st


def _check_stat(st: os.stat_result, label: str, cap: int, error) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        raise error(f"{label}: is {kind}, not a regular file; give a file" if kind != "a directory"
                    else f"{label}: is a directory, not a file")
    if st.st_size > cap:
        raise error(f"{label}: the file is {size_text(st.st_size)}, over opcost's limit of "
                    f"{size_text(cap)} for this kind of file")


def read_regular(path: str | os.PathLike, label: str, cap: int,
                 error: Callable[[str], Exception], missing: str = "no such file") -> bytes:
    """The bytes of the regular file ``path`` (at most ``cap``); anything else -> ``error``."""
    check_regular(path, label, cap, error, missing)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise error(f"{label}: {missing}") from None
    except OSError as e:
        raise error(f"{label}: cannot read it ({e.strerror or e})") from None
    try:
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        try:
            st = os.fstat(fd)
            _check_stat(st, label, cap, error)   # the file opened is the file checked
            data = f.read(st.st_size + 1)        # one allocation of the file's size
            if len(data) > st.st_size:           # it grew since: read on, up to the cap
                data += f.read(cap + 1 - len(data))
        except OSError as e:
            raise error(f"{label}: cannot read it ({e.strerror or e})") from None
    if len(data) > cap:   # it grew while being read
        raise error(f"{label}: the file is over opcost's limit of {size_text(cap)} for this kind "
                    f"of file")
    return data
