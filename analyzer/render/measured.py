"""Predicted vs measured (``report.measured``) as text: the layers with the largest measured
time and the error summary.  Formatting only: the numbers come from
``analyzer.report.measured.MeasuredComparison``."""

from __future__ import annotations

from analyzer.render import safe
from analyzer.render.headline import human_time

TOP_DEFAULT = 10


def _pct(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "—"
    return f"{x:+.1f}%" if signed else f"{x:.1f}%"


def _nodes(row, limit: int = 3) -> str:
    names = list(row.nodes[:limit])
    more = len(row.nodes) - limit
    return ", ".join(names) + (f" +{more} more" if more > 0 else "")


def header(c) -> str:
    return (f"predicted vs measured on this machine: {c.hardware} ({c.runtime}), onnxruntime "
            f"{c.threads} thread{'s' if c.threads != 1 else ''}, level {c.level}, {c.runs} runs")


def summary_lines(c) -> list[str]:
    s = c.summary
    rho = "—" if s.spearman is None else f"{s.spearman:.2f}"
    out = [f"end to end: predicted {human_time(c.predicted_s)}, measured {human_time(c.measured_s)} "
           f"(median session.run), error {_pct(c.error_pct, signed=True)}",
           f"per kernel ({s.kernels} measured kernels, predicted vs profiled kernel time): "
           f"MAPE {_pct(s.mape_pct)}, within ±10% {_pct(s.within_10_pct)}, within ±20% "
           f"{_pct(s.within_20_pct)}, bias {_pct(s.bias_pct, signed=True)}, Spearman {rho}"]
    if c.unjoined:
        t = sum(x for _, x in c.unjoined)
        out.append(f"onnxruntime kernels that ran none of opcost's nodes (layout reorders, its own "
                   f"rewrites): {len(c.unjoined)}, {human_time(t)} in all")
    if c.unmeasured:
        shown = ", ".join(c.unmeasured[:5]) + (f" and {len(c.unmeasured) - 5} more"
                                               if len(c.unmeasured) > 5 else "")
        out.append(f"predicted nodes with no measured kernel of their own (removed, or run inside "
                   f"another kernel): {shown}")
    return out


def more_rows_line(c, shown: int, hints: dict | None = None) -> str | None:
    """``12 more kernels (--top 22)``: the kernels the table left out, or None (``hints``: how the
    caller asks for more rows, as the terminal view's)."""
    from analyzer.render.pieces import more_line
    from analyzer.render.pieces import HINTS

    if shown >= len(c.kernels):
        return None
    return more_line(len(c.kernels) - shown, "kernel",
                     {**HINTS, **(hints or {})}["top"].format(n=len(c.kernels)))


def render_text(c, top: int | None, width: int | None, hints: dict | None = None) -> str:
    """The terminal view: a table of the top kernels by measured time (how many more, and how
    to show them), then the summary."""
    import io

    from rich.console import Console
    from rich.table import Table

    rows = c.top(top or TOP_DEFAULT)
    which = f"top {len(rows)} of {len(c.kernels)}" if len(rows) < len(c.kernels) else f"all {len(rows)}"
    t = Table(title=safe.cell(header(c) + f" — {which} kernels by measured time"),
              header_style="bold", show_footer=True, footer_style="bold")
    t.add_column("onnxruntime kernel", footer="total", overflow="fold")
    t.add_column("opcost nodes", overflow="fold")
    t.add_column("predicted", justify="right", footer=human_time(c.predicted_s))
    t.add_column("measured", justify="right", footer=human_time(c.measured_s))
    t.add_column("error", justify="right", footer=_pct(c.error_pct, signed=True))
    for r in rows:
        t.add_row(safe.cell(r.kernel), safe.cell(_nodes(r)), human_time(r.predicted_s), human_time(r.measured_s),
                  _pct(r.error_pct, signed=True))
    buf = io.StringIO()
    console = Console(file=buf, width=width or 160, color_system=None, highlight=False,
                      soft_wrap=False)
    console.print(t)
    more = more_rows_line(c, len(rows), hints)
    for line in ([more] if more else []) + summary_lines(c):
        console.print(safe.text(line), highlight=False, markup=False)
    return buf.getvalue()


def markdown_lines(c, top: int | None, hints: dict | None = None) -> list[str]:
    out = [f"**{safe.md_text(header(c))}**", ""]
    out += [f"- {safe.md_text(x)}" for x in summary_lines(c)]
    out += ["", "| onnxruntime kernel | opcost nodes | predicted | measured | error |",
            "|---|---|---|---|---|"]
    rows = c.top(top or TOP_DEFAULT)
    for r in rows:
        out.append(f"| {safe.md_code(r.kernel, table=True)} | {safe.md_text(_nodes(r))} | {human_time(r.predicted_s)} | "
                   f"{human_time(r.measured_s)} | {_pct(r.error_pct, signed=True)} |")
    out.append(f"| **total** | | {human_time(c.predicted_s)} | {human_time(c.measured_s)} | "
               f"{_pct(c.error_pct, signed=True)} |")
    more = more_rows_line(c, len(rows), hints)
    return out + ([""] + [safe.md_text(more)] if more else []) + [""]


def comment_lines(c) -> list[str]:
    """'# ' lines for a CSV head: the run and its error summary (exact numbers)."""
    s = c.summary
    return [safe.text(f"# {header(c)}"),
            f"# measured latency_s={c.measured_s!r} predicted latency_s={c.predicted_s!r} "
            f"error_pct={c.error_pct!r}",
            f"# kernels={s.kernels} mape_pct={s.mape_pct!r} within_10_pct={s.within_10_pct!r} "
            f"within_20_pct={s.within_20_pct!r} bias_pct={s.bias_pct!r} spearman={s.spearman!r}"]


def node_cells(c) -> dict[str, list[str]]:
    """node name -> [measured seconds, onnxruntime kernel] for the CSV's measured columns."""
    return {n.name: [repr(n.measured_s), safe.csv_cell(n.kernel)] for n in c.nodes}
