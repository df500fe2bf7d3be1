"""The ``xla`` fusion policy's joins (``fusion.plan``): XLA's producer-consumer (loop/input)
fusion over a report's nodes, and on a GPU profile its refusals at reductions
(``xla_gpu_reduce``) and its fusions into matrix kernels (``xla_gpu_joins``).

Every function joins on a ``fusion_legality.Joins`` (``sets``) inside the legality check, which
refuses a join that would put a kernel on a cycle.  ``producer``/``consumers``: the
``fusion.tensor_index`` of the nodes.  A view that launches nothing (a reshape, a squeeze) is
looked through, at most ``fusion_bytes.DEPTH`` in a row: XLA lowers it to a bitcast.
"""

from __future__ import annotations

import functools

from analyzer.prediction import fusion_bytes, xla_gpu_joins, xla_gpu_reduce

# op classes (efficiency.OP_CLASSES) that XLA fuses into their producers/consumers
_FUSIBLE = frozenset({"elementwise", "activation", "swish", "movement", "reduce", "norm", "norm_fused", "softmax",
                      "gather", "pooling", "pool1d", "view"})


def fusible(nd) -> bool:
    """Whether the ``xla`` policy joins ``nd`` (a ``fusion.FusionNode``) with its fusible
    neighbours: it launches and its op class fuses (elementwise, reductions, norms, movement,
    ...; not matrix ops)."""
    return nd.launches and nd.op_class in _FUSIBLE


def joins(nodes, sets, producer, folded=(), refuses=None) -> None:
    """The ``xla`` policy's joins on ``sets`` (``fusion_legality.Joins``), XLA's producer-consumer
    fusion: in graph (topological) order, each fusible node takes in the kernel of each fusible
    producer of its inputs, in input order (a producer read at two inputs at its first), unless
    the joined kernel would lie on a cycle of the kernel graph (then that producer's kernel stays
    apart, as XLA's cycle check refuses it); a kernel's root is its smallest node.  XLA's own
    order differs (``InstructionFusion`` visits consumers in reverse post order, the GPU
    ``PriorityFusion`` producers by estimated benefit, ties by instruction id): this order is
    the deterministic one the search's fast path mirrors (``kernel_cache``).  A view that
    launches nothing (a reshape, a squeeze) between them is looked through (up to
    ``fusion_bytes.DEPTH`` in a row): XLA lowers such a reshape to a bitcast, no kernel, and its
    GPU priority fusion fuses a producer past its bitcast users
    (``CanFuseWithAllNonBitcastUsers``, ``xla/service/gpu/priority_fusion.cc``).  A ``folded``
    transpose (``transpose_fold.xla_folded``) launches nothing and joins nothing.  ``refuses(i,
    j)``: on a GPU profile, why node ``j`` may not take in producer ``i``'s kernel
    (``xla_gpu_reduce``), '' when it may."""
    ok = [fusible(nd) and i not in folded for i, nd in enumerate(nodes)]
    get = producer.get
    for j, nd in enumerate(nodes):
        if not ok[j]:
            continue
        level = nd.level
        for t in nd.inputs:
            i = get((level, t)) if t else None
            if i is not None and i != j:
                i = _through_views(nodes, i, get)
                if i is not None and ok[i] and not (refuses is not None and refuses(i, j)):
                    sets.union(i, j)


def reduce_refusal(nodes, producer, consumers, folded, record: list):
    """``xla_gpu_reduce.refuses`` over ``nodes`` as ``joins`` asks it, each refusal appended to
    ``record`` as (consumer, producer, reason) (None: no reduction the rules plan, so nothing
    is refused)."""
    form = [nd.reduce_form for nd in nodes]
    if not any(f in ("emitter", "elemental", xla_gpu_reduce.ROW1) for f in form):
        return None
    get = producer.get
    op_class = [nd.op_class for nd in nodes]
    arity = [len(nd.inputs) for nd in nodes]

    @functools.cache
    def readers(i):
        nd = nodes[i]
        return tuple(view_readers(nodes, consumers, [(nd.level, t) for t in nd.outputs if t], frozenset())[0])
    consts = [xla_gpu_joins.compiled_constants(nd) | {p for p, t in enumerate(nd.inputs) if not t} for nd in nodes]
    form = xla_gpu_reduce.in_context(form, [nd.op for nd in nodes], op_class, arity, consts, readers)
    if not any(f in ("emitter", "elemental") for f in form):
        return None
    feeds = xla_gpu_reduce.feeds_of(form, [fusible(nd) and i not in folded for i, nd in enumerate(nodes)], readers)

    def matrix_readers(i):
        return sum(1 for r in readers(i) if r in folded or (nodes[r].launches and not fusible(nodes[r])
                                                             and not nodes[r].gemv))

    def src(i):
        nd = nodes[i]
        k = get((nd.level, nd.inputs[0])) if nd.inputs and nd.inputs[0] else None
        return None if k is None else _through_views(nodes, k, get)

    def refuses(i, j):
        why = xla_gpu_reduce.refuses(i, j, form, op_class, arity, readers, matrix_readers, src, feeds)
        if why:
            record.append((j, i, why))
        return why
    return refuses


def gpu_joins(nodes, sets, producer, consumers, graph_outputs, launch) -> None:
    """XLA's GPU fusions into matrix kernels (``xla_gpu_joins``: cuDNN convolution epilogues,
    an M = 1 dot's prologue) on ``sets``; ``launch``: which nodes launch (a folded transpose
    does not)."""
    get = producer.get
    roles = [xla_gpu_joins.node_role(nd.op, nd.op_class, launch[i], fusible(nd), nd.gemv, nd.inputs,
                                     xla_gpu_joins.compiled_constants(nd)) for i, nd in enumerate(nodes)]

    def src(j, t):
        i = get((nodes[j].level, t))
        return None if i is None else _through_views(nodes, i, get)

    def readers(i):
        nd = nodes[i]
        return view_readers(nodes, consumers, [(nd.level, t) for t in nd.outputs if t], graph_outputs)
    xla_gpu_joins.join(sets, roles, [nd.inputs for nd in nodes], src, readers)


def view_readers(nodes, consumers, keys, graph_outputs) -> tuple[list[int], bool]:
    """(the nodes reading the tensors ``keys`` ((level, name) each), through views that launch
    nothing (at most ``fusion_bytes.DEPTH`` in a row); whether one of them, or of the views'
    outputs, is a program output)."""
    out, is_out = [], False
    for _ in range(fusion_bytes.DEPTH):
        nxt = []
        for level, t in keys:
            is_out = is_out or (level == "" and t in graph_outputs)
            for c in consumers.get((level, t), ()):
                nd = nodes[c]
                if not nd.launches and fusion_bytes.is_view(nd.domain, nd.op):
                    nxt += [(nd.level, o) for o in nd.outputs if o]
                else:
                    out.append(c)
        if not nxt:
            break
        keys = nxt
    return out, is_out


def _through_views(nodes, i: int, get) -> int | None:
    """Node ``i``, or, when it is a view that launches nothing, the producer of its first input
    (views in a row looked through, at most ``fusion_bytes`` depth); None: a graph input."""
    for _ in range(fusion_bytes.DEPTH):
        nd = nodes[i]
        if nd.launches or not nd.inputs or not fusion_bytes.is_view(nd.domain, nd.op):
            return i
        t = nd.inputs[0]
        i = get((nd.level, t)) if t else None
        if i is None:
            return None
    return i
