"""The terminal view: answers first.  Formatting only (the rows and sums come from
``analyzer.report.rollups``; the arithmetic of ``--explain`` from ``Prediction.explain``).

1. the headline: model, inputs, totals, one line per profile (latency, bound shares, runtime,
   where its constants come from, which notes apply), then each assumption once in one line,
   warnings and coverage; ``verbose``: every note and the provenance in full (as the CSV
   comments and markdown carry them);
2. the heaviest layers by predicted time (``TOP_DEFAULT``; ``--top N``; ``--all`` every row);
3. rollups by op type and by module (repeated blocks folded); under each table it cut, how many
   rows it left out and how to show them (``12 more layers (--top 27 or --all)``).

``width``: the terminal's columns; every line fits, a number keeps its unit, and layer names
tell rows apart (``analyzer.render.names``: the prefix the shown rows share is said once, a
long name loses components from its middle, never its last, and every shown name is unique and
accepted by ``--explain``).  ``width=None`` (a pipe or a file): one line per row, names whole,
so ``grep NAME`` finds a layer's row.  The table is drawn by ``analyzer.render.layout``, not
by rich: 50,000 rows must cost less than their analysis.
"""

from __future__ import annotations

from analyzer.counting.engine import UNCOSTED
from analyzer.render import names as fit_names
from analyzer.render import safe
from analyzer.render.headline import (
    caveat,
    detail_lines,
    human_time,
    provenance_word,
    shared_notes,
    short_caveat,
)
from analyzer.render.layout import one_line, table, wrap
from analyzer.render.pieces import (  # noqa: F401
    HINTS,
    comparison_lines,
    comparison_text,
    estimates_line,
    human,
    more_line,
    shorten,
)
from analyzer.report import rollups

TOP_DEFAULT = 15
ROLLUP_DEFAULT = 8


def _bar(share: dict) -> str:
    return ", ".join(f"{b} {100 * s:.0f}%" for b, s in share.items() if s > 0)


def _model_lines(report) -> list[str]:
    m = report.model
    lines = [f"model: {safe.text(m.get('path', ''))}" + (f" ({m['format']})" if m.get("format") else "")]
    ins = m.get("inputs") or {}
    if ins:
        shown = ", ".join(f"{safe.text(k)}={'x'.join(map(str, v or ())) or 'scalar'}" for k, v in ins.items())
        lines.append(f"inputs: {shown}")
    b = m.get("batch")
    if isinstance(b, dict):   # batch= / --batch: the export's batch and what followed it
        n = len(b.get("rewritten_nodes") or ())
        lines.append(f"batch: {b.get('value')}" + (
            f", set from the export's {b['was']}" if b.get("was") is not None else "")
            + (f"; shape constants of {n} nodes rewritten" if n else ""))
    return lines


def headline(report, width: int | None, hints: dict | None = None,
             verbose: bool = False) -> list[str]:
    """Model, inputs, totals, one line per profile, each note once (``verbose``: every note and
    the provenance in full under each profile)."""
    if verbose:
        return verbose_headline(report, width, hints)
    hints = {**HINTS, **(hints or {})}
    t = report.totals
    lines = [x for line in _model_lines(report) for x in wrap(line, width)]
    lines += wrap(f"totals: {human(t.params)} params, {human(t.flops, 'FLOP')} ({human(t.mac_flops)} "
                  f"MAC), {human(t.bytes_moved, 'B')} moved ({human(t.weight_bytes, 'B')} weights)",
                  width)
    preds = report.predictions
    cut = False
    if preds:
        notes, per = shared_notes(preds)
        precisions = {p.precision for p in preds}
        same = len(precisions) == 1
        header = ["profile", f"latency {preds[0].precision}" if same else "latency"]
        if not same:
            header.append("precision")
        bounds = [b for b in ("compute", "memory", "overhead")
                  if any(p.bound_share.get(b, 0) > 0 for p in preds)]
        header += bounds + ["runtime", "constants"] + (["notes"] if notes else [])
        rows = []
        for p, mine in zip(preds, per):
            r = [safe.text(p.hardware), human_time(p.latency_s)]
            if not same:
                r.append(p.precision)
            r += [f"{100 * p.bound_share.get(b, 0.0):.0f}%" for b in bounds]
            r += [p.runtime, provenance_word(p)]
            if notes:
                r.append(",".join(map(str, mine)))
            rows.append(r)
        right = set(range(1, 2 + (not same) + len(bounds))) - ({2} if not same else set())
        # a narrow terminal gives these up, in this order (--verbose still says everything)
        drop = tuple(header.index(h) for h in ("constants", "runtime", "memory", "compute",
                                               "overhead", "precision", "notes") if h in header)
        lines += table(header, rows, right, width, drop=drop)
        for i, n in enumerate(notes, start=1):
            line = safe.text(f"[{i}] {n}")
            cut |= width is not None and len(line) > width
            lines.append(one_line(line, width))
        c = short_caveat(preds)
        if c:
            lines.append(one_line(c, width))
        cut = True   # the provenance and the notes' full text are in --verbose
    for w in dict.fromkeys(report.warnings):
        lines += wrap(f"warning: {safe.text(w)}", width)
    lines += wrap(safe.text(f"coverage: {report.coverage.line()}"), width)
    est = estimates_line(report)
    if est:
        line = safe.text(est)
        cut |= width is not None and len(line) > width
        lines.append(one_line(line, width))
    if cut:
        lines += wrap(f"({hints['verbose']}: notes in full; {hints['explain']}: a layer's "
                      f"arithmetic)", width)
    return lines


def verbose_headline(report, width: int | None, hints: dict | None = None) -> list[str]:
    """Model, inputs, totals, then per profile: latency and every detail (runtime, time
    definition, provenance, each assumption), the caveat, warnings, coverage, estimates."""
    t = report.totals
    lines = _model_lines(report)
    lines.append(f"totals: params {human(t.params)}, FLOPs {human(t.flops, 'FLOP')} (MAC "
                 f"{human(t.mac_flops)}, vector {human(t.vector_flops)}, transc. "
                 f"{human(t.transcendentals)}), bytes {human(t.bytes_moved, 'B')} (weights "
                 f"{human(t.weight_bytes, 'B')}, act. in {human(t.activation_bytes_read, 'B')}, "
                 f"out {human(t.activation_bytes_written, 'B')})")
    for p in report.predictions:
        lines.append(f"latency on {safe.text(p.hardware)} ({p.precision}): {human_time(p.latency_s)}"
                     f"  [{_bar(p.bound_share)}]")
        lines += [f"  {safe.text(x)}" for x in detail_lines(p)]
    c = caveat(report.predictions)
    if c:
        lines.append(safe.text(c))
    for w in report.warnings:
        lines.append(f"warning: {safe.text(w)}")
    lines.append(safe.text(f"coverage: {report.coverage.line()}"))
    est = estimates_line(report)
    if est:
        lines.append(safe.text(est))
    return [x for line in lines for x in wrap(line, width)]


def _op_in_name(n) -> bool:
    """Whether a layer's name ends with its op (``.../dense/MatMul``, ``.../Add_1``)."""
    last = n.name.replace(".", "/").rsplit("/", 1)[-1]
    return n.status != UNCOSTED and (last == n.op or last.startswith(n.op + "_"))


def _columns(report, wide: bool, width: int | None, op: bool = True):
    """[(header, cell(node, xs), right-aligned)] in the order shown (``op``: with the op
    column)."""
    preds = report.predictions
    total_flops = report.totals.flops or 1
    cols = [("layer", lambda n, xs: safe.text(n.name), False)]
    if op:
        cols.append(("op", lambda n, xs: safe.text(n.op) + (" ?" if n.status == UNCOSTED else ""),
                     False))
    if preds:
        h0 = safe.text(preds[0].hardware)
        cols += [(f"time {h0}" if len(preds) > 1 else "time",
                  lambda n, xs: human_time(xs[0].time_s) if xs[0] else "-", True),
                 ("bound", lambda n, xs: xs[0].bound if xs[0] else "-", False),
                 ("share", lambda n, xs: f"{100 * xs[0].share:.1f}%" if xs[0] else "-", True)]
        for i, p in enumerate(preds[1:], start=1):
            cols.append((f"time {safe.text(p.hardware)}",
                         lambda n, xs, i=i: human_time(xs[i].time_s) if xs[i] else "-", True))
    cols += [("FLOPs", lambda n, xs: human(n.cost.flops), True),
             ("bytes", lambda n, xs: human(n.cost.bytes_moved, "B"), True)]
    if not preds:
        cols.append(("FLOP %", lambda n, xs: f"{100 * n.cost.flops / total_flops:.1f}", True))
    if wide:
        c = "cost"
        cols += [("params", lambda n, xs: human(getattr(n, c).params), True),
                 ("MAC", lambda n, xs: human(n.cost.mac_flops), True),
                 ("vector", lambda n, xs: human(n.cost.vector_flops), True),
                 ("transc.", lambda n, xs: human(n.cost.transcendentals), True),
                 ("weights", lambda n, xs: human(n.cost.weight_bytes, "B"), True),
                 ("act. in", lambda n, xs: human(n.cost.activation_bytes_read, "B"), True),
                 ("act. out", lambda n, xs: human(n.cost.activation_bytes_written, "B"), True)]
        if preds:
            cols += [("FLOP/B", lambda n, xs: f"{xs[0].intensity:.3g}" if xs[0] else "-", True),
                     ("kernel", lambda n, xs: (safe.text(xs[0].kernel) or "host only") if xs[0] else "-",
                      False)]
        cols.append(("output", lambda n, xs: safe.text(" ".join(n.outputs)), False))
    return cols


def _drop_order(header: list[str], first: list[str]) -> tuple[int, ...]:
    """Columns to give up on a narrow terminal: extra profiles' times (last first), then
    ``first`` in order (they are all in --wide / a wider terminal)."""
    extra = [i for i, h in enumerate(header) if h.startswith("time ")][1:]
    return tuple(reversed(extra)) + tuple(header.index(h) for h in first if h in header)


def layer_lines(report, rows: list, wide: bool, width: int | None,
                prefix: str = "", context=None) -> list[str]:
    """The layer table; ``prefix``: the leading part every shown name shares, left out;
    ``context``: the names of the rows not shown.  On a terminal the op column goes when every
    shown name ends with its op (the name says it)."""
    op = width is None or wide or not all(_op_in_name(n) for n, _ in rows)
    cols = _columns(report, wide, width, op)
    cells = [[f(n, xs) for _, f, _ in cols] for n, xs in rows]
    if prefix:
        for r in cells:
            r[0] = r[0][len(prefix):]
    right = {i for i, c in enumerate(cols) if c[2]}
    header = [c[0] for c in cols]
    drop = () if wide else _drop_order(header, ["bytes", "FLOPs", "share", "bound", "op"])
    times = tuple(i for i, h in enumerate(header) if h.startswith("time "))
    alone = (times[0], "time", times[1:]) if len(times) > 1 else None
    return table(header, cells, right, width, drop=drop, alone=alone, context=context)


def shown_prefix(shown: list, rows: list, width: int | None) -> str:
    """The leading part of the names every shown row shares, when the names are shortened (a
    terminal) and none of them without it is the end of a row not shown; '' otherwise."""
    if width is None:
        return ""
    names = [safe.text(n.name) for n, _ in shown]
    others = []
    if len(shown) < len(rows) and fit_names.shared_prefix(names):
        ids = {id(n) for n, _ in shown}
        others = [safe.text(n.name) for n, _ in rows if id(n) not in ids]
    p = fit_names.droppable_prefix(names, others)
    return p if len(p) > 1 else ""


def rollup_lines(report, groups: list, what: str, width: int | None, limit: int | None) -> list[str]:
    preds = report.predictions
    shown = groups if limit is None else groups[:limit]
    header = [what, "nodes"]
    if preds:
        header += [f"time {safe.text(p.hardware)}" if len(preds) > 1 else "time" for p in preds]
        header.append("share")
    header += ["FLOPs", "bytes"]
    rows = []
    total = preds[0].latency_s if preds else 0.0
    for g in shown:
        name = safe.text(g.name) + (f" x{g.blocks}" if g.blocks > 1 else "")
        r = [name, str(g.nodes)]
        if preds:
            r += [human_time(t) for t in g.time_s]
            r.append(f"{100 * g.time_s[0] / total:.1f}%" if total > 0 else "-")
        r += [human(g.flops), human(g.bytes_moved, "B")]
        rows.append(r)
    right = set(range(1, len(header)))
    times = tuple(i for i, h in enumerate(header) if h.startswith("time "))
    alone = (times[0], "time", times[1:]) if len(times) > 1 else None
    return table(header, rows, right, width, drop=_drop_order(header, ["bytes", "nodes", "FLOPs"]),
                 alone=alone)


def render_view(report, *, top: int | None = None, all_rows: bool = False, wide: bool = False,
                width: int | None = None, color: bool = False, hints: dict | None = None,
                verbose: bool = False) -> str:
    """The default terminal view (see the module docstring); ``hints``: how the caller asks for
    every row (``"all"``) and for one layer's arithmetic (``"explain"``)."""
    hints = {**HINTS, **(hints or {})}
    def title(s: str) -> str:
        return f"\x1b[1m{s}\x1b[0m" if color else s

    out = headline(report, width, hints, verbose)
    rows = rollups.runtime_rows(report)
    k = None if all_rows else (top or TOP_DEFAULT)
    shown = rollups.top_rows(report, k, rows)
    by = f"predicted time on {safe.text(report.predictions[0].hardware)}" if report.predictions \
        else "FLOPs"
    what = "every layer" if k is None or len(shown) == len(rows) else f"top {len(shown)} of {len(rows)} layers"
    prefix = shown_prefix(shown, rows, width)
    out += ["", *map(title, wrap(f"{what} by {by}", width))]
    if prefix:
        out += wrap(f"(names under {prefix} shown without it)", width)
    context = None
    if width is not None and len(shown) < len(rows):
        def context():   # the rows not shown (names.fit calls it only when it shortens one)
            ids = {id(n) for n, _ in shown}
            return [safe.text(n.name) for n, _ in rows if id(n) not in ids]
    out += layer_lines(report, shown, wide, width, prefix, context)
    if len(shown) < len(rows):   # each cut table says what it left out, under it (a blank line ends a table)
        out += [""] + wrap(more_line(len(rows) - len(shown), "layer",
                              f"{hints['top'].format(n=len(rows))} or {hints['all']}"), width)
    limit = None if all_rows else ROLLUP_DEFAULT
    for groups, what, head, word in ((rollups.by_op(report, rows), "op", "by op type", "op type"),
                                     (rollups.by_module(report, rows), "module",
                                      "by module (repeated blocks folded)", "module")):
        out += ["", title(head)] + rollup_lines(report, groups, what, width, limit)
        if limit is not None and len(groups) > limit:
            out += [""] + wrap(more_line(len(groups) - limit, word, hints["all"]), width)
    if report.comparison is not None:

        out += [""] + [x for line in comparison_text(report.comparison).split("\n")
                       for x in wrap(line, width)]
    if report.sensitivity is not None:
        out += sensitivity_lines(report.sensitivity, top, width, title, hints)
    text = "\n".join(out) + "\n"
    if report.measured is not None:
        from analyzer.render import measured as measured_view

        text += "\n" + measured_view.render_text(report.measured, top, width, hints)
    return text


def sensitivity_lines(w, top: int | None, width: int | None, title=str,
                      hints: dict | None = None) -> list[str]:
    """What to shrink (the first profile's layers; how many more save time, and how to show
    them) and what hardware would help (each profile)."""
    from analyzer.render import whatif

    out = []
    if w.profiles:
        p = w.profiles[0]
        rows = whatif.shrink_rows(p, top or whatif.TOP_DEFAULT)
        out += ["", *map(title, wrap(whatif.shrink_title(p, len(rows)), width))]
        out += table(whatif.HEADER, rows, whatif.RIGHT, width, drop=(1,))
        more = whatif.more_rows_line(p, len(rows), hints)
        out += ["", *wrap(more, width)] if more else []
    out.append("")
    for p in w.profiles:
        out += wrap(whatif.hardware_line(p), width)
    return out
