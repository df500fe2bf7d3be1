"""The thunks XLA's CPU backend runs for a compiled program, read from its optimized HLO text
(``jax.jit(fn).lower(*args).compile().as_text()``): what ``bench/xla_diagnose.py counts`` checks
opcost's ``xla`` plan against. Structural only: nothing is timed.

A thunk is an instruction of the entry computation that runs a kernel: a fusion (``kind=kLoop``,
``kInput``, ``kOutput``, or a ``kCustom`` YNNPACK ``__ynn_fusion``), a ``dot`` (Eigen), a
``copy``, a ``convolution``, a ``custom-call``, ... . ``parameter``, ``constant``,
``get-tuple-element``, ``tuple`` and ``bitcast`` run nothing. A ``while`` runs its body's
thunks once per trip and its condition's once per trip plus once (the test that ends it), with
the trip count XLA annotates (``known_trip_count``); a ``call`` or ``conditional`` runs its
computations once (a conditional: each branch counted, the programs here have none).
"""

from __future__ import annotations

import collections
import math
import re

FREE = frozenset({"parameter", "constant", "get-tuple-element", "tuple", "bitcast"})
_INSTR = re.compile(r"\s*(?:ROOT )?%([\w.\-]+) = (.+?) ([a-z][\w-]*)\(")
_HEAD = re.compile(r"(?:ENTRY )?%([\w.\-]+) \(")


def computations(text: str) -> tuple[dict[str, list[str]], str]:
    """({computation name: its instruction lines}, the entry computation's name)."""
    comps: dict[str, list[str]] = {}
    entry, cur = "", None
    for line in text.splitlines():
        if cur is None:
            m = _HEAD.match(line)
            if m and line.rstrip().endswith("{"):
                cur = m.group(1)
                comps[cur] = []
                if line.startswith("ENTRY"):
                    entry = cur
            continue
        if line.startswith("}"):
            cur = None
        else:
            comps[cur].append(line)
    return comps, entry


def kind_of(op: str, line: str) -> str:
    """A thunk's kind: the op, a fusion by its kind (``ynnpack`` for a YNNPACK custom fusion)."""
    if op != "fusion":
        return op
    if "__ynn" in line:
        return "fusion ynnpack"
    m = re.search(r"kind=(\w+)", line)
    return "fusion " + (m.group(1) if m else "?")


def thunks(text: str) -> collections.Counter:
    """Thunk launches per run of the program, by kind, loop bodies counted once per trip
    (``while: T trips`` entries record each loop's trips and are not launches)."""
    comps, entry = computations(text)
    out: collections.Counter = collections.Counter()
    _walk(comps, entry, 1, out)
    return out


def launches(counter: collections.Counter) -> int:
    """The launches of ``thunks``' counter (its loop-trip entries left out)."""
    return sum(v for k, v in counter.items() if not k.startswith("while:"))


def _walk(comps, name: str, times: int, out: collections.Counter) -> None:
    for line in comps.get(name, ()):
        m = _INSTR.match(line)
        if not m or m.group(3) in FREE:
            continue
        op = m.group(3)
        if op == "while":
            trips = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
            if trips is None:
                raise ValueError(f"while without a known trip count: {m.group(1)}")
            n = int(trips.group(1))
            out[f"while: {n} trips"] += times
            _walk(comps, re.search(r"body=%([\w.\-]+)", line).group(1), times * n, out)
            _walk(comps, re.search(r"condition=%([\w.\-]+)", line).group(1), times * (n + 1), out)
        elif op in ("call", "conditional"):
            for sub in re.findall(r"(?:to_apply=|branch_computations=\{|, )%([\w.\-]+)", line):
                if sub in comps:
                    _walk(comps, sub, times, out)
        else:
            out[kind_of(op, line)] += times


_PARTS = re.compile(r'"outer_dimension_partitions":\[([^\]]*)\]')


def partitioned(text: str) -> list[int]:
    """The parts of every thunk XLA's parallel task assigner split over the cores (a non-empty
    ``outer_dimension_partitions`` in its ``backend_config``: the product of its dims' parts),
    per run of the program (loop bodies once per trip, as ``thunks`` counts)."""
    comps, entry = computations(text)
    out: list[int] = []
    _walk_parts(comps, entry, 1, out)
    return out


def _walk_parts(comps, name: str, times: int, out: list[int]) -> None:
    for line in comps.get(name, ()):
        m = _INSTR.match(line)
        if not m or m.group(3) in FREE:
            continue
        if m.group(3) == "while":
            n = int(re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line).group(1))
            _walk_parts(comps, re.search(r"body=%([\w.\-]+)", line).group(1), times * n, out)
            continue
        if m.group(3) in ("call", "conditional"):
            for sub in re.findall(r"(?:to_apply=|branch_computations=\{|, )%([\w.\-]+)", line):
                if sub in comps:
                    _walk_parts(comps, sub, times, out)
            continue
        p = _PARTS.search(line)
        dims = [int(x.strip('"')) for x in p.group(1).split(",") if x.strip()] if p else []
        if dims:
            out.extend([math.prod(dims)] * times)
