"""Baselines for CI: save a report's counts and predicted latencies, compare a later
report against them, and decide whether predicted latency regressed.

A baseline is JSON (``kind: "opcost-baseline"``, ``schema_version`` 1) holding the
totals, per-layer counts and, per hardware profile, the total and per-layer
predicted time.  Comparing refuses a baseline of another schema version or of
another model (different graph input names), and fails the check when the total
predicted latency on any profile grows by more than the threshold.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.counting.cost import COUNT_FIELDS
from analyzer.errors import BaselineError, Hint, InputSpecError
from analyzer.userfiles import CAPS, read_regular

BASELINE_VERSION = 1
KIND = "opcost-baseline"
SCHEMA_PATH = Path(__file__).resolve().parent / "baseline.schema.json"
SAME_MODEL_SHARE = 0.5   # without equal fingerprints: the share of layers (name and op) that
# must match, in the baseline and in the report, for the two to be versions of one model
_VALIDATOR = None


def fingerprint(model: dict[str, Any], ops: list[str]) -> str:
    """sha256 of a model's op sequence (graph order) and its input names and ranks and output
    names: equal for the same graph at any dims, different for another model whose input names
    happen to coincide."""
    inputs = sorted((k, len(v or ())) for k, v in (model.get("inputs") or {}).items())
    doc = json.dumps({"ops": ops, "inputs": inputs, "outputs": list(model.get("outputs") or [])},
                     separators=(",", ":"))
    return hashlib.sha256(doc.encode("utf-8", "backslashreplace")).hexdigest()


def _ops(report) -> list[str]:
    return [f"{n.domain}::{n.op}" if n.domain else n.op for n in report.nodes]


def to_baseline(report) -> dict[str, Any]:
    """The baseline document of ``report`` (exact counts, float times)."""
    from analyzer.version import VERSION

    return {
        "kind": KIND,
        "schema_version": BASELINE_VERSION,
        "opcost_version": VERSION,
        "model": {**{k: report.model.get(k) for k in ("path", "format", "inputs", "outputs", "dims")},
                  "fingerprint": fingerprint(report.model, _ops(report))},
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
        doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite_float)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as e:
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
    _check_schema(doc, p)
    return doc


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"{text} is out of range for a float")
    return v


def _shown(v: Any) -> str:
    return ("an object" if isinstance(v, dict) else "an array" if isinstance(v, list)
            else repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "...")


def _check_layers(nodes: dict, p: Path) -> None:
    """baseline.schema.json's rule for ``nodes``: name -> {op: string, <count>: integer >= 0}."""
    for name, entry in nodes.items():
        if not isinstance(entry, dict):
            raise BaselineError(f"baseline {p}: field 'nodes.{name}' must be object, got {_shown(entry)}")
        if not isinstance(entry.get("op"), str):
            raise BaselineError(f"baseline {p}: field 'nodes.{name}.op' must be string, got "
                                f"{_shown(entry.get('op'))}")
        for k, v in entry.items():
            if k != "op" and (type(v) is not int or v < 0):
                what = "must be >= 0" if type(v) is int else "must be integer"
                raise BaselineError(f"baseline {p}: field 'nodes.{name}.{k}' {what}, got {_shown(v)}")


def _check_times(times: dict, p: Path, where: str) -> None:
    """baseline.schema.json's rule for a prediction's ``nodes``: name -> number >= 0."""
    for name, v in times.items():
        if type(v) not in (int, float) or v < 0:
            what = "must be >= 0" if type(v) in (int, float) else "must be number"
            raise BaselineError(f"baseline {p}: field '{where}.{name}' {what}, got {_shown(v)}")


def _check_schema(doc: dict, p: Path) -> None:
    """``baseline.schema.json`` through jsonschema: one line naming the first wrong field."""
    global _VALIDATOR
    if _VALIDATOR is None:
        from jsonschema import Draft202012Validator, validators

        def is_integer(checker, value):   # 1.0 is not a count; True is not a number
            return isinstance(value, int) and not isinstance(value, bool)

        checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_integer)
        cls = validators.extend(Draft202012Validator, type_checker=checker)
        _VALIDATOR = cls(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    from jsonschema.exceptions import best_match

    # The per-layer maps (tens of MB for a large graph) are checked by a plain loop with the
    # schema's rules (jsonschema takes ~90 µs per layer); the schema checks the rest.
    shallow = dict(doc)
    if isinstance(doc.get("nodes"), dict):
        _check_layers(doc["nodes"], p)
        shallow["nodes"] = {}
    preds = doc.get("predictions")
    if isinstance(preds, list):
        shallow["predictions"] = []
        for i, x in enumerate(preds):
            if isinstance(x, dict) and isinstance(x.get("nodes"), dict):
                _check_times(x["nodes"], p, f"predictions[{i}].nodes")
                x = {**x, "nodes": {}}
            shallow["predictions"].append(x)
    try:
        error = best_match(_VALIDATOR.iter_errors(shallow))
    except RecursionError:
        raise BaselineError(f"baseline {p}: nested too deeply") from None
    if error is None:
        return
    where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in error.absolute_path)
    field = f"field '{where.lstrip('.')}'" if where else "the document"
    v = error.instance
    shown = _shown(v)
    kind, expected = error.validator, error.validator_value
    if kind == "type":
        what = f"must be {' or '.join(expected) if isinstance(expected, list) else expected}"
    elif kind == "required":
        missing = next(r for r in expected if r not in v)
        raise BaselineError(f"baseline {p}: {field} is missing '{missing}'")
    elif kind in ("minimum", "exclusiveMinimum"):
        what = f"must be {'>=' if kind == 'minimum' else '>'} {expected}"
    elif kind == "const":
        what = f"must be {expected!r}"
    else:
        what = f"is invalid ({kind} {expected!r})" if not isinstance(expected, (dict, list)) \
            else f"is invalid ({kind})"
    raise BaselineError(f"baseline {p}: {field} {what}, got {shown}")


def parse_threshold(text: str | float) -> float:
    """'5%', '5' or 5.0 -> 5.0 (percent)."""
    s = str(text).strip().rstrip("%").strip()
    try:
        v = float(s)
    except ValueError:
        raise InputSpecError(f"{{max_regression}} '{text}': expected a percentage such as 5%",
                             hints=(Hint("max_regression"),)) from None
    if not math.isfinite(v) or v < 0:
        raise InputSpecError(f"{{max_regression}} '{text}': must be a finite, non-negative percentage",
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
    notes: tuple[str, ...] = ()   # how the baseline was matched (e.g. one without fingerprint)

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
            **({"notes": list(self.notes)} if self.notes else {}),
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
    notes = _same_model(report, doc, path) + _input_notes(report.model, doc["model"])
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
    return Comparison(path, threshold_pct, tuple(hw_changes), deltas, tuple(grown_layers[:top]),
                      notes)


def _input_notes(new: dict, old: dict) -> tuple[str, ...]:
    """Say when the inputs' shapes or the bound dims differ from the baseline's: the latency
    change then says as much about the shapes as about the model."""
    out = []
    oi, ni = old.get("inputs") or {}, new.get("inputs") or {}
    diff = [f"{k} {'x'.join(map(str, oi[k] or ())) or 'scalar'} -> {'x'.join(map(str, ni[k] or ())) or 'scalar'}"
            for k in sorted(set(oi) & set(ni)) if list(oi[k] or ()) != list(ni[k] or ())]
    if diff:
        out.append("input shapes differ from the baseline's: " + ", ".join(diff))
    od, nd = old.get("dims") or {}, new.get("dims") or {}
    if od != nd:
        keys = sorted(set(od) | set(nd))
        out.append("dims differ from the baseline's: " + ", ".join(
            f"{k} {od.get(k, 'unbound')} -> {nd.get(k, 'unbound')}" for k in keys if od.get(k) != nd.get(k)))
    return tuple(out)


def _same_model(report, doc: dict[str, Any], path: str) -> tuple[str, ...]:
    """Refuse a baseline of another model; returns notes on how it was matched.

    Equal fingerprints: the same graph.  Otherwise (an edited model, or a baseline written
    before fingerprints) the layers are matched by name and op: another model whose input
    names coincide shares few of them; a later version of the same model, most."""
    old_fp = doc["model"].get("fingerprint")
    if old_fp is not None and old_fp == fingerprint(report.model, _ops(report)):
        return ()
    old = {name: entry.get("op") for name, entry in doc["nodes"].items()}
    new = {n.name: n.op for n in report.nodes if n.status != "folded"}
    same = sum(1 for name, op in new.items() if old.get(name) == op)
    share_old, share_new = same / max(len(old), 1), same / max(len(new), 1)
    if max(share_old, share_new) < SAME_MODEL_SHARE:
        raise BaselineError(
            f"baseline {path} is of another model: {same} of its {len(old)} layers match this "
            f"model's {len(new)} by name and op ({'fingerprints differ' if old_fp else 'it has no fingerprint'}); "
            f"write a baseline of this model with {{save_baseline}}", hints=(Hint("save_baseline"),))
    if old_fp is None:
        return (f"the baseline has no model fingerprint (written by opcost before "
                f"{KIND} fingerprints); matched by its layers: {same} of {len(old)} by name and op",)
    return ()
