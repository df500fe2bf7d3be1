"""The frozen data model of one device: ``HardwareProfile``, its vocabulary and its read-only maps.

This module knows nothing about files or schemas. It checks its own invariants (kind, dtype keys,
positive finite numbers) so a profile built in Python is as safe as one read from a file, and
``from_document`` turns an already validated TOML document (see ``hardware_db.validate``) into a
profile. Standard library only.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from analyzer.errors import HardwareError

__all__ = [
    "DTYPES",
    "ENGINES",
    "KINDS",
    "LINK_KINDS",
    "RUNTIMES",
    "SCALARS",
    "SCALAR_TABLES",
    "SCHEMA_VERSION",
    "FrozenMap",
    "HardwareProfile",
    "Link",
    "freeze",
    "from_document",
    "thaw",
]

SCHEMA_VERSION = 1
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")
ENGINES = ("matrix", "vector")
KINDS = ("gpu", "tpu", "npu", "dsp", "cpu")
RUNTIMES = ("kernel", "eager", "onnxruntime", "xla", "coreml", "edgetpu", "qnn", "qnn-dlc", "qnn-tflite")
LINK_KINDS = ("nvlink", "pcie", "ici", "infinity-fabric", "ib", "ethernet")

# TOML table -> the float fields it holds (flattened onto HardwareProfile under the same names).
SCALAR_TABLES = {
    "memory": ("mem_gb", "mem_bw_gbs", "onchip_mb", "npu_onchip_mb"),
    "interconnect": ("interconnect_gbs",),
    "overhead": ("launch_overhead_us",),
    "power": ("tdp_w", "clock_ghz", "sustained_clock_ghz", "boost_window_s"),
    "compute": ("fp32_datapath_factor", "mxu_dim"),
}
SCALARS = tuple(name for names in SCALAR_TABLES.values() for name in names)


class FrozenMap(Mapping):
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
        return (FrozenMap, (self._d,))

    def __setattr__(self, name, value):
        raise AttributeError("read-only mapping")


def freeze(value: Any) -> Any:
    """Nested dicts -> nested FrozenMaps (lists -> tuples); other values unchanged."""
    if isinstance(value, Mapping):
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of ``freeze``: plain dicts and lists, ready for ``json.dumps``."""
    if isinstance(value, Link):
        return value.to_dict()
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


def _check_positive(name: str, value: Any, integer: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if integer else numbers.Real):
        raise HardwareError(f"field '{name}' must be {'an integer' if integer else 'a number'}, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise HardwareError(f"field '{name}' must be a finite number > 0, got {value!r}")


def _as_tflops_map(name: str, data: Mapping | None) -> FrozenMap:
    data = dict(data or {})
    for dtype, value in data.items():
        if dtype not in DTYPES:
            raise HardwareError(f"{name}: unknown dtype '{dtype}' (known: {', '.join(DTYPES)})")
        _check_positive(name + "." + dtype, value)
    return FrozenMap({d: float(data[d]) for d in DTYPES if d in data})


@dataclass(frozen=True)
class Link:
    """One class of interconnect link of a device: bandwidth (GB/s, both directions added, per
    device), latency (us) and kind (nvlink, pcie, ici, infinity-fabric, ib, ethernet).
    ``None`` means unknown."""

    kind: str
    gbs: float | None = None
    latency_us: float | None = None

    def __post_init__(self):
        if self.kind not in LINK_KINDS:
            raise HardwareError(f"link kind must be one of {', '.join(LINK_KINDS)}; got {self.kind!r}")
        for name in ("gbs", "latency_us"):
            value = getattr(self, name)
            _check_positive(name, value)
            if value is not None:
                object.__setattr__(self, name, float(value))

    def to_dict(self) -> dict:
        return {"kind": self.kind, "gbs": self.gbs, "latency_us": self.latency_us}


def _as_links(data: Mapping | None) -> FrozenMap:
    out = {}
    for name, link in dict(data or {}).items():
        out[name] = link if isinstance(link, Link) else Link(**dict(link))
    return FrozenMap(out)


@dataclass(frozen=True)
class HardwareProfile:
    """One device. Numbers are floats in the units their names say; ``None`` means unknown.

    ``matrix_tflops`` / ``vector_tflops`` hold only the dtypes with a known dense peak (TFLOP/s, or
    TOP/s for int dtypes). ``sources`` maps each dotted field path ("matrix_tflops.bf16",
    "memory.mem_bw_gbs") to where the number comes from. ``path`` is the file it was read from.

    Optional sections (``None`` or empty when the file leaves them out): ``family`` (architecture
    family whose efficiency constants a datasheet-only profile inherits), ``units`` / ``unit_name``
    (count of SMs, CUs, TensorCores or cores, from ``[compute]``), ``default_runtime`` (kernel, eager,
    onnxruntime, xla, coreml or edgetpu), ``links`` (name -> ``Link``), ``efficiency`` and ``calibration`` (read-only
    nested maps of numbers and strings).
    """

    id: str
    name: str
    vendor: str
    kind: str
    aliases: tuple[str, ...] = ()
    matrix_tflops: Mapping[str, float] = field(default_factory=FrozenMap)
    vector_tflops: Mapping[str, float] = field(default_factory=FrozenMap)
    mem_gb: float | None = None
    mem_bw_gbs: float | None = None
    onchip_mb: float | None = None
    npu_onchip_mb: float | None = None
    interconnect_gbs: float | None = None
    launch_overhead_us: float | None = None
    tdp_w: float | None = None
    clock_ghz: float | None = None
    sustained_clock_ghz: float | None = None
    boost_window_s: float | None = None
    fp32_datapath_factor: float | None = None
    mxu_dim: float | None = None
    sources: Mapping[str, str] = field(default_factory=FrozenMap)
    notes: str = ""
    path: str | None = None
    family: str | None = None
    units: int | None = None
    unit_name: str | None = None
    default_runtime: str | None = None
    links: Mapping[str, Link] = field(default_factory=FrozenMap)
    efficiency: Mapping[str, Any] = field(default_factory=FrozenMap)
    calibration: Mapping[str, Any] = field(default_factory=FrozenMap)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise HardwareError(f"hardware '{self.id}': kind must be one of {', '.join(KINDS)}; got {self.kind!r}")
        if self.default_runtime is not None and self.default_runtime not in RUNTIMES:
            raise HardwareError(f"hardware '{self.id}': default_runtime must be one of {', '.join(RUNTIMES)}; "
                                f"got {self.default_runtime!r}")
        object.__setattr__(self, "aliases", tuple(self.aliases))
        object.__setattr__(self, "matrix_tflops", _as_tflops_map("matrix_tflops", self.matrix_tflops))
        object.__setattr__(self, "vector_tflops", _as_tflops_map("vector_tflops", self.vector_tflops))
        object.__setattr__(self, "sources", FrozenMap(self.sources))
        object.__setattr__(self, "links", _as_links(self.links))
        object.__setattr__(self, "efficiency", freeze(dict(self.efficiency)))
        object.__setattr__(self, "calibration", freeze(dict(self.calibration)))
        _check_positive("units", self.units, integer=True)
        for name in SCALARS:
            value = getattr(self, name)
            _check_positive(name, value)
            if value is not None:
                object.__setattr__(self, name, float(value))
        # FLOP/s from the decimal text of the TFLOP/s figure, so 989.4 -> 9.894e14 exactly as written.
        flops = {}
        for engine, table in (("matrix", self.matrix_tflops), ("vector", self.vector_tflops)):
            for dtype, tflops in table.items():
                flops[(engine, dtype)] = float(Decimal(repr(tflops)).scaleb(12))
        object.__setattr__(self, "_flops", FrozenMap(flops))  # a cache, not a dataclass field

    def __hash__(self) -> int:
        return hash((self.id, self.name, self.kind, self.path, self.matrix_tflops, self.vector_tflops,
                     tuple(getattr(self, n) for n in SCALARS)))

    def missing(self) -> tuple[str, ...]:
        """The figures a prediction needs that this profile does not state: ``mem_bw_gbs``,
        ``throughput`` (no matrix or vector peak at all), ``launch_overhead_us``. A prediction
        stands in for them with documented assumptions and says so; ``hw list`` marks them."""
        out = []
        if not self.mem_bw_gbs:
            out.append("mem_bw_gbs")
        if not (self.matrix_tflops or self.vector_tflops):
            out.append("throughput")
        if self.launch_overhead_us is None:
            out.append("launch_overhead_us")
        return tuple(out)

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
        """Exact, JSON-serializable view; unknown scalar fields are None, absent sections empty."""
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
        for name in SCALARS:
            out[name] = getattr(self, name)
        out["sources"] = dict(self.sources)
        out["notes"] = self.notes
        out["path"] = self.path
        out["family"] = self.family
        out["units"] = self.units
        out["unit_name"] = self.unit_name
        out["default_runtime"] = self.default_runtime
        out["links"] = thaw(self.links)
        out["efficiency"] = thaw(self.efficiency)
        out["calibration"] = thaw(self.calibration)
        return out


def from_document(data: Mapping, path: str | None = None) -> HardwareProfile:
    """A profile from a parsed TOML document that ``hardware_db.validate`` has accepted."""
    scalars = {name: data.get(table, {}).get(name) for table, names in SCALAR_TABLES.items() for name in names}
    compute = data.get("compute", {})
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
        family=data.get("family"),
        units=compute.get("units"),
        unit_name=compute.get("unit_name"),
        default_runtime=data.get("default_runtime"),
        links=data.get("links", {}),
        efficiency=data.get("efficiency", {}),
        calibration=data.get("calibration", {}),
        **scalars,
    )
