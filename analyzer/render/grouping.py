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


def render_groups(report, depth: int, fmt: str, *, width: int | None = None,
                  wide: bool = False, hints: dict | None = None) -> str:
    """The grouped table in ``fmt`` (table, markdown, csv, json). JSON is the report's own
    document with a ``groups`` list added (exact integers); ``wide``: the terminal table keeps
    every column; ``hints``: how the caller asks for it (``"wide"``)."""
    from analyzer.render.pieces import estimates_line, human
    from analyzer.render.headline import comment_lines, human_time, markdown_lines

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
    return "\n".join(_table_lines(report, depth, header, rows, width, wide, hints)) + "\n"


def _table_lines(report, depth: int, header: list[str], rows: list[list[str]],
                 width: int | None, wide: bool, hints: dict | None) -> list[str]:
    """The terminal table (``analyzer.render.layout``: the module names fitted to the room the
    numbers leave, no cell ever folded; a narrow terminal gives up the FLOP split and params
    first, then the extra profiles' times, said in a line; ``wide``: none), the total row, then
    the headline's notes, coverage, estimates and warnings, wrapped."""
    from analyzer.render.headline import human_time, text_lines
    from analyzer.render.layout import table, wrap
    from analyzer.render.pieces import estimates_line, human
    from analyzer.render.terminal import HINTS

    hints = {**HINTS, **(hints or {})}
    tot = report.totals
    total = ["total", str(sum(int(r[1]) for r in rows)), human(tot.params), human(tot.mac_flops),
             human(tot.vector_flops), human(tot.transcendentals), human(tot.bytes_moved, "B"), "100",
             *(human_time(p.latency_s) for p in report.predictions)]
    times = [i for i, h in enumerate(header) if h.endswith(" time")]
    drop = (*(header.index(h) for h in ("transc.", "vector", "MAC FLOPs", "params")),
            *reversed(times[1:]), header.index("nodes"))
    out = wrap(safe.text(f"{report.model.get('path', '')} by module (depth {depth})"), width)
    grid = table([safe.text(h) for h in header], [*rows, total], set(range(1, len(header))), width,
                 drop=() if wide else drop)
    out += grid
    gone = [header[i] for i in times if safe.text(header[i]) not in grid[0]]
    if gone:
        out += wrap(f"({safe.text(', '.join(gone))}: {hints['wide']} or a wider terminal)", width)
    lines = [*text_lines(report.predictions), safe.text(f"coverage: {report.coverage.line()}")]
    est = estimates_line(report)
    if est:
        lines.append(safe.text(est))
    lines += [safe.text(f"warning: {w}") for w in report.warnings]
    return out + [x for line in lines for x in wrap(line, width)]
