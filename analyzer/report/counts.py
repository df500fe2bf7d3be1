"""The Report: per-node counts, totals, coverage and (with hardware) predictions.

A Report is plain, frozen data: nothing changes one after it is built.  Each later stage
returns a new value: ``report.with_predictions(predict(report, hw))`` and
``report.with_comparison(baseline.compare(report, doc, pct))`` are new Reports, the
original untouched. ``to_dict``/``to_json`` give the exact machine form
(``schema_version`` 1, the keys of DESIGN.md); the human renderers live in
``analyzer/render.py`` and never compute anything but formatting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator

from analyzer.counting.cost import COUNT_FIELDS, Cost
from analyzer.counting.engine import COSTED, FOLDED, NodeCost
from analyzer.errors import CheckFailed, Hint
from analyzer.ir.ops import VIEW, facts

# The prediction and baseline types, by name only: the report stage holds their values but does
# not import the stages that produce them (analyzer.prediction.predict, analyzer.report.baseline).
Prediction = NodePrediction = Comparison = MeasuredComparison = Any

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Coverage:
    """How each node got its counts. The node classes partition ``nodes``:

    ``by_rule`` (a rule counted a node of the file) + ``decomposed`` (a rule counted a node
    that came from a function op's body) + ``free`` (a view: costs nothing by design) +
    ``folded`` + ``len(uncosted)``; ``costed`` = by_rule + decomposed + free (every node
    whose status is "costed"). A body node that folds or has no rule counts as folded or
    uncosted. ``decomposed_ops``: op -> how many of the file's nodes were replaced by
    their function bodies (``decomposed_nodes`` in all). ``estimates``: nodes whose counts
    rest on an assumption their note states (an upper bound for a data-dependent size, the
    costlier branch of an If whose condition is not constant)."""

    nodes: int
    costed: int
    folded: int
    uncosted: tuple[str, ...]
    uncosted_ops: dict[str, int]
    by_rule: int = 0
    free: int = 0
    decomposed: int = 0
    decomposed_ops: dict[str, int] = field(default_factory=dict)
    estimates: tuple[str, ...] = ()

    @property
    def decomposed_nodes(self) -> int:
        return sum(self.decomposed_ops.values())

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "costed": self.costed, "folded": self.folded,
                "uncosted": list(self.uncosted), "uncosted_ops": dict(self.uncosted_ops),
                "by_rule": self.by_rule, "free": self.free, "decomposed": self.decomposed,
                "decomposed_nodes": self.decomposed_nodes, "decomposed_ops": dict(self.decomposed_ops),
                "estimates": list(self.estimates)}

    def line(self) -> str:
        """One sentence for the terminal: how much of the graph has exact counts.

        Free and decomposed nodes are named only when there are any."""
        s = f"{self.by_rule} of {self.nodes} nodes costed by rule"
        if self.decomposed_ops:
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(self.decomposed_ops.items()))
            s += (f", {self.decomposed} through the function bodies of {self.decomposed_nodes} "
                  f"node{'s' if self.decomposed_nodes != 1 else ''} ({ops})")
        if self.free:
            s += f", {self.free} free (views)"
        s += f", {self.folded} constant-folded"
        if self.uncosted:
            ops = ", ".join(f"{op} x{n}" for op, n in sorted(self.uncosted_ops.items()))
            s += f", {len(self.uncosted)} UNCOSTED ({ops}): their FLOPs are missing from the totals"
        else:
            s += ", 0 uncosted"
        return s


@dataclass(frozen=True, slots=True)
class Report:
    """Counts of every node (``nodes``, graph order), their ``totals`` and ``coverage``; with
    hardware, one ``Prediction`` per profile; after a baseline check, its ``comparison``.

    Frozen: assigning a field raises.  ``nodes``, ``predictions`` and ``warnings`` are tuples;
    ``model`` and the ``NodeCost`` records are read-only by convention (not copied, for speed).
    New values come from ``with_predictions`` / ``with_comparison`` / ``with_measured``
    (``dataclasses.replace``).
    """

    model: dict[str, Any]
    nodes: tuple[NodeCost, ...]
    totals: Cost
    coverage: Coverage
    predictions: tuple["Prediction", ...] = ()
    warnings: tuple[str, ...] = ()
    comparison: "Comparison | None" = None   # set by with_comparison, never on this object
    measured: "MeasuredComparison | None" = None   # set by with_measured (report.measured)
    training: Any = None   # set by with_training (analyzer.training.step.Training)
    scaling: Any = None    # set by with_scaling (analyzer.scaling.curve.Scaling)
    sensitivity: Any = None   # set by with_sensitivity (analyzer.report.whatif.WhatIf)

    def __post_init__(self) -> None:
        for name in ("nodes", "predictions", "warnings"):   # lists given by a caller -> tuples
            if not isinstance(v := getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(v))

    def __repr__(self) -> str:
        """One line: model, node count, totals, each profile's latency (the whole value is
        ``to_dict()``; a notebook shows this)."""
        t = self.totals
        path = str(self.model.get("path", "?"))
        head = (f"Report({path!r}, {self.model.get('format', '?')}, {len(self.nodes)} nodes, "
                f"params={t.params:,}, flops={t.flops:,}, bytes={t.bytes_moved:,}")
        lat = ", ".join(f"{p.hardware} {p.latency_s:.3g} s" for p in self.predictions)
        return head + (f"; latency: {lat}" if lat else "") + ")"

    @classmethod
    def from_nodes(cls, model: dict[str, Any], nodes: Iterable[NodeCost],
                   warnings: Iterable[str] | None = None) -> "Report":
        nodes = tuple(nodes)
        totals = Cost(*map(sum, zip(*[n.cost for n in nodes]))) if nodes else Cost()
        return cls(model, nodes, totals, _coverage(nodes), (), tuple(warnings or ()))

    def with_predictions(self, predictions: Iterable["Prediction"]) -> "Report":
        """A new Report carrying ``predictions`` (replacing any it had; the comparison, which
        described the replaced predictions, is dropped).  Its warnings are this report's own
        plus each prediction's, once."""
        predictions = tuple(predictions)
        old = {w for p in self.predictions for w in p.warnings}
        warnings = [w for w in self.warnings if w not in old]
        for p in predictions:
            warnings.extend(w for w in p.warnings if w not in warnings)
        return replace(self, predictions=predictions, warnings=tuple(warnings), comparison=None,
                       measured=None)

    def with_comparison(self, comparison: "Comparison | None") -> "Report":
        """A new Report carrying a baseline comparison (rendered and in ``to_dict``)."""
        return replace(self, comparison=comparison)

    def with_measured(self, measured: "MeasuredComparison | None") -> "Report":
        """A new Report carrying its prediction next to a measured run
        (``analyzer.report.measured.compare_measured``; JSON key ``"measured"``)."""
        return replace(self, measured=measured)

    def with_training(self, training: Any) -> "Report":
        """A new Report carrying a training step (JSON key ``"training"``)."""
        return replace(self, training=training)

    def with_scaling(self, scaling: Any) -> "Report":
        """A new Report carrying a multi-device curve (JSON keys ``"scaling"`` and
        ``"crossover_devices"``)."""
        return replace(self, scaling=scaling)

    def with_sensitivity(self, sensitivity: Any) -> "Report":
        """A new Report carrying what to shrink and what hardware would help
        (``analyzer.sensitivity(report)``; JSON key ``"sensitivity"``)."""
        return replace(self, sensitivity=sensitivity)

    def node(self, name: str) -> NodeCost:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def rows(self) -> Iterator[tuple[NodeCost, tuple["NodePrediction | None", ...]]]:
        """Each node (graph order) with its prediction row on every profile, ``None`` where the
        node launches no kernel.  The one place nodes and predictions are joined: by the
        node's index in ``nodes`` (``NodePrediction.index``), never by name."""
        preds = self.predictions
        for i, n in enumerate(self.nodes):
            yield n, tuple(p.for_node(i) for p in preds)

    def require_full_coverage(self) -> None:
        """Raise ``CheckFailed`` if any node has no cost rule (the CLI's strict check)."""
        if self.coverage.uncosted:
            names = ", ".join(self.coverage.uncosted[:5])
            more = len(self.coverage.uncosted) - 5
            raise CheckFailed(
                f"{{strict}}: {len(self.coverage.uncosted)} node(s) have no cost rule "
                f"({', '.join(self.coverage.uncosted_ops)}): {names}" + (f" and {more} more" if more > 0 else ""),
                hints=(Hint("strict"),))

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
        if self.measured is not None:
            d["measured"] = self.measured.to_dict()
        if self.training is not None:
            d["training"] = self.training.to_dict()
        if self.scaling is not None:
            d.update(self.scaling.to_dict())
        if self.sensitivity is not None:
            d["sensitivity"] = self.sensitivity.to_dict()
        return d

    def to_json(self, indent: int | None = 2) -> str:
        """The JSON document; a value that is not a finite number (the intensity of a node that
        moves no bytes) is null, never ``Infinity``/``NaN`` (``finite_json``)."""
        from analyzer.report.finite_json import dumps

        return dumps(self.to_dict(), indent=indent)


def _coverage(nodes: tuple[NodeCost, ...]) -> Coverage:
    by_rule = free = decomposed = folded = 0
    unc: list[NodeCost] = []
    estimates = tuple(n.name for n in nodes if n.estimate)
    parents: dict[str, str] = {}
    for n in nodes:
        status, origin = n.status, n.origin
        if origin is not None:
            parents[origin[0]] = origin[1]
        if status == COSTED:
            if origin is not None:
                decomposed += 1
            elif facts(n.domain, n.op).io == VIEW:
                free += 1  # a view: costs nothing by design
            else:
                by_rule += 1
        elif status == FOLDED:
            folded += 1
        else:  # UNCOSTED
            unc.append(n)
    ops: dict[str, int] = {}
    for n in unc:
        key = f"{n.domain}::{n.op}" if n.domain else n.op
        ops[key] = ops.get(key, 0) + 1
    dec_ops: dict[str, int] = {}
    for op in parents.values():
        dec_ops[op] = dec_ops.get(op, 0) + 1
    return Coverage(nodes=len(nodes), costed=by_rule + free + decomposed, folded=folded,
                    uncosted=tuple(n.name for n in unc), uncosted_ops=ops, by_rule=by_rule,
                    free=free, decomposed=decomposed, decomposed_ops=dec_ops, estimates=estimates)


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
    if n.origin is not None:
        d["decomposed_from"] = {"name": n.origin[0], "op": n.origin[1]}
    if n.estimate:
        d["estimate"] = True
    return d
