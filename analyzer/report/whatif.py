"""What to shrink and what hardware would help: a prediction's first-order sensitivities.

A value of its own, carried by ``report.with_sensitivity`` (JSON key ``"sensitivity"``), made by
``analyzer.sensitivity(report)`` from the derivatives of the jitted latency kernel
(``analyzer.search.grad``).  Per profile:

- per layer, ``d_latency_d_flops`` (seconds per FLOP: MAC + vector + transcendental) and
  ``d_latency_d_bytes`` (seconds per byte moved at the deploy precision), and the layer's own
  ``flops`` and ``bytes``; ``saving_s(step)`` is the first-order time saved by cutting the
  layer's FLOPs (or its bytes) by the fraction ``step``: ``step * flops * d_latency_d_flops``.
  A compute-bound layer saves nothing from fewer bytes and a memory-bound one nothing from
  fewer FLOPs (the kernel's time is the max of the two terms), so the pair says *what* to
  shrink, not only *where*.
- for the hardware, ``d_latency_d_log_peak`` / ``_bandwidth`` / ``_fixed``: seconds per unit
  relative change of every compute peak / of the memory bandwidth / of every kernel's fixed
  cost (launch, dispatch, floors); negative for the first two.  ``hardware_saving_s(step)``:
  the first-order time saved by ``step`` more peak, ``step`` more bandwidth and ``step`` less
  fixed cost.

First order means a small change: a layer that is near its ridge point switches bound after a
large cut, which the derivative does not see (the latency kernel has kinks there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

STEP = 0.10   # the change the views quote: 10 % less work, 10 % more hardware


@dataclass(frozen=True, kw_only=True)
class LayerSensitivity:
    index: int               # the node's index in ``Report.nodes``
    name: str
    op: str
    flops: float
    bytes: float
    d_latency_d_flops: float
    d_latency_d_bytes: float

    def saving_s(self, step: float = STEP) -> tuple[float, float]:
        """(seconds saved by ``step`` fewer FLOPs, by ``step`` fewer bytes), first order."""
        return (step * self.flops * self.d_latency_d_flops,
                step * self.bytes * self.d_latency_d_bytes)

    def to_dict(self) -> dict[str, Any]:
        f, b = self.saving_s()
        return {"index": self.index, "name": self.name, "op": self.op, "flops": self.flops,
                "bytes": self.bytes, "d_latency_d_flops": self.d_latency_d_flops,
                "d_latency_d_bytes": self.d_latency_d_bytes,
                "saving_s_10pct_fewer_flops": f, "saving_s_10pct_fewer_bytes": b}


@dataclass(frozen=True, kw_only=True)
class ProfileSensitivity:
    hardware: str
    runtime: str
    latency_s: float
    d_latency_d_log_peak: float
    d_latency_d_log_bandwidth: float
    d_latency_d_log_fixed: float
    layers: tuple[LayerSensitivity, ...]

    def hardware_saving_s(self, step: float = STEP) -> dict[str, float]:
        """Seconds saved (first order) by ``step`` more compute peak, ``step`` more memory
        bandwidth, ``step`` less fixed cost per kernel."""
        return {"compute_peak": -step * self.d_latency_d_log_peak,
                "memory_bandwidth": -step * self.d_latency_d_log_bandwidth,
                "fixed_cost": step * self.d_latency_d_log_fixed}

    def shrink(self, k: int | None = None) -> list[LayerSensitivity]:
        """The layers whose 10 % cut saves most (the larger of the FLOPs and bytes saving),
        at most ``k``, largest first; layers that save nothing are left out."""
        rows = [r for r in self.layers if max(r.saving_s()) > 0]
        rows.sort(key=lambda r: (-max(r.saving_s()), r.index))
        return rows if k is None else rows[:k]

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "runtime": self.runtime, "latency_s": self.latency_s,
                "d_latency_d_log_peak": self.d_latency_d_log_peak,
                "d_latency_d_log_bandwidth": self.d_latency_d_log_bandwidth,
                "d_latency_d_log_fixed": self.d_latency_d_log_fixed,
                "saving_s_10pct": self.hardware_saving_s(),
                "layers": [r.to_dict() for r in self.layers]}


@dataclass(frozen=True)
class WhatIf:
    """Sensitivities of every prediction of a report, in the report's profile order."""

    profiles: tuple[ProfileSensitivity, ...]
    step: float = STEP

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "first_order": True,
                "profiles": [p.to_dict() for p in self.profiles]}
