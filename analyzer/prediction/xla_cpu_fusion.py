"""XLA's CPU backend's kernels: the ``xla_cpu`` fusion policy, which the ``xla`` runtime uses on a
CPU profile (``runtimes.runtime_for``; the lowering plans it here instead of ``fusion.plan``).

XLA on CPU fuses a producer into its consumer (loop fusion), one output per fusion, and runs
every matrix op (dot, convolution) as a kernel of its own (a YNNPACK fusion, an Eigen or oneDNN
call) that fuses neither its operands nor its users.  So a fusion is a tree that ends at a
*root*: a node whose result is written to memory.  A node that fuses (``fusion_xla.fusible``)
is a root when

1. nothing at its graph level reads it, or it is the model's output or a scan body's result
   (a carry or a stacked output);
2. a node that does not fuse reads it (a dot, a convolution, a loop): the operand is
   materialised (a transpose or broadcast feeding a dot is a copy kernel of its own);
3. several nodes read it and it is a reduction (norm, softmax, pooling) or an expensive
   elementwise op (``EXPENSIVE``: exp, log, tanh, erf, divide, sqrt, ...): XLA duplicates a
   cheap producer into each consumer, never a reduction or an expensive one;
4. it is a reduction or an expensive op and a reader's result is larger than its own (a
   broadcast over it: fusing would recompute each element many times).

Rules 3 and 4 hold for a node whose fusion so far (its producers joined into it) holds such an
op: a cheap op after a reduction is not duplicated either, nor broadcast.

Every other fusible node joins the kernel of its first reader (a cheap node read several times
is recomputed by each reader's kernel; its bytes are counted once, with the first).  Nodes that
launch nothing (views) are looked through: their readers read the tensor.

A sum, max or min reduction whose input has at least ``YNN_MIN_ELEMENTS`` elements runs as a
YNNPACK reduction (XLA's ``IsInstructionPreferredByYnn``: an instruction whose shape or an
operand's has 4,096 elements or more; ``IsReduceLikeOpSupportedByYnn``: add, maximum, minimum
reducers): a kernel of its own, like a dot, that fuses neither its producers (their result is
written: rule 2) nor its readers. (XLA's YNNPACK fusions do take in some elementwise
neighbours: ``sum(x * 2) / 3`` over 64 x 64 is 2 thunks, 3 planned; the rule as stated agrees
best with the 16 programs of ``bench/xla_diagnose.py counts``.)

An elementwise node (``fusion_xla.fusible``) whose data inputs are all constants (closed-over
arrays, or results of such nodes) is folded at compile time (XLA's constant folding: a batch
norm's ``sqrt(var + eps)`` of its running variance): it launches nothing, and its readers read
a constant.

A convolution runs channels-last (input ``b01f``, kernel ``01io``: ``counting.rules.jax.linear.
conv_relayout`` names the operands whose dimension numbers are in another order). XLA's layout
assignment writes an intermediate in the order its convolution reads where that is its only
reader; a transpose copy (one launch moving the operand twice, read and write) runs before the
convolution for such an operand that is

5. an input of its level (a program's parameter, a body's input: their layout is fixed), not a
   constant (constants are transposed at compile time); or
6. the result of a kernel that another node that does not fuse reads too (another convolution,
   a dot: each convolution that wants it in another order gets its own copy); elementwise
   readers read it in the order it is written.

(An input of one channel is copied too: XLA's ``bitcast_copy_fusion``.) After the convolution, a transpose copy back to the
program's order (one launch, the result read and written) runs where

5b. the result is a program output, or a node that does not fuse and is no convolution reads it (a dot); loop fusions and reductions (YNNPACK's too) read it in the
    order it is written, and one that makes a program output transposes as it writes
    (``xla_conv_layout.results``: the rule XLA's GPU layouts take; the optimized HLO of
    XLA 0.10.2 on this CPU: a lone NCHW convolution is transpose, convolution, transpose, and
    three 1-D convolutions with ReLUs between them and a mean after them one transpose, before
    the first). A result whose move back only moves dims of size 1 (``xla_conv_layout.
    node_layout``) is a bitcast: no copy.

A reduction XLA runs in a loop fusion (under ``YNN_MIN_ELEMENTS``) over a dim longer than 32 is
cut by XLA's tree reduction rewriter into a ``reduce-window`` of partial results, then the reduce
of those (``tree=`` in the reduction's kernel word: ``counting.rules.jax.reduce.tree_rounds``):

7. the reduction takes no producer in (XLA's CPU backend fuses nothing into a reduce-window: the
   producer writes its result), and each round of windows is a launch of its own, carried by the
   kernel the reduction joins, moving its partial results twice (written, read back): a layer
   norm of [1, 16, 64] is 6 loop fusions, not 3.

A matrix-vector product (`` gemv=J`` in a dot's kernel word: no batch dims, operand ``J`` of
rank 2 or more whose free dims hold one element, ``x[1, K] @ W``) runs as an Eigen GEMV on a
copy of the vector (XLA's ``bitcast`` of [1, K] into [K, 1] is a loop fusion of its own):

8. a copy launch (the vector read and written) runs before the product unless the vector is the
   result of a loop fusion that the product alone reads (the bitcast joins that fusion) or a
   scanned input's slice (it joins the ``dynamic-slice``), or a constant; and one (the result
   read and written) after it where the result is a program output (nothing at the top level
   reads it).

A max pool's gradient (``select_and_scatter_add``, ``rank=R`` in its kernel word) is expanded by
XLA's CPU backend (observed in the optimized HLO of the calibration's pool-gradient rows and the
CNN's train step: 9 thunks for a rank-4 pool) into

9. R iotas of the operand's shape (each writes one dim's index of every element, int32),
   a zero fill of the result, a reduce-window that picks each window's position (the node's own
   kernel), a concatenate of the R index arrays, a copy of the gradient (unless a loop fusion
   that the node alone reads writes it) and the scatter: R + 4 launches beside the node's own,
   each charged its class's fixed cost only: the node's counted bytes (operand and gradient
   read, result written) stand for the expansion's traffic (its int32 index arrays are not
   charged).

A ``scan`` (``NodeCost.loop_io``) compiles to a ``while`` whose body runs, every trip, besides
the body's own kernels (checked on the optimized HLO of ``samples/jax_models.py``'s scan RNN,
``bench/xla_diagnose.py counts``):

- a ``dynamic-slice`` per scanned input that a non-fusing node reads (a dot's operand; a slice
  an elementwise kernel reads is fused into it): a ``dynamic_slice`` launch moving the slice
  twice (read, write);
- a ``dynamic-update-slice`` per stacked output (``ys``, and the residuals ``jax.grad`` stacks):
  a ``dynamic_update_slice`` launch, charged its fixed cost (the slice it writes is the body
  result's bytes, already counted);
- the trip counter: a ``copy`` of it, its ``add`` and the condition's compare (``lt``): three
  scalar launches.

They are carried by the body's first kernel (``FusionPlan.extra_ops``), so they launch once per
trip.  Once a loop (``ONCE_OPS``): the condition's last test (the compare that ends it) and the
counter's initial copy, carried by the first kernel at the scan's own level (a scan with no kernel
beside it at its level: not charged).  Not modelled: the copies XLA inserts where a carry is also
stacked (``rnn_train_step``: one a trip).
"""

from __future__ import annotations

from analyzer.counting import kernel_words
from analyzer.prediction import fusion, fusion_xla, scan_launches, xla_conv_layout

POLICY = "xla_cpu"
# elementwise ops XLA does not duplicate into several consumers (its ``IsExpensive``): JAX
# primitive names and ONNX op types
EXPENSIVE = frozenset({
    "exp", "exp2", "expm1", "log", "log1p", "tanh", "logistic", "erf", "erfc", "erf_inv", "sqrt", "rsqrt",
    "cbrt", "pow", "div", "rem", "atan2", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
    "asinh", "acosh", "atanh", "lgamma", "digamma",
    "Exp", "Log", "Tanh", "Sigmoid", "Erf", "Sqrt", "Reciprocal", "Div", "Pow", "Mod", "Sin", "Cos",
    "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Elu", "Selu",
    "Gelu", "FastGelu", "HardSwish", "Mish"})
# a reduction of at least this many input elements runs in YNNPACK (XLA CPU's
# ``IsInstructionPreferredByYnn``, ``kMinElements``); its elements are its input bytes over
# ``YNN_ELEMENT_BYTES`` (fp32, the dtype the programs here reduce in)
YNN_MIN_ELEMENTS = 4096
YNN_ELEMENT_BYTES = 4
YNN_REDUCE_OPS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "ReduceSum", "ReduceMax", "ReduceMin"})
# op classes XLA never duplicates nor fuses into a broadcasting reader
_REDUCTIONS = frozenset({"reduce", "norm", "norm_fused", "softmax", "pooling", "pool1d"})
# nodes that launch nothing themselves but run sub-graphs: readers, never looked through
_CONTROL = frozenset({"scan", "while", "cond", "Loop", "If", "Scan"})
# per trip of a scan: the counter's copy, its add, the condition's compare
COUNTER_OPS = ("copy", "add", "lt")
# once a loop: the condition's last compare (its trips + 1-th) and the counter's initial copy
ONCE_OPS = ("lt", "copy")


def plan(nodes, graph_outputs: frozenset[str]) -> fusion.FusionPlan:
    """The ``xla_cpu`` plan of ``nodes`` (the module docstring)."""
    nodes, folded = fold_constants(nodes)
    producer, consumers = fusion.tensor_index(nodes)
    sets = fusion._Sets(len(nodes))
    ok = [fusion_xla.fusible(nd) and not ynn_reduction(nd) for nd in nodes]
    # a tree reduction fuses into its reader but takes in no producer (its reduce-window does not)
    takes_in = [f and not tree_bytes(nd) for f, nd in zip(ok, nodes)]
    inf = float("inf")
    # per fusion so far (its union-find root): the smallest result of a reduction or expensive
    # op in it (rules 3 and 4 hold for a tree that holds one, not only for the node itself)
    heavy = {}
    written = {(nd.name + "/", t) for nd in nodes if nd.loop_io for t in nd.loop_io[2]}   # body results
    for i, nd in enumerate(nodes):
        if not ok[i]:
            continue
        own = sum(nd.output_bytes) if (nd.op_class in _REDUCTIONS or nd.op in EXPENSIVE) else inf
        r = sets.find(i)
        h = heavy[r] = min(heavy.get(r, inf), own)
        users = _readers(i, nodes, consumers)
        if not _root(nd, users, nodes, takes_in, graph_outputs, h, written):
            hu = heavy.get(sets.find(users[0]), inf)
            sets.union(i, users[0])
            heavy[sets.find(i)] = min(h, hu)
    p = fusion._collect(nodes, sets, producer, consumers, graph_outputs, POLICY)
    extra = (_loop_launches(nodes, p, consumers, ok) + _relayouts(nodes, p, producer, consumers, folded, ok)
             + _result_relayouts(nodes, p, consumers, graph_outputs)
             + _tree_launches(nodes, p, ok) + _gemv_copies(nodes, p, producer, consumers, folded, ok, graph_outputs)
             + _scatter_expansion(nodes, p, producer, consumers, folded, ok))
    return scan_launches.add_launches(p, extra)


def ynn_reduction(nd) -> bool:
    """Whether ``nd`` runs as a YNNPACK reduction (the module docstring)."""
    return (nd.op in YNN_REDUCE_OPS and bool(nd.input_bytes)
            and nd.input_bytes[0] >= YNN_MIN_ELEMENTS * YNN_ELEMENT_BYTES)


def compiled_constant(nd, j: int, folded) -> bool:
    """Whether input ``j`` of ``nd`` is a constant of the compiled program: a closed-over array
    (``constant_inputs`` named with the JAX frontend's ``CONST_PREFIX``; weights passed as
    arguments are runtime inputs) or the result of a folded node (``folded``: (level, tensor))."""
    from analyzer.frontends.jaxpr.load import CONST_PREFIX

    t = nd.inputs[j]
    return (j in nd.constant_inputs and t.startswith(CONST_PREFIX)) or (nd.level, t) in folded


def fold_constants(nodes) -> tuple[list, set[tuple[str, str]]]:
    """(``nodes`` with each fusible node whose data inputs are all ``compiled_constant`` not
    launching, the (level, tensor) of the folded nodes' results)."""
    folded: set[tuple[str, str]] = set()
    out = []
    for nd in nodes:
        data = [j for j, t in enumerate(nd.inputs) if t]
        if nd.launches and data and fusion_xla.fusible(nd) and all(compiled_constant(nd, j, folded) for j in data):
            folded.update((nd.level, t) for t in nd.outputs if t)
            nd = nd._replace(launches=False)
        out.append(nd)
    return out, folded


def _readers(i: int, nodes, consumers, depth: int = 8) -> list[int]:
    """The distinct nodes that read node ``i``'s outputs at its level, in graph order, looking
    through readers that launch nothing (views; not loops) to their own readers."""
    nd = nodes[i]
    out: list[int] = []
    for t in nd.outputs:
        for u in consumers.get((nd.level, t), ()) if t else ():
            if nodes[u].launches or nodes[u].op in _CONTROL or depth == 0:
                if u not in out:
                    out.append(u)
            else:
                for v in _readers(u, nodes, consumers, depth - 1):
                    if v not in out:
                        out.append(v)
    return sorted(out)


def _root(nd, users: list[int], nodes, ok, graph_outputs, heavy: float, written) -> bool:
    """Whether fusible node ``nd`` writes its result (rules 1-4 of the module docstring; ``ok[u]``:
    node ``u`` takes its producers into its fusion);
    ``heavy``: the smallest result of a reduction or expensive op in its fusion so far (inf:
    none): such a fusion is neither duplicated nor broadcast by a reader; ``written``: (level,
    tensor) of every scan body's results."""
    if not users or (nd.level == "" and any(t in graph_outputs for t in nd.outputs)):
        return True
    if any((nd.level, t) in written for t in nd.outputs):
        return True
    if not all(ok[u] for u in users):
        return True
    if heavy == float("inf"):
        return False
    return len(users) > 1 or any(sum(nodes[u].output_bytes) > heavy for u in users)


def _loop_launches(nodes, p: fusion.FusionPlan, consumers, ok) -> list[tuple[int, str, int]]:
    """[(kernel, op, bytes it moves)] of every scan's per-trip launches (the module docstring),
    each on the first kernel of the scan's body, and its once-a-loop launches (``ONCE_OPS``) on
    the first kernel at the scan's own level (``scan_launches``; a reader takes the slice in where
    it fuses into a loop fusion)."""
    return scan_launches.launches(nodes, p.kernel_of, consumers, ok, COUNTER_OPS, ONCE_OPS)


def _relayouts(nodes, p: fusion.FusionPlan, producer, consumers, folded, ok) -> list[tuple[int, str, int]]:
    """[(kernel, "transpose", bytes it moves)] of the layout copies before convolutions (rules 5
    and 6 of the module docstring), each on its convolution's kernel; ``ok[i]``: node ``i``
    fuses into a loop fusion."""
    out = []
    for i, nd in enumerate(nodes):
        relayout = kernel_words.ints(nd.kernel, "relayout")
        if relayout is None or p.kernel_of[i] < 0:
            continue
        for j in relayout:
            if j >= len(nd.inputs) or not nd.inputs[j] or compiled_constant(nd, j, folded):
                continue
            src = _source(nd.level, nd.inputs[j], nodes, producer, folded)
            if src is None or (src >= 0 and any(u != i and not ok[u] for u in _readers(src, nodes, consumers))):
                out.append((p.kernel_of[i], "transpose", 2 * nd.input_bytes[j]))
    return out


def _result_relayouts(nodes, p: fusion.FusionPlan, consumers, graph_outputs) -> list[tuple[int, str, int]]:
    """[(kernel, "transpose", bytes it moves)] of the copies back to the program's order after
    convolutions (rule 5b of the module docstring), each on its convolution's kernel."""
    reads_any = [fusion_xla.fusible(nd) for nd in nodes]
    out = []
    for i, nd in enumerate(nodes):
        if kernel_words.ints(nd.kernel, "relayout") is None or p.kernel_of[i] < 0 or not nd.conv_layout \
                or 2 not in nd.conv_layout[2]:
            continue
        out.extend((p.kernel_of[i], "transpose", 2 * b)
                   for b in xla_conv_layout.results(nodes, p, i, consumers, graph_outputs, reads_any))
    return out


def _source(level: str, tensor: str, nodes, producer, folded, depth: int = 8) -> int | None:
    """The node that writes ``tensor`` at ``level``, looking through nodes that launch nothing
    (views) to their first input: None where it is an input of the level, -1 where it is a
    constant of the compiled program (a view of one, or a node with no input that launches nothing)."""
    i = producer.get((level, tensor))
    while i is not None and not nodes[i].launches and nodes[i].op not in _CONTROL:
        nd = nodes[i]
        if not nd.inputs or not nd.inputs[0] or compiled_constant(nd, 0, folded) or depth == 0:
            return -1
        i, depth = producer.get((level, nd.inputs[0])), depth - 1
    return i


def tree_bytes(nd) -> tuple[int, ...]:
    """The bytes of each round of partial results of a tree reduction (``tree=`` in its kernel
    word: ``counting.rules.jax.reduce.tree_rounds``); () for any other node."""
    return kernel_words.ints(nd.kernel, "tree") or ()


def _tree_launches(nodes, p: fusion.FusionPlan, ok) -> list[tuple[int, str, int]]:
    """[(kernel, "reduce_sum", bytes)] of the reduce-windows of every tree reduction (rule 7 of
    the module docstring) that runs in a loop fusion, on the kernel it joins: each round writes
    its partial results and the next reads them back (the input's read is the reduction's own)."""
    return [(p.kernel_of[i], "reduce_sum", 2 * b) for i, nd in enumerate(nodes)
            if ok[i] and p.kernel_of[i] >= 0 for b in tree_bytes(nd)]


def _gemv_copies(nodes, p: fusion.FusionPlan, producer, consumers, folded, ok, graph_outputs) -> list[tuple[int, str, int]]:
    """[(kernel, "copy", bytes it moves)] of the copies around every matrix-vector product
    (rule 8 of the module docstring), on the product's kernel: its vector operand read and
    written, its result read and written."""
    sliced = {(nd.name + "/", x) for nd in nodes if nd.loop_io for x in nd.loop_io[0]}
    out = []
    for i, nd in enumerate(nodes):
        gemv = kernel_words.value(nd.kernel, "gemv")
        if gemv is None or p.kernel_of[i] < 0:
            continue
        j = int(gemv)
        t = nd.inputs[j] if j < len(nd.inputs) else ""
        if t and not compiled_constant(nd, j, folded) and (nd.level, t) not in sliced:
            src = _source(nd.level, t, nodes, producer, folded)
            if src is None or (src >= 0 and not (ok[src] and _readers(src, nodes, consumers) == [i])):
                out.append((p.kernel_of[i], "copy", 2 * nd.input_bytes[j]))
        if nd.level == "" and (any(o in graph_outputs for o in nd.outputs) or not _readers(i, nodes, consumers)):
            out.append((p.kernel_of[i], "copy", 2 * sum(nd.output_bytes)))
    return out


def _scatter_expansion(nodes, p: fusion.FusionPlan, producer, consumers, folded, ok) -> list[tuple[int, str, int]]:
    """[(kernel, op, 0)] of the launches XLA's expansion of a max pool's gradient adds beside the
    node's own kernel (rule 9 of the module docstring), on that kernel: fixed costs only."""
    out = []
    for i, nd in enumerate(nodes):
        rank = kernel_words.value(nd.kernel, "rank")
        if nd.op != "select_and_scatter_add" or rank is None or p.kernel_of[i] < 0:
            continue
        r, k = int(rank), p.kernel_of[i]
        out += [(k, "iota", 0)] * r
        out += [(k, "broadcast_in_dim", 0), (k, "concatenate", 0), (k, "scatter", 0)]
        src = _source(nd.level, nd.inputs[0], nodes, producer, folded) if nd.inputs[0] else -1
        if src is None or (src >= 0 and not (ok[src] and _readers(src, nodes, consumers) == [i])):
            out.append((k, "copy", 0))
    return out
