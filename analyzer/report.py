"""The Report: per-node counts, totals, coverage and (with hardware) predictions.

A Report is plain data. ``to_dict``/``to_json`` give the exact machine form
(``schema_version`` 1, the keys of DESIGN.md); the human renderers live in
``analyzer/render.py`` and never compute anything but formatting.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .cost import COUNT_FIELDS, Cost
from .engine import COSTED, FOLDED, UNCOSTED, NodeCost
from .errors import CheckFailed

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Coverage:
    nodes: int
    costed: int
    folded: int
    uncosted: tuple[str, ...]
    uncosted_ops: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "costed": self.costed, "folded": self.folded,
                "uncosted": list(self.uncosted), "uncosted_ops": dict(self.uncosted_ops)}

    def line(self) -> str:
        """One sentence for the terminal: how much of the graph has exact counts."""
        s = f"{self.costed} of {self.nodes} nodes costed by rule, {self.folded} constant-folded"
        if self.uncosted:
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(self.uncosted_ops.items()))
            s += f", {len(self.uncosted)} UNCOSTED ({ops}): their FLOPs are missing from the totals"
        else:
            s += ", 0 uncosted"
        return s


@dataclass(slots=True)
class Report:
    model: dict[str, Any]
    nodes: list[NodeCost]
    totals: Cost
    coverage: Coverage
    predictions: list[Any] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    comparison: Any = None   # a baseline.Comparison, when compared against a baseline

    @classmethod
    def from_nodes(cls, model: dict[str, Any], nodes: list[NodeCost],
                   warnings: list[str] | None = None) -> "Report":
        totals = Cost(*map(sum, zip(*[n.cost for n in nodes]))) if nodes else Cost()
        unc = [n for n in nodes if n.status == UNCOSTED]
        ops: dict[str, int] = {}
        for n in unc:
            key = f"{n.domain}::{n.op}" if n.domain else n.op
            ops[key] = ops.get(key, 0) + 1
        cov = Coverage(
            nodes=len(nodes),
            costed=sum(1 for n in nodes if n.status == COSTED),
            folded=sum(1 for n in nodes if n.status == FOLDED),
            uncosted=tuple(n.name for n in unc),
            uncosted_ops=ops,
        )
        return cls(model, nodes, totals, cov, [], list(warnings or []))

    def node(self, name: str) -> NodeCost:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def require_full_coverage(self) -> None:
        """Raise ``CheckFailed`` if any node has no cost rule (the ``--strict`` check)."""
        if self.coverage.uncosted:
            names = ", ".join(self.coverage.uncosted[:5])
            more = len(self.coverage.uncosted) - 5
            raise CheckFailed(
                f"--strict: {len(self.coverage.uncosted)} node(s) have no cost rule "
                f"({', '.join(self.coverage.uncosted_ops)}): {names}" + (f" and {more} more" if more > 0 else ""))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "model": self.model,
            "totals": self.totals.to_dict(),
            "coverage": self.coverage.to_dict(),
            "nodes": [_node_dict(n) for n in self.nodes],
        }
        if self.predictions:
            d["predictions"] = [p.to_dict() for p in self.predictions]
        if self.warnings:
            d["warnings"] = list(self.warnings)
        if self.comparison is not None:
            d["baseline_comparison"] = self.comparison.to_dict()
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)


def _node_dict(n: NodeCost) -> dict[str, Any]:
    d: dict[str, Any] = {"name": n.name, "op": n.op}
    if n.domain:
        d["domain"] = n.domain
    c = n.cost
    for f in COUNT_FIELDS:
        d[f] = getattr(c, f)
    d["flops"] = c.flops
    d["status"] = n.status
    d["inputs"] = list(n.inputs)
    d["outputs"] = list(n.outputs)
    if n.mac_dtype:
        d["mac_dtype"] = n.mac_dtype
    if n.note:
        d["note"] = n.note
    return d
