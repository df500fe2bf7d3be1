"""Rendering helpers for multi-device output: `analyze hw list --links` and the scaling rows of
`analyze MODEL --devices ...` (formatting only; the library computes every number)."""

from __future__ import annotations

import io
import json


def _fmt(v) -> str:
    return "—" if v is None else f"{v:g}"


def render_links(links, fmt: str) -> str:
    if fmt == "json":
        return json.dumps([l.to_dict() for l in links], indent=2) + "\n"
    from rich.console import Console
    from rich.table import Table

    t = Table(title="interconnect links (--link ID; GB/s per direction, after line coding)")
    for col in ("id", "kind", "name", "GB/s per dir", "latency µs"):
        t.add_column(col, justify="right" if col[0].isupper() or "µs" in col else "left")
    for l in links:
        t.add_row(l.id, l.kind, l.name, _fmt(l.gbs_per_direction), _fmt(l.latency_us))
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None, highlight=False).print(t)
    return buf.getvalue()
