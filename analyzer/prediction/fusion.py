"""Which nodes run as one kernel: the fusion a runtime applies, as a plan over a report's nodes.

A fused kernel keeps its nodes' counts (FLOPs, weights read), but the tensors that pass only
between its members never cross memory (no write by the producer, no read by the consumers),
and it launches once.  Policies (``POLICIES``), chosen by the runtime (``runtimes.py``):

- ``none``: one kernel per node that does work (``kernel`` and ``eager`` runtimes).
- ``xla``: XLA-style loop/input fusion: fusible nodes (elementwise, activations, data movement,
  reductions, norms, softmax, gathers) take in their fusible producers, through views that
  launch nothing, unless the kernel would lie on a cycle (``fusion_xla``); matrix ops (GEMM,
  convolution, attention) stay kernels of their own.  On a GPU (``fold_transposes``) a rank-2
  transpose read only by matrix products launches nothing: XLA's GPU compiler folds it into
  their operand layout (``transpose_fold.xla_folded``), dots that share an operand run as one
  (XLA's GPU ``DotMerger``, ``dot_merge``), a convolution takes in its cuDNN epilogue (inference
  batch norm, bias, side input, ReLU) and an M = 1 dot its elementwise producer kernel
  (``xla_gpu_joins``).
- (``xla_cpu``, the ``xla`` runtime on a CPU profile: XLA's CPU backend's fusions, planned by
  ``xla_cpu_fusion.plan``, which the lowering calls instead of ``plan``.)
- ``onnxruntime``: the graph fusions onnxruntime applies at its default level, as patterns:
  Conv/ConvTranspose/MatMul/Gemm absorb a following BatchNormalization (folded into the weights)
  and then an activation (Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid); MatMul absorbs a
  following Add of a constant bias (MatMul+Add -> Gemm); a decomposed layer norm (ReduceMean ...
  Sqrt/Reciprocal ...) and a decomposed GELU (... Erf/Tanh ...) become one kernel each, and a
  residual Add feeding a LayerNormalization joins it (SkipLayerNormalization); an Add of a bias
  feeding a GELU joins it (BiasGelu).
- ``coreml``: Core ML's (the ``coreml`` runtime, ``accelerators/coreml.py``): the onnxruntime
  patterns and connected chains of elementwise ops and activations.
- ``tflite``: the TensorFlow Lite converter's folds (BatchNormalization and bias into the
  product, the fused activation): the onnxruntime patterns (the ``edgetpu`` runtime).
- ``qnn``: QNN's on the Hexagon NPU (the ``qnn`` runtime, ``accelerators/qnn.py``): the
  onnxruntime patterns, then a residual Add / scale Mul and a SiLU joined to the matrix op; a
  Concat launches nothing where kernels produce its inputs (they write into its output).
- a ``FusionRecord`` (any policy): the runtime's own record of the kernels it runs, each with the
  original nodes it replaced.  ``analyzer.analyze`` builds one from onnxruntime's saved fused
  graph (``ort_record.fusion_record``) when the runtime is onnxruntime, onnxruntime is installed
  and the model is ONNX; the patterns above are the fallback.  Under a record every kernel it
  lists launches (even one whose nodes opcost counts as free, e.g. a Reshape: onnxruntime still
  runs it), a node it lists as removed launches nothing (Identity, Dropout, shape arithmetic
  onnxruntime folded), and a node it does not know (a loop body's) is a kernel of its own.

Under every policy a join that would put a kernel on a cycle of the kernel graph (a kernel that
feeds another kernel and reads its result) is refused (``fusion_legality``).  Nodes are joined
only with nodes of the same graph level (a loop body's nodes fuse among
themselves, never with the outer graph).  The plan is plain data: kernel index per node, the
members of each kernel, and the bytes each kernel does not move because of fusion (in closed
form, views between members looked through: ``fusion_bytes``).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from analyzer.prediction import dot_merge, fusion_bytes, fusion_legality, fusion_patterns, fusion_xla, xla_gpu_loops
from analyzer.prediction import scan_launches, xla_conv_layout, xla_gpu_rewrites
from analyzer.prediction.accelerators import qnn
from analyzer.prediction.transpose_fold import xla_folded

POLICIES = ("none", "xla", "onnxruntime", "coreml", "tflite", "qnn")


class FusionNode(NamedTuple):
    """What fusion needs of one node (the report's node, in graph order).  A NamedTuple: one is
    built per node per lowering, and a frozen dataclass costs 4x as much to build."""

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
    name: str = ""                # the node's name (joins a FusionRecord)
    loop_io: tuple = ()           # a scan's (xs body inputs, ys count, body results): ``NodeCost.loop_io``
    kernel: str | None = None     # ``NodeCost.kernel`` (a convolution's operands to relayout)
    matrix2d: bool = False        # its first two inputs and first output are rank-2 tensors
    dot_form: str | None = None   # ``dot_merge.dot_form``: what a dot shares with those it merges with
    gemv: bool = False            # a dot with an operand of no free dimension > 1 (``xla_gpu_joins``)
    reduce_form: str = ""         # ``xla_gpu_reduce.reduce_form``: a reduction's form on a GPU
    conv_layout: tuple = ()       # ``xla_conv_layout.node_layout``: a convolution's layout transposes
    tree: tuple = ()              # ``xla_gpu_rewrites.tree``: bytes each kernel of XLA's GPU tree split writes


@dataclass(frozen=True)
class FusionRecord:
    """The kernels a runtime recorded that it runs: ``kernels[j] = (kernel name, op type,
    original node names it replaced)``; ``removed``: original nodes no kernel replaced (they
    launch nothing); ``source``: what the record is, for the prediction's notes."""

    source: str
    kernels: tuple[tuple[str, str, tuple[str, ...]], ...]
    removed: frozenset[str] = frozenset()
    # (kernel name, op types): launches the runtime inserted with no original node (the
    # Reshapes around a 3-D Gemm), charged to that kernel as fixed costs of their own classes
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # (kernel name, op, tensor name): layout reorders the runtime runs (onnxruntime's NCHWc
    # ReorderInput/ReorderOutput, ``ort_record.layout_reorders``), charged to that kernel as
    # extra launches of their own class that read and write the tensor
    reorders: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, kw_only=True)
class FusionPlan:
    """``kernel_of[i]``: the kernel of node ``i`` (-1: launches nothing); ``members[k]``: node
    indices of kernel ``k`` in graph order; ``saved_bytes[k]``: bytes its fusion does not move
    (intermediate tensors neither written nor read back); negative where the kernel moves
    bytes no member's count has (an eager view a copy kernel materialises: ``eager_plan``)."""

    policy: str
    kernel_of: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    saved_bytes: tuple[int, ...]
    kernel_ops: tuple[str, ...] = ()   # per kernel: the op type the runtime recorded ('' if none)
    source: str = "fusion patterns"     # "fusion patterns" or the FusionRecord's source
    extra_ops: tuple[tuple[str, ...], ...] = ()  # per kernel: ops of the extra launches it carries
    # per kernel, one per extra launch: the bytes it moves (a layout reorder: its tensor read
    # and written), 0 for a launch charged its fixed cost only; empty: all 0
    extra_bytes: tuple[tuple[int, ...], ...] = ()
    # per kernel, one per extra launch: (blocks, serial steps) of a per-channel block loop
    # (``bn_stats``: a training BatchNorm's statistics kernel), (0, 0) none; empty: none
    extra_loops: tuple[tuple[tuple[int, int], ...], ...] = ()
    # nodes the runtime runs as framework ops that launch no kernel (eager PyTorch's views:
    # ``eager_plan``), in graph order: each costs host time only (``runtimes.HOST_ONLY_RATIO``)
    host_only: tuple[int, ...] = ()
    # (transpose node, the first matrix product reading it) per transpose folded into the
    # products' operand layout (``transpose_fold.xla_folded``): it launches nothing
    folded: tuple[tuple[int, int], ...] = ()
    # (shared operand side, dot, dot...) per group of dots merged into one (``dot_merge``)
    merged: tuple[tuple[int, ...], ...] = ()
    # (node, producer node, reason) per join XLA's GPU fusion refuses at a reduction
    # (``xla_gpu_reduce``) that leaves the node in a kernel apart from its producer's
    apart: tuple[tuple[int, int, str], ...] = ()

    @property
    def kernels(self) -> int:
        return len(self.members)


_Sets = fusion_legality.Sets   # (union-find over node indices)


def plan(nodes: Sequence[FusionNode], policy: str, graph_outputs: frozenset[str] = frozenset(),
         record: FusionRecord | None = None, fold_transposes: bool = False, conv_gen: str = "") -> FusionPlan:
    """The kernels ``nodes`` run as under ``policy`` (one of ``POLICIES``), or as ``record``
    says when one is given.  ``fold_transposes``: under ``xla``, plan XLA's GPU transpose
    folding (``transpose_fold.xla_folded``), dot merging (``dot_merge``) and fusions into matrix
    kernels (``xla_gpu_joins``), the launches of a scan's loop control (``xla_gpu_loops``) and
    the layout transposes around convolutions for GPU generation ``conv_gen``
    (``xla_conv_layout``; the lowering sets both for GPU profiles only)."""
    if record is not None:
        return _from_record(nodes, record, graph_outputs)
    if policy not in POLICIES:
        raise ValueError(f"unknown fusion policy {policy!r}; choose from {', '.join(POLICIES)}")
    # (no policy joins nodes under "none": one-node kernels save no bytes, need no edges)
    if policy == "none":
        return _collect(nodes, None, {}, {}, graph_outputs, policy)
    producer, consumers = tensor_index(nodes)
    launch = qnn.launches(nodes, producer) if policy == "qnn" else [nd.launches for nd in nodes]
    folded = xla_folded(nodes, consumers, graph_outputs) if policy == "xla" and fold_transposes else {}
    for i in folded:
        launch[i] = False
    get = producer.get

    @functools.cache
    def preds():
        return [[i for t in nd.inputs if t and (i := get((nd.level, t))) is not None and i != j]
                for j, nd in enumerate(nodes)]

    merged = dot_merge.of_nodes(nodes, preds, get) if policy == "xla" and fold_transposes else []
    refusals: list[tuple[int, int, str]] = []

    def joins_of(sets):
        if policy == "xla":
            for g in merged:
                for m in g[2:]:
                    sets.join(g[1], m)
            refusals.clear()
            fusion_xla.joins(nodes, sets, producer, folded,
                             fusion_xla.reduce_refusal(nodes, producer, consumers, folded, refusals)
                             if fold_transposes else None)
            if fold_transposes:
                fusion_xla.gpu_joins(nodes, sets, producer, consumers, graph_outputs, launch)
        elif policy in ("onnxruntime", "tflite"):   # tflite: the converter's folds are the same
            fusion_patterns.onnxruntime(nodes, sets, producer, consumers)
        elif policy == "coreml":
            fusion_patterns.coreml(nodes, sets, producer, consumers)
        elif policy == "qnn":   # the onnxruntime patterns, then QNN's epilogue joins
            fusion_patterns.onnxruntime(nodes, sets, producer, consumers)
            qnn.join_epilogues(nodes, sets, consumers)
    # every policy joins on ``Joins``: a join that would put a kernel on a cycle is refused
    sets = fusion_legality.legal_groups(preds, launch, joins_of)
    p = _collect(nodes, sets, producer, consumers, graph_outputs, policy, launch)
    if policy == "xla" and fold_transposes:
        fuses = [fusion_xla.fusible(nd) and i not in folded for i, nd in enumerate(nodes)]
        p = xla_gpu_loops.with_launches(p, nodes, consumers, fuses)
        p = scan_launches.add_launches(p, xla_conv_layout.launches(nodes, p, producer, consumers, graph_outputs,
                                                                   fuses, conv_gen))
        p = xla_gpu_rewrites.with_tree_launches(p, nodes)
    apart = tuple(r for r in dict.fromkeys(refusals) if p.kernel_of[r[0]] != p.kernel_of[r[1]])
    if apart:
        p = dataclasses.replace(p, apart=apart)
    if merged:
        ops = list(p.kernel_ops)
        for g in merged:
            ops[p.kernel_of[g[1]]] = dot_merge.KOPS[g[0]]
        p = dataclasses.replace(p, merged=tuple(merged), kernel_ops=tuple(ops))
    return dataclasses.replace(p, folded=tuple(sorted(folded.items()))) if folded else p


def grouped(nodes: Sequence[FusionNode], groups, launch, graph_outputs: frozenset[str] = frozenset(),
            policy: str = "none") -> FusionPlan:
    """The plan of explicit ``groups`` (lists of node indices, each joined into one kernel) over
    the nodes that launch by ``launch`` (one bool per node): a runtime plan (``eager_plan``) that
    decides its kernels itself; saved bytes as every policy counts them."""
    producer, consumers = tensor_index(nodes)
    sets = _Sets(len(nodes))
    for g in groups:
        for m in g[1:]:
            sets.union(g[0], m)
    return _collect(nodes, sets, producer, consumers, graph_outputs, policy, list(launch))




def tensor_index(nodes, names=lambda nd: (nd.outputs, nd.inputs)):
    """(producer, consumers) of every (graph level, tensor name) of ``nodes`` in graph order:
    the index of the node that writes it, the indices of those that read it (once per input).
    ``names(node)``: its (output names, input names), by default a ``FusionNode``'s."""
    producer: dict[tuple[str, str], int] = {}
    consumers: dict[tuple[str, str], list[int]] = {}
    for i, nd in enumerate(nodes):
        outs, ins = names(nd)
        for t in outs:
            if t:
                producer[(nd.level, t)] = i
        for t in ins:
            if t:
                consumers.setdefault((nd.level, t), []).append(i)
    return producer, consumers


def readers_by_name(nodes, names=lambda nd: nd.inputs) -> dict[str, list[int]]:
    """Tensor name -> the indices of the nodes that read it, in graph order (once per input; an
    empty name is no tensor); graph levels are not told apart (``tensor_index`` keys by level and
    name). ``names(node)``: its input names, by default a ``FusionNode``'s."""
    readers: dict[str, list[int]] = {}
    for i, nd in enumerate(nodes):
        for t in names(nd):
            if t:
                readers.setdefault(t, []).append(i)
    return readers


def _from_record(nodes, record: FusionRecord, graph_outputs) -> FusionPlan:
    """The plan of a runtime's own record (top-level nodes joined by name)."""
    producer, consumers = tensor_index(nodes)
    by_name = {nd.name: i for i, nd in enumerate(nodes) if nd.level == "" and nd.name}
    sets = _Sets(len(nodes))
    launch = [nd.launches for nd in nodes]
    op_of: dict[int, str] = {}
    extra_of: dict[int, tuple[str, ...]] = {}
    extra = dict(record.extra)
    first: dict[str, int] = {}   # kernel name -> its first member
    for kname, kop, names in record.kernels:
        idx = [by_name[x] for x in names if x in by_name]
        for i in idx:
            launch[i] = True
            sets.union(idx[0], i)
        if idx:
            first[kname] = min(idx)
            op_of[min(idx)] = kop
            if extra.get(kname):
                extra_of[min(idx)] = extra_of.get(min(idx), ()) + tuple(extra[kname])
    moved_of: dict[int, tuple[tuple[str, int], ...]] = {}
    for kname, op, t in record.reorders:
        if kname in first:
            i = first[kname]
            moved_of[i] = moved_of.get(i, ()) + ((op, 2 * _tensor_bytes(nodes, producer, consumers, t)),)
    for x in record.removed:
        if x in by_name:
            launch[by_name[x]] = False
    p = _collect(nodes, sets, producer, consumers, graph_outputs, "record", launch)
    ops = tuple(op_of.get(m[0], "") for m in p.members)
    extras = tuple(sum((extra_of.get(i, ()) for i in m), ()) for m in p.members)
    if not moved_of:
        return FusionPlan(policy="record", kernel_of=p.kernel_of, members=p.members,
                          saved_bytes=p.saved_bytes, kernel_ops=ops, source=record.source, extra_ops=extras)
    moved = tuple(sum((moved_of.get(i, ()) for i in m), ()) for m in p.members)
    return FusionPlan(policy="record", kernel_of=p.kernel_of, members=p.members, saved_bytes=p.saved_bytes,
                      kernel_ops=ops, source=record.source,
                      extra_ops=tuple(e + tuple(op for op, _ in mv) for e, mv in zip(extras, moved)),
                      extra_bytes=tuple((0,) * len(e) + tuple(b for _, b in mv) for e, mv in zip(extras, moved)))


def _tensor_bytes(nodes, producer, consumers, t: str) -> int:
    """Bytes of top-level tensor ``t`` as its producer writes it (or, for a graph input, as its
    first consumer reads it); 0 when no node has it."""
    i = producer.get(("", t))
    if i is not None:
        nd = nodes[i]
        return nd.output_bytes[nd.outputs.index(t)]
    for u in consumers.get(("", t), ()):
        nd = nodes[u]
        return nd.input_bytes[nd.inputs.index(t)]
    return 0


def _collect(nodes, sets, producer, consumers, graph_outputs, policy, launch=None) -> FusionPlan:
    """The plan of the sets ``sets`` joined (None: none joined, each node a kernel of its own);
    ``launch``: which nodes launch (None: as each node says)."""
    kernel_of = [-1] * len(nodes)
    roots: dict[int, int] = {}
    members: list[list[int]] = []
    for i, nd in enumerate(nodes):
        if not (nd.launches if launch is None else launch[i]):
            continue
        if sets is None:
            kernel_of[i] = len(members)
            members.append([i])
            continue
        r = sets.find(i)
        k = roots.get(r)
        if k is None:
            k = roots[r] = len(members)
            members.append([])
        members[k].append(i)
        kernel_of[i] = k
    saved = [0] * len(members)
    if any(len(ms) > 1 for ms in members):
        runs = [nd.launches for nd in nodes] if launch is None else launch
        is_view = fusion_bytes.is_view
        view = [is_view(nd.domain, nd.op) for nd in nodes]
        for k, ms in enumerate(members):
            if len(ms) > 1:
                saved[k] = _saved(nodes, ms, runs, producer, consumers, graph_outputs, view)
    return FusionPlan(policy=policy, kernel_of=tuple(kernel_of), members=tuple(tuple(m) for m in members),
                      saved_bytes=tuple(saved), kernel_ops=("",) * len(members))


def _saved(nodes, ms, runs, producer, consumers, graph_outputs, view) -> int:
    """``fusion_bytes.saved`` of kernel ``ms`` (its members share one graph level); ``runs``:
    which nodes launch; ``view``: which nodes are views (one that does not launch, or is a
    member, is looked through)."""
    level = nodes[ms[0]].level
    inside = set(ms)

    def io(i):
        nd = nodes[i]
        return nd.inputs, nd.outputs, nd.input_bytes, nd.output_bytes, nd.op

    def alias(u):
        return view[u] and (u in inside or not runs[u])

    return fusion_bytes.saved(ms, io, alias, lambda t: consumers.get((level, t), ()),
                              lambda t: producer.get((level, t)),
                              lambda t: level == "" and t in graph_outputs)
