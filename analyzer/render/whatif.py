"""What to shrink and what hardware would help (``report.sensitivity``) as rows and lines.
Formatting only: the numbers come from ``analyzer.report.whatif.WhatIf``; the terminal view
draws the rows with its own table, markdown gets a table of its own."""

from __future__ import annotations

from analyzer.render import safe
from analyzer.render.headline import human_time

TOP_DEFAULT = 5
HEADER = ["layer", "op", "10% fewer FLOPs", "10% fewer bytes", "shrink"]
RIGHT = {2, 3}


def _saved(s: float, total: float) -> str:
    if s <= 0:
        return "—"
    if total <= 0:
        return f"-{human_time(s)}"
    pct = 100 * s / total   # a saving that rounds to 0.0% is still one: '<0.1%'
    return f"-{human_time(s)} ({'<0.1' if pct < 0.05 else f'{pct:.1f}'}%)"


def shrink_title(p, shown: int) -> str:
    return (f"what to shrink on {safe.text(p.hardware)} ({p.runtime}): the {shown} layers whose "
            f"10% cut saves most (first order; % of the {human_time(p.latency_s)} total)")


def shrink_rows(p, k: int | None, md: bool = False) -> list[list[str]]:
    """One row per layer of ``p.shrink(k)``: name, op, the two savings, which to cut; names
    terminal-safe (``md``: markdown-safe)."""
    rows = []
    for r in p.shrink(k):
        f, b = r.saving_s()
        name = safe.md_code(r.name, table=True) if md else safe.text(r.name)
        op = safe.md_text(r.op) if md else safe.text(r.op)
        rows.append([name, op, _saved(f, p.latency_s), _saved(b, p.latency_s),
                     "FLOPs" if f >= b else "bytes"])
    return rows


def more_rows_line(p, shown: int, hints: dict | None = None) -> str | None:
    """``3 more layers (--top 8)``: the layers that save time and the shrink table left out, or
    None (``hints``: how the caller asks for more rows, as the terminal view's)."""
    from analyzer.render.pieces import more_line
    from analyzer.render.pieces import HINTS

    total = len(p.shrink(None))
    if shown >= total:
        return None
    return more_line(total - shown, "layer", {**HINTS, **(hints or {})}["top"].format(n=total))


def hardware_line(p) -> str:
    s = p.hardware_saving_s()
    parts = [f"10% more compute peak {_saved(s['compute_peak'], p.latency_s)}",
             f"10% more memory bandwidth {_saved(s['memory_bandwidth'], p.latency_s)}",
             f"10% less launch/dispatch and floor cost {_saved(s['fixed_cost'], p.latency_s)}"]
    return f"what hardware would help on {safe.text(p.hardware)}: " + "; ".join(parts)


def markdown_lines(w, top: int | None, hints: dict | None = None) -> list[str]:
    out = []
    for p in w.profiles:
        rows = shrink_rows(p, top or TOP_DEFAULT, md=True)
        out += ["", f"#### {safe.md_text(shrink_title(p, len(rows)))}", "",
                "| " + " | ".join(HEADER) + " |", "|---|---|---:|---:|---|"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        more = more_rows_line(p, len(rows), hints)
        out += ["", safe.md_text(more)] if more else []
        out += ["", safe.md_text(hardware_line(p))]
    return out
