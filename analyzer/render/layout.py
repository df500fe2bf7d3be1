"""Text laid out for a terminal of ``width`` columns (None: a pipe or a file, lines whole):
prose wrapped at spaces with a number kept beside its unit (``wrap``), a line cut at its end
(``one_line``), and rows drawn as aligned columns whose name column is fitted to the room the
others leave (``table``: ``analyzer.render.names`` shortens the names, unique and ending with
their last component).  Layout only: what the rows say is the caller's.
"""

from __future__ import annotations

import re
import textwrap

from analyzer.render import names as fit_names
from analyzer.render.pieces import shorten

MIN_NAME = 16
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



def one_line(line: str, width: int | None) -> str:
    """``line`` cut at its end to ``width`` (prose: its start says what it is)."""
    if width is None or len(line) <= width:
        return line
    return line[:max(width - 1, 0)] + "…"


def table(header: list[str], rows: list[list[str]], right: set[int], width: int | None,
          flex: int = 0, drop: tuple[int, ...] = (), alone: tuple | None = None,
          context=None) -> list[str]:
    """Rows as aligned text; column ``flex`` (the name) takes what ``width`` leaves and its
    names are fitted to it (``names.fit``: unique, last components kept); the others are never
    cut.  While the names would get less than ``MIN_NAME`` columns, or would lose characters
    (not only whole components), the columns in ``drop`` go, in that order.  ``alone``:
    (column, header, companions): the header that column takes once every companion column
    has gone.  ``context``: full names of rows not shown, which a shortened name must not
    match (``names.fit``)."""
    n = len(header)
    widths = [len(h) for h in header]
    for r in rows:
        for i in range(n):
            if len(r[i]) > widths[i]:
                widths[i] = len(r[i])
    keep = list(range(n))
    if callable(context):   # asked for at most once, whatever the tries below
        ask, memo = context, []

        def context():
            if not memo:
                memo.append(ask())
            return memo[0]
    if width is not None and sum(widths) + 2 * (n - 1) > width:
        names = [r[flex] for r in rows]
        gone: list[int] = []
        fitted, room = names, 0
        solo = widths[alone[0]] if alone is not None else 0   # ``alone``'s width, relabelled
        if alone is not None:
            solo = max([len(alone[1])] + [len(r[alone[0]]) for r in rows])
        for d in (None, *drop):
            if d is not None:
                gone.append(d)
            alone_now = alone is not None and all(c in gone for c in alone[2])
            others = sum(solo if alone_now and i == alone[0] else w
                         for i, w in enumerate(widths) if i != flex and i not in gone)
            room = width - others - 2 * (n - len(gone) - 1)
            if room < MIN_NAME:
                continue
            fitted = fit_names.fit(names, room, context, cut=False)
            if max((len(f) for f in fitted), default=0) <= room:
                break
        room = max(room, min(MIN_NAME, widths[flex]))
        if max((len(f) for f in fitted), default=0) > room:   # characters must go too
            fitted = fit_names.fit(names, room, context)
        keep = [i for i in range(n) if i not in gone]
        header = list(header)
        if alone is not None and alone[0] in keep and all(c in gone for c in alone[2]):
            header[alone[0]] = alone[1]
        header[flex] = shorten(header[flex], room)
        rows = [[*r[:flex], f, *r[flex + 1:]] for r, f in zip(rows, fitted)]
        widths[flex] = max([len(header[flex])] + [len(f) for f in fitted])
        if alone is not None and alone[0] in keep:   # its header may have become shorter
            widths[alone[0]] = max([len(header[alone[0]])] + [len(r[alone[0]]) for r in rows])
    last = keep[-1]
    out = []
    for r in [header, *rows]:
        cells = []
        for i in keep:
            c = r[i]
            cells.append(c.rjust(widths[i]) if i in right else
                         (c.ljust(widths[i]) if i != last else c))
        out.append("  ".join(cells).rstrip())
    return out
