"""What a person reads first: the heaviest layers and the totals by op type and by module.

Pure arithmetic on a Report (its rows and predictions); the renderers format what these return.

- ``top_rows(report, k)``: the ``k`` runtime rows with the largest predicted time on the first
  profile (else FLOPs, then bytes), heaviest first; ``k=None``: every runtime row, same order.
- ``by_op(report)``: one ``Rollup`` per op type.
- ``by_module(report)``: one ``Rollup`` per module path, repeated blocks folded: the rows of
  ``encoder/layer.0`` ... ``encoder/layer.11`` are one row ``encoder/layer.{0..11}`` with
  ``blocks`` 12.  A module path is a name without its last component (``/`` separates
  components, else ``.``), at most ``MODULE_DEPTH`` components; a name with no module is its own.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from typing import Any

from analyzer.counting.engine import FOLDED, UNCOSTED

MODULE_DEPTH = 3
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
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
    ``blk3.attn.qkv.matmul`` -> ``blk3.attn.qkv``; ``relu`` -> ``relu``."""
    sep = "/" if "/" in name else "."
    parts = [p for p in name.split(sep) if p]
    scope = parts[:-1][:depth]
    return sep.join(scope) if scope else name


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
    out = [Rollup(k, a[0], 1, a[1], a[2], a[3], tuple(a[4])) for k, a in acc.items()]
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
    out = [Rollup(k, m[0], m[1], m[2], m[3], m[4], tuple(m[5])) for k, m in merged.items()]
    return _ordered(out, bool(report.predictions))


def find_node(report, name: str) -> int:
    """The index of the node named ``name`` (exactly, else the one node whose name ends with
    or contains it); an ``InputSpecError`` naming the closest names otherwise."""
    from difflib import get_close_matches

    from analyzer.errors import InputSpecError

    names = [n.name for n in report.nodes]
    for i, x in enumerate(names):
        if x == name:
            return i
    for test in (lambda x: x.endswith(name), lambda x: name in x):
        hits = [i for i, x in enumerate(names) if test(x)]
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            shown = ", ".join(names[i] for i in hits[:5]) + (" ..." if len(hits) > 5 else "")
            raise InputSpecError(f"layer '{name}' matches {len(hits)} layers ({shown}); "
                                 f"give the full name")
    close = get_close_matches(name, names, n=3)
    raise InputSpecError(f"layer '{name}': no layer of that name"
                         + (f"; did you mean {', '.join(close)}?" if close else ""))
