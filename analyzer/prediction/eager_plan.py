"""The kernels eager PyTorch launches for the patterns of a graph it exported (the ``eager``
fusion policy of the ``eager`` and ``eager-op`` runtimes).

An ONNX export of a PyTorch module lists the aten ops the tracer saw, but eager PyTorch launches
a different set of CUDA kernels for them: some ops are views of a strided tensor (no kernel),
some views must later be copied into a contiguous tensor (a copy kernel no ONNX node names),
``nn.Linear``'s matmul and bias run as one cuBLASLt kernel, and the exporter spells one
``aten::gelu`` kernel as five or nine ONNX nodes.  The plan walks the graph in order, keeps the
strides each tensor has in eager (element strides; contiguous unless a view made it otherwise:
``eager_layout``) and applies the rules of ``eager_rules.RULES`` (one record each, with its source).  Every node the rules do
not name is one kernel, as under the ``none`` policy.

The plan is a ``fusion.FusionPlan``: views launch nothing (``kernel_of == -1``); a view that
must be copied is its own kernel that reads and writes the tensor (a negative ``saved_bytes``
adds the bytes its count lacks; so is a folded node eager recomputes: ``eager_folded``); a copy that no view node can carry (an operand an elementwise
kernel wrote in a permuted layout) is an extra launch of the consuming kernel (``extra_ops``,
``extra_bytes``: its tensor read and written); a joined pattern is one kernel of its members.  A view eager PyTorch still runs as an aten op
(not an exporter's Identity, not shape arithmetic in Python ints) is a host-only op
(``FusionPlan.host_only``): no kernel, but its host time on the stream.

Assumptions, stated: a MatMul whose second operand is a rank-2 constant and whose only consumer
adds a constant vector of its N outputs is an exported ``nn.Linear`` (``F.linear``); a view read
by several consumers that each need it contiguous is copied once (eager copies it per consumer);
nodes the exporter folded into constants run the kernels eager PyTorch runs for them on every
call (``eager_folded``: the mask's comparisons, the position and token-type lookups, index
tensors built with arange), and no others; a cuDNN convolution's own kernels besides its main
one (``cudnn_conv``: fp32 Winograd-shape helpers, fp16/bf16 NCHW <-> NHWC conversions) are extra
launches inside its call (no host dispatch of their own).
"""

from __future__ import annotations

from math import prod
from typing import Sequence

from analyzer.counting.engine import FOLDED
from analyzer.prediction import bn_train, cudnn_conv, eager_folded, engines, fusion
from analyzer.prediction.eager_layout import (COPY_OP, ONNX_DOMAINS, RESHAPE_OPS, Walk, dims_of, follow_layout,
                                              matmul_copies, view_op)
from analyzer.prediction import strides as st_
from analyzer.prediction.eager_rules import RULES  # noqa: F401  (the rules this module applies)


POLICY = "eager"
_CONTIGUOUS_INPUT = frozenset({"Softmax", "LogSoftmax", "LayerNormalization", "GroupNormalization",
                               "InstanceNormalization", "BatchNormalization", "SoftmaxCrossEntropyLoss"})
_NLL = "NegativeLogLikelihoodLoss"   # the op eager's nll_loss kernel is charged as
_FOLDED_BIAS = "onnx::Conv_"   # the TorchScript exporter's name for a folded BatchNorm's bias
_GELU_PARTS = frozenset({"Div", "Mul", "Add", "Erf", "Tanh", "Pow"})
_GELU_SIZES = {"Erf": 5, "Tanh": 9}
_NOT_ATEN = frozenset({"Identity"})


def _linear(w: Walk, i: int, claimed: set) -> list[int] | None:
    """Rule ``linear`` for MatMul ``i``: [MatMul, Add] when eager runs them as one addmm."""
    nd, fn = w.nodes[i], w.fnodes[i]
    if len(fn.inputs) != 2 or 1 not in fn.constant_inputs:
        return None
    x, sx = w.layout(i, 0)
    wt = dims_of(nd.in_specs[1])
    if x is None or wt is None or len(wt) != 2 or len(x) < 2 or not st_.is_contiguous(x, sx):
        return None
    k, n = wt
    users = w.consumers.get((fn.level, fn.outputs[0]), [])
    if len(users) != 1 or k <= 1 or n <= 1:
        return None
    j = users[0]
    add, fa = w.nodes[j], w.fnodes[j]
    if add.op != "Add" or add.domain not in ONNX_DOMAINS or j in claimed or len(fa.inputs) != 2:
        return None
    other = 1 - fa.inputs.index(fn.outputs[0]) if fn.outputs[0] in fa.inputs else None
    if other is None or other not in fa.constant_inputs:
        return None
    bias = dims_of(add.in_specs[other])
    if bias is None or prod(bias) != n or bias[-1] != n:
        return None
    return [i, j]


def _conv(w: Walk, i: int, tf32: bool = False, winograd: bool = True, train: bool = False) -> None:
    """Rules ``conv-layout`` and ``conv-bias`` for Conv ``i`` (``tf32``: fp32 on the tensor cores;
    ``winograd``: rule ``cudnn-fp32``'s helpers, ``cudnn_conv.winograd_helpers``; ``train``: a
    folded BatchNorm in training mode, rule ``bn-train``)."""
    nd, fn = w.nodes[i], w.fnodes[i]
    x, sx = w.layout(i, 0)
    out = dims_of(nd.out_specs[0]) if nd.out_specs else None
    last = False
    if x is not None and out is not None and not st_.is_contiguous(x, sx):
        last = len(x) >= 3 and tuple(sx) == st_.dense_like(x, sx) and \
            sorted(range(len(x)), key=lambda d: (-sx[d], d)) == [0, *range(2, len(x)), 1]
        if last:      # channels last: run as is, the output channels last too
            w.set_out(i, 0, st_.channels_last(out))
        else:
            w.copy_input(i, 0)
    if x is not None and out is not None and fn.op_class != "conv_dw":
        w.extra[i].extend(_cudnn(nd, fn, x, out, last, tf32, winograd))
    if len(fn.inputs) > 2 and fn.inputs[2]:
        folded = fn.inputs[2].startswith(_FOLDED_BIAS)
        e = _element(fn, out)
        if folded and train and e and out is not None and len(out) > 1:
            _stats_loop(w, i, e, out)
            w.extra[i].extend(bn_train.launches(out[1], fn.output_bytes[0], e))
            return
        if folded and e == 2 and out is not None:   # native eval BatchNorm's per-channel launches
            w.extra[i].extend(cudnn_conv.bn_fp16_launches(out[1], e))
        if folded or fn.op_class != "conv_dw":   # the BatchNorm, or cuDNN's bias add_
            w.extra[i].append(("BatchNormalization" if folded else "Add",
                               2 * fn.output_bytes[0] + fn.input_bytes[2]))


def _batch_norm(w: Walk, i: int) -> None:
    """Rule ``bn-train`` for a BatchNormalization node in a training step: its kernel is the
    transform, the statistics, running-statistics and counter launches extra ones."""
    fn, out = w.fnodes[i], dims_of(w.nodes[i].out_specs[0]) if w.nodes[i].out_specs else None
    e = _element(fn, out)
    if e and out is not None and len(out) > 1:
        _stats_loop(w, i, e, out)
        w.extra[i].extend(bn_train.node_extras(out[1], fn.output_bytes[0], e))


def _stats_loop(w: Walk, i: int, e: int, out) -> None:
    """Record the serial loop of the statistics kernel node ``i``'s training BatchNorm is about to
    add to its extra launches (``bn_train.stats_loop``; none under fp32)."""
    at = bn_train.stats_loop(e, out)
    if at is not None:
        w.loops[(i, len(w.extra[i]) + at[0])] = at[1]


def _element(fn, out) -> int:
    """Bytes per element of a node's first output under the prediction's precision (0: unknown)."""
    return fn.output_bytes[0] // max(prod(out), 1) if out and fn.output_bytes else 0


def _cudnn(nd, fn, x, out, last: bool, tf32: bool = False, winograd: bool = True) -> list[tuple[str, int]]:
    """Rules ``cudnn-fp32`` and ``cudnn-nhwc``: cuDNN's launches inside the convolution's call
    besides its main kernel, by the element size of its input (4: fp32 on the FMA units, the
    Winograd shape only; 2, or 4 under ``tf32``: on the tensor cores, an NCHW 2-D input: its layout
    conversions, ``cudnn_conv.tensor_core_launches``)."""
    e = fn.input_bytes[0] // max(prod(x), 1)
    wt = dims_of(nd.in_specs[1]) if len(nd.in_specs) > 1 else None
    core = e == 2 or (e == 4 and tf32)
    if core and not last and len(fn.input_bytes) > 1 and wt is not None and len(x) == 4 == len(wt):
        return cudnn_conv.tensor_core_launches(tuple(x), tuple(wt), tuple(out), e, (
            fn.input_bytes[0], fn.input_bytes[1], fn.output_bytes[0]), tf32=e == 4)
    if winograd and e == 4 and len(x) == 4 and wt is not None and engines.winograd_shape(nd):
        return cudnn_conv.fp32_launches(tuple(x), wt[0], tuple(out))
    if e == 2 and not last and len(fn.input_bytes) > 1:
        return cudnn_conv.nhwc_launches(fn.input_bytes[0], fn.input_bytes[1], fn.output_bytes[0])
    return []


def _cross_entropy(w: Walk, i: int, ops: dict[int, str]) -> None:
    """Rule ``cross-entropy``: SoftmaxCrossEntropyLoss ``i`` as F.cross_entropy runs it, a
    log_softmax kernel (the node's kernel and class: the scores read, the log-probabilities
    written) and an nll_loss kernel after it (an extra launch charged as NegativeLogLikelihoodLoss:
    the M picked log-probabilities and weights read, the targets read, the loss written)."""
    nd, fn = w.nodes[i], w.fnodes[i]
    x, t = dims_of(nd.in_specs[0]), dims_of(nd.in_specs[1]) if len(nd.in_specs) > 1 else None
    if x is None or t is None or not prod(x):
        return
    m, scores = prod(t), fn.input_bytes[0]
    weights = fn.input_bytes[2] * m // max(x[1], 1) if len(fn.input_bytes) > 2 else 0
    w.added[i] = int(2 * scores - w.nbytes[i])
    ops[i] = ""                 # (the node's own class: not a copy's)
    w.extra[i].append((_NLL, scores * m // prod(x) + fn.input_bytes[1] + weights + fn.output_bytes[0]))


def _silu(w: Walk, i: int, claimed: set) -> list[int] | None:
    """Rule ``silu``: [Sigmoid, Mul] when the Mul's other input is the Sigmoid's input."""
    fn = w.fnodes[i]
    users = w.consumers.get((fn.level, fn.outputs[0]), []) if fn.outputs else []
    if len(users) != 1 or users[0] in claimed:
        return None
    j = users[0]
    if w.nodes[j].op != "Mul" or w.nodes[j].domain not in ONNX_DOMAINS or not fn.inputs:
        return None
    return [i, j] if sorted(w.fnodes[j].inputs) == sorted((fn.inputs[0], fn.outputs[0])) else None


def _gemm_bias(w: Walk, i: int) -> None:
    """Rule ``linear`` for a Gemm with a bias C: a broadcast copy of C into the output first
    where cuBLASLt's epilogue does not apply (N = 1, K = 1 or C not a vector of N)."""
    nd, fn = w.nodes[i], w.fnodes[i]
    if len(nd.in_specs) < 3 or nd.in_specs[2] is None or not fn.inputs[2]:
        return
    a, c, out = dims_of(nd.in_specs[0]), dims_of(nd.in_specs[2]), dims_of(nd.out_specs[0])
    if a is None or c is None or out is None or len(out) != 2:
        return
    n = out[1]
    k = prod(a) // max(out[0], 1)
    if n > 1 and k > 1 and len(c) == 1 and c[0] == n:
        return
    w.extra[i].append((COPY_OP, fn.input_bytes[2] + fn.output_bytes[0]))


def _gelu(w: Walk, core: int, claimed: set) -> list[int] | None:
    """Rules ``gelu-erf`` / ``gelu-tanh``: the exporter's nodes of one aten::gelu around the
    Erf/Tanh node ``core``: for a tensor x read by the nodes before it, the nodes (in graph
    order) of the GELU part ops whose every non-constant input is x or a member's output; a
    match has exactly the exporter's node count, one Erf/Tanh, no Pow, and at most one output
    read outside."""
    fnodes, nodes = w.fnodes, w.nodes
    level = fnodes[core].level
    seen, todo, cands = set(), [core], []
    while todo and len(seen) < 12:        # tensors read by the few nodes before the core
        j = todo.pop()
        for t in fnodes[j].inputs:
            p = w.producer.get((level, t)) if t else None
            if t and t not in seen:
                seen.add(t)
                cands.append(t)
                if p is not None and nodes[p].op in _GELU_PARTS:
                    todo.append(p)
    want = _GELU_SIZES[nodes[core].op]
    for x in cands:
        first = min(w.consumers.get((level, x), [core]))
        members, outs = [], {x}
        for j in range(first, core + want + 1):
            if j >= len(nodes) or j in claimed or fnodes[j].level != level:
                continue
            fn = fnodes[j]
            if nodes[j].op not in _GELU_PARTS or nodes[j].domain not in ONNX_DOMAINS or not fn.launches:
                continue
            ins = [t for p, t in enumerate(fn.inputs) if t and p not in fn.constant_inputs]
            if ins and all(t in outs for t in ins):
                members.append(j)
                outs.update(t for t in fn.outputs if t)
        ops = [nodes[j].op for j in members]
        if len(members) != want or core not in members or "Pow" in ops or \
                ops.count("Erf") + ops.count("Tanh") != 1:
            continue
        inside = set(members)
        leaving = [j for j in members for t in fnodes[j].outputs
                   if t and not inside.issuperset(w.consumers.get((level, t), []))]
        if len(leaving) <= 1:     # (none: its output is the graph's)
            return members
    return None


def plan(nodes, fnodes: Sequence[fusion.FusionNode], nbytes, graph_outputs: frozenset[str] = frozenset(),
         tf32: bool = False, winograd: bool = True, train: bool = False) -> fusion.FusionPlan:
    """The kernels eager PyTorch launches for ``nodes`` (their ``fnodes`` and counted bytes
    ``nbytes`` under the prediction's precision), by ``RULES``; ``tf32``: the caller's precision is
    ``tf32`` (fp32 convolutions on the tensor cores); ``winograd``: fp32 convolutions take rule
    ``cudnn-fp32``'s helpers (``cudnn_conv.winograd_helpers``: not on Hopper); ``train``: the forward
    of a training step, its BatchNorms in training mode (rule ``bn-train``, ``bn_train``)."""
    w = Walk(nodes, fnodes, nbytes)
    groups: list[list[int]] = []
    ops: dict[int, str] = {}
    claimed: set[int] = set()
    _recompute(w, ops)
    for i, nd in enumerate(nodes):
        if nd.status == FOLDED or (not fnodes[i].launches and nd.op not in RESHAPE_OPS):
            continue
        if view_op(w, i):
            continue
        if nd.domain in ONNX_DOMAINS and nd.op == "MatMul" and i not in claimed:
            g = _linear(w, i, claimed)
            if g is not None:
                groups.append(g)
                claimed.update(g)
                ops[i] = "Gemm"
            else:
                matmul_copies(w, i)
        elif nd.domain in ONNX_DOMAINS and nd.op == "Gemm":
            _gemm_bias(w, i)
        elif nd.domain in ONNX_DOMAINS and nd.op == "Conv":
            _conv(w, i, tf32, winograd, train)
        elif nd.domain in ONNX_DOMAINS and nd.op == "BatchNormalization" and train:
            _batch_norm(w, i)
        elif nd.domain in ONNX_DOMAINS and nd.op == "SoftmaxCrossEntropyLoss":
            _cross_entropy(w, i, ops)
        elif nd.domain in ONNX_DOMAINS and nd.op == "Sigmoid" and i not in claimed:
            g = _silu(w, i, claimed)
            if g is not None:
                groups.append(g)
                claimed.update(g)
                ops[g[0]] = "Sigmoid"
        elif nd.domain in ONNX_DOMAINS and nd.op in _GELU_SIZES and i not in claimed:
            g = _gelu(w, i, claimed)
            if g is not None:
                groups.append(g)
                claimed.update(g)
                ops[g[0]] = "Gelu"
        if nd.domain in ONNX_DOMAINS and nd.op in _CONTIGUOUS_INPUT and nd.in_specs:
            w.need_contiguous(i, 0)
        follow_layout(w, i)
    return _finish(w, groups, ops, graph_outputs)


def _recompute(w: Walk, ops: dict[int, str]) -> None:
    """Rule ``folded-recomputed``: the folded nodes eager PyTorch runs on every call launch (an
    index tensor's Constant: the arange, and the add of its offset as an extra launch)."""
    for i, k in eager_folded.recomputed(w.nodes, w.fnodes).items():
        fn = w.fnodes[i]
        w.launch[i] = True
        moved = eager_folded.kernel_bytes(fn)
        w.added[i] = int(moved - w.nbytes[i])
        ops[i] = "Add" if w.nodes[i].op in ("Constant", "ConstantOfShape") else w.nodes[i].op
        w.extra[i].extend(("Add", 2 * sum(fn.output_bytes)) for _ in range(k - 1))


def _finish(w: Walk, groups, ops: dict[int, str], graph_outputs) -> fusion.FusionPlan:
    """The ``FusionPlan`` of the walk: its groups joined (their saved bytes as
    ``fusion_bytes.saved`` counts them: a tensor from outside that several members read, the
    GELU's x, is read once), copies' bytes added (negative saved bytes), extra copy launches on
    their consumers' kernels."""
    p = fusion.grouped(w.fnodes, groups, w.launch, graph_outputs, POLICY)
    saved, kops, extra_ops, extra_bytes, loops = [], [], [], [], []
    for k, members in enumerate(p.members):
        saved.append(p.saved_bytes[k] - sum(w.added[i] for i in members))
        first = members[0]
        kops.append(ops.get(first, COPY_OP if w.added[first] or (
            w.nodes[first].op == "Transpose") else ""))
        ex = [e for i in members for e in w.extra[i]]
        extra_ops.append(tuple(op for op, _ in ex))
        extra_bytes.append(tuple(b for _, b in ex))
        loops.append(tuple(w.loops.get((i, j), (0, 0)) for i in members for j in range(len(w.extra[i]))))
    has_extra = any(extra_ops)
    host = _host_only(w)
    return fusion.FusionPlan(policy=POLICY, kernel_of=p.kernel_of, members=p.members,
                             saved_bytes=tuple(saved), kernel_ops=tuple(kops),
                             source=f"eager PyTorch plan ({w.copies} contiguous copies, "
                                    f"{len(host)} host-only ops)",
                             extra_ops=tuple(extra_ops) if has_extra else (),
                             extra_bytes=tuple(extra_bytes) if has_extra else (),
                             extra_loops=tuple(loops) if w.loops else (),
                             host_only=host)


def _host_only(w: Walk) -> tuple[int, ...]:
    """Rule ``host-only``: the views the walk kept (not copied) that eager PyTorch runs as an
    aten op: every one but an ONNX Identity (an exporter's alias or ``nn.Identity``: no aten op)
    and shape arithmetic (``eager_folded.shape_values``).  Folded nodes never became views."""
    shape = eager_folded.shape_values(w.nodes, w.fnodes)
    return tuple(i for i, (nd, fn) in enumerate(zip(w.nodes, w.fnodes))
                 if w.view[i] and not w.launch[i] and nd.op not in _NOT_ATEN
                 and not any((fn.level, t) in shape for t in fn.outputs if t))
