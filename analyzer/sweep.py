"""Sweeps: one model analysed at several values of its symbolic dims.

``analyzer.sweep("model.onnx", {"seq": [128, 512, 2048]}, hw="a100")`` analyses the model
once per point of the cartesian product of the given dim values and returns the reports
side by side; the CLI's ``--dim seq=128,512,2048`` renders them as one table (dim values x
totals and predicted latency); ``--dim seq+total=16,64`` moves two dims together.
``batch=[1, 8, 64]`` (the CLI's ``--batch 1,8,64``) sweeps the global batch of
``analyzer.analyze(..., batch=)``, static exports included; its rows carry the value under
``"batch"`` beside the swept dims.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from analyzer.errors import AnalyzerError, Hint, InputSpecError
from analyzer.options import ONNX_KEYWORDS, Options
from analyzer.options import build as build_options


@dataclass(slots=True)
class Sweep:
    dims: tuple[str, ...]                       # the swept dim names
    points: list[tuple[dict[str, int], Any]]    # (bound dims, Report) per point

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for bound, r in self.points:
            row = {"dims": dict(bound), "totals": r.totals.to_dict()}
            if r.predictions:
                row["latency_s"] = {p.hardware: p.latency_s for p in r.predictions}
            rows.append(row)
        return {"schema_version": 1, "sweep": list(self.dims), "points": rows,
                "precision": self.precision(), "warnings": list(self.warnings())}

    def warnings(self) -> tuple[str, ...]:
        """Every point's warnings, each once, in order."""
        return tuple(dict.fromkeys(w for _, r in self.points for w in r.warnings))

    def precision(self) -> dict[str, str]:
        """The precision predicted on each profile (the same at every point)."""
        return {p.hardware: p.precision for p in self.points[0][1].predictions} if self.points else {}


def sweep(model: Any, dims: Mapping[str, Sequence[int] | int] | None = None, hw=None, *,
          options: Options | None = None, **keywords: Any) -> Sweep:
    """Analyse ``model`` at every combination of ``dims`` values (``{"seq": [128, 512]}``)
    and ``batch`` values (``batch=[1, 8, 64]``: ``analyze``'s global batch, one point each).

    Dims that must move together (an LLM prefill: sequence and total length) share one key,
    joined with '+' or as a tuple: ``{"sequence_length+total_sequence_length": [16, 64]}``
    binds both to 16, then both to 64.  ``options`` and the other keyword arguments are those
    of ``analyzer.analyze``; dims bound in ``options.dims`` hold at every point (a swept dim
    overrides them)."""
    from analyzer.api import analyze

    opts = build_options("sweep", options, keywords, ONNX_KEYWORDS)
    batches = opts.batch
    if isinstance(batches, (list, tuple, range)):   # several batches: swept, one point each
        if not batches:
            raise InputSpecError("{batch}: no values to sweep", hints=(Hint("batch"),))
        if "batch" in (dims or {}):
            raise InputSpecError("{batch} and a dim named 'batch' are both swept: give one "
                                 "(a static export's batch needs {batch})", hints=(Hint("batch"),))
        batches, opts = list(batches), replace(opts, batch=None)
    else:
        batches = None
    dims = dict(dims or {})
    groups, values = [], []
    for k, v in dims.items():
        group = tuple(k.split("+")) if isinstance(k, str) else tuple(k)
        if not group or not all(group):
            raise InputSpecError("{dims}: a dim name is empty", hints=(Hint("dims", k),))
        vals = [v] if isinstance(v, int) else list(v)
        if not vals:
            raise InputSpecError("{dims}: no values to sweep", hints=(Hint("dims", k),))
        groups.append(group)
        values.append(vals)
    names = tuple(n for g in groups for n in g)
    if len(set(names)) != len(names):
        raise InputSpecError(f"{{dims}}: a dim is swept twice ({', '.join(names)})",
                             hints=(Hint("dims"),))
    swept = tuple(n for g, v in zip(groups, values) if len(v) > 1 for n in g)
    if batches is not None:   # the batch is the first column, before the dims
        groups.insert(0, ("batch",))
        values.insert(0, batches)
        names = ("batch", *names)
        swept = (("batch",) if len(batches) > 1 else ()) + swept
    points = []
    for combo in itertools.product(*values):
        bound = {n: val for g, val in zip(groups, combo) for n in g}
        try:
            at_dims = {k: v for k, v in bound.items() if batches is None or k != "batch"}
            at_point = replace(opts, dims={**(opts.dims or {}), **at_dims} or None)
            if batches is not None:
                at_point = replace(at_point, batch=bound["batch"])
            points.append((bound, analyze(model, hw, options=at_point)))
        except AnalyzerError as e:  # say which point failed (a model may not take every value)
            if swept:
                at = ", ".join(f"{k}={v}" for k, v in bound.items())
                e.template = f"at {at}: {e.template}"
                e.args = (e.template, *e.args[1:])
            raise
    return Sweep(swept or tuple(names), points)
