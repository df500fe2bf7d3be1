"""Where a pipeline may cut a graph: layers, the activation at each cut, Megatron-LM's even split
(``analyzer.scaling.hybrid`` builds the stages and the step from them).

A layer ends where the fewest tensors cross from the nodes before to the nodes after (in a
pre-LN transformer the residual stream alone: between blocks, where Megatron-LM cuts, and
between a block's attention and MLP halves), so a stage never cuts through an attention or an
MLP. The activation at a cut is every tensor a node before it produces and a node after it
reads (a residual stream included); constants (folded nodes' outputs too) and graph inputs are
on every stage. ``bounds_even``: Megatron-LM's equal blocks per stage (or per model chunk of
the interleaved schedule), the embedding before them on the first, the head after them on the
last.
"""

from __future__ import annotations

from analyzer.errors import InputSpecError


def crossing(nodes) -> tuple[list[int], list[int]]:
    """``(bytes, count)``: ``[j]`` the bytes and the number of the tensors a node <= j produces
    and a node > j reads (top-level tensors; constants, folded nodes' outputs included, and
    graph inputs are on every stage)."""
    n = len(nodes)
    made: dict[str, tuple[int, int]] = {}
    last: dict[str, int] = {}
    for i, x in enumerate(nodes):
        for name in x.in_names:
            if name in made:
                last[name] = i
        for k, name in enumerate(x.out_names):
            spec = x.out_specs[k] if k < len(x.out_specs) else None
            if name and spec is not None and not x.level and x.status != "folded":
                made[name] = (i, spec.nbytes())
    diff, cnt = [0] * (n + 1), [0] * (n + 1)
    for name, z in last.items():
        a, b = made[name]
        if z > a:
            diff[a] += b
            diff[z] -= b
            cnt[a] += 1
            cnt[z] -= 1
    out_b, out_c, acc, acc_c = [], [], 0, 0
    for j in range(n):
        acc += diff[j]
        acc_c += cnt[j]
        out_b.append(acc)
        out_c.append(acc_c)
    return out_b, out_c


def layer_ends(count: list[int]) -> list[int]:
    """The node indices after which a stage may end: where the fewest tensors cross (between
    a transformer's blocks only the residual stream does; inside a block the branch too), and
    the last node. The nodes up to each end form one layer of the partition."""
    inner = count[:-1]
    # (a cut nothing crosses, such as after a folded constant's node, separates no work)
    low = min((c for c in inner if c > 0), default=0)
    return [j for j, c in enumerate(inner) if c == low] + [len(count) - 1]


def blocks(nodes, ends: list[int]):
    """(layers before the blocks, layers per block, blocks) of the repeated blocks, or None.
    Layers (``layer_ends``) are compared by their nodes' ops and output specs; the most frequent
    layer starts a block, the distance to its next occurrence is a block's length, and the run
    from its first occurrence must repeat with that period for all of its occurrences (a
    pre-LN transformer: attention half, MLP half, 36 times; the embedding before, the final
    norm and LM head after)."""
    starts = [0] + [e + 1 for e in ends[:-1]]
    sigs = [tuple((x.op, tuple(map(str, x.out_specs))) for x in nodes[a:e + 1])
            for a, e in zip(starts, ends)]
    where: dict = {}
    for i, sg in enumerate(sigs):
        where.setdefault(sg, []).append(i)
    occ = max(where.values(), key=len)
    if len(occ) < 2:
        return None
    first, k, count = occ[0], occ[1] - occ[0], len(occ)
    if first + count * k > len(sigs) or any(sigs[i] != sigs[i - k]
                                            for i in range(first + k, first + count * k)):
        return None
    return first, k, count


def bounds_even(nodes, ends: list[int], p: int) -> list[int] | None:
    """Megatron-LM's split: the repeated blocks (``blocks``) divided evenly over the stages
    (the first ``count % p`` stages one more), what comes before them on the first stage and
    what comes after on the last. Node index bounds, or None without repeated blocks."""
    found = blocks(nodes, ends)
    if found is None:
        return None
    first, k, count = found
    if p > count:
        raise InputSpecError(f"pipeline: {p} stages but the graph has {count} repeated blocks "
                             "to split evenly")
    out, at = [0], first
    for s in range(p - 1):
        at += k * (count // p + (1 if s < count % p else 0))
        out.append(ends[at - 1] + 1)
    return out + [len(nodes)]
