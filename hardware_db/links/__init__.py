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

__all__ = ["LINKS_FILE", "NODES_FILE", "NetworkLink", "Node", "get", "get_node", "list_links",
           "list_nodes", "make"]

LINKS_FILE = Path(__file__).resolve().parent / "links.toml"
NODES_FILE = Path(__file__).resolve().parent / "nodes.toml"
_CACHE: dict[str, "NetworkLink"] | None = None
_NODES: dict[str, "Node"] | None = None


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
    return _lookup(_load(), link_id, "link")


def _lookup(table: dict, given: str, what: str):
    """``table[given]`` by its case-insensitive id; ``HardwareError`` naming the known ids."""
    key = given.strip().lower()
    if key not in table:
        raise HardwareError(f"unknown {what} '{given}' (known: {', '.join(table)})")
    return table[key]


def make(gbs_per_direction: float, latency_us: float | None = None, *, kind: str = "ethernet",
         link_id: str = "custom", name: str = "custom link") -> NetworkLink:
    """A link from numbers (a user's own network, or a test's)."""
    return NetworkLink(link_id, name, kind, gbs_per_direction, latency_us,
                       {"gbs_per_direction": "given by the caller"})


@dataclass(frozen=True)
class Node:
    """One node design (``nodes.toml``): devices per node (``gpus``), the link between them
    (``intra_link``, a link id), NVLink switches (``nvswitch``) and in-switch reduction
    (``nvls``) with NCCL's NVLS channel count (``nvls_channels``) and the fraction of the
    NVLink figure NVLS moves at (``nvls_efficiency``, NCCL's per architecture), the NVLink domain size,
    network cards per node (``nics``, None = not on record)
    over ``nic_link``, the aiconfigurator system its nccl-tests rows came from, and sources."""

    id: str
    name: str
    gpus: int
    intra_link: str
    nvswitch: bool
    nvls: bool
    nvlink_domain: int
    nics: int | None = None
    nic_link: str | None = None
    aic_system: str | None = None
    sources: Mapping[str, str] = field(default_factory=FrozenMap)
    nvls_channels: int | None = None
    gpus_per_pcie_switch: int | None = None
    p2p: bool | None = None
    host_path_gbs: float | None = None
    nvls_efficiency: float | None = None

    def __post_init__(self):
        for name in ("gpus", "nvlink_domain", "nics", "nvls_channels", "gpus_per_pcie_switch"):
            v = getattr(self, name)
            if v is None and name != "gpus" and name != "nvlink_domain":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise HardwareError(f"node '{self.id}': {name} must be an integer >= 1, got {v!r}")
        if (self.nics is None) != (self.nic_link is None):
            raise HardwareError(f"node '{self.id}': give nics and nic_link together")
        get(self.intra_link)
        if self.nic_link is not None:
            get(self.nic_link)
        if self.nvls and not self.nvswitch:
            raise HardwareError(f"node '{self.id}': nvls needs nvswitch")
        if self.nvls != (self.nvls_channels is not None):
            raise HardwareError(f"node '{self.id}': give nvls_channels exactly when nvls is true")
        if self.nvls != (self.nvls_efficiency is not None):
            raise HardwareError(f"node '{self.id}': give nvls_efficiency exactly when nvls is true")
        e = self.nvls_efficiency
        if e is not None and (isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 < e <= 1):
            raise HardwareError(f"node '{self.id}': nvls_efficiency must be in (0, 1], got {e!r}")
        if self.host_path_gbs is not None and not (isinstance(self.host_path_gbs, (int, float))
                                                   and math.isfinite(self.host_path_gbs)
                                                   and self.host_path_gbs > 0):
            raise HardwareError(f"node '{self.id}': host_path_gbs must be a number > 0")
        if self.p2p is not None and not isinstance(self.p2p, bool):
            raise HardwareError(f"node '{self.id}': p2p must be true or false")
        object.__setattr__(self, "sources", FrozenMap(self.sources))

    def ring_gbs(self, n: int) -> tuple[float, bool]:
        """(GB/s per direction of a ring over ``n`` of this node's GPUs, whether the node's
        topology fixes it). NVSwitch: every pair at the intra link. PCIe: the ring's bottleneck
        link; GPUs under one PCIe switch with peer-to-peer (``n <= gpus_per_pcie_switch``) talk
        at the intra link, a ring across switches or without peer-to-peer also crosses the host
        path (root complex, socket link or host memory), ``min(intra, host_path_gbs)``. Where
        the node's file does not record that (absent keys), the intra link, and False."""
        link = get(self.intra_link).gbs_per_direction
        if self.nvswitch or n <= 1:
            return link, True
        if self.p2p and self.gpus_per_pcie_switch is not None and n <= self.gpus_per_pcie_switch:
            return link, True
        crosses_host = self.p2p is False or (self.p2p and self.gpus_per_pcie_switch is not None)
        if crosses_host and self.host_path_gbs is not None:
            return min(link, self.host_path_gbs), True
        return link, False

    @property
    def nic_gbs(self) -> float | None:
        """The node's network bandwidth per direction, GB/s (``nics`` x the NIC link)."""
        return None if self.nics is None else self.nics * get(self.nic_link).gbs_per_direction

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "gpus": self.gpus, "intra_link": self.intra_link,
                "nvswitch": self.nvswitch, "nvls": self.nvls, "nvls_channels": self.nvls_channels,
                "nvls_efficiency": self.nvls_efficiency, "nvlink_domain": self.nvlink_domain,
                "nics": self.nics, "nic_link": self.nic_link, "nic_gbs": self.nic_gbs,
                "aic_system": self.aic_system, "gpus_per_pcie_switch": self.gpus_per_pcie_switch,
                "p2p": self.p2p, "host_path_gbs": self.host_path_gbs, "sources": dict(self.sources)}


def _load_nodes() -> dict[str, Node]:
    global _NODES
    if _NODES is None:
        with open(NODES_FILE, "rb") as f:
            doc = tomllib.load(f)
        out = {}
        for nid, t in doc.items():
            sources = dict(t.get("sources", {}))
            for key in ("gpus", "nvls", "nics", "nvls_channels", "nvls_efficiency",
                        "gpus_per_pcie_switch", "p2p", "host_path_gbs"):   # a claim needs a source (nvls only when true)
                if key in t and (t[key] is not False or key == "p2p") and not sources.get(key):
                    raise HardwareError(f"node '{nid}': {key} has no source")
            out[nid] = Node(nid, t["name"], t["gpus"], t["intra_link"], bool(t["nvswitch"]),
                            bool(t["nvls"]), t["nvlink_domain"], t.get("nics"), t.get("nic_link"),
                            t.get("aic_system"), sources, t.get("nvls_channels"),
                            t.get("gpus_per_pcie_switch"), t.get("p2p"), t.get("host_path_gbs"),
                            t.get("nvls_efficiency"))
        _NODES = out
    return _NODES


def list_nodes() -> list[Node]:
    """The shipped node designs, in file order."""
    return list(_load_nodes().values())


def get_node(node_id: str) -> Node:
    """A shipped node by id (case-insensitive); ``HardwareError`` naming the known ids."""
    return _lookup(_load_nodes(), node_id, "node")
