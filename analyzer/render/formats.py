"""Renderers: Report -> text (table, json, csv, markdown). Formatting only.

Machine formats (json, csv) carry the exact integers; the terminal table and
markdown humanize them.
"""

from __future__ import annotations

import csv
import io

from analyzer.counting.cost import COUNT_FIELDS
from analyzer.counting.engine import FOLDED, UNCOSTED
from analyzer.render import measured as measured_view
from analyzer.render import safe
from analyzer.render.pieces import (comparison_lines, count_delta_lines, estimates_line, human,  # noqa: F401
                                    more_line, shorten)
from analyzer.render.headline import comment_lines, human_time, markdown_lines, text_lines  # noqa: F401
from analyzer.report.counts import Report
from analyzer.render.layout import table, wrap

FORMATS = ("table", "json", "csv", "markdown", "html")


def _shown_rows(report: Report, top: int | None):
    """(node, prediction rows) of the runtime nodes in graph order, or of the ``top`` heaviest
    (by predicted time on the first profile if any, else FLOPs)."""
    rows = [r for r in report.rows() if r[0].status != FOLDED]
    if top is not None:
        if report.predictions:
            rows = sorted(rows, key=lambda r: -r[1][0].time_s if r[1][0] else 0.0)[:top]
        else:
            rows = sorted(rows, key=lambda r: (-r[0].cost.flops, -r[0].cost.bytes_moved))[:top]
    return rows


def render(report: Report, fmt: str, *, top: int | None = None, width: int | None = None,
           color: bool = False, all_rows: bool = False, wide: bool = False,
           hints: dict | None = None, verbose: bool = False) -> str:
    """``report`` as ``fmt`` text; ``verbose`` (the terminal view): every note and the
    provenance in full in its headline (the other formats carry them always)."""
    if fmt == "json":
        return report.to_json() + "\n"
    if fmt == "csv":
        return render_scaling_csv(report) if report.scaling is not None else render_csv(report, top)
    if fmt == "markdown":
        return render_markdown(report, top=top, all_rows=all_rows, hints=hints)
    if fmt == "html":
        from analyzer.render.html import render_html

        return render_html(report, top=top, all_rows=all_rows, hints=hints)
    if fmt == "table":
        from analyzer.render.terminal import render_view

        return render_view(report, top=top, all_rows=all_rows, wide=wide, width=width, color=color,
                           hints=hints, verbose=verbose)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def render_scaling_csv(report: Report) -> str:
    """A report with a multi-device curve (``--devices``): one row per profile and device count,
    the columns of JSON's ``"scaling"`` entries (seconds; ``speedup`` and ``efficiency`` against
    one device; an empty cell where JSON has null), after ``#`` lines with the setup (parallelism,
    link, algorithm, notes). The per-layer rows are the report without ``--devices``."""
    d = report.scaling.to_dict()
    points, setup = d.get("scaling") or [], d.get("scaling_setup") or {}
    buf = io.StringIO()
    for k, v in setup.items():
        if k == "notes" or (isinstance(v, (dict, list)) and k != "devices"):
            continue
        buf.write(safe.text(f"# {k}: {v}") + "\n")
    for note in setup.get("notes") or ():
        buf.write(safe.text(f"# note: {note}") + "\n")
    if not points:
        return buf.getvalue()
    cols = list(points[0])
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for pt in points:
        w.writerow([safe.csv_cell(pt[c]) if isinstance(pt[c], str) else ("" if pt[c] is None else repr(pt[c]))
                    for c in cols])
    return buf.getvalue()


def render_csv(report: Report, top: int | None = None) -> str:
    """One row per node, graph order (``top``: the ``top`` heaviest, heaviest first); comment
    lines first: each prediction's headline and every warning."""
    buf = io.StringIO()
    lines = comment_lines(report.predictions)   # runtime, time definition, provenance, notes
    lines += [f"# warning: {w}" for w in report.warnings]
    measured = {}
    if report.measured is not None:
        lines += measured_view.comment_lines(report.measured)
        measured = measured_view.node_cells(report.measured)
        pred_cols_m = ["measured_s", "measured_kernel"]
    else:
        pred_cols_m = []
    rows = report.rows()
    if top is not None:
        from analyzer.report.rollups import runtime_rows, top_rows

        every = runtime_rows(report)
        rows = top_rows(report, top, every)
        lines.append(f"# rows: the top {len(rows)} of {len(every)} runtime layers, heaviest first "
                     f"({len(every) - len(rows)} left out; the full table lists every node in graph order)")
    for line in lines:
        buf.write(safe.text(line) + "\n")
    w = csv.writer(buf, lineterminator="\n")
    pred_cols = []
    for p in report.predictions:
        pred_cols += [safe.csv_cell(f"{p.hardware}:time_s"), safe.csv_cell(f"{p.hardware}:bound")]
    pred_cols += pred_cols_m
    w.writerow(["name", "op", "status", *COUNT_FIELDS, "flops", "outputs", *pred_cols,
                "estimate", "note"])
    for n, xs in rows:
        c = n.cost
        extra = []
        for x in xs:
            extra += [repr(x.time_s), x.bound] if x else ["", ""]
        if pred_cols_m:
            extra += measured.get(n.name, ["", ""])
        # text cells neutralized (controls shown, no formula); exact integers untouched
        w.writerow([safe.csv_cell(n.name), safe.csv_cell(n.op), n.status,
                    *(getattr(c, f) for f in COUNT_FIELDS), c.flops,
                    safe.csv_cell(" ".join(n.outputs)), *extra, "yes" if n.estimate else "",
                    safe.csv_cell(n.note or "")])
    return buf.getvalue()


def _summary_pairs(report: Report) -> list[tuple[str, str]]:
    t = report.totals
    return [
        ("params", f"{human(t.params)} ({t.params:,})"),
        ("FLOPs", f"{human(t.flops, 'FLOP')} = MAC {human(t.mac_flops)} + vector {human(t.vector_flops)}"
                  f" + transcendental {human(t.transcendentals)}"),
        ("memory traffic", f"{human(t.bytes_moved, 'B')} = weights {human(t.weight_bytes, 'B')}"
                           f" + activations read {human(t.activation_bytes_read, 'B')}"
                           f" + written {human(t.activation_bytes_written, 'B')}"),
    ]


MARKDOWN_BUDGET = 55_000   # characters: a PR comment holds 65,536; room for the rest


def _markdown_layers(report: Report, top: int | None, hints: dict | None, used: int) -> list[str]:
    """The markdown layer table (``top``: the heaviest, else every runtime layer in graph order)
    in a ``<details>`` block opened here, as many rows as ``MARKDOWN_BUDGET`` leaves after
    ``used`` characters; a line under it counts the layers left out and says where they are."""
    from analyzer.report.rollups import top_rows

    every = [r for r in report.rows() if r[0].status != FOLDED]
    rows = top_rows(report, top) if top is not None else every
    hdr = ["layer", "op", "output", "params", "FLOPs", "bytes"]
    hdr += [f"{safe.md_text(p.hardware)} time" for p in report.predictions]
    what = (f"top {len(rows)} of {len(every)}, heaviest first" if len(rows) < len(every)
            else f"all {len(rows)}, graph order")
    grid = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    shown = 0
    for n, xs in rows:
        c = n.cost
        cells = [safe.md_code(n.name, table=True),
                 safe.md_text(n.op) + (" (uncosted)" if n.status == UNCOSTED else ""),
                 safe.md_code(" ".join(n.outputs), table=True), human(c.params), human(c.flops),
                 human(c.bytes_moved, "B")]
        for x in xs:
            cells.append(f"{human_time(x.time_s)} ({x.bound})" if x else "")
        line = "| " + " | ".join(cells) + " |"
        if used + len(line) + 1 > MARKDOWN_BUDGET:
            break
        used += len(line) + 1
        grid.append(line)
        shown += 1
    out = [f"<details><summary>Layers ({what})</summary>", "", *grid, ""]
    if shown < len(rows):
        out += [f"{len(every) - shown:,} more layers not shown (the comment stays short; the CSV and "
                f"JSON reports carry every row).", ""]
    elif len(rows) < len(every):
        from analyzer.render.pieces import HINTS

        h = {**HINTS, **(hints or {})}
        out += [safe.md_text(more_line(len(every) - len(rows), "layer",
                                       f"{h['top'].format(n=len(every))} or {h['all']}")), ""]
    return out


def render_markdown(report: Report, *, top: int | None = None, all_rows: bool = False,
                    hints: dict | None = None) -> str:
    """Short enough for a pull-request comment at any model size: the headline, the verdict per
    profile and the layers that changed most in the open; the layer table and the prediction
    details in ``<details>`` blocks; the whole under ``MARKDOWN_BUDGET`` characters (rows past
    it are counted, not shown: the CSV and JSON carry every row).  ``top``: the heaviest layers,
    the rest counted with how to show them (``hints``, as the terminal view's)."""
    out = [f"### opcost: {safe.md_code(report.model.get('path', ''))}", ""]
    ins = report.model.get("inputs") or {}
    if ins:
        out += ["Inputs: " + ", ".join(safe.md_code(f"{k}={'x'.join(map(str, v or ())) or 'scalar'}")
                                      for k, v in ins.items()), ""]
    out += ["| quantity | value |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in _summary_pairs(report)]
    for p in report.predictions:
        shares = ", ".join(f"{b} {100 * x:.0f}%" for b, x in p.bound_share.items() if x > 0)
        out.append(f"| latency on {safe.md_text(p.hardware)} ({p.precision}) | "
                   f"**{human_time(p.latency_s)}** ({shares}) |")
    out.append("")
    out += [f"> **warning:** {safe.md_text(w)}" for w in report.warnings]
    if report.warnings:
        out.append("")
    if report.comparison is not None:
        c = report.comparison
        out += [f"**Baseline** {safe.md_code(c.baseline_path)}: " + (
            "**predicted latency regressed**" if c.failed else "no regression beyond the limit"), ""]
        for head, details in comparison_lines(c):
            out.append(f"- {safe.md_text(head)}")
            out += [f"  - grew: {safe.md_text(d)}" for d in details]
        deltas = count_delta_lines(c)
        out += [f"- counts: {'; '.join(deltas) if deltas else 'unchanged'}"]
        out += [f"- note: {safe.md_text(x)}" for x in c.notes] + [""]
    out += [f"Coverage: {safe.md_text(report.coverage.line())}.", ""]
    est = estimates_line(report)
    if est:
        out += [safe.md_text(est[0].upper() + est[1:]) + ".", ""]
    if report.predictions:
        out += ["<details><summary>How each latency was predicted</summary>", "",
                *markdown_lines(report.predictions), "", "</details>", ""]
    if report.measured is not None:
        out += measured_view.markdown_lines(report.measured, top, hints)
    if report.sensitivity is not None:
        from analyzer.render import whatif

        out += whatif.markdown_lines(report.sensitivity, top, hints) + [""]
    out += _markdown_layers(report, top, hints, sum(len(x) + 1 for x in out) + 200)
    out += ["</details>", ""]
    return "\n".join(out) + "\n"


def render_sweep(sw, fmt: str, width: int | None = None) -> str:
    """A sweep as one table: swept dim values x totals (and latency per profile)."""
    if fmt == "json":
        from analyzer.report.finite_json import dumps

        return dumps(sw.to_dict(), indent=2) + "\n"
    hws = list(sw.precision())
    model = safe.text(sw.points[0][1].model.get("path", "")) if sw.points else ""
    precisions = sorted(set(sw.precision().values()))
    said = f"; {', '.join(precisions)}" if precisions else ""   # (one per profile, usually one)
    title = f"{model} sweep over {', '.join(sw.dims)}{said}"
    exact = fmt == "csv"   # exact integers and seconds, the units in the header; else each cell's own
    head = [*sw.dims, "params", "MAC FLOPs", "vector", "transc.", "FLOPs",
            "bytes moved (B)" if exact else "bytes moved", *[f"{h} latency{' (s)' if exact else ''}" for h in hws]]
    rows = []
    for bound, r in sw.points:
        t = r.totals
        cells = [str(bound[d]) for d in sw.dims]
        nums = [t.params, t.mac_flops, t.vector_flops, t.transcendentals, t.flops]
        cells += [str(n) if exact else human(n) for n in nums]
        cells.append(str(t.bytes_moved) if exact else human(t.bytes_moved, "B"))
        cells += [repr(p.latency_s) if exact else human_time(p.latency_s) for p in r.predictions]
        rows.append(cells)
    if fmt == "csv":
        buf = io.StringIO()
        # as the one-shape CSV: '#' lines lead only for predictions and warnings (counts alone
        # start at the header row)
        buf.write("".join(safe.text(f"# {x}") + "\n" for x in (
            *([title] if hws else ()), *(f"warning: {w}" for w in sw.warnings()))))
        w = csv.writer(buf, lineterminator="\n")
        w.writerow([safe.csv_cell(h) for h in head])
        w.writerows(rows)
        return buf.getvalue()
    if fmt == "markdown":
        out = [f"### opcost: {safe.md_code(sw.points[0][1].model.get('path', '') if sw.points else '')} "
               f"sweep over {safe.md_text(', '.join(sw.dims))}{said}", "",
               "| " + " | ".join(map(safe.md_text, head)) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        out += [""] + [f"> **warning:** {safe.md_text(w)}" for w in sw.warnings()]
        return "\n".join(out) + "\n"
    warnings = [x for w in sw.warnings() for x in wrap(safe.text(f"warning: {w}"), width)]
    lines = _sweep_lines(sw.dims, head, rows, len(hws), precisions, width)
    return "\n".join([f"model: {model}", *lines, *warnings]) + "\n"


def _sweep_lines(dims, head: list[str], rows: list[list[str]], n_hw: int, precisions: list[str],
                 width: int | None) -> list[str]:
    """A sweep's rows for the terminal (``analyzer.render.layout.table``: no cell is ever cut),
    each profile's latency headed by its id alone.  While the rows do not fit ``width``, columns
    go: the FLOP split (transc., vector, MAC FLOPs), params, FLOPs, bytes moved, then the extra
    profiles' latencies (last first), said in a line; ``width`` None (a pipe): none goes."""
    first = len(head) - n_hw
    head = [safe.text(h.removesuffix(" latency") if i >= first else h) for i, h in enumerate(head)]
    keep = list(range(len(head)))

    def size(cols):
        return sum(max([len(head[i])] + [len(r[i]) for r in rows]) for i in cols) + 2 * (len(cols) - 1)

    gone = []
    order = ("transc.", "vector", "MAC FLOPs", "params", "FLOPs", "bytes moved")
    fixed = head[len(dims):first]   # the totals' columns (a dim may have any name)
    for i in [len(dims) + fixed.index(h) for h in order] + list(range(len(head) - 1, first, -1)):
        if width is None or size(keep) <= width:
            break
        keep.remove(i)
        gone.append(head[i])
    per = f"; {', '.join(precisions)} latency per profile" if precisions else ""
    out = wrap(safe.text(f"sweep over {', '.join(dims)}{per}"), width)
    out += table([head[i] for i in keep], [[r[i] for i in keep] for r in rows],
                 {j for j, i in enumerate(keep) if i >= len(dims)}, None)
    if gone:
        out += wrap(f"(not shown at this width: {', '.join(gone)}; csv and json carry them)", width)
    return out
