"""Interconnect links as data: ``links.toml`` (one table per link, every number sourced).

    >>> from hardware_db import links
    >>> links.get("ib-fdr").gbs_per_direction
    6.82

A ``NetworkLink`` is what a collective runs over (``analyzer.scaling.collectives``):
``gbs_per_direction`` (1e9 B/s one device sends, and at the same time receives) and
``latency_us`` (per message or hop; ``None`` where no source gives it). Standard library only.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from analyzer.errors import HardwareError
from hardware_db.profile import LINK_KINDS, FrozenMap

__all__ = ["LINKS_FILE", "NetworkLink", "get", "list_links", "make"]

LINKS_FILE = Path(__file__).resolve().parent / "links.toml"
_CACHE: dict[str, "NetworkLink"] | None = None


@dataclass(frozen=True)
class NetworkLink:
    """One link class: id, name, kind (nvlink, pcie, ici, infinity-fabric, ib, ethernet),
    bandwidth per direction (GB/s = 1e9 B/s), per-message latency (us, None = unknown) and the
    source of each number."""

    id: str
    name: str
    kind: str
    gbs_per_direction: float
    latency_us: float | None = None
    sources: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self):
        if self.kind not in LINK_KINDS:
            raise HardwareError(f"link '{self.id}': kind must be one of {', '.join(LINK_KINDS)}; "
                                f"got {self.kind!r}")
        for name in ("gbs_per_direction", "latency_us"):
            v = getattr(self, name)
            if v is None and name == "latency_us":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise HardwareError(f"link '{self.id}': {name} must be a finite number > 0, got {v!r}")
            object.__setattr__(self, name, float(v))
        object.__setattr__(self, "sources", FrozenMap(self.sources))

    @property
    def bytes_per_s(self) -> float:
        return self.gbs_per_direction * 1e9

    @property
    def latency_s(self) -> float:
        """Per-message latency in seconds (0.0 where unknown)."""
        return (self.latency_us or 0.0) * 1e-6

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "kind": self.kind,
                "gbs_per_direction": self.gbs_per_direction, "latency_us": self.latency_us,
                "sources": dict(self.sources)}


def _load() -> dict[str, NetworkLink]:
    global _CACHE
    if _CACHE is None:
        with open(LINKS_FILE, "rb") as f:
            doc = tomllib.load(f)
        out = {}
        for lid, t in doc.items():
            sources = dict(t.get("sources", {}))
            for key in ("gbs_per_direction", "latency_us"):
                if key in t and not sources.get(key):
                    raise HardwareError(f"link '{lid}': {key} has no source")
            out[lid] = NetworkLink(lid, t["name"], t["kind"], t["gbs_per_direction"],
                                   t.get("latency_us"), sources)
        _CACHE = out
    return _CACHE


def list_links() -> list[NetworkLink]:
    """The shipped links, in file order."""
    return list(_load().values())


def get(link_id: str) -> NetworkLink:
    """A shipped link by id (case-insensitive); ``HardwareError`` naming the known ids."""
    links = _load()
    key = link_id.strip().lower()
    if key not in links:
        raise HardwareError(f"unknown link '{link_id}' (known: {', '.join(links)})")
    return links[key]


def make(gbs_per_direction: float, latency_us: float | None = None, *, kind: str = "ethernet",
         link_id: str = "custom", name: str = "custom link") -> NetworkLink:
    """A link from numbers (a user's own network, or a test's)."""
    return NetworkLink(link_id, name, kind, gbs_per_direction, latency_us,
                       {"gbs_per_direction": "given by the caller"})
