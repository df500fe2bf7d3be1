"""The backward kernel plan: the kernels eager PyTorch's autograd launches for one training
step's backward, in the order it issues them.

For each forward node on the gradient path (``counts.gradient_plan``), last node first, the
kernels of its rule (``backward_rules``); the patterns the eager forward plan runs as one kernel
(the exporter's GELU chains, SiLU: ``prediction.eager_plan``) run one backward kernel
(``gelu_backward``, ``silu_backward``) for the whole chain.  A tensor whose gradient comes from
k > 1 consumers (a residual stream, the input of Q, K and V, a shared weight; a graph output's
seed counts as one) gets k - 1 add kernels, issued after its last contribution (its earliest
consumer in graph order).  A node on the path that no rule covers is not dropped: the plan
lists it in ``fallback`` and the step prices it by the FLOP/byte ratio method
(``step.backward_rows``); so is every node inside a loop or branch body (its backward runs once
per trip).

Not planned (stated): the loss and the seed gradient (the graph's outputs' gradients are given),
dropout unless the step places it (``training.dropout``: an eval export has none), nodes the exporter folded into constants other than a
weight's lookup (a position embedding looked up with constant ids is planned as an embedding
backward: ``backward_movement.folded_lookup``), and the optimizer
(``step.optimizer_time``).  The contiguous copies of strided gradients are planned
(``grad_strides``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from analyzer.counting.engine import FOLDED
from analyzer.ir.graph import DTYPE_BITS
from analyzer.training import backward_movement as M
from analyzer.training import backward_rules as R
from analyzer.training.grad_kernel import BwdKernel, Ctx
from analyzer.training.grad_strides import GradStrides

_JOINED = {"Gelu": "gelu", "Sigmoid": "silu"}    # eager plan kernel op -> backward kernel kind


@dataclass(frozen=True)
class BackwardPlan:
    """The backward kernels in issue order; ``order`` interleaves them with the fallback nodes
    (``("k", kernel index)`` / ``("f", node index)``), as the stream runs them."""

    kernels: tuple[BwdKernel, ...]
    fallback: tuple[int, ...]        # node indices priced by the ratio method
    order: tuple[tuple[str, int], ...]
    joined: int = 0                  # GELU / SiLU chains run as one backward kernel
    dropouts: int = 0                # dropout backward kernels (``training.dropout``)

    def by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(k.kind for k in self.kernels).items()))

    def to_dict(self, nodes=None) -> dict[str, Any]:
        d = {"kernels": len(self.kernels), "by_kind": self.by_kind(),
             "joined_patterns": self.joined,
             "fallback_nodes": [nodes[i].name if nodes is not None else i for i in self.fallback]}
        if self.dropouts:
            d["dropout_kernels"] = self.dropouts
        return d


def joined_groups(nodes) -> dict[int, tuple[tuple[int, ...], str]]:
    """First member -> (members, backward kind) of every GELU / SiLU chain the eager forward
    plan joins into one kernel."""
    from analyzer.prediction import eager_plan
    from analyzer.prediction import kernel_rows as kr

    if not any(n.op in ("Erf", "Tanh", "Sigmoid") for n in nodes):
        return {}
    fnodes, nbytes = kr.fusion_nodes(nodes, None)
    fp = eager_plan.plan(nodes, fnodes, nbytes)
    out = {}
    for k, members in enumerate(fp.members):
        kind = _JOINED.get(fp.kernel_ops[k] if fp.kernel_ops else "")
        if kind and len(members) > 1:
            out[members[0]] = (tuple(members), kind)
    return out


def _group_input(nodes, members) -> tuple[str, int, int] | None:
    """(tensor, reading member, position) of the one tensor from outside a joined chain that it
    reads as data (the GELU's x)."""
    made = {t for i in members for t in nodes[i].out_names if t}
    found = None
    for i in members:
        n = nodes[i]
        for p, t in enumerate(n.in_names):
            if t and t not in made and p not in n.constant_inputs:
                if found is not None and found[0] != t:
                    return None
                found = found or (t, i, p)
    return found


def _units(nodes, grads, groups):
    """Per unit of backward work (a node, or a joined chain at its first member), in graph
    order: (anchor index, [(tensor, consumer index, input position) it sends a gradient to])."""
    member_of = {j: first for first, (ms, _) in groups.items() for j in ms}
    units = []
    for i, (n, g) in enumerate(zip(nodes, grads)):
        if not g.on_path or n.status == FOLDED or member_of.get(i, i) != i:
            continue
        if i in groups:
            x = _group_input(nodes, groups[i][0])
            units.append((i, [x] if x is not None and grads[x[1]].needs[x[2]] else []))
            continue
        units.append((i, [(t, i, p) for p, t in enumerate(n.in_names)
                          if t and p < len(g.needs) and g.needs[p]]))
    return units


def backward_plan(nodes, grads, outputs=(), dropouts=()) -> BackwardPlan:
    """The plan for a Report's ``nodes`` and their ``grads`` (``counts.gradient_plan``);
    ``outputs``: the graph's output names, each seeded with a gradient of its own (one more
    contribution where a node on the path reads it too: BERT's last hidden state, read by the
    pooler); ``dropouts``: ``training.dropout.Placement``s, whose backward kernel runs before
    the kernels of the node whose output they drop (a node on the gradient path)."""
    from analyzer.training import dropout as D

    drop: dict[int, list] = {}
    for pl in dropouts:
        drop.setdefault(pl.index, []).append(pl)
    n_drop = 0
    groups = joined_groups(nodes)
    units = _units(nodes, grads, groups)
    contrib: Counter = Counter(("", t) for t in outputs)
    earliest: dict[tuple[str, str], int] = {}
    for i, sends in units:
        for t, _, _ in sends:
            key = (nodes[i].level, t)
            contrib[key] += 1
            earliest.setdefault(key, i)
    folded = _folded_lookups(nodes)
    kernels: list[BwdKernel] = []
    strides = GradStrides()
    order: list[tuple[str, int]] = []
    fallback: list[int] = []
    for i, sends in reversed(units):
        n = nodes[i]
        if i in groups:
            x = _group_input(nodes, groups[i][0])
            k = R.joined_kernel(i, n, nodes[x[1]].in_specs[x[2]], groups[i][1]) if sends and x else None
            ks = [k] if k is not None else ([] if not sends else None)
        elif n.level or getattr(n, "runs", 1) != 1:
            ks = None           # a loop or branch body's node: the ratio method (its trips)
        else:
            ks = R.kernels_of(i, n, grads[i].needs)
            if ks is not None:      # the copies strided gradients cost (grad_strides)
                c = Ctx(i, n, grads[i].needs)
                ks = (strides.copy_before(c) if ks else []) + ks + strides.send(c, sends, contrib)
        dk = [D.backward_kernel(pl, n.name) for pl in drop.get(i, ())]
        n_drop += len(dk)
        for k in dk:
            order.append(("k", len(kernels)))
            kernels.append(k)
        if ks is None:
            fallback.append(i)
            order.append(("f", i))
        for k in ks or ():
            order.append(("k", len(kernels)))
            kernels.append(k)
        for t, j, p in sends:
            key = (n.level, t)
            if earliest[key] != i:
                continue
            last = _accumulate(i, nodes[j], p, t, contrib[key] - 1) if contrib[key] > 1 else []
            if key in folded:     # a folded lookup's weight gradient
                last += M.folded_lookup(folded[key], nodes[folded[key]]) or []
            for a in last:
                order.append(("k", len(kernels)))
                kernels.append(a)
    return BackwardPlan(tuple(kernels), tuple(sorted(fallback)), tuple(order), len(groups), n_drop)


_FOLDED_VIEWS = frozenset({"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"})


def _folded_lookups(nodes) -> dict[tuple[str, str], int]:
    """Tensor -> index of the folded Gather it is (or a folded view or cast of: GPT-2's position
    lookup is cast after it) in the export's constants: the Gathers the eager forward plan
    recomputes on every call (``prediction.eager_folded.recomputed``, the one detection)."""
    from analyzer.prediction import eager_folded
    from analyzer.prediction import kernel_rows as kr

    if not any(nd.status == FOLDED and nd.op == "Gather" for nd in nodes):
        return {}
    runs = eager_folded.recomputed(nodes, kr.fusion_nodes(nodes, None)[0])
    out: dict[tuple[str, str], int] = {}
    for g, nd in enumerate(nodes):
        if nd.status != FOLDED or not nd.out_names or not nd.out_names[0]:
            continue
        if nd.op == "Gather" and g in runs:
            out[(nd.level, nd.out_names[0])] = g
        elif nd.op in _FOLDED_VIEWS and nd.in_names and (nd.level, nd.in_names[0]) in out:
            out[(nd.level, nd.out_names[0])] = out[(nd.level, nd.in_names[0])]
    return out


def _accumulate(i: int, n, p: int, tensor: str, adds: int) -> list[BwdKernel]:
    """``adds`` add kernels of the gradients of input ``p`` of node ``n`` (named ``tensor``)."""
    c = Ctx(i, n, ())
    dims = c.ins(p)
    if dims is None:
        return []
    spec = n.in_specs[p]
    if spec.dtype != c.dtype:
        c.dtype, c.bits = spec.dtype, DTYPE_BITS.get(spec.dtype, 32)
    size = 1
    for d in dims:
        size *= d
    k = c.k("accumulate", "Add", [dims, dims], [dims], read=2 * size, written=size, vec=size)
    return [replace(k, name=f"{tensor}/accumulate{a}") for a in range(adds)]
