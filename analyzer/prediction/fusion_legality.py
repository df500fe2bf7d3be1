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
"""

from __future__ import annotations


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

    def __init__(self, preds, launch):
        super().__init__(len(launch))
        self.preds, self.launch = preds, launch
        self.anc = None

    def _build(self) -> None:
        preds = self.preds() if callable(self.preds) else self.preds
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
        self.anc, self.desc = anc, desc
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
        return True

    def union(self, a: int, b: int) -> None:
        self.join(a, b)


def xla_groups(preds, launch, fusible, sources) -> Joins:
    """The ``xla`` policy's groups: in graph (topological) order, each fusible node ``j`` takes in
    the group of each fusible producer ``sources[j]`` lists (in its input order; a producer
    reached through views that launch nothing counts as one), unless the joined group would lie
    on a cycle of the kernel graph (then that producer's group stays apart).  ``preds``,
    ``launch``: as ``Joins`` takes them; ``fusible[j]``: node ``j`` fuses."""
    joins = Joins(preds, launch)
    for j, srcs in enumerate(sources):
        if fusible[j]:
            for i in srcs:
                joins.join(i, j)
    return joins
