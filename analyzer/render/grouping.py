"""Per-module totals as a table (``--group-depth N``): formatting only.

The sums and the module-path rule are ``analyzer.report.rollups.grouped`` / ``module_of`` (the
same rule the terminal view's "by module" rollup uses); ``render_groups`` formats them.
"""

from __future__ import annotations

import csv
import io

from analyzer.counting.cost import COUNT_FIELDS
from analyzer.render import safe
from analyzer.report.rollups import grouped


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
