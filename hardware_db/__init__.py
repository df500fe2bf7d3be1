"""Hardware profiles as data: one TOML file per device, validated, with a source for every number.

    >>> import hardware_db
    >>> hw = hardware_db.get("a100")            # id or alias (case-insensitive) or a path to a .toml file
    >>> hw.mem_bw_gbs, hw.peak_flops("matrix", "bf16")
    (2039.0, 312000000000000.0)

Units are SI and written into the field names (GB = 1e9 bytes, TFLOP/s = 1e12 FLOP/s). Peaks are dense.
A figure the reference does not give is omitted from the file and reads as ``None`` here: never a guess.
The file format is described by ``schema.json`` beside this module; the loader interprets that schema
itself (no jsonschema dependency) and adds the cross-field rule that every number has a ``[sources]``
entry. This module imports only the standard library and ``analyzer.errors`` (no jax, no onnx), so
``analyze hw list`` stays fast.
"""

from __future__ import annotations

import difflib
import json
import math
import numbers
import os
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from analyzer.errors import HardwareError

__all__ = [
    "DTYPES",
    "ENGINES",
    "KINDS",
    "PROFILE_DIR",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "HardwareProfile",
    "clear_cache",
    "get",
    "list_profiles",
    "load_file",
]

SCHEMA_VERSION = 1
PROFILE_DIR = Path(__file__).resolve().parent / "profiles"
SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")
ENGINES = ("matrix", "vector")
KINDS = ("gpu", "tpu", "npu", "dsp", "cpu")

# TOML table -> the scalar fields it holds (flattened onto HardwareProfile under the same names).
_SCALAR_TABLES = {
    "memory": ("mem_gb", "mem_bw_gbs", "onchip_mb"),
    "interconnect": ("interconnect_gbs",),
    "overhead": ("launch_overhead_us",),
    "power": ("tdp_w", "clock_ghz"),
}
_SCALARS = tuple(name for names in _SCALAR_TABLES.values() for name in names)


class _FrozenMap(Mapping):
    """A read-only, hashable, picklable mapping (a dict view that cannot be changed)."""

    __slots__ = ("_d",)

    def __init__(self, data: Mapping | None = None):
        object.__setattr__(self, "_d", dict(data or {}))

    def __getitem__(self, key):
        return self._d[key]

    def __iter__(self) -> Iterator:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(frozenset(self._d.items()))

    def __repr__(self) -> str:
        return repr(self._d)

    def __reduce__(self):
        return (_FrozenMap, (self._d,))

    def __setattr__(self, name, value):
        raise AttributeError("read-only mapping")


def _as_tflops_map(name: str, data: Mapping | None) -> _FrozenMap:
    data = dict(data or {})
    for dtype, value in data.items():
        if dtype not in DTYPES:
            raise HardwareError(f"{name}: unknown dtype '{dtype}' (known: {', '.join(DTYPES)})")
        _check_positive(name + "." + dtype, value)
    return _FrozenMap({d: float(data[d]) for d in DTYPES if d in data})


def _check_positive(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise HardwareError(f"field '{name}' must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise HardwareError(f"field '{name}' must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class HardwareProfile:
    """One device. Numbers are floats in the units their names say; ``None`` means unknown.

    ``matrix_tflops`` / ``vector_tflops`` hold only the dtypes with a known dense peak (TFLOP/s, or
    TOP/s for int dtypes). ``sources`` maps each dotted field path ("matrix_tflops.bf16",
    "memory.mem_bw_gbs") to where the number comes from. ``path`` is the file it was read from.
    """

    id: str
    name: str
    vendor: str
    kind: str
    aliases: tuple[str, ...] = ()
    matrix_tflops: Mapping[str, float] = field(default_factory=_FrozenMap)
    vector_tflops: Mapping[str, float] = field(default_factory=_FrozenMap)
    mem_gb: float | None = None
    mem_bw_gbs: float | None = None
    onchip_mb: float | None = None
    interconnect_gbs: float | None = None
    launch_overhead_us: float | None = None
    tdp_w: float | None = None
    clock_ghz: float | None = None
    sources: Mapping[str, str] = field(default_factory=_FrozenMap)
    notes: str = ""
    path: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise HardwareError(f"hardware '{self.id}': kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "matrix_tflops", _as_tflops_map("matrix_tflops", self.matrix_tflops))
        object.__setattr__(self, "vector_tflops", _as_tflops_map("vector_tflops", self.vector_tflops))
        object.__setattr__(self, "sources", _FrozenMap(self.sources))
        for name in _SCALARS:
            value = getattr(self, name)
            _check_positive(name, value)
            if value is not None:
                object.__setattr__(self, name, float(value))
        # FLOP/s from the decimal text of the TFLOP/s figure, so 989.4 -> 9.894e14 exactly as written.
        flops = {}
        for engine, table in (("matrix", self.matrix_tflops), ("vector", self.vector_tflops)):
            for dtype, tflops in table.items():
                flops[(engine, dtype)] = float(Decimal(repr(tflops)).scaleb(12))
        object.__setattr__(self, "_flops", _FrozenMap(flops))  # a cache, not a dataclass field

    def __hash__(self) -> int:
        return hash((self.id, self.name, self.kind, self.path, self.matrix_tflops, self.vector_tflops,
                     tuple(getattr(self, n) for n in _SCALARS)))

    def peak_flops(self, engine: str, dtype: str) -> float | None:
        """Dense peak of ``engine`` ("matrix" or "vector") for ``dtype`` in FLOP/s (not TFLOP/s).

        Returns None when the profile has no figure for that engine and dtype (unsupported or unknown).
        """
        if engine not in ENGINES:
            raise HardwareError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
        if dtype not in DTYPES:
            raise HardwareError(f"unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")
        return self._flops.get((engine, dtype))

    def to_dict(self) -> dict:
        """Exact, JSON-serializable view; unknown scalar fields are None."""
        out: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "id": self.id,
            "name": self.name,
            "vendor": self.vendor,
            "kind": self.kind,
            "aliases": list(self.aliases),
            "matrix_tflops": dict(self.matrix_tflops),
            "vector_tflops": dict(self.vector_tflops),
        }
        for name in _SCALARS:
            out[name] = getattr(self, name)
        out["sources"] = dict(self.sources)
        out["notes"] = self.notes
        out["path"] = self.path
        return out


# ----------------------------------------------------------------------------------------------
# schema interpretation


_SCHEMA: dict | None = None


def _schema() -> dict:
    global _SCHEMA
    if _SCHEMA is None:
        with open(SCHEMA_PATH, encoding="utf-8") as f:
            _SCHEMA = json.load(f)
    return _SCHEMA


def _resolve(node: dict) -> dict:
    ref = node.get("$ref")
    if ref is None:
        return node
    if not ref.startswith("#/"):
        raise HardwareError(f"schema.json: unsupported $ref {ref!r}")
    target: Any = _schema()
    for part in ref[2:].split("/"):
        target = target[part]
    return _resolve(target)


_TYPE_NAMES = {"object": "a table", "array": "an array", "string": "a string", "integer": "an integer",
               "number": "a number"}


def _type_ok(value: Any, typ: str) -> bool:
    if typ == "object":
        return isinstance(value, dict)
    if typ == "array":
        return isinstance(value, list)
    if typ == "string":
        return isinstance(value, str)
    if typ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if typ == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise HardwareError(f"schema.json: unsupported type {typ!r}")


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _validate(value: Any, node: dict, path: str, where: str) -> None:
    """Check ``value`` against schema ``node``; raise HardwareError naming ``where`` and ``path``."""
    node = _resolve(node)
    label = f"field '{path}'" if path else "the file"
    typ = node.get("type")
    if typ is not None and not _type_ok(value, typ):
        raise HardwareError(f"{where}: {label} must be {_TYPE_NAMES[typ]}, got {_show(value)}")
    if "const" in node and value != node["const"]:
        raise HardwareError(f"{where}: {label} must be {node['const']!r}, got {_show(value)}")
    if "enum" in node and value not in node["enum"]:
        raise HardwareError(f"{where}: {label} must be one of {', '.join(map(str, node['enum']))}; got {_show(value)}")
    if isinstance(value, str):
        if len(value) < node.get("minLength", 0):
            raise HardwareError(f"{where}: {label} must not be empty")
        if "pattern" in node and not re.search(node["pattern"], value):
            raise HardwareError(
                f"{where}: {label} must be lowercase letters, digits and '-._+' "
                f"(pattern {node['pattern']}), got {_show(value)}")
    if typ == "number":
        if not math.isfinite(value):
            raise HardwareError(f"{where}: {label} must be a finite number, got {_show(value)}")
        if "exclusiveMinimum" in node and not value > node["exclusiveMinimum"]:
            raise HardwareError(f"{where}: {label} must be > {node['exclusiveMinimum']}, got {_show(value)}")
    if isinstance(value, list):
        if node.get("uniqueItems"):
            seen = set()
            for item in value:
                key = json.dumps(item, sort_keys=True)
                if key in seen:
                    raise HardwareError(f"{where}: {label} lists {_show(item)} twice")
                seen.add(key)
        if "items" in node:
            for i, item in enumerate(value):
                _validate(item, node["items"], f"{path}[{i}]", where)
    if isinstance(value, dict):
        props = node.get("properties", {})
        for req in node.get("required", ()):
            if req not in value:
                name = f"{path}.{req}" if path else req
                raise HardwareError(f"{where}: missing required field '{name}'")
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            name = f"{path}.{key}" if path else key
            if key in props:
                _validate(item, props[key], name, where)
            elif extra is False:
                allowed = ", ".join(props)
                hint = difflib.get_close_matches(key, list(props), n=1, cutoff=0.6)
                hint_text = f"; did you mean '{hint[0]}'?" if hint else ""
                if path:
                    raise HardwareError(
                        f"{where}: unknown field '{name}' (allowed in [{path}]: {allowed}){hint_text}")
                kind = "table" if isinstance(item, dict) else "key"
                raise HardwareError(f"{where}: unknown top-level {kind} '{key}' (allowed: {allowed}){hint_text}")
            elif isinstance(extra, dict):
                _validate(item, extra, name, where)


def _number_paths(value: dict, node: dict, prefix: str = "") -> list[str]:
    """Dotted paths of every number present in ``value`` (a validated profile), in file order."""
    out: list[str] = []
    props = _resolve(node).get("properties", {})
    for key, item in value.items():
        if key not in props or key == "sources":
            continue
        sub = _resolve(props[key])
        name = f"{prefix}{key}"
        if sub.get("type") == "number":
            out.append(name)
        elif sub.get("type") == "object" and isinstance(item, dict):
            out.extend(_number_paths(item, sub, name + "."))
    return out


def _check_sources(data: dict, where: str) -> None:
    paths = _number_paths(data, _schema())
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


def _from_data(data: dict, where: str, path: str | None) -> HardwareProfile:
    _validate(data, _schema(), "", where)
    _check_sources(data, where)
    scalars = {name: data.get(table, {}).get(name) for table, names in _SCALAR_TABLES.items() for name in names}
    try:
        return HardwareProfile(
            id=data["id"],
            name=data["name"],
            vendor=data["vendor"],
            kind=data["kind"],
            aliases=tuple(data.get("aliases", ())),
            matrix_tflops=data.get("matrix_tflops", {}),
            vector_tflops=data.get("vector_tflops", {}),
            sources=data.get("sources", {}),
            notes=data.get("notes", ""),
            path=path,
            **scalars,
        )
    except HardwareError as e:  # already validated; keep the file name in any message
        raise HardwareError(f"{where}: {e.template}", hints=e.hints) from None


# ----------------------------------------------------------------------------------------------
# loading, cache, registry

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
    try:
        st = p.stat()
        resolved = str(p.resolve())
    except FileNotFoundError:
        raise HardwareError(f"hardware profile file '{where}' not found") from None
    except OSError as e:
        raise HardwareError(f"cannot read hardware profile '{where}': {e.strerror or e}") from None
    if p.is_dir():
        raise HardwareError(f"hardware profile '{where}' is a directory, not a .toml file")
    key = (resolved, st.st_mtime_ns, st.st_size)
    cached = _FILE_CACHE.get(key)
    if cached is not None:
        return cached
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise HardwareError(f"cannot read hardware profile '{where}': {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise HardwareError(f"{where}: not UTF-8 text (byte {e.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise HardwareError(f"{where}: invalid TOML: {e}") from None
    profile = _from_data(data, where, resolved)
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
