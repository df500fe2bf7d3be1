"""Which nodes run as one kernel: the fusion a runtime applies, as a plan over a report's nodes.

A fused kernel keeps its nodes' counts (FLOPs, weights read), but the tensors that pass only
between its members never cross memory (no write by the producer, no read by the consumers),
and it launches once.  Policies (``POLICIES``), chosen by the runtime (``runtimes.py``):

- ``none``: one kernel per node that does work (``kernel`` and ``eager`` runtimes).
- ``xla``: XLA-style loop/input fusion: connected producer-consumer sets of fusible nodes
  (elementwise, activations, data movement, reductions, norms, softmax, gathers) become one
  kernel; matrix ops (GEMM, convolution, attention) stay kernels of their own.
- ``onnxruntime``: the graph fusions onnxruntime applies at its default level, as patterns:
  Conv/ConvTranspose/MatMul/Gemm absorb a following BatchNormalization (folded into the weights)
  and then an activation (Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid); MatMul absorbs a
  following Add of a constant bias (MatMul+Add -> Gemm); a decomposed layer norm (ReduceMean ...
  Sqrt/Reciprocal ...) and a decomposed GELU (... Erf/Tanh ...) become one kernel each, and a
  residual Add feeding a LayerNormalization joins it (SkipLayerNormalization); an Add of a bias
  feeding a GELU joins it (BiasGelu).  Where onnxruntime itself is available, its own record of
  what it fused can replace these patterns (``ort_graph.py``).

Nodes are joined only with nodes of the same graph level (a loop body's nodes fuse among
themselves, never with the outer graph).  The plan is plain data: kernel index per node, the
members of each kernel, and the bytes each kernel does not move because of fusion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

POLICIES = ("none", "xla", "onnxruntime")

# op classes (efficiency.OP_CLASSES) that XLA fuses into their producers/consumers
_XLA_FUSIBLE = frozenset({"elementwise", "activation", "movement", "reduce", "norm", "softmax",
                          "gather"})
_ACTIVATIONS = frozenset({"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                          "HardSwish", "Elu", "Selu", "Softplus"})
_MATRIX = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "FusedConv", "FusedMatMul"})
_NORM_PARTS = frozenset({"ReduceMean", "Sub", "Pow", "Add", "Sqrt", "Div", "Mul", "Reciprocal",
                         "Cast"})
_GELU_PARTS = frozenset({"Div", "Erf", "Add", "Mul", "Tanh", "Pow"})
_NORM_OPS = frozenset({"LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization"})
_GELU_OPS = frozenset({"Gelu", "FastGelu"})


@dataclass(frozen=True)
class FusionNode:
    """What fusion needs of one node (the report's node, in graph order)."""

    op: str
    domain: str
    op_class: str
    level: str                    # graph level: '' for the model, 'loop/' inside a body
    inputs: tuple[str, ...]       # tensor names ('' for an omitted input)
    outputs: tuple[str, ...]
    input_bytes: tuple[int, ...]  # bytes of each input tensor as read (0 for an omitted one)
    output_bytes: tuple[int, ...]
    launches: bool                # does work (FLOPs or bytes) and is not constant-folded
    constant_inputs: frozenset[int] = frozenset()  # input positions holding constants


@dataclass(frozen=True)
class FusionPlan:
    """``kernel_of[i]``: the kernel of node ``i`` (-1: launches nothing); ``members[k]``: node
    indices of kernel ``k`` in graph order; ``saved_bytes[k]``: bytes its fusion does not move
    (intermediate tensors neither written nor read back)."""

    policy: str
    kernel_of: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    saved_bytes: tuple[int, ...]

    @property
    def kernels(self) -> int:
        return len(self.members)


class _Sets:
    """Union-find over node indices."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def plan(nodes: Sequence[FusionNode], policy: str, graph_outputs: frozenset[str] = frozenset()
         ) -> FusionPlan:
    """The kernels ``nodes`` run as under ``policy`` (one of ``POLICIES``)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown fusion policy {policy!r}; choose from {', '.join(POLICIES)}")
    n = len(nodes)
    producer: dict[tuple[str, str], int] = {}
    consumers: dict[tuple[str, str], list[int]] = {}
    for i, nd in enumerate(nodes):
        for t in nd.outputs:
            if t:
                producer[(nd.level, t)] = i
        for t in nd.inputs:
            if t:
                consumers.setdefault((nd.level, t), []).append(i)
    sets = _Sets(n)
    if policy == "xla":
        _xla(nodes, sets, producer)
    elif policy == "onnxruntime":
        _onnxruntime(nodes, sets, producer, consumers)
    return _collect(nodes, sets, producer, consumers, graph_outputs, policy)


def _edges(nodes, producer):
    """(producer index, consumer index, input position) for every data edge between nodes."""
    for j, nd in enumerate(nodes):
        for pos, t in enumerate(nd.inputs):
            i = producer.get((nd.level, t)) if t else None
            if i is not None and i != j:
                yield i, j, pos


def _xla(nodes, sets, producer) -> None:
    for i, j, _ in _edges(nodes, producer):
        a, b = nodes[i], nodes[j]
        if (a.launches and b.launches and a.op_class in _XLA_FUSIBLE
                and b.op_class in _XLA_FUSIBLE):
            sets.union(i, j)


def _only_consumer(i: int, nodes, consumers) -> int | None:
    """The single consumer of node ``i``'s single used output, else None."""
    nd = nodes[i]
    users = [c for t in nd.outputs if t for c in consumers.get((nd.level, t), ())]
    return users[0] if len(set(users)) == 1 else None


def _onnxruntime(nodes, sets, producer, consumers) -> None:
    # 1. matrix op <- BatchNormalization (folded) <- activation; MatMul <- Add(constant bias)
    for i, nd in enumerate(nodes):
        if nd.op not in _MATRIX or nd.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        cur = i
        nxt = _only_consumer(cur, nodes, consumers)
        if nxt is not None and nodes[nxt].op == "BatchNormalization" and nd.op.startswith("Conv"):
            sets.union(i, nxt)
            cur = nxt
            nxt = _only_consumer(cur, nodes, consumers)
        if (nxt is not None and nd.op == "MatMul" and nodes[nxt].op == "Add"
                and nodes[nxt].constant_inputs):
            sets.union(i, nxt)
            cur = nxt
            nxt = _only_consumer(cur, nodes, consumers)
        if nxt is not None and nodes[nxt].op in _ACTIVATIONS:
            sets.union(i, nxt)
    # 2. decomposed layer norms and GELUs: connected components of their part ops
    _components(nodes, sets, producer, _NORM_PARTS, need_any={"ReduceMean"},
                need_also={"Sqrt", "Reciprocal"})
    _components(nodes, sets, producer, _GELU_PARTS, need_any={"Erf", "Tanh"}, need_also=None)
    # 3. residual Add -> LayerNorm (SkipLayerNormalization); bias Add -> Gelu (BiasGelu)
    for i, j, _ in _edges(nodes, producer):
        a, b = nodes[i], nodes[j]
        if a.op == "Add" and a.launches and (b.op in _NORM_OPS or b.op in _GELU_OPS) \
                and _only_consumer(i, nodes, consumers) == j:
            sets.union(i, j)


def _components(nodes, sets, producer, parts, need_any, need_also) -> None:
    """Join connected sets of ``parts`` ops that contain one of ``need_any`` (and, when given,
    one of ``need_also``): the decomposed form of a norm or an activation."""
    local = _Sets(len(nodes))
    for i, j, _ in _edges(nodes, producer):
        if nodes[i].op in parts and nodes[j].op in parts and nodes[i].launches \
                and nodes[j].launches:
            local.union(i, j)
    groups: dict[int, list[int]] = {}
    for i, nd in enumerate(nodes):
        if nd.op in parts and nd.launches:
            groups.setdefault(local.find(i), []).append(i)
    for members in groups.values():
        ops = {nodes[m].op for m in members}
        if len(members) > 1 and ops & need_any and (need_also is None or ops & need_also):
            for m in members[1:]:
                sets.union(members[0], m)


def _collect(nodes, sets, producer, consumers, graph_outputs, policy) -> FusionPlan:
    kernel_of = [-1] * len(nodes)
    roots: dict[int, int] = {}
    members: list[list[int]] = []
    for i, nd in enumerate(nodes):
        if not nd.launches:
            continue
        r = sets.find(i)
        k = roots.get(r)
        if k is None:
            k = roots[r] = len(members)
            members.append([])
        members[k].append(i)
        kernel_of[i] = k
    saved = [0] * len(members)
    for k, ms in enumerate(members):
        if len(ms) < 2:
            continue
        inside = set(ms)
        for i in ms:
            nd = nodes[i]
            for t, nbytes in zip(nd.outputs, nd.output_bytes):
                if not t or (nd.level == "" and t in graph_outputs):
                    continue
                users = consumers.get((nd.level, t), ())
                if users and all(u in inside for u in users):
                    saved[k] += nbytes  # never written ...
                    for u in users:     # ... nor read back
                        un = nodes[u]
                        saved[k] += sum(b for x, b in zip(un.inputs, un.input_bytes) if x == t)
    return FusionPlan(policy, tuple(kernel_of), tuple(tuple(m) for m in members), tuple(saved))
