"""Layer names that tell rows apart in a narrow column (formatting only).

A name is a path: its components are split by ``/`` (ONNX exporters, JAX scopes), else by
``.``.  ``shared_prefix(names)`` is the run of leading components every name shares (the
terminal view drops it from the shown rows and says so once).  ``fit(names, width)`` gives
each name in at most ``width`` characters where it can:

1. a name that fits is shown whole;
2. a longer one keeps its last component, the components that tell it apart from another shown
   name (the first component where the two differ), then as many of its last components, then
   of its first, as fit; a run of left-out components is one ``…``
   (``layer.0/…/dense/MatMul``);
3. only where even that does not fit do characters go, from the middle of the whole string.

Every shown name stays unique when the names are (but for step 3 at widths too narrow to hold
one component).  A shown name is a pattern: its pieces between ``…`` appear in the full name
in order, the last at its end (``analyzer.report.rollups.find_node`` accepts it, so
``--explain`` does).
"""

from __future__ import annotations

import os

ELLIPSIS = "…"


def _sep(name: str) -> str:
    return "/" if "/" in name else "."


def shared_prefix(names: list[str]) -> str:
    """The leading components (with their separators) every one of two or more names shares,
    leaving each name at least its last component; '' when they share none (a lone leading
    ``/`` does not count)."""
    if len(names) < 2:
        return ""
    sep = _sep(names[0])
    if any(_sep(n) != sep for n in names):
        return ""
    common = os.path.commonprefix(names)  # noqa: RUF071  (by character; cut back to a separator below)
    prefix = common[:common.rfind(sep) + 1]
    if not prefix.strip(sep) or any(len(n) == len(prefix) for n in names):
        return ""
    return prefix


def droppable_prefix(names: list[str], others: list[str]) -> str:
    """``shared_prefix(names)`` cut back, a component at a time, until no name without it is
    the end of one of ``others`` (the rows not shown: an encoder's and a decoder's
    ``layer.0/.../MatMul``), so that a shown name still names one row; checked while that stays
    cheap."""
    prefix = shared_prefix(names)
    if not prefix or not others:
        return prefix
    sep = _sep(names[0])
    index: dict[str, list[str]] = {}
    for o in others:
        index.setdefault(o.rsplit(_sep(o), 1)[-1], []).append(o)
    buckets = [index.get(n.rsplit(sep, 1)[-1], ()) for n in names]
    if sum(map(len, buckets)) > CONTEXT_WORK:
        return prefix
    while prefix.strip(sep):
        if not any(o.endswith(n[len(prefix) - 1:]) for n, b in zip(names, buckets) for o in b):
            return prefix
        prefix = prefix[:prefix[:-1].rfind(sep) + 1]
    return ""


def _render(parts: list[str], keep: set[int], sep: str) -> str:
    out = []
    gap = False
    for i, p in enumerate(parts):
        if i in keep:
            if gap:
                out.append(ELLIPSIS)
                gap = False
            out.append(p)
        else:
            gap = True
    if gap:   # the last component is always kept; kept for safety
        out.append(ELLIPSIS)
    return sep.join(out)


def _differ(a: list[str], b: list[str], keep: set[int]) -> int | None:
    """The component of ``a`` nearest its end, not yet kept, that differs from ``b``'s at the
    same place counted from the end (``layer.0`` against ``layer.1``), else from the start."""
    for j in range(1, len(a) + 1):
        i = len(a) - j
        if i not in keep and (j > len(b) or b[-j] != a[i]):
            return i
    for i, x in enumerate(a):
        if i not in keep and (i >= len(b) or b[i] != x):
            return i
    return None


CONTEXT_WORK = 300_000   # name checks a round of clash-finding may make, at most


def fit(names: list[str], width: int | None, context=None, cut: bool = True) -> list[str]:
    """Each of ``names`` in at most ``width`` characters where it can (see the module
    docstring); unchanged when ``width`` is None or every name fits.  ``context``: the full
    names a shortened one must not match either (``name_matches``: the rows not shown, so that
    ``--explain`` takes a shown name without a doubt), or a function that returns them (called
    only when a name is shortened), checked while that stays cheap.
    ``cut=False``: no step 3 (a name that does not fit by whole components stays longer)."""
    if width is None or all(len(n) <= width for n in names):
        return list(names)
    from analyzer.render.pieces import shorten
    from analyzer.report.rollups import name_matches

    seps = [_sep(n) for n in names]
    parts = [n.split(s) for n, s in zip(names, seps)]
    long = [i for i, n in enumerate(names) if len(n) > width]
    keep = {i: {len(parts[i]) - 1} for i in long}
    shown = list(names)

    def draw(i: int) -> str:
        return _render(parts[i], keep[i], seps[i])

    for i in long:
        shown[i] = draw(i)
    # a shortened name is a pattern: it must match no other row's name (nor a context name);
    # it keeps its last component whole, so only names with the same last component can match
    # it; checked name by name while that stays cheap, else only equal shown names clash
    if callable(context):
        context = context()
    own = set(names)
    others: list[str] = []
    index: dict[str, list[int]] = {}
    for pool in (list(names) + [c for c in dict.fromkeys(context or ()) if c not in own],
                 list(names)):
        index = {}
        for j, o in enumerate(pool):
            index.setdefault(o.rsplit(_sep(o), 1)[-1], []).append(j)
        if sum(len(index.get(parts[i][-1], ())) for i in long) <= CONTEXT_WORK:
            others = pool
            break

    def clash(i: int, s: str) -> int | None:
        """The index in ``others`` of a name other than row ``i``'s that ``s`` matches."""
        for j in index.get(parts[i][-1], ()):
            if j != i and name_matches(s, others[j]):
                return j
        return None

    for _ in range(64):   # keep what tells a shortened name from the names it would match
        moved = False
        if others:
            for i in long:
                j = clash(i, shown[i])
                if j is not None:
                    k = _differ(parts[i], others[j].split(_sep(others[j])), keep[i])
                    if k is not None:
                        keep[i].add(k)
                        shown[i] = draw(i)
                        moved = True
        else:   # equal shown names: keep the component nearest the end that varies among them
            moved = _keep_varying(shown, parts, keep, draw)
        if not moved:
            break
    _fill(long, parts, keep, shown, width, draw, lambda i, x: bool(others) and clash(i, x) is not None)
    return [x if len(x) <= width or not cut else shorten(x, width) for x in shown]


def _keep_varying(shown: list[str], parts, keep: dict, draw) -> bool:
    """Among rows shown alike, keep (in ``keep``, redrawing ``shown``) the component nearest the
    end that varies among them; True when one was added."""
    moved = False
    seen: dict[str, list[int]] = {}
    for i, x in enumerate(shown):
        seen.setdefault(x, []).append(i)
    for g in (g for g in seen.values() if len(g) > 1):
        members = [i for i in g if i in keep]
        for j in range(1, max(len(parts[i]) for i in g) + 1):
            if len({parts[i][-j] if j <= len(parts[i]) else None for i in g}) < 2:
                continue
            added = [i for i in members
                     if len(parts[i]) >= j and len(parts[i]) - j not in keep[i]]
            for i in added:
                keep[i].add(len(parts[i]) - j)
                shown[i] = draw(i)
            if added:
                moved = True
                break
    return moved


def _fill(long, parts, keep: dict, shown: list[str], width: int, draw, clashes) -> None:
    """Give each shortened row as many last components, then first ones, as fit in ``width``,
    while it stays unique and (``clashes(i, name)``) matches no other name."""
    taken = set(shown)
    for i in long:
        n = len(parts[i])
        for order in (range(n - 2, -1, -1), range(n)):
            for k in order:
                if k in keep[i]:
                    continue
                if len(shown[i]) + len(parts[i][k]) - 1 > width:   # at best it fills a "…"
                    break
                keep[i].add(k)
                x = draw(i)
                if len(x) > width or x in taken or clashes(i, x):
                    keep[i].discard(k)
                    break
                taken.discard(shown[i])
                shown[i] = x
                taken.add(x)
