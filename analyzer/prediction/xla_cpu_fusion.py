"""XLA's CPU backend's kernels: the ``xla_cpu`` fusion policy, which the ``xla`` runtime uses on a
CPU profile (``runtimes.runtime_for``; the lowering plans it here instead of ``fusion.plan``).

XLA on CPU fuses a producer into its consumer (loop fusion), one output per fusion, and runs
every matrix op (dot, convolution) as a kernel of its own (a YNNPACK fusion, an Eigen or oneDNN
call) that fuses neither its operands nor its users.  So a fusion is a tree that ends at a
*root*: a node whose result is written to memory.  A node that fuses (``fusion.xla_fusible``)
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
trip.  Not modelled: the condition's last test (one launch a loop), the counter's initial copy and
the copies XLA inserts where a carry is also stacked (``rnn_train_step``: one a trip).
"""

from __future__ import annotations

from analyzer.prediction import fusion

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
# op classes XLA never duplicates nor fuses into a broadcasting reader
_REDUCTIONS = frozenset({"reduce", "norm", "norm_fused", "softmax", "pooling", "pool1d"})
# nodes that launch nothing themselves but run sub-graphs: readers, never looked through
_CONTROL = frozenset({"scan", "while", "cond", "Loop", "If", "Scan"})
# per trip of a scan: the counter's copy, its add, the condition's compare
COUNTER_OPS = ("copy", "add", "lt")


def plan(nodes, graph_outputs: frozenset[str]) -> fusion.FusionPlan:
    """The ``xla_cpu`` plan of ``nodes`` (the module docstring)."""
    producer, consumers = fusion.tensor_index(nodes)
    sets = fusion._Sets(len(nodes))
    ok = [fusion.xla_fusible(nd) for nd in nodes]
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
        if not _root(nd, users, nodes, ok, graph_outputs, h, written):
            hu = heavy.get(sets.find(users[0]), inf)
            sets.union(i, users[0])
            heavy[sets.find(i)] = min(h, hu)
    p = fusion._collect(nodes, sets, producer, consumers, graph_outputs, POLICY)
    extra = _loop_launches(nodes, p, consumers, ok)
    if not extra:
        return p
    ops = [()] * p.kernels
    moved = [()] * p.kernels
    for k, op, nbytes in extra:
        ops[k] += (op,)
        moved[k] += (nbytes,)
    return fusion.FusionPlan(policy=p.policy, kernel_of=p.kernel_of, members=p.members, saved_bytes=p.saved_bytes,
                             kernel_ops=p.kernel_ops, extra_ops=tuple(ops), extra_bytes=tuple(moved))


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
    """Whether fusible node ``nd`` writes its result (rules 1-4 of the module docstring);
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
    each on the first kernel of the scan's body."""
    out = []
    for nd in nodes:
        if not nd.loop_io:
            continue
        body = nd.name + "/"
        carrier = next((p.kernel_of[j] for j, b in enumerate(nodes) if b.level == body and p.kernel_of[j] >= 0), -1)
        if carrier < 0:
            continue
        xs, n_ys, _ = nd.loop_io
        for x in xs:
            readers = consumers.get((body, x), ())
            if readers and not all(ok[u] for u in readers):
                b = nodes[readers[0]]
                out.append((carrier, "dynamic_slice", 2 * b.input_bytes[b.inputs.index(x)]))
        out.extend((carrier, "dynamic_update_slice", 0) for _ in range(n_ys))
        out.extend((carrier, op, 0) for op in COUNTER_OPS)
    return out
