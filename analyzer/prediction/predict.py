"""Predictions: a Report's counts lowered onto hardware profiles and run through the kernels.

``predict(report, hw)`` returns new ``Prediction`` values and changes nothing; the Report that
carries them is ``report.with_predictions(preds)`` (what ``analyzer.analyze(..., hw=...)``
returns).  Every ``NodePrediction`` holds the ``index`` of its node in ``report.nodes``: rows
exist only for nodes that launch a kernel, and ``Prediction.for_node(index)`` /
``Report.rows()`` join them to nodes by that index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import numpy as np

from analyzer.prediction.kernels import BOUNDS


class NodePrediction(NamedTuple):
    """Predicted time of one kernel on one profile (immutable)."""

    name: str
    time_s: float
    compute_s: float
    memory_s: float
    overhead_s: float
    bound: str
    intensity: float   # FLOPs per byte moved (at the prediction's precision)
    share: float       # this layer's fraction of the model's predicted latency
    index: int = -1    # position of the node in ``report.nodes`` (not in JSON: names are)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "time_s": self.time_s, "compute_s": self.compute_s,
                "memory_s": self.memory_s, "overhead_s": self.overhead_s, "bound": self.bound,
                "intensity": self.intensity, "share": self.share}


@dataclass(frozen=True, slots=True)
class Prediction:
    """Predicted latency of one model on one hardware profile (frozen; ``nodes`` and
    ``warnings`` are tuples, ``nodes`` in graph order)."""

    hardware: str
    hardware_name: str
    precision: str
    overlap: bool
    latency_s: float
    bound_share: dict[str, float]
    nodes: tuple[NodePrediction, ...]
    warnings: tuple[str, ...] = ()
    precision_explicit: bool = False   # True when --precision overrode the model's dtypes
    # node index -> row, built on the first ``for_node`` call (a cache, not part of the value)
    _by_index: dict[int, NodePrediction] | None = field(default=None, init=False, repr=False,
                                                        compare=False)

    def __post_init__(self) -> None:
        for name in ("nodes", "warnings"):
            if not isinstance(v := getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(v))

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "hardware_name": self.hardware_name,
                "precision": self.precision,
                "model": "overlap" if self.overlap else "additive",
                "latency_s": self.latency_s, "bound_share": dict(self.bound_share),
                "nodes": [n.to_dict() for n in self.nodes], "warnings": list(self.warnings)}

    def for_node(self, index: int) -> NodePrediction | None:
        """The row of ``report.nodes[index]``, or None when that node launches no kernel."""
        by_index = self._by_index
        if by_index is None:
            by_index = {x.index: x for x in self.nodes}
            object.__setattr__(self, "_by_index", by_index)
        return by_index.get(index)

    def node(self, name: str) -> NodePrediction:
        """The row of the node named ``name`` (a convenience for people; code joins rows to
        nodes by index: ``for_node`` / ``Report.rows``)."""
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def top(self, k: int) -> list[NodePrediction]:
        """The ``k`` layers with the largest predicted time."""
        return sorted(self.nodes, key=lambda n: -n.time_s)[:k]

    def summary_line(self) -> str:
        from analyzer.render.formats import human_time

        shares = ", ".join(f"{b} {100 * s:.0f}%" for b, s in self.bound_share.items() if s > 0)
        return (f"latency on {self.hardware} ({self.precision}): {human_time(self.latency_s)} "
                f"[{shares}]")


def _profiles(hw: str | Sequence[str]) -> list:
    import hardware_db

    ids = [hw] if isinstance(hw, str) else list(hw)
    return [h if hasattr(h, "peak_flops") else hardware_db.get(h) for h in ids]


def predict(report, hw, *, precision: str | None = None,
            overlap: bool = True) -> tuple[Prediction, ...]:
    """Predict per-layer latency of ``report`` on each profile in ``hw``: one new ``Prediction``
    per profile.  ``report`` is not changed; ``report.with_predictions(...)`` is the Report that
    carries them (calling this twice gives two independent results).

    Overlap model (default): ``time = max(compute, memory) + overhead`` per kernel;
    ``overlap=False`` uses seed 003's additive ``compute + memory + overhead``.
    The model's latency is the sum of its kernels (one stream, no concurrency)."""
    from analyzer.prediction.kernels import run
    from analyzer.prediction.lowering import lower

    profiles = _profiles(hw)
    low = lower(report.nodes, profiles, precision)
    compute, memory, ovh, time, bound = run(low, overlap=overlap)
    flops = low.mac_flops + low.vec_flops
    out: list[Prediction] = []
    for p, prof in enumerate(profiles):
        total = float(time[p].sum())
        share = {b: 0.0 for b in BOUNDS}
        for i, b in enumerate(BOUNDS):
            share[b] = float(time[p][bound[p] == i].sum()) / total if total > 0 else 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            intensity = np.where(low.bytes > 0, flops / np.where(low.bytes > 0, low.bytes, 1.0), np.inf)
        shares = (time[p] / total if total > 0 else np.zeros_like(time[p])).tolist()
        nodes = tuple(NodePrediction(*row) for row in zip(
            low.names, time[p].tolist(), compute[p].tolist(), memory[p].tolist(), ovh[p].tolist(),
            [BOUNDS[b] for b in bound[p].tolist()], intensity.tolist(), shares, low.index))
        out.append(Prediction(prof.id, prof.name, low.precision, overlap, total, share, nodes,
                              tuple(low.warnings[p]), precision is not None))
    return tuple(out)
