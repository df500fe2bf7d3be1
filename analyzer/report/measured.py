"""Predicted vs measured: one prediction joined to what onnxruntime measured for the same model.

``compare_measured(report, measured)`` is pure arithmetic on two values: the Report's one
``Prediction`` and an ``ort_measure.Measured`` (or anything with its fields ``latency_s``,
``by_fused``, ``groups``, ``unmatched``, ``threads``, ``level``, ``runs``).  It returns a frozen
``MeasuredComparison``; ``report.with_measured(c)`` carries it (JSON key ``"measured"``).

The unit compared is the **onnxruntime kernel**: a node of onnxruntime's fused graph, which ran
one or more of opcost's nodes (``Measured.groups``, from onnxruntime's record of its fusions).
onnxruntime times a fused kernel, not its parts, so per kernel:

- ``measured_s``: the profiler's kernel time (median over profiled runs; without the per-node
  dispatch of ``session.run``, which the end-to-end latency includes);
- ``predicted_s``: the sum of the predicted times of the opcost nodes it ran (each node's share of
  its predicted kernel, dispatch included);
- ``error_pct = 100 * (predicted - measured) / measured``.

A node's ``measured_s`` is its kernel's time shared among the kernel's nodes in proportion to
their predicted times (equally where none is predicted), so a node's predicted/measured ratio is
its kernel's.  The summary is over kernels that were measured (time > 0) and ran at least one of
opcost's nodes:

- ``mape_pct`` = mean of ``|error_pct|``; ``within_10_pct`` / ``within_20_pct`` = share (%) of
  kernels with ``|error_pct| <= 10`` / ``<= 20``; ``bias_pct`` = mean signed ``error_pct``;
- ``spearman`` = Spearman rank correlation of predicted and measured kernel times (average ranks
  for ties; None below two kernels or for a constant side);
- ``error_pct`` (end to end) = ``100 * (prediction.latency_s - measured.latency_s) /
  measured.latency_s``, the latter the median ``session.run`` wall-clock.

Kernels onnxruntime ran that replace none of opcost's nodes (layout reorders, inserted casts)
are ``unjoined``; nodes with a predicted row that no measured kernel ran are ``unmeasured``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from analyzer.errors import Hint, InputSpecError


@dataclass(frozen=True, slots=True)
class KernelRow:
    """One onnxruntime kernel: the opcost nodes it ran, predicted and measured seconds."""

    kernel: str
    nodes: tuple[str, ...]
    predicted_s: float
    measured_s: float

    @property
    def error_pct(self) -> float | None:
        return 100 * (self.predicted_s - self.measured_s) / self.measured_s if self.measured_s > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "nodes": list(self.nodes), "predicted_s": self.predicted_s,
                "measured_s": self.measured_s, "error_pct": self.error_pct}


@dataclass(frozen=True, slots=True)
class NodeMeasured:
    """One opcost node: the kernel that ran it and its share of that kernel's measured time."""

    name: str
    kernel: str
    predicted_s: float
    measured_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kernel": self.kernel, "predicted_s": self.predicted_s,
                "measured_s": self.measured_s}


@dataclass(frozen=True, slots=True)
class ErrorSummary:
    """Errors over the compared kernels (see the module docstring for each definition)."""

    kernels: int
    mape_pct: float | None
    within_10_pct: float | None
    within_20_pct: float | None
    bias_pct: float | None
    spearman: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"kernels": self.kernels, "mape_pct": self.mape_pct,
                "within_10_pct": self.within_10_pct, "within_20_pct": self.within_20_pct,
                "bias_pct": self.bias_pct, "spearman": self.spearman}


@dataclass(frozen=True, slots=True, kw_only=True)
class MeasuredComparison:
    """A prediction next to an onnxruntime run of the same model (frozen)."""

    hardware: str
    runtime: str
    predicted_s: float            # the prediction's latency
    measured_s: float             # median session.run wall-clock
    kernel_sum_s: float           # sum of the measured kernel times (joined or not)
    kernels: tuple[KernelRow, ...]          # onnxruntime kernels that ran opcost's nodes
    nodes: tuple[NodeMeasured, ...]         # opcost's nodes, graph order
    summary: ErrorSummary
    unjoined: tuple[tuple[str, float], ...] = ()   # (kernel, seconds) running none of opcost's nodes
    unmeasured: tuple[str, ...] = ()        # nodes with a predicted row no measured kernel ran
    threads: int = 1
    level: str = "default"
    runs: int = 0

    @property
    def error_pct(self) -> float | None:
        """End-to-end error of the prediction, % of the measured latency."""
        return 100 * (self.predicted_s - self.measured_s) / self.measured_s if self.measured_s > 0 else None

    def top(self, k: int) -> list[KernelRow]:
        """The ``k`` kernels with the largest measured time."""
        return sorted(self.kernels, key=lambda r: -r.measured_s)[:k]

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "runtime": self.runtime, "threads": self.threads,
                "level": self.level, "runs": self.runs,
                "predicted_latency_s": self.predicted_s, "latency_s": self.measured_s,
                "error_pct": self.error_pct, "kernel_sum_s": self.kernel_sum_s,
                "summary": self.summary.to_dict(),
                "nodes": [n.to_dict() for n in self.nodes],
                "kernels": [k.to_dict() for k in self.kernels],
                "unjoined_kernels": {k: s for k, s in self.unjoined},
                "unmeasured_nodes": list(self.unmeasured)}


def _ranks(x: Sequence[float]) -> list[float]:
    order = sorted(range(len(x)), key=lambda i: x[i])
    r = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman rank correlation (Pearson of average ranks); None if undefined."""
    if len(a) != len(b) or len(a) < 2:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra)
    vb = sum((y - mb) ** 2 for y in rb)
    if va == 0 or vb == 0:
        return None
    return cov / math.sqrt(va * vb)


def summarize(rows: Sequence[KernelRow]) -> ErrorSummary:
    """The error summary over ``rows`` that were measured (``measured_s > 0``)."""
    rows = [r for r in rows if r.measured_s > 0]
    if not rows:
        return ErrorSummary(0, None, None, None, None, None)
    e = [r.error_pct for r in rows]
    n = len(e)
    return ErrorSummary(n, sum(abs(x) for x in e) / n, 100 * sum(abs(x) <= 10 for x in e) / n,
                        100 * sum(abs(x) <= 20 for x in e) / n, sum(e) / n,
                        spearman([r.predicted_s for r in rows], [r.measured_s for r in rows]))


def _file_node_index(nodes) -> dict[str, list[int]]:
    """The file's node name -> positions of the report nodes it became: itself, or the body of
    a decomposed function op (``origin``) or of a Loop/If/Scan (rows ``parent/...`` at a
    nested ``level``), which onnxruntime runs inside that node's kernel."""
    top = {n.name for n in nodes if not n.level and n.origin is None}
    index: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        if n.origin is not None:
            key = n.origin[0]
        elif n.level:
            cut = [k for k, ch in enumerate(n.name) if ch == "/" and n.name[:k] in top]
            key = n.name[:cut[-1]] if cut else n.name
        else:
            key = n.name
        index.setdefault(key, []).append(i)
    return index


def compare_measured(report, measured) -> MeasuredComparison:
    """Join ``measured`` (onnxruntime's kernels) to ``report``'s nodes and its one prediction."""
    if len(report.predictions) != 1:
        raise InputSpecError(f"a measured run is compared with one prediction; this report has "
                             f"{len(report.predictions)} (pass one profile to {{hw}})",
                             hints=(Hint("hw"),))
    pred = report.predictions[0]
    index = _file_node_index(report.nodes)

    def predicted(i: int) -> float:
        row = pred.for_node(i)
        return row.time_s if row is not None else 0.0

    kernels: list[KernelRow] = []
    share: dict[int, tuple[str, float]] = {}
    unjoined: list[tuple[str, float]] = []
    for kernel, t in measured.by_fused.items():
        members = sorted({i for name in measured.groups.get(kernel, ()) for i in index.get(name, ())})
        if not members:
            if t > 0:
                unjoined.append((kernel, float(t)))
            continue
        p = [predicted(i) for i in members]
        total = sum(p)
        kernels.append(KernelRow(kernel, tuple(report.nodes[i].name for i in members), total, float(t)))
        for i, pi in zip(members, p):
            share[i] = (kernel, float(t) * (pi / total if total > 0 else 1 / len(members)))
    unjoined += [(k, float(t)) for k, t in measured.unmatched.items()]
    nodes = tuple(NodeMeasured(report.nodes[i].name, k, predicted(i), s)
                  for i, (k, s) in sorted(share.items()))
    unmeasured = tuple(report.nodes[x.index].name for x in pred.nodes
                       if x.index not in share or share[x.index][1] == 0)
    kernel_sum = sum(float(t) for t in measured.by_fused.values()) + sum(
        float(t) for t in measured.unmatched.values())
    return MeasuredComparison(hardware=pred.hardware, runtime=pred.runtime, predicted_s=pred.latency_s,
                              measured_s=float(measured.latency_s), kernel_sum_s=kernel_sum,
                              kernels=tuple(kernels), nodes=nodes, summary=summarize(kernels),
                              unjoined=tuple(unjoined), unmeasured=unmeasured,
                              threads=int(getattr(measured, "threads", 1)),
                              level=str(getattr(measured, "level", "default")),
                              runs=int(getattr(measured, "runs", 0)))
