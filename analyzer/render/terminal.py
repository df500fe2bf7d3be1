"""The terminal view: answers first.  Formatting only (the rows and sums come from
``analyzer.report.rollups``; the arithmetic of ``--explain`` from ``Prediction.explain``).

1. the headline: model, inputs, totals and, per profile, latency, bound shares, runtime,
   provenance and every assumption or warning that changes the answer;
2. the heaviest layers by predicted time (``TOP_DEFAULT``; ``--top N``; ``--all`` every row);
3. rollups by op type and by module (repeated blocks folded), and ``N more rows (--all)``.

``width``: the terminal's columns; every line fits, a layer name is shortened in the middle
with ``…`` (never wrapped) and a number keeps its unit.  ``width=None`` (a pipe or a file): one
line per row, names whole, so ``grep NAME`` finds a layer's row.  The table is drawn here, not
by rich: 50,000 rows must cost less than their analysis.
"""

from __future__ import annotations

import re
import textwrap

from analyzer.counting.engine import UNCOSTED
from analyzer.render import safe
from analyzer.render.pieces import comparison_lines, comparison_text, estimates_line, human, shorten# noqa: F401
from analyzer.render.headline import caveat, detail_lines, human_time
from analyzer.report import rollups

TOP_DEFAULT = 15
ROLLUP_DEFAULT = 8
MIN_NAME = 16
# how to ask for more, in the caller's words (the CLI passes its flags)
HINTS = {"all": "all_rows=True", "explain": "Prediction.explain"}
_UNIT = re.compile(r"(\d) (?=[a-zA-Zµ%])")
NBSP = "\u00a0"


def wrap(line: str, width: int | None, indent: str = "    ") -> list[str]:
    """``line`` wrapped at spaces to ``width`` (a number stays with its unit); unchanged when
    ``width`` is None."""
    if width is None or len(line) <= width:
        return [line]
    lead = line[:len(line) - len(line.lstrip(" "))]
    glued = _UNIT.sub(lambda m: m.group(1) + NBSP, line)
    out = textwrap.wrap(glued, width=width, initial_indent="", subsequent_indent=lead + indent,
                        break_long_words=True, break_on_hyphens=False)
    return [x.replace(NBSP, " ") for x in out] or [""]


def _bar(share: dict) -> str:
    return ", ".join(f"{b} {100 * s:.0f}%" for b, s in share.items() if s > 0)


def headline(report, width: int | None, hints: dict | None = None) -> list[str]:
    """Model, inputs, totals, then per profile: latency and how to read it."""
    m, t = report.model, report.totals
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
    lines.append(f"totals: params {human(t.params)}, FLOPs {human(t.flops, 'FLOP')} (MAC "
                 f"{human(t.mac_flops)}, vector {human(t.vector_flops)}, transc. "
                 f"{human(t.transcendentals)}), bytes {human(t.bytes_moved, 'B')} (weights "
                 f"{human(t.weight_bytes, 'B')}, act. in {human(t.activation_bytes_read, 'B')}, "
                 f"out {human(t.activation_bytes_written, 'B')})")
    for p in report.predictions:
        lines.append(f"latency on {safe.text(p.hardware)} ({p.precision}): {human_time(p.latency_s)}"
                     f"  [{_bar(p.bound_share)}]")
        for x in detail_lines(p):
            if x.startswith("provenance ") and width is not None:
                x = f"provenance {p.provenance} ({(hints or HINTS)['explain']} shows its constants)"
            lines.append(f"  {safe.text(x)}")
    c = caveat(report.predictions)
    if c:
        lines.append(safe.text(c))
    for w in report.warnings:
        lines.append(f"warning: {safe.text(w)}")
    cov = report.coverage
    lines.append(safe.text(f"coverage: {cov.line()}"))

    est = estimates_line(report)
    if est:
        lines.append(safe.text(est))
    return [x for line in lines for x in wrap(line, width)]


def table(header: list[str], rows: list[list[str]], right: set[int], width: int | None,
          flex: int = 0, drop: tuple[int, ...] = ()) -> list[str]:
    """Rows as aligned text; column ``flex`` (the name) takes what ``width`` leaves and is
    shortened in the middle; the others are never cut: while the name would get less than
    ``MIN_NAME`` columns, the columns in ``drop`` go, in that order."""
    n = len(header)
    widths = [len(h) for h in header]
    for r in rows:
        for i in range(n):
            if len(r[i]) > widths[i]:
                widths[i] = len(r[i])
    if width is not None:
        gone = []
        for d in drop:
            others = sum(w for i, w in enumerate(widths) if i != flex and i not in gone)
            if width - others - 2 * (n - len(gone) - 1) >= MIN_NAME:
                break
            gone.append(d)
        if gone:
            keep = [i for i in range(n) if i not in gone]
            return table([header[i] for i in keep], [[r[i] for i in keep] for r in rows],
                         {keep.index(i) for i in right if i in keep}, width, keep.index(flex))
        others = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (n - 1)
        widths[flex] = max(min(widths[flex], width - others), min(MIN_NAME, widths[flex]))
    out = []
    for r in [header, *rows]:
        cells = []
        for i in range(n):
            c = r[i]
            if i == flex and width is not None:
                c = shorten(c, widths[i])
            cells.append(c.rjust(widths[i]) if i in right else
                         (c.ljust(widths[i]) if i != n - 1 else c))
        out.append("  ".join(cells).rstrip())
    return out


def _columns(report, wide: bool, width: int | None):
    """[(header, cell(node, xs), right-aligned)] in the order shown."""
    preds = report.predictions
    total_flops = report.totals.flops or 1
    cols = [("layer", lambda n, xs: safe.text(n.name), False),
            ("op", lambda n, xs: safe.text(n.op) + (" ?" if n.status == UNCOSTED else ""), False)]
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
                     ("kernel", lambda n, xs: safe.text(xs[0].kernel) if xs[0] else "-", False)]
        cols.append(("output", lambda n, xs: safe.text(" ".join(n.outputs)), False))
    return cols


def _drop_order(header: list[str], first: list[str]) -> tuple[int, ...]:
    """Columns to give up on a narrow terminal: extra profiles' times (last first), then
    ``first`` in order (they are all in --wide / a wider terminal)."""
    extra = [i for i, h in enumerate(header) if h.startswith("time ")][1:]
    return tuple(reversed(extra)) + tuple(header.index(h) for h in first if h in header)


def layer_lines(report, rows: list, wide: bool, width: int | None) -> list[str]:
    cols = _columns(report, wide, width)
    cells = [[f(n, xs) for _, f, _ in cols] for n, xs in rows]
    right = {i for i, c in enumerate(cols) if c[2]}
    header = [c[0] for c in cols]
    drop = () if wide else _drop_order(header, ["bytes", "FLOPs", "bound"])
    return table(header, cells, right, width, drop=drop)


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
    return table(header, rows, right, width, drop=_drop_order(header, ["bytes", "nodes", "FLOPs"]))


def render_view(report, *, top: int | None = None, all_rows: bool = False, wide: bool = False,
                width: int | None = None, color: bool = False, hints: dict | None = None) -> str:
    """The default terminal view (see the module docstring); ``hints``: how the caller asks for
    every row (``"all"``) and for one layer's arithmetic (``"explain"``)."""
    hints = {**HINTS, **(hints or {})}
    def title(s: str) -> str:
        return f"\x1b[1m{s}\x1b[0m" if color else s

    out = headline(report, width, hints)
    rows = rollups.runtime_rows(report)
    k = None if all_rows else (top or TOP_DEFAULT)
    shown = rollups.top_rows(report, k, rows)
    by = f"predicted time on {safe.text(report.predictions[0].hardware)}" if report.predictions \
        else "FLOPs"
    what = "every layer" if k is None or len(shown) == len(rows) else f"top {len(shown)} of {len(rows)} layers"
    out += ["", title(f"{what} by {by}")]
    out += layer_lines(report, shown, wide, width)
    limit = None if all_rows else ROLLUP_DEFAULT
    ops = rollups.by_op(report, rows)
    mods = rollups.by_module(report, rows)
    out += ["", title("by op type")] + rollup_lines(report, ops, "op", width, limit)
    out += ["", title("by module (repeated blocks folded)")]
    out += rollup_lines(report, mods, "module", width, limit)
    more = (len(rows) - len(shown)) + (0 if limit is None else
                                       max(0, len(ops) - limit) + max(0, len(mods) - limit))
    if more:
        out += ["", f"{more} more rows ({hints['all']})"]
    if report.comparison is not None:

        out += [""] + [x for line in comparison_text(report.comparison).split("\n")
                       for x in wrap(line, width)]
    if report.sensitivity is not None:
        out += sensitivity_lines(report.sensitivity, top, width, title)
    text = "\n".join(out) + "\n"
    if report.measured is not None:
        from analyzer.render import measured as measured_view

        text += "\n" + measured_view.render_text(report.measured, top, width)
    return text


def sensitivity_lines(w, top: int | None, width: int | None, title=str) -> list[str]:
    """What to shrink (the first profile's layers) and what hardware would help (each profile)."""
    from analyzer.render import whatif

    out = []
    if w.profiles:
        p = w.profiles[0]
        rows = whatif.shrink_rows(p, top or whatif.TOP_DEFAULT)
        out += ["", title(whatif.shrink_title(p, len(rows)))]
        out += table(whatif.HEADER, rows, whatif.RIGHT, width, drop=(1,))
    out.append("")
    for p in w.profiles:
        out += wrap(whatif.hardware_line(p), width)
    return out


def _compute_lines(e) -> list[str]:
    """The factors of ``--explain``'s compute term (a part with no work is left out)."""
    out = []
    if e.mac_flops:
        out.append(f"    matrix = MAC {human(e.mac_flops)} x padding {e.pad:.3g} x waves {e.wave:.3g} "
                   f"(split-K {e.split_k:g}, {e.units:g} SMs) x narrow {e.narrow:.3g} / (matrix peak "
                   f"{human(e.matrix_peak, 'FLOP/s')} x e_compute {e.e_compute:.3g})")
    if e.vector_flops or e.transcendental_flops:
        out.append(f"    vector = (vector + transcendentals x {e.trans_weight:g}) / (vector peak "
                   f"{human(e.vector_peak, 'FLOP/s')} x e_compute {e.e_compute:.3g})")
    return out


def render_explain(report, index: int, width: int | None = None) -> str:
    """One layer's arithmetic on every profile: counts, bytes by class, intensity, the ridge
    point, each term and the efficiency constants with their provenance."""
    n = report.nodes[index]
    c = n.cost
    out = [f"layer {safe.text(n.name)} ({safe.text(n.op)}), status {n.status}",
           f"  counts: MAC {c.mac_flops:,} FLOP, vector {c.vector_flops:,} FLOP, transcendental "
           f"{c.transcendentals:,}, params {c.params:,}",
           f"  bytes: weights {c.weight_bytes:,} B, activations read "
           f"{c.activation_bytes_read:,} B, written {c.activation_bytes_written:,} B "
           f"(= {c.bytes_moved:,} B)"]
    if n.note:
        out.append(f"  note: {safe.text(n.note)}")
    if not report.predictions:
        out.append("  no prediction: predict on a hardware profile to see the time terms")
    for p in report.predictions:
        x = p.for_node(index)
        e = p.explain(index)
        out.append(f"on {safe.text(p.hardware)} ({p.precision}, {p.runtime}, {'max' if p.overlap else 'sum'}"
                   f" of compute and memory):")
        if x is None or e is None:
            out.append("  launches no kernel (no work, or folded): 0 s")
            continue
        fused = (f"kernel {safe.text(e.kernel)}: {e.members} fused nodes, this layer's share "
                 f"{100 * e.member_share:.1f}%") if e.members > 1 else f"kernel {safe.text(e.kernel)}"
        out += [f"  {fused}; op class {e.op_class}; {e.runs:g} launch{'es' if e.runs != 1 else ''}",
                f"  per launch: MAC {human(e.mac_flops)}, vector {human(e.vector_flops)}, transc. "
                f"{human(e.transcendental_flops)} FLOP; {human(e.bytes, 'B')} moved (fused "
                f"intermediates excluded)",
                f"  arithmetic intensity {e.intensity:.3g} FLOP/B; ridge point {e.ridge:.3g} FLOP/B "
                f"({e.engine} peak {human(e.matrix_peak if e.engine == 'matrix' else e.vector_peak, 'FLOP/s')}"
                f" / {human(e.mem_bw, 'B/s')}), {e.effective_ridge:.3g} FLOP/B with the efficiencies",
                f"  compute  {human_time(e.compute_s):>9}  = launches x (matrix {human_time(e.matrix_s)} "
                f"+ vector {human_time(e.vector_s)})",
                *_compute_lines(e),
                f"  memory   {human_time(e.memory_s):>9}  = launches x (DRAM {human_time(e.dram_s)} + "
                f"per-SM {human_time(e.sm_s)})",
                f"    DRAM = (bytes to DRAM {human(e.dram_bytes, 'B')} + ramp b_half "
                f"{human(e.b_half_bytes, 'B')}) / (bandwidth {human(e.mem_bw, 'B/s')} x e_bw {e.e_bw:.3g} "
                f"x cache gain {e.cache_gain:.3g}); cache share {100 * e.cache_share:.1f}% of the bytes "
                f"(L2 {human(e.l2_bytes, 'B')})",
                f"    per-SM = bytes / SM issue rate " + (human(e.sm_rate, 'B/s') if e.sm_rate else "(off)"),
                f"  fixed    {human_time(e.overhead_s):>9}  = launches x {human_time(e.fixed_s)} "
                f"(class floor {human_time(e.floor_s)}, launch figure, dispatch)",
                f"  kernel   {human_time(e.time_s):>9}  = fixed + {'max' if p.overlap else 'sum'}(compute, "
                f"memory): {e.bound}-bound; attained {human(e.attained_flops, 'FLOP/s')}, effective roof "
                f"{human(e.effective_roof, 'FLOP/s')}",
                f"  layer    {human_time(x.time_s):>9}  {100 * x.share:.2f}% of "
                f"{human_time(p.latency_s)}",
                f"  constants: {safe.text(e.provenance)}: {safe.text(e.provenance_detail)}"]
    return "\n".join(y for line in out for y in wrap(line, width)) + "\n"
