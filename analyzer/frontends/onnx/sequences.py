"""Element specs of ONNX sequences, followed through the ops that build them.

A sequence has no ``TensorSpec`` (the IR describes tensors), and ONNX shape inference keeps
only one merged element type per sequence, so ``SequenceAt(seq, 2)`` or a
``ConcatFromSequence`` often come out with ``?`` dims although the elements are known.  This
pass follows the elements, in order, through SequenceEmpty, SequenceConstruct, SequenceInsert,
SequenceErase, SplitToSequence and Identity, and then:

- gives ``SequenceAt`` the spec of the element it picks (a constant position, or any
  position when all elements have one spec);
- gives ``ConcatFromSequence`` its concatenated (or stacked) shape;
- gives ``SequenceLength`` its value (a Loop that runs once per element gets a constant
  trip count).

A refined spec replaces inference's only when it has fewer unknown dims.  Where the elements
cannot be followed (a sequence graph input, a Loop or If output, an insert at a position that
is not constant between different elements), nothing is recorded and the specs stay as
inference left them: the counts that need them fail with the usual unknown-dim error.
"""

from __future__ import annotations

from typing import Mapping, MutableMapping

import numpy as np

from analyzer.ir.graph import Node, TensorSpec


def _int(values: Mapping, name: str):
    if not name:
        return None
    v = values.get(name)
    if v is None:
        return None
    try:
        a = np.asarray(v)
        return int(a.reshape(-1)[0]) if a.size == 1 else None
    except (TypeError, ValueError):
        return None


def _split(x: TensorSpec, split: str, axis: int, keepdims: int, values, specs):
    if x is None or x.shape is None:
        return None
    r = len(x.shape)
    axis = axis + r if axis < 0 else axis
    if not 0 <= axis < r:
        return None
    n = x.shape[axis]
    if not split:
        if type(n) is not int:
            return None
        shape = x.shape[:axis] + ((1,) if keepdims else ()) + x.shape[axis + 1:]
        return (TensorSpec(shape, x.dtype),) * n
    v = values.get(split)
    if v is not None:
        v = np.asarray(v)
        if v.ndim == 0:
            if type(n) is not int or int(v) <= 0:
                return None
            step = int(v)
            sizes = [step] * (n // step) + ([n % step] if n % step else [])
        else:
            sizes = [int(s) for s in v.reshape(-1)]
    else:
        sp = specs.get(split)
        if sp is None or sp.shape is None or len(sp.shape) != 1 or type(sp.shape[0]) is not int:
            return None
        sizes = ["?"] * sp.shape[0]  # the piece count is known, their lengths are data
    return tuple(TensorSpec(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype) for s in sizes)


def _concat(elems: tuple[TensorSpec, ...], axis: int, new_axis: int) -> TensorSpec | None:
    if not elems or any(e.shape is None for e in elems):
        return None
    first = elems[0]
    r = len(first.shape)
    if any(len(e.shape) != r for e in elems):
        return None
    if new_axis:
        if any(e.shape != first.shape for e in elems):
            return None
        a = axis + r + 1 if axis < 0 else axis
        if not 0 <= a <= r:
            return None
        return TensorSpec(first.shape[:a] + (len(elems),) + first.shape[a:], first.dtype)
    a = axis + r if axis < 0 else axis
    if not 0 <= a < r:
        return None
    along = [e.shape[a] for e in elems]
    total = sum(along) if all(type(d) is int for d in along) else "?"
    return TensorSpec(first.shape[:a] + (total,) + first.shape[a + 1:], first.dtype)


# the ops this pass acts on: a graph with none of them has nothing to follow
OPS = frozenset({"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase",
                 "SplitToSequence", "SequenceLength", "SequenceAt", "ConcatFromSequence"})


def follow(nodes: list[Node], specs: MutableMapping[str, TensorSpec], values: MutableMapping,
           outer: Mapping[str, tuple[TensorSpec, ...]] | None = None,
           lookup: Mapping[str, TensorSpec] | None = None) -> dict[str, tuple[TensorSpec, ...]]:
    """Follow sequence elements through ``nodes`` (topological order); refine ``specs`` and
    ``values`` in place (see the module docstring).  Returns the sequences whose elements
    are known.  ``outer``: the enclosing graph's sequences; ``lookup``: where input specs are
    read (default ``specs``; a sub-graph reads through to its outer scope)."""
    seqs: dict[str, tuple[TensorSpec, ...]] = {}
    lookup = specs if lookup is None else lookup
    outer = outer or {}

    def seq(name):
        s = seqs.get(name)
        return outer.get(name) if s is None else s

    def refine(name, new):
        if name and new is not None:
            old = lookup.get(name)
            if old is None or old.unknowns > new.unknowns:
                specs[name] = new

    for n in nodes:
        op, ins, outs = n.op, n.inputs, n.outputs
        if n.domain or not outs or not outs[0]:
            continue
        out = outs[0]
        if op == "SequenceEmpty":
            seqs[out] = ()
        elif op == "SequenceConstruct":
            el = tuple(lookup.get(x) for x in ins)
            if all(e is not None for e in el):
                seqs[out] = el
        elif op in ("SequenceInsert", "SequenceErase"):
            base = seq(ins[0])
            el = None if base is None else _insert_or_erase(op, list(base), ins, values, lookup)
            if el is not None:
                seqs[out] = el
        elif op == "SplitToSequence":
            el = _split(lookup.get(ins[0]), ins[1] if len(ins) > 1 else "",
                        int(n.attrs.get("axis", 0)), int(n.attrs.get("keepdims", 1)), values, lookup)
            if el is not None:
                seqs[out] = el
        elif op == "Identity" and seq(ins[0]) is not None:
            seqs[out] = seq(ins[0])
        elif op == "SequenceLength":
            el = seq(ins[0])
            if el is not None:
                values[out] = np.array(len(el), np.int64)
        elif op == "SequenceAt":
            el = seq(ins[0])
            if not el:
                continue
            pos = _int(values, ins[1])
            if pos is not None and -len(el) <= pos < len(el):
                refine(out, el[pos])
            elif all(e == el[0] for e in el):
                refine(out, el[0])
        elif op == "ConcatFromSequence":
            el = seq(ins[0])
            if el:
                refine(out, _concat(el, int(n.attrs.get("axis", 0)), int(n.attrs.get("new_axis", 0))))
    return seqs


def _insert_or_erase(op: str, base: list, ins, values: Mapping, lookup: Mapping) -> tuple | None:
    """The elements after SequenceInsert (tensor ``ins[1]`` at ``ins[2]``, default the end) or
    SequenceErase (at ``ins[1]``, default the last); an unknown position is fine only when every
    element is alike. None: not known."""
    if op == "SequenceInsert":
        t = lookup.get(ins[1]) if len(ins) > 1 else None
        if t is None:
            return None
        pos = _int(values, ins[2]) if len(ins) > 2 and ins[2] else len(base)
        if pos is None:
            if any(e != t for e in base):
                return None
            pos = len(base)  # all elements alike: the position does not matter
        base.insert(pos + len(base) + 1 if pos < 0 else pos, t)
        return tuple(base)
    if not base:
        return None
    pos = _int(values, ins[1]) if len(ins) > 1 and ins[1] else -1
    if pos is None:
        if any(e != base[0] for e in base):
            return None
        pos = -1
    try:
        del base[pos]
    except IndexError:
        return None
    return tuple(base)
