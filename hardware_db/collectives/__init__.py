"""Fitted collective-communication constants as data: ``nccl.json`` (written by
``bench/fit_collectives.py``; the constants of ``analyzer.scaling.collectives.nccl`` with the
fit's provenance: data file and its sha256, row selection, systems, rows, command, and the
leave-one-system-out score) and ``nccl_tuning.json`` (NCCL's own cost-model constants from its
``src/graph/tuning.cc``, used for calls that span nodes; nothing fitted). Standard library only.

    >>> from hardware_db import collectives
    >>> collectives.nccl()["provenance"]["fitted_on_systems"][0]
    'a100_sxm'
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from analyzer.errors import HardwareError

__all__ = ["NCCL_FILE", "TUNING_FILE", "nccl", "nccl_tuning", "validate"]

NCCL_FILE = Path(__file__).resolve().parent / "nccl.json"
TUNING_FILE = Path(__file__).resolve().parent / "nccl_tuning.json"
PROTOCOLS = ("LL", "LL128", "Simple")
PROVENANCE = ("data", "data_sha256", "selection", "fitted_on_systems", "rows", "command")
_CACHE: dict | None = None
_TUNING: dict | None = None


def _num(where: str, v, lo: float = 0.0, hi: float = math.inf, lo_open: bool = False) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
            or v < lo or (lo_open and v == lo) or v > hi:
        raise HardwareError(f"nccl constants: {where} out of range, got {v!r}")


def validate(doc: dict) -> dict:
    """``doc`` if it holds every constant in range and a provenance with every field
    (``PROVENANCE``); else ``HardwareError`` naming what is wrong."""
    _num("base_us", doc.get("base_us"))
    for p in PROTOCOLS:
        t = doc.get("protocols", {}).get(p, {})
        _num(f"{p}.step_us", t.get("step_us"))
        _num(f"{p}.efficiency", t.get("efficiency"), 0.0, 1.0, lo_open=True)
    _num("output_share", doc.get("output_share"))
    _num("nvls.step_us", doc.get("nvls", {}).get("step_us"))
    for c in ("all_reduce", "all_gather", "reduce_scatter"):
        _num(f"collective_efficiency.{c}", doc.get("collective_efficiency", {}).get(c), 0.0, 1.0,
             lo_open=True)
    prov = doc.get("provenance") or {}
    missing = [k for k in PROVENANCE if not prov.get(k)]
    if missing:
        raise HardwareError(f"nccl constants: provenance lacks {', '.join(missing)}")
    if any("h100" in s.lower() for s in prov["fitted_on_systems"]):
        raise HardwareError("nccl constants: fitted on H100 data, which is held out")
    return doc


def nccl() -> dict:
    """The shipped NCCL constants (validated)."""
    global _CACHE
    if _CACHE is None:
        with open(NCCL_FILE, encoding="utf-8") as f:
            _CACHE = validate(json.load(f))
    return _CACHE


def nccl_tuning() -> dict:
    """NCCL's cost-model constants for calls that span nodes (``nccl_tuning.json``), each
    latency >= 0 us and each bandwidth factor in (0, 1]; ``HardwareError`` otherwise."""
    global _TUNING
    if _TUNING is None:
        with open(TUNING_FILE, encoding="utf-8") as f:
            doc = json.load(f)
        for alg in ("ring", "tree"):
            for p in PROTOCOLS:
                _num(f"base_us.{alg}.{p}", doc["base_us"][alg][p])
                for hw in ("nvlink", "pci", "net"):
                    _num(f"hw_us.{hw}.{alg}.{p}", doc["hw_us"][hw][alg][p])
        for p in PROTOCOLS:
            _num(f"ring_bw_factor.{p}", doc["ring_bw_factor"][p], 0.0, 1.0, lo_open=True)
            _num(f"tree_protocol_bw_factor.{p}", doc["tree_protocol_bw_factor"][p], 0.0, 1.0,
                 lo_open=True)
        _num("tree_bw_factor", doc["tree_bw_factor"], 0.0, 1.0, lo_open=True)
        _num("net_overhead_us", doc["net_overhead_us"])
        _num("net_overhead_simple_factor", doc["net_overhead_simple_factor"])
        _TUNING = doc
    return _TUNING
