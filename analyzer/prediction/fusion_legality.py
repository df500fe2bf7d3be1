"""Which joins keep a fusion plan runnable: fused kernels that lie on no cycle of the kernel graph.

A plan's *kernel graph* has a vertex per kernel and an edge from each kernel to every kernel that
reads a tensor it makes (nodes that launch nothing are free vertices on the way).  A kernel on a
cycle both feeds another kernel and reads that kernel's result: no executor can run it.  Joining
two acyclic groups ``A`` and ``B`` makes such a cycle exactly when a path runs from one to the
other through a node that launches and belongs to neither (``A -> GEMM -> B``); a path through
nodes that launch nothing only is no cycle (a view is no kernel).

``Joins`` holds, per node of one graph, the bitsets of its ancestors and descendants (bit ``u``:
node ``u``; static reachability over the data edges) and, per group, the union of its members',
so the test of a join is a few integer operations on ``n``-bit integers:
``(desc(A) | desc(B)) & (anc(A) | anc(B)) & launching & ~(A | B) != 0`` refuses it.

XLA refuses the same joins.  Its multi-output producer-consumer fusion fuses a producer into a
consumer only when the producer reaches no other operand of the consumer
(``MultiOutputFusionCreatesCycle``, a reachability map and a depth-first search, in
openxla/xla ``xla/service/instruction_fusion.cc``, read in tensorflow/tensorflow's
``third_party/xla``); a single-output fusion cannot make a cycle there because XLA duplicates
the producer into the consumer (or, in the GPU ``PriorityFusion``,
``xla/service/gpu/priority_fusion.cc``, fuses a producer only into all of its users at once).
The plans here never duplicate a node, so every join takes the multi-output test.

The test on static reachability is exact for a join of two single nodes but not once groups
exist: with ``A = {a1, a2}`` and ``B = {b1, b2}``, ``a1 -> b1`` and ``b2 -> a2`` make the
kernels ``A`` and ``B`` feed each other although no node path runs from ``B`` back to ``B``.
So a plan is checked once built (``Joins.cycle_free``: Kahn's order over the kernels, nodes that
launch nothing looked through); the rare plan that fails is rebuilt with the same joins in the
same order on ``Joins(exact=True)``, which keeps each group's reachability closed over the
kernel graph as groups are contracted (every group that reaches a joined group then reaches all
it reaches), so its test is exact.  ``legal_groups`` does both.
"""

from __future__ import annotations

from collections import Counter


class Sets:
    """Union-find over node indices (a set's root: its smallest member)."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        parent = self.parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


class Joins(Sets):
    """Union of node groups refusing a join that would put a group on a cycle (module docstring).

    ``preds[j]``: the producers of node ``j``'s inputs (node indices, each before ``j``: graph
    order is topological; or a function that returns that list, called on the first join);
    ``launch[j]``: whether node ``j`` launches.  The bitsets are built on
    the first join of two groups (a plan that joins nothing pays for none)."""

    def __init__(self, preds, launch, exact: bool = False):
        super().__init__(len(launch))
        self.preds, self.launch, self.exact = preds, launch, exact
        self.anc = None

    def _preds(self) -> list:
        if callable(self.preds):
            self.preds = self.preds()
        return self.preds

    def _build(self) -> None:
        preds = self._preds()
        n = len(preds)
        self.anc, self.desc = reach_bitsets(preds)
        self.members = [1 << j for j in range(n)]   # per root: member bitset
        self.outside = sum(1 << j for j, x in enumerate(self.launch) if x)   # launching nodes

    def join(self, a: int, b: int) -> bool:
        """Join the groups of nodes ``a`` and ``b`` unless the joined group would lie on a cycle;
        whether they are (now) one group."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        if self.anc is None:
            self._build()
        m = self.members[ra] | self.members[rb]
        if (self.desc[ra] | self.desc[rb]) & (self.anc[ra] | self.anc[rb]) & self.outside & ~m:
            return False
        lo, hi = (ra, rb) if ra < rb else (rb, ra)
        self.parent[hi] = lo
        self.members[lo] = m
        self.anc[lo] |= self.anc[hi]
        self.desc[lo] |= self.desc[hi]
        if self.exact:   # contraction: what reaches the group reaches all it reaches, and back
            down, up = self.desc[lo] | m, self.anc[lo] | m
            for r in self._roots(self.anc[lo] & ~m):
                self.desc[r] |= down
            for r in self._roots(self.desc[lo] & ~m):
                self.anc[r] |= up
        return True

    def _roots(self, bits: int) -> set[int]:
        """The roots of the groups of the nodes set in ``bits``."""
        out, find = set(), self.find
        while bits:
            low = bits & -bits
            out.add(find(low.bit_length() - 1))
            bits ^= low
        return out

    def cycle_free(self) -> bool:
        """Whether no kernel of the plan lies on a cycle of the kernel graph: Kahn's order over
        the groups (a node that launches nothing, alone in its group, is looked through: a path
        through such nodes only is no cycle)."""
        if self.anc is None:   # nothing joined: one node per kernel, the graph's own order
            return True
        preds, launch, n = self._preds(), self.launch, len(self.launch)
        root = [self.find(j) for j in range(n)]
        size = Counter(root)
        feeds: list = [()] * n   # a looked-through node: the kernels whose results reach it
        succ: dict[int, set[int]] = {}
        for j in range(n):
            src = set()
            for p in preds[j]:
                if launch[p] or size[root[p]] > 1:
                    src.add(root[p])
                else:
                    src.update(feeds[p])
            if launch[j] or size[root[j]] > 1:
                for r in src:
                    if r != root[j]:
                        succ.setdefault(r, set()).add(root[j])
            else:
                feeds[j] = src
        indeg = Counter(v for vs in succ.values() for v in vs)
        ready = [r for r in succ if not indeg[r]]
        seen = 0
        while ready:
            r = ready.pop()
            seen += 1
            for v in succ.get(r, ()):
                indeg[v] -= 1
                if not indeg[v]:
                    ready.append(v)
        return seen == len(set(succ) | set(indeg))

    def union(self, a: int, b: int) -> None:
        self.join(a, b)


def xla_groups(preds, launch, fusible, sources, merged=(), then=None) -> Joins:
    """The ``xla`` policy's groups: the dots of each ``merged`` group (``dot_merge.groups``:
    side, members) joined first, then in graph (topological) order each fusible node ``j``
    takes in the group of each fusible producer ``sources[j]`` lists (in its input order; a
    producer reached through views that launch nothing counts as one), unless the joined group
    would lie on a cycle of the kernel graph (then that producer's group stays apart); then
    ``then(joins)`` when given (``xla_gpu_joins``).
    ``preds``, ``launch``: as ``Joins`` takes them; ``fusible[j]``: node ``j`` fuses."""
    def take_in(joins):
        for g in merged:
            for m in g[2:]:
                joins.join(g[1], m)
        for j, srcs in enumerate(sources):
            if fusible[j]:
                for i in srcs:
                    joins.join(i, j)
        if then is not None:
            then(joins)
    return legal_groups(preds, launch, take_in)


def legal_groups(preds, launch, joins_of) -> Joins:
    """The groups ``joins_of(joins)`` makes on a ``Joins`` of ``preds``, ``launch``, checked
    once made (``Joins.cycle_free``); a plan with a kernel on a cycle is made again on an exact
    ``Joins`` (module docstring): the same joins in the same order, the refused ones apart."""
    joins = Joins(preds, launch)
    joins_of(joins)
    if joins.cycle_free():
        return joins
    exact = Joins(joins.preds, launch, exact=True)
    joins_of(exact)
    return exact


def reach_bitsets(preds) -> tuple[list[int], list[int]]:
    """(ancestors, descendants) of each node of a DAG given in topological order by its
    predecessors ``preds`` (node indices), as bitsets (bit j: node j); a node is its own
    descendant, not its own ancestor."""
    n = len(preds)
    anc = [0] * n
    for j, ps in enumerate(preds):
        a = 0
        for p in ps:
            a |= anc[p] | (1 << p)
        anc[j] = a
    desc = [0] * n
    for j in range(n - 1, -1, -1):
        d = desc[j] | (1 << j)
        for p in preds[j]:
            desc[p] |= d
    return anc, desc
