"""XLA's GPU passes the ``xla`` plan mirrors on a fast-path candidate's learned node data
(``kernel_cache.KernelRows.nodes``): transpose folding (``transpose_fold.xla_folded``) and dot merging
(``dot_merge``), as ``fusion.plan`` applies them with ``fold_transposes``."""

from __future__ import annotations

from analyzer.prediction import dot_merge


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
