"""What a person reads first: the heaviest layers and the totals by op type and by module.

Pure arithmetic on a Report (its rows and predictions); the renderers format what these return.

- ``top_rows(report, k)``: the ``k`` runtime rows with the largest predicted time on the first
  profile (else FLOPs, then bytes), heaviest first; ``k=None``: every runtime row, same order.
- ``by_op(report)``: one ``Rollup`` per op type.
- ``by_module(report)``: one ``Rollup`` per module path, repeated blocks folded: the rows of
  ``encoder/layer.0`` ... ``encoder/layer.11`` are one row ``encoder/layer.{0..11}`` with
  ``blocks`` 12.
- ``grouped(report, depth)``: one ``Group`` per module path cut to ``depth`` components, every
  count summed, graph order, nothing folded (``--group-depth N``).

The one module-path rule (``module_of``): a name's components are split by ``/`` (ONNX
exporters' ``/encoder/layer.0/attention/MatMul``, JAX's ``jvp(mlp)/fc1/dot_general``), else by
``.`` (``blk3.attn.qkv.matmul``); the module path is the name without its last component (the
op), at most ``depth`` components, each with its repeat suffix dropped (``add#2`` -> ``add``);
a name with no module is its own last component.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from typing import Any

from analyzer.counting.cost import Cost
from analyzer.counting.engine import FOLDED, UNCOSTED

MODULE_DEPTH = 3
_DIGITS = re.compile(r"\d+")
_REPEAT = re.compile(r"#\d+$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollup:
    """Summed rows: ``nodes`` rows (in ``blocks`` folded repeats), their FLOPs and bytes, and
    predicted seconds per profile (``time_s[i]`` for ``report.predictions[i]``)."""

    name: str
    nodes: int
    blocks: int
    flops: int
    bytes_moved: int
    uncosted: int
    time_s: tuple[float, ...]

    def to_dict(self, hardware: list[str]) -> dict[str, Any]:
        return {"name": self.name, "nodes": self.nodes, "blocks": self.blocks, "flops": self.flops,
                "bytes_moved": self.bytes_moved, "uncosted": self.uncosted,
                "time_s": dict(zip(hardware, self.time_s))}


def runtime_rows(report) -> list:
    """(node, prediction rows) of every runtime (not constant-folded) node, graph order."""
    return [r for r in report.rows() if r[0].status != FOLDED]


def _key(report):
    if report.predictions:
        return lambda r: (r[1][0].time_s if r[1][0] is not None else 0.0, r[0].cost.flops)
    return lambda r: (r[0].cost.flops, r[0].cost.bytes_moved)


def top_rows(report, k: int | None, rows: list | None = None) -> list:
    """The ``k`` heaviest runtime rows (all of them for ``k=None``), heaviest first."""
    rows = runtime_rows(report) if rows is None else rows
    key = _key(report)
    if k is None or k >= len(rows):
        return sorted(rows, key=key, reverse=True)
    return heapq.nlargest(k, rows, key=key)


def module_of(name: str, depth: int = MODULE_DEPTH) -> str:
    """``/encoder/layer.0/attention/MatMul`` -> ``encoder/layer.0/attention``;
    ``blk3.attn.qkv.matmul`` -> ``blk3.attn.qkv``; ``relu#3`` -> ``relu``; ``depth`` 2:
    ``/encoder/layer.0/attention/MatMul`` -> ``encoder/layer.0``."""
    sep = "/" if "/" in name else "."
    parts = [p for p in name.split(sep) if p]
    scope = [_REPEAT.sub("", p) if "#" in p else p for p in parts[:-1][:depth]]
    if scope:
        return sep.join(scope)
    return _REPEAT.sub("", parts[-1]) if parts else name


def _sum(rows, key_of, n_hw: int) -> dict[str, list]:
    acc: dict[str, list] = {}
    for n, xs in rows:
        k = key_of(n)
        a = acc.get(k)
        if a is None:
            a = acc[k] = [0, 0, 0, 0, [0.0] * n_hw]
        a[0] += 1
        a[1] += n.cost.flops
        a[2] += n.cost.bytes_moved
        a[3] += n.status == UNCOSTED
        t = a[4]
        for i, x in enumerate(xs):
            if x is not None:
                t[i] += x.time_s
    return acc


def _ordered(rollups: list[Rollup], predicted: bool) -> list[Rollup]:
    key = (lambda g: (g.time_s[0], g.flops)) if predicted else (lambda g: (g.flops, g.bytes_moved))
    return sorted(rollups, key=key, reverse=True)


def by_op(report, rows: list | None = None) -> list[Rollup]:
    """Totals per op type (``domain::op`` outside the default domains), heaviest first."""
    rows = runtime_rows(report) if rows is None else rows
    acc = _sum(rows, lambda n: f"{n.domain}::{n.op}" if n.domain and n.domain != "ai.onnx" else n.op,
               len(report.predictions))
    out = [Rollup(name=k, nodes=a[0], blocks=1, flops=a[1], bytes_moved=a[2], uncosted=a[3], time_s=tuple(a[4]))
           for k, a in acc.items()]
    return _ordered(out, bool(report.predictions))


def _span(values: list[int]) -> str:
    vs = sorted(set(values))
    if len(vs) > 2 and vs[-1] - vs[0] == len(vs) - 1:
        return f"{{{vs[0]}..{vs[-1]}}}"
    if len(vs) <= 4:
        return "{" + ",".join(map(str, vs)) + "}"
    return f"{{{vs[0]},{vs[1]},...,{vs[-1]}}}"


def fold(keys: list[str]) -> dict[str, tuple[str, int]]:
    """key -> (folded name, blocks): keys equal but for their numbers are one repeated block,
    the numbers that vary shown as a span (``layer.{0..11}``)."""
    groups: dict[str, list[tuple[str, list[int]]]] = {}
    for k in keys:
        nums = [int(d) for d in _DIGITS.findall(k)]
        groups.setdefault(_DIGITS.sub("\0", k), []).append((k, nums))
    out: dict[str, tuple[str, int]] = {}
    for template, members in groups.items():
        if len(members) == 1:
            out[members[0][0]] = (members[0][0], 1)
            continue
        cols = list(zip(*(m[1] for m in members)))
        pieces = template.split("\0")
        name = pieces[0]
        for i, col in enumerate(cols):
            same = all(c == col[0] for c in col)
            name += (str(col[0]) if same else _span(list(col))) + pieces[i + 1]
        for k, _ in members:
            out[k] = (name, len(members))
    return out


def by_module(report, rows: list | None = None, depth: int = MODULE_DEPTH) -> list[Rollup]:
    """Totals per module path, repeated blocks folded into one row, heaviest first."""
    rows = runtime_rows(report) if rows is None else rows
    acc = _sum(rows, lambda n: module_of(n.name, depth), len(report.predictions))
    folded = fold(list(acc))
    merged: dict[str, list] = {}
    for k, a in acc.items():
        name, blocks = folded[k]
        m = merged.get(name)
        if m is None:
            merged[name] = [a[0], blocks, a[1], a[2], a[3], list(a[4])]
            continue
        m[0] += a[0]
        m[2] += a[1]
        m[3] += a[2]
        m[4] += a[3]
        m[5] = [x + y for x, y in zip(m[5], a[4])]
    out = [Rollup(name=k, nodes=m[0], blocks=m[1], flops=m[2], bytes_moved=m[3], uncosted=m[4], time_s=tuple(m[5]))
           for k, m in merged.items()]
    return _ordered(out, bool(report.predictions))


@dataclass(frozen=True)
class Group:
    """The summed counts (and predicted seconds per hardware id) of the rows under one module
    path (``grouped``)."""

    name: str
    nodes: int
    uncosted: int
    cost: Cost
    time_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "nodes": self.nodes, "uncosted": self.uncosted}
        d.update(self.cost.to_dict())
        if self.time_s:
            d["time_s"] = dict(self.time_s)
        return d


def grouped(report, depth: int) -> list[Group]:
    """Totals of ``report``'s runtime rows by ``module_of(name, depth)``, in the order the
    groups first appear."""
    if depth < 1:
        raise ValueError("group depth must be >= 1")
    hw = [p.hardware for p in report.predictions]
    acc: dict[str, list] = {}
    for n, xs in runtime_rows(report):
        key = module_of(n.name, depth)
        g = acc.get(key)
        if g is None:
            g = acc[key] = [0, 0, Cost(), [0.0] * len(hw)]
        g[0] += 1
        g[1] += n.status == UNCOSTED
        g[2] = g[2] + n.cost
        for i, x in enumerate(xs):
            g[3][i] += x.time_s if x is not None else 0.0
    return [Group(k, v[0], v[1], v[2], dict(zip(hw, v[3]))) for k, v in acc.items()]


def name_matches(shown: str, name: str) -> bool:
    """Whether ``name`` can be the full name of a name as a view shows it (``shown``): the
    pieces between ``…`` (or ``...``) appear in ``name`` in order, the last at its end; a
    shown name without ``…`` is the end of the full name."""
    pieces = shown.replace("...", "…").split("…")
    last = pieces[-1]
    if not name.endswith(last):
        return False
    pos, end = 0, len(name) - len(last)
    for p in pieces[:-1]:
        at = name.find(p, pos, end)
        if at < 0:
            return False
        pos = at + len(p)
    return True


def find_node(report, name: str, shown=None) -> int:
    """The index of the node named ``name``: exactly, else the one node whose name matches it
    as a view shows names (``name_matches``: the end of the name, with ``…`` where parts were
    left out), else the one whose name contains it; an ``InputSpecError`` listing the
    candidates when several match, or the closest names when none does.  ``shown``: how the
    views write a name (a name with control characters is shown with visible escapes); the
    names are matched as shown after the exact match."""
    from difflib import get_close_matches

    from analyzer.errors import InputSpecError

    names = [n.name for n in report.nodes]
    for i, x in enumerate(names):
        if x == name:
            return i
    if shown is not None:
        names = [shown(x) for x in names]
        for i, x in enumerate(names):
            if x == name:
                return i
    for test in (lambda x: name_matches(name, x), lambda x: name in x):
        hits = [i for i, x in enumerate(names) if test(x)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            shown = ", ".join(names[i] for i in hits[:8]) + (" ..." if len(hits) > 8 else "")
            raise InputSpecError(f"layer '{name}' matches {len(hits)} layers ({shown}); "
                                 f"give more of its name")
    close = get_close_matches(name, names, n=3)
    raise InputSpecError(f"layer '{name}': no layer of that name"
                         + (f"; did you mean {', '.join(close)}?" if close else ""))
