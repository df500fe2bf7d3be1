"""Small text pieces every renderer shares (numbers with units, shortened names, the estimates
and baseline-comparison lines). Formatting only; imports no other renderer."""

from __future__ import annotations

from analyzer.render import safe
from analyzer.render.headline import human_time


def human(n: float, unit: str = "", base: int = 1000) -> str:
    """1234567 -> '1.23 M'; 0 -> '0', or '0 B' with a unit. Only for display."""
    if n == 0:
        return f"0 {unit}" if unit else "0"
    prefixes = ["", "K", "M", "G", "T", "P", "E"]
    x, i = float(n), 0
    # the prefix of the value as shown (3 digits): 999,999 is '1 M', not '1e+03 K'
    while abs(float(f"{x:.3g}")) >= base and i < len(prefixes) - 1:
        x /= base
        i += 1
    if i == 0:
        return f"{int(n)}{(' ' + unit) if unit else ''}"
    return f"{x:.3g} {prefixes[i]}{unit}"


# how to ask for more, in the caller's words (the CLI passes its flags); "top" takes n, the rows
HINTS = {"all": "all_rows=True", "explain": "Prediction.explain", "verbose": "verbose=True",
         "wide": "wide=True", "top": "top={n}"}


def more_line(hidden: int, what: str, how: str) -> str:
    """``12 more layers (--top 27 or --all)``: how many rows a table left out and how to show
    them (``how``: in the caller's words)."""
    return f"{hidden:,} more {what}{'' if hidden == 1 else 's'} ({how})"


def estimates_line(report, limit: int = 3) -> str | None:
    """One line naming the nodes whose counts rest on an assumption, with their notes."""
    names = report.coverage.estimates
    if not names:
        return None
    est = [n for n in report.nodes if n.estimate][:limit]   # the nodes coverage.estimates names
    shown = "; ".join(f"{x.name}: {x.note or 'see its note'}" for x in est)
    more = f"; and {len(names) - limit} more (\"estimate\": true in the JSON report)" if len(names) > limit else ""
    n = len(names)
    return f"estimates: {n} {'nodes rest' if n != 1 else 'node rests'} on an assumption ({shown}{more})"


def comparison_lines(c) -> list[tuple[str, list[str]]]:
    """(headline, detail lines) per profile, shared by the table and markdown views."""
    out = []
    for h in c.hardware:
        verdict = "REGRESSED" if h.regressed else "ok"
        head = (f"{h.hardware} ({h.precision}): {human_time(h.old_s)} -> {human_time(h.new_s)} "
                f"({h.change_pct:+.2f}%, limit +{c.threshold_pct:g}%) {verdict}")
        details = []
        for x in h.layers[:5]:
            old = human_time(x.old_s) if x.old_s is not None else "new"
            new = human_time(x.new_s) if x.new_s is not None else "removed"
            details.append(f"{x.name} ({x.op}): {old} -> {new}")
        out.append((head, details))
    return out


def failure_line(c) -> str:
    """A failed baseline check (``Comparison``) in one line, its times in their units: ``predicted
    latency regressed beyond 1%: a100-80gb-sxm 63.4 µs -> 65.3 µs (+3.0%) (grew most: ...)``
    (``Comparison.failure_message`` says the same in milliseconds, for a Python caller)."""
    bad = [h for h in c.hardware if h.regressed]
    parts = [f"{h.hardware} {human_time(h.old_s)} -> {human_time(h.new_s)} ({h.change_pct:+.1f}%)" for h in bad]
    names = ", ".join(x.name for x in bad[0].layers[:3]) if bad and bad[0].layers else ""
    return (f"predicted latency regressed beyond {c.threshold_pct:g}%: " + "; ".join(parts)
            + (f" (grew most: {names})" if names else ""))


def shorten(name: str, width: int) -> str:
    """``name`` in at most ``width`` characters: its middle replaced by ``…``."""
    if width is None or len(name) <= width:
        return name
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 2
    tail = width - 1 - head
    return name[:head] + "…" + (name[-tail:] if tail else "")


def count_delta_lines(c) -> list[str]:
    return [f"{k}: {human(o)} -> {human(n)} ({n - o:+,})" for k, (o, n) in c.count_deltas.items()]


def comparison_text(c) -> str:
    lines = [f"baseline {safe.text(c.baseline_path)}:"]
    for head, details in comparison_lines(c):
        lines.append(f"  {safe.text(head)}")
        lines += [f"    grew: {safe.text(d)}" for d in details]
    deltas = count_delta_lines(c)
    lines.append("  counts: " + ("; ".join(deltas) if deltas else "unchanged"))
    lines += [f"  note: {safe.text(x)}" for x in c.notes]
    return "\n".join(lines)
