"""Baselines for CI: save a report's counts and predicted latencies, compare a later
report against them, and decide whether predicted latency regressed.

A baseline is JSON (``kind: "opcost-baseline"``, ``schema_version`` 1) holding the
totals, per-layer counts and, per hardware profile, the total and per-layer
predicted time.  Comparing refuses a baseline of another schema version or of
another model (different graph input names), and fails the check when the total
predicted latency on any profile grows by more than the threshold.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.counting.cost import COUNT_FIELDS
from analyzer.errors import BaselineError, Hint, InputSpecError
from analyzer.userfiles import CAPS, read_regular

BASELINE_VERSION = 1
KIND = "opcost-baseline"


def to_baseline(report) -> dict[str, Any]:
    """The baseline document of ``report`` (exact counts, float times)."""
    from analyzer.version import VERSION

    return {
        "kind": KIND,
        "schema_version": BASELINE_VERSION,
        "opcost_version": VERSION,
        "model": {k: report.model.get(k) for k in ("path", "format", "inputs", "outputs", "dims")},
        "totals": report.totals.to_dict(),
        "nodes": {n.name: {"op": n.op, **n.cost.to_dict()} for n in report.nodes if n.status != "folded"},
        # layers keyed by name: a later report (another graph) is matched by name in compare
        "predictions": [
            {"hardware": p.hardware, "precision": p.precision,
             "precision_explicit": p.precision_explicit, "latency_s": p.latency_s,
             "nodes": {x.name: x.time_s for x in p.nodes}}
            for p in report.predictions
        ],
    }


def load(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    # a regular file of at most 512 MiB: never a FIFO (a hang), /dev/zero or a folder
    raw = read_regular(p, f"baseline {p}", CAPS["baseline"], BaselineError)
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise BaselineError(f"baseline {p}: not a readable JSON file ({why})") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise BaselineError(f"baseline {p}: not an opcost baseline (write one with {{save_baseline}})",
                            hints=(Hint("save_baseline"),))
    if doc.get("schema_version") != BASELINE_VERSION:
        raise BaselineError(
            f"baseline {p}: schema version {doc.get('schema_version')!r}, this opcost reads "
            f"version {BASELINE_VERSION}; regenerate it with {{save_baseline}}",
            hints=(Hint("save_baseline"),))
    for key in ("model", "totals", "nodes", "predictions"):
        if key not in doc:
            raise BaselineError(f"baseline {p}: missing '{key}'")
    return doc


def parse_threshold(text: str | float) -> float:
    """'5%', '5' or 5.0 -> 5.0 (percent)."""
    s = str(text).strip().rstrip("%").strip()
    try:
        v = float(s)
    except ValueError:
        raise InputSpecError(f"{{max_regression}} '{text}': expected a percentage such as 5%",
                             hints=(Hint("max_regression"),)) from None
    if v != v or v < 0:
        raise InputSpecError(f"{{max_regression}} '{text}': must be a non-negative percentage",
                             hints=(Hint("max_regression"),))
    return v


@dataclass(frozen=True, slots=True)
class LayerChange:
    name: str
    op: str
    old_s: float | None   # None: the layer is new
    new_s: float | None   # None: the layer was removed

    @property
    def delta_s(self) -> float:
        return (self.new_s or 0.0) - (self.old_s or 0.0)


@dataclass(frozen=True, slots=True)
class HardwareChange:
    hardware: str
    precision: str
    old_s: float
    new_s: float
    regressed: bool
    layers: tuple[LayerChange, ...]   # the layers whose time grew most, largest first

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.new_s - self.old_s) / self.old_s if self.old_s else 0.0


@dataclass(frozen=True, slots=True)
class Comparison:
    """A report measured against a baseline: a value of its own (``compare``); a Report
    carries it only as ``report.with_comparison(c)``."""

    baseline_path: str
    threshold_pct: float
    hardware: tuple[HardwareChange, ...]
    count_deltas: dict[str, tuple[int, int]]   # field -> (old, new), only changed fields
    grown_layers: tuple[tuple[str, str, int, int], ...] = ()  # name, op, old flops, new

    @property
    def failed(self) -> bool:
        return any(h.regressed for h in self.hardware)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline_path,
            "max_regression_pct": self.threshold_pct,
            "failed": self.failed,
            "hardware": [
                {"hardware": h.hardware, "precision": h.precision, "old_latency_s": h.old_s,
                 "new_latency_s": h.new_s, "change_pct": h.change_pct, "regressed": h.regressed,
                 "layers": [{"name": c.name, "op": c.op, "old_time_s": c.old_s, "new_time_s": c.new_s}
                            for c in h.layers]}
                for h in self.hardware],
            "count_deltas": {k: {"old": o, "new": n} for k, (o, n) in self.count_deltas.items()},
        }

    def failure_message(self) -> str:
        bad = [h for h in self.hardware if h.regressed]
        parts = [f"{h.hardware} {h.old_s * 1e3:.4g} ms -> {h.new_s * 1e3:.4g} ms ({h.change_pct:+.1f}%)"
                 for h in bad]
        names = ", ".join(c.name for c in bad[0].layers[:3]) if bad and bad[0].layers else ""
        return (f"predicted latency regressed beyond {self.threshold_pct:g}%: " + "; ".join(parts)
                + (f" (grew most: {names})" if names else ""))


def hardware_of(doc: dict[str, Any]) -> tuple[list[str], str | None]:
    """The profiles and precision a baseline was made with (to re-predict on the same)."""
    preds = doc.get("predictions") or []
    explicit = bool(preds) and preds[0].get("precision_explicit", False)
    return [p["hardware"] for p in preds], (preds[0]["precision"] if explicit else None)


def compare(report, doc: dict[str, Any], threshold_pct: float, *, path: str = "",
            top: int = 10) -> Comparison:
    """``report`` measured against the baseline document ``doc``: a new ``Comparison``
    (``report`` is not changed; ``report.with_comparison(c)`` carries it).

    Layers are matched by name here, and only here: a baseline is another graph (an earlier
    version of the model, another file), so node indices mean nothing across the two; names
    are what the two graphs share.  Within ``report``, rows join nodes by index (``rows``)."""
    old_inputs = set((doc["model"].get("inputs") or {}).keys())
    new_inputs = set(report.model.get("inputs", {}).keys())
    if old_inputs and new_inputs and old_inputs != new_inputs:
        raise BaselineError(
            f"baseline {path} is of another model: its inputs are {sorted(old_inputs)}, "
            f"this model's are {sorted(new_inputs)}")
    old_preds = {p["hardware"]: p for p in doc["predictions"]}
    if doc["predictions"] and not any(p.hardware in old_preds for p in report.predictions):
        raise BaselineError(
            f"baseline {path} has predictions for {', '.join(old_preds)}; analyse with {{hw}} "
            f"to compare", hints=(Hint("hw", list(old_preds)),))
    rows = list(report.rows())
    ops = {n.name: n.op for n, _ in rows}   # by name: to match the baseline's layers
    hw_changes = []
    for k, p in enumerate(report.predictions):
        old = old_preds.get(p.hardware)
        if old is None:
            continue
        if old.get("precision") != p.precision:
            raise BaselineError(
                f"baseline {path} was predicted at {old.get('precision')} on {p.hardware}, this "
                f"report at {p.precision}; use the same {{precision}}", hints=(Hint("precision"),))
        new_nodes = {n.name: x[k].time_s for n, x in rows if x[k] is not None}
        old_nodes = old["nodes"]
        changes = [LayerChange(name, ops.get(name, doc["nodes"].get(name, {}).get("op", "?")),
                               old_nodes.get(name), new_nodes.get(name))
                   for name in dict.fromkeys([*old_nodes, *new_nodes])]
        grown = sorted((c for c in changes if c.delta_s > 0), key=lambda c: -c.delta_s)[:top]
        old_s = float(old["latency_s"])
        regressed = old_s > 0 and 100.0 * (p.latency_s - old_s) / old_s > threshold_pct
        hw_changes.append(HardwareChange(p.hardware, p.precision, old_s, p.latency_s, regressed,
                                         tuple(grown)))
    new_tot = report.totals.to_dict()
    deltas = {k: (int(doc["totals"].get(k, 0)), new_tot[k]) for k in (*COUNT_FIELDS, "flops")
              if int(doc["totals"].get(k, 0)) != new_tot[k]}
    grown_layers = []
    for n in report.nodes:
        o = doc["nodes"].get(n.name)
        if o is not None and n.cost.flops > int(o.get("flops", 0)):
            grown_layers.append((n.name, n.op, int(o.get("flops", 0)), n.cost.flops))
    grown_layers.sort(key=lambda t: -(t[3] - t[2]))
    return Comparison(path, threshold_pct, tuple(hw_changes), deltas, tuple(grown_layers[:top]))
