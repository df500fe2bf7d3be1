"""The bytes a fused kernel does not move: its members' counted bytes less the closed form
``fusion.FusionPlan.saved_bytes`` is (one implementation, shared by ``fusion`` and the search's
fast path, ``search.fastpath.kernel_cache``).

A kernel of several members moves, in closed form:

- each tensor that enters it from outside (a graph input, a constant, another kernel's result)
  read once, however many members read it, at any input positions;
- each tensor its members make that leaves it (read by a node of another kernel, or a graph
  output, or read by nothing: a result) written once;
- nothing for a tensor its members make and read: an intermediate is never written (unless it
  also leaves) and never read back.

A view (``analyzer.ir.ops`` io ``"view"``: Reshape, Squeeze, Flatten, Identity, JAX's reshape,
...) that launches nothing, or that is a member of the kernel, is no tensor in memory: its
output is its first input's buffer relabelled.  Its readers read that buffer (a fused
intermediate seen through a view is still an intermediate; an outside tensor read directly
and through a view is read once) and a view that is a graph output makes its buffer a graph
output.  A view counts no bytes of its own (``counting.rules``: views move nothing), so a view
member's reads and writes are not subtracted.

So ``saved`` = sum over members (views excepted) of: the bytes of each output that does not
leave, plus the bytes of each input read of a tensor the kernel makes, plus the bytes of each
input read of an outside tensor after its first.  Bytes are ``FusionNode.input_bytes`` /
``output_bytes`` (whole tensors).  Assumption, stated: an outside tensor that a ``partial_read``
op reads (it reads part of it: a slice, a gather) keeps every read its members
count (the part each read is not known here).  A single node's kernel saves nothing (its
counted bytes stand, a tensor it reads at two positions included).
"""

from __future__ import annotations

import functools

from analyzer.ir.ops import VIEW, facts

# words of the op names whose counting rule reads part of an input (``Work.reads``: Slice,
# Gather*, ScatterND, JAX's slice, dynamic_slice, dynamic_update_slice, gather, scatter*, in
# any case): their reads of one outside tensor are not merged with other members' reads of it
PARTIAL_WORDS = ("slice", "gather", "scatter")
DEPTH = 8   # views looked through in a row (a chain of reshapes is short)


@functools.lru_cache(maxsize=1024)
def is_view(domain: str, op: str) -> bool:
    """Whether the op relabels its first input's buffer (``analyzer.ir.ops`` io ``"view"``)."""
    return facts(domain, op).io == VIEW


@functools.lru_cache(maxsize=1024)
def partial_read(op: str) -> bool:
    """Whether op ``op`` may read part of an input (``PARTIAL_WORDS``)."""
    low = op.lower()
    return any(w in low for w in PARTIAL_WORDS)


def saved(ms, io, alias, readers, source, is_output) -> int:
    """The bytes kernel ``ms`` (member node indices, graph order, one graph level) does not move
    (the module docstring).  ``io(i)``: node ``i``'s (inputs, outputs, input bytes, output bytes,
    op); ``alias(u)``: node ``u`` is a view that launches nothing or is a member; ``readers(t)``:
    the nodes reading tensor ``t`` (one per input position); ``source(t)``: the node writing
    ``t`` (None: a graph input or constant); ``is_output(t)``: ``t`` is a graph output."""
    inside = set(ms)
    made: set[str] = set()
    s = 0
    for i in ms:
        if alias(i):
            continue
        _, outs, _, out_b, _ = io(i)
        for t, b in zip(outs, out_b):
            if t:
                made.add(t)
                if not _leaves(t, inside, io, alias, readers, is_output):
                    s += b
    seen: set[str] = set()
    partial: set[str] = set()
    reads = []
    for u in ms:
        if alias(u):
            continue
        ins, _, in_b, _, op = io(u)
        for t, b in zip(ins, in_b):
            if t:
                p = source(t)
                r = t if p is None or not alias(p) else _root(t, io, alias, source)
                reads.append((r, b))
                if partial_read(op):
                    partial.add(r)
    for r, b in reads:
        if r in made:
            s += b            # an intermediate is not read back
        elif r in seen and r not in partial:
            s += b            # an outside tensor is read once
        seen.add(r)
    return s


def _root(t: str, io, alias, source) -> str:
    """The tensor whose buffer ``t`` is: ``t`` with the views that made it looked through."""
    for _ in range(DEPTH):
        p = source(t)
        if p is None or not alias(p):
            return t
        ins = io(p)[0]
        if not ins or not ins[0]:
            return t
        t = ins[0]
    return t


def _leaves(t: str, inside, io, alias, readers, is_output) -> bool:
    """Whether tensor ``t`` a member makes is written: it (or a view of it) is a graph output or
    read outside ``inside``, or no member reads it."""
    todo, read, depth = [t], False, 0
    while todo:
        x = todo.pop()
        if is_output(x):
            return True
        for u in readers(x):
            if alias(u):
                if depth < DEPTH:
                    todo.extend(o for o in io(u)[1] if o)
                    depth += 1
                else:
                    return True
            elif u in inside:
                read = True
            else:
                return True
    return not read
