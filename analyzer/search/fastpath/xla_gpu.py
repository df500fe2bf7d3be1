"""XLA's GPU passes the ``xla`` plan mirrors on a fast-path candidate's learned node data
(``kernel_cache.KernelRows.nodes``): transpose folding (``transpose_fold.xla_folded``), dot merging
(``dot_merge``) and the fusions into matrix kernels (``xla_gpu_joins``), as ``fusion.plan``
applies them with ``fold_transposes``."""

from __future__ import annotations

import functools

from analyzer.prediction import dot_merge, fusion, fusion_bytes, lowering, xla_conv_layout, xla_gpu_joins, xla_gpu_reduce


def folded(nodes, data, outputs):
    """``data`` with the transposes ``transpose_fold.xla_folded`` folds into matrix products marked as
    launching nothing and joining nothing (from each node's ``transpose_fold.fold_role``)."""
    made = {t: j for j, (nd, d) in enumerate(zip(nodes, data)) if d[7] == 1 for t in nd.outputs[:1] if t}
    if not made:
        return data
    readers: dict[int, list[int]] = {}
    for u, nd in enumerate(nodes):
        for t in nd.inputs:
            j = made.get(t)
            if j is not None:
                readers.setdefault(j, []).append(u)
    out = list(data)
    for t, j in made.items():
        rs = readers.get(j)
        if rs and t not in outputs and all(data[u][7] == 2 for u in rs):
            d = data[j]
            out[j] = (False, False) + d[2:6] + (False,) + d[7:]
    return out


def merged(nodes, data, preds, producer) -> list[tuple[int, ...]]:
    """``dot_merge.groups`` on learned data (``data[j][8]``: a node's ``dot_form``, ``[3]`` and
    ``[4]`` its input and output bytes; ``producer``: tensor -> its producer), as
    ``dot_merge.of_nodes`` finds them."""
    forms = [d[8] if d[0] else None for d in data]
    if sum(f is not None for f in forms) < 2:
        return []
    return dot_merge.groups([""] * len(nodes), [nd.inputs for nd in nodes], forms,
                            [d[3][:2] + d[4][:1] for d in data], preds, lambda level, t: producer.get(t))


def joins_of(nodes, data, producer, outputs):
    """The ``then`` of ``fusion_legality.xla_groups`` that makes ``xla_gpu_joins.join``'s joins on
    learned data (``data[j][10]``: a node's ``xla_gpu_joins.node_role``; ``[0]`` whether it
    launches, folded transposes not; ``[6]`` a view that launches nothing; ``producer``: tensor
    -> its producer; ``outputs``: the graph's output names), as ``fusion_xla.gpu_joins`` does."""
    roles = [d[10] if d[0] else ("", False, d[10][2]) for d in data]
    if not any(r[0] in ("conv", "gemv") for r in roles):
        return None
    consumers = fusion.readers_by_name(nodes)

    def src(j, t):
        i = producer.get(t)
        return None if i is None else through_views(nodes, data, i, producer.get)

    def readers(i):
        return _readers_through_views(nodes, data, consumers, i, outputs)
    return lambda joins: xla_gpu_joins.join(joins, roles, [nd.inputs for nd in nodes], src, readers)


def _readers_through_views(nodes, data, consumers, i, outputs=()):
    """(the nodes that read node ``i``'s outputs, looking through views that launch nothing
    (``data[c][6]``) up to ``fusion_bytes.DEPTH`` deep; whether any tensor on the way is a graph
    output)."""
    out, is_out, ts = [], False, [t for t in nodes[i].outputs if t]
    for _ in range(fusion_bytes.DEPTH):
        nxt = []
        for t in ts:
            is_out = is_out or t in outputs
            for c in consumers.get(t, ()):
                if data[c][6]:
                    nxt += [o for o in nodes[c].outputs if o]
                else:
                    out.append(c)
        if not nxt:
            break
        ts = nxt
    return out, is_out


def reduce_refusal(nodes, data, producer):
    """``xla_gpu_reduce.refuses`` on learned data (``data[j][12]``: a node's (``reduce_form``, op
    class, input positions); ``[0]`` whether it launches, ``[1]`` whether it fuses, ``[6]`` a
    view that launches nothing, ``[7]`` its ``fold_role``, ``[10]`` its ``node_role``), as
    ``fusion_xla.reduce_refusal`` makes it; None where no reduction is planned."""
    form = [d[12][0] for d in data]
    if not any(f in ("emitter", "elemental", xla_gpu_reduce.ROW1) for f in form):
        return None
    op_class = [d[12][1] for d in data]
    arity = [d[12][2] for d in data]
    consumers = fusion.readers_by_name(nodes)

    @functools.cache
    def readers(i):
        return tuple(_readers_through_views(nodes, data, consumers, i)[0])
    form = xla_gpu_reduce.in_context(form, [nd.op for nd in nodes], op_class, arity, [d[10][2] for d in data], readers)
    if not any(f in ("emitter", "elemental") for f in form):
        return None
    feeds = xla_gpu_reduce.feeds_of(form, [d[1] for d in data], readers)

    def matrix_readers(i):   # a folded transpose (launches nothing, fold role 1) reads for its product
        return sum(1 for r in readers(i) if (not data[r][0] and data[r][7] == 1)
                   or (data[r][0] and not data[r][1] and data[r][10][0] != "gemv"))

    def src(i):
        ins = nodes[i].inputs
        k = producer.get(ins[0]) if ins and ins[0] else None
        return None if k is None else through_views(nodes, data, k, producer.get)
    return lambda i, j: xla_gpu_reduce.refuses(i, j, form, op_class, arity, readers, matrix_readers, src, feeds)


def through_views(nodes, data, i: int, at) -> int | None:
    """``fusion_xla._through_views`` on learned data (``data[i][6]``: a view that launches nothing;
    ``at``: tensor -> its producer)."""
    for _ in range(fusion_bytes.DEPTH):
        ins = nodes[i].inputs
        if not data[i][6] or not ins:
            return i
        i = at(ins[0]) if ins[0] else None
        if i is None:
            return None
    return i


def fold_of(profiles) -> str:
    """'' where a group of ``profiles`` does not plan XLA's GPU rules (``lowering.fold_transposes``),
    else their generation for its convolutions' layouts (``xla_conv_layout.generation``; ``mixed``
    where they differ)."""
    return (xla_conv_layout.generation(profiles) or "mixed") if lowering.fold_transposes(profiles) else ""


def conv_layouts(fold: str, data) -> bool:
    """Whether a group that plans XLA's GPU rules for generation ``fold`` (``fold_of``) may add
    layout transposes around a convolution of the candidate (``data``: its nodes' learned data;
    ``[14]`` a node's ``FusionNode.conv_layout``): launches with no node of their own
    (``xla_conv_layout``), charged to the convolution's kernel, which the fast path's rows do
    not mirror, so such a candidate is lowered in full (``KernelRows.lowered`` refuses it,
    ``harvest`` learns nothing of that group from it)."""
    last = xla_conv_layout.channels_last
    return bool(fold) and any(d[14] and d[14][2 if last(fold, d[14][0], d[14][1]) else 3] for d in data)
