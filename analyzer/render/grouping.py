"""Per-module totals: a Report's rows summed by name prefix (``--group-depth N``).

Node names are paths (``transpose(jvp(mlp))/fc1/dot_general``, ``attn/q/add#2``, ONNX exporters'
``/encoder/layer.0/attention/MatMul``); ``grouped(report, depth)`` sums every runtime row under
the first ``depth`` components of its module path (the name without its last component, the op),
so a layer table reads like the model's structure.  Rows outside any module group by their own
name with the repeat suffix dropped (``add``, ``add#2`` -> ``add``).  Groups keep
the order in which they first appear.  Rendering (``render_groups``) only formats.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from typing import Any

from analyzer.counting.cost import COUNT_FIELDS, Cost
from analyzer.counting.engine import FOLDED, UNCOSTED
from analyzer.render import safe

_REPEAT = re.compile(r"#\d+$")


@dataclass(frozen=True)
class Group:
    """The summed counts (and predicted times, per hardware id) of the rows under one prefix."""

    name: str
    nodes: int
    uncosted: int
    cost: Cost
    time_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "nodes": self.nodes, "uncosted": self.uncosted}
        d.update(self.cost.to_dict())
        if self.time_s:
            d["time_s"] = dict(self.time_s)
        return d


def group_key(name: str, depth: int) -> str:
    """The module path of a row: the first ``depth`` components of its name, not counting the last
    (the op itself); a row outside any module groups by its own name (``add#2`` -> ``add``)."""
    parts = [_REPEAT.sub("", p) for p in name.split("/") if p]   # ONNX names may start with "/"
    scope = parts[:-1][:depth]
    return "/".join(scope) if scope else (parts[-1] if parts else name)


def grouped(report, depth: int) -> list[Group]:
    """Totals of ``report``'s runtime rows grouped by the first ``depth`` name components."""
    if depth < 1:
        raise ValueError("group depth must be >= 1")
    hw = [p.hardware for p in report.predictions]
    acc: dict[str, dict[str, Any]] = {}
    for n, xs in report.rows():
        if n.status == FOLDED:
            continue
        key = group_key(n.name, depth)
        g = acc.setdefault(key, {"nodes": 0, "uncosted": 0, "cost": Cost(),
                                 "time": [0.0] * len(hw)})
        g["nodes"] += 1
        g["uncosted"] += n.status == UNCOSTED
        g["cost"] = g["cost"] + n.cost
        for i, x in enumerate(xs):
            g["time"][i] += x.time_s if x is not None else 0.0
    return [Group(k, v["nodes"], v["uncosted"], v["cost"], dict(zip(hw, v["time"])))
            for k, v in acc.items()]


def render_groups(report, depth: int, fmt: str, *, width: int | None = None) -> str:
    """The grouped table in ``fmt`` (table, markdown, csv, json). JSON is the report's own
    document with a ``groups`` list added (exact integers)."""
    from analyzer.render.pieces import estimates_line, human
    from analyzer.render.headline import comment_lines, human_time, markdown_lines, text_lines

    groups = grouped(report, depth)
    if fmt == "json":
        doc = report.to_dict()
        doc["groups"] = {"depth": depth, "rows": [g.to_dict() for g in groups]}
        from analyzer.report.finite_json import dumps

        return dumps(doc, indent=2) + "\n"
    hw = [p.hardware for p in report.predictions]
    if fmt == "csv":
        buf = io.StringIO()
        for line in comment_lines(report.predictions):
            buf.write(line + "\n")
        for w in report.warnings:
            buf.write(safe.text(f"# warning: {w}") + "\n")
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["group", "nodes", "uncosted", *COUNT_FIELDS, "flops",
                    *(safe.csv_cell(f"{h}:time_s") for h in hw)])
        for g in groups:
            w.writerow([safe.csv_cell(g.name), g.nodes, g.uncosted, *(getattr(g.cost, f) for f in COUNT_FIELDS),
                        g.cost.flops, *(repr(g.time_s[h]) for h in hw)])
        return buf.getvalue()
    total = report.totals.flops or 1
    header = ["module", "nodes", "params", "MAC FLOPs", "vector", "transc.", "bytes", "FLOP %",
              *(f"{h} time" for h in hw)]
    rows = []
    for g in groups:
        c = g.cost
        rows.append([safe.text(g.name) + (f" ({g.uncosted} uncosted)" if g.uncosted else ""),
                     str(g.nodes),
                     human(c.params), human(c.mac_flops), human(c.vector_flops),
                     human(c.transcendentals), human(c.bytes_moved, "B"),
                     f"{100 * c.flops / total:.1f}", *(human_time(g.time_s[h]) for h in hw)])
    if fmt == "markdown":
        out = [f"### opcost: {safe.md_code(report.model.get('path', ''))} by module (depth {depth})",
               "", "| " + " | ".join(map(safe.md_text, header)) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join([safe.md_text(r[0]), *r[1:]]) + " |" for r in rows]
        out += [""] + [f"> **warning:** {safe.md_text(w)}" for w in report.warnings]
        if report.predictions:
            out += ["", "Predictions:", *markdown_lines(report.predictions)]
        out += ["", f"Coverage: {safe.md_text(report.coverage.line())}.", ""]
        est = estimates_line(report)
        if est:
            out += [safe.md_text(est[0].upper() + est[1:]) + ".", ""]
        return "\n".join(out)
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}")
    from rich.console import Console
    from rich.table import Table

    t = Table(title=safe.cell(f"{report.model.get('path', '')} by module (depth {depth})"),
              show_footer=True,
              header_style="bold", footer_style="bold")
    tot = report.totals
    footers = ["total", str(sum(g.nodes for g in groups)), human(tot.params), human(tot.mac_flops),
               human(tot.vector_flops), human(tot.transcendentals), human(tot.bytes_moved, "B"), "100",
               *(human_time(p.latency_s) for p in report.predictions)]
    for i, (h, f) in enumerate(zip(header, footers)):
        t.add_column(safe.cell(h), footer=f, justify="left" if i == 0 else "right", overflow="fold")
    for r in rows:
        t.add_row(safe.cell(r[0]), *r[1:])
    buf = io.StringIO()
    console = Console(file=buf, width=width or 160, force_terminal=False, color_system=None,
                      highlight=False, soft_wrap=False)
    console.print(t)
    for line in text_lines(report.predictions):
        console.print(line, highlight=False, markup=False)
    console.print(safe.text(f"coverage: {report.coverage.line()}"), highlight=False, markup=False)
    est = estimates_line(report)
    if est:
        console.print(safe.text(est), highlight=False, markup=False)
    for w in report.warnings:
        console.print(safe.text(f"warning: {w}"), highlight=False, markup=False)
    return buf.getvalue()
