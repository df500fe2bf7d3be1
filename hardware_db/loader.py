"""Finding, loading and caching profile files: ids and aliases, ``get``, ``list_profiles``,
``load_file``, ``clear_cache``, and the did-you-mean suggestions for an unknown id.

A file is read as TOML, checked by ``hardware_db.validate`` and turned into a ``HardwareProfile`` by
``hardware_db.profile.from_document``; the result is cached per (path, mtime, size). The shipped
profiles in ``PROFILE_DIR`` form the registry of ids and aliases (a user's file does not join it).
"""

from __future__ import annotations

import difflib
import os
import tomllib
from pathlib import Path

from analyzer.errors import HardwareError
from analyzer.userfiles import CAPS, check_regular, read_regular
from hardware_db.profile import HardwareProfile, from_document
from hardware_db.validate import check_document

__all__ = ["PROFILE_DIR", "clear_cache", "get", "list_profiles", "load_file"]

PROFILE_DIR = Path(__file__).resolve().parent / "profiles"

_FILE_CACHE: dict[tuple[str, int, int], HardwareProfile] = {}
_REGISTRY: dict[str, HardwareProfile] | None = None


def clear_cache() -> None:
    """Forget parsed files and the id/alias registry (the next call re-reads the files)."""
    global _REGISTRY
    _FILE_CACHE.clear()
    _REGISTRY = None


def load_file(path: str | os.PathLike) -> HardwareProfile:
    """Read and validate one profile file. Parsed once per process while the file is unchanged."""
    where = os.fspath(path)
    p = Path(where).expanduser()
    label = f"hardware profile '{where}'"
    # a regular file of at most 16 MiB: never a FIFO (a hang), /dev/zero or a folder
    st = check_regular(p, label, CAPS["profile"], HardwareError, missing="file not found")
    resolved = str(p.resolve())
    key = (resolved, st.st_mtime_ns, st.st_size)
    cached = _FILE_CACHE.get(key)
    if cached is not None:
        return cached
    raw = read_regular(p, label, CAPS["profile"], HardwareError, missing="file not found")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HardwareError(f"{where}: not UTF-8 text (byte {e.start})") from None
    try:
        data = tomllib.loads(text)
        check_document(data, where)
        profile = from_document(data, resolved)
    except tomllib.TOMLDecodeError as e:
        raise HardwareError(f"{where}: invalid TOML: {e}") from None
    except RecursionError:   # 5,000 nested arrays or tables: TOML parses them recursively
        raise HardwareError(f"{where}: arrays or tables nested too deeply") from None
    except (OverflowError, ValueError) as e:   # a number no float holds
        raise HardwareError(f"{where}: a number out of range ({e})") from None
    except HardwareError as e:
        if e.template.startswith(f"{where}: "):   # check_document names the file already
            raise
        # from_document: already validated; keep the file name in any message
        raise HardwareError(f"{where}: {e.template}", hints=e.hints) from None
    _FILE_CACHE[key] = profile
    return profile


def _registry() -> dict[str, HardwareProfile]:
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict[str, HardwareProfile] = {}
        for f in sorted(PROFILE_DIR.glob("*.toml")):
            prof = load_file(f)
            if prof.id != f.stem:
                raise HardwareError(f"{f}: id '{prof.id}' does not match the file name; name the file '{prof.id}.toml'")
            for name in (prof.id, *prof.aliases):
                key = name.lower()
                other = reg.get(key)
                if other is not None:
                    raise HardwareError(
                        f"hardware name '{name}' is used by both {other.path} and {prof.path}; make it unique")
                reg[key] = prof
        _REGISTRY = reg
    return _REGISTRY


def _looks_like_path(text: str) -> bool:
    seps = [s for s in (os.sep, os.altsep, "/") if s]
    return text.lower().endswith(".toml") or text.startswith("~") or any(s in text for s in seps)


def get(id_or_path: str | os.PathLike) -> HardwareProfile:
    """A profile by id, alias (case-insensitive) or path to a .toml file (a user's own profile)."""
    if isinstance(id_or_path, HardwareProfile):
        return id_or_path
    if isinstance(id_or_path, os.PathLike):
        return load_file(id_or_path)
    if not isinstance(id_or_path, str):
        raise HardwareError(f"hardware must be an id, an alias or a path to a .toml file, got {id_or_path!r}")
    text = id_or_path.strip()
    if not text:
        raise HardwareError("empty hardware id; run 'analyze hw list' to see the known ids")
    if _looks_like_path(text):
        return load_file(text)
    reg = _registry()
    prof = reg.get(text.lower())
    if prof is not None:
        return prof
    if os.path.isfile(text):
        return load_file(text)
    close = difflib.get_close_matches(text.lower(), list(reg), n=3, cutoff=0.6)
    if close:
        raise HardwareError(f"unknown hardware '{text}'; did you mean: {', '.join(close)}?")
    raise HardwareError(
        f"unknown hardware '{text}'; run 'analyze hw list' to see the known ids, or pass a path to a .toml profile")


def list_profiles() -> list[HardwareProfile]:
    """Every shipped profile, sorted by kind then id."""
    unique = {p.id: p for p in _registry().values()}
    return sorted(unique.values(), key=lambda p: (p.kind, p.id))
