"""XLA GPU's kernel boundaries at reductions that the ``xla`` plan applies on a GPU profile
(``fusion.plan`` with ``fold_transposes``: its producer-consumer joins, ``fusion_xla.joins``, refuse
these two; a training step's parameter gradients are where they occur):

- **A reduction beside a matrix kernel** (``refuses``' first rule): a reduction does not take in
  the kernel of a producer whose result a matrix node (a GEMM dot, a convolution: a node that
  launches and fuses nothing; not an M = 1 ``gemv`` dot, itself a reduction fusion) also reads.
  XLA's GPU ``PriorityFusion`` fuses a producer only into all of its users or none
  (``CalculateProducerPriority``: "Don't fuse if we can't fuse in all users",
  ``CanFuseWithAllNonBitcastUsers``, ``xla/service/gpu/transforms/priority_fusion.cc``); a GEMM
  or cuDNN call takes no producer there, so the producer stays a kernel and the reduction is a
  fusion of its own (a bias gradient's column sum beside the weight- and data-gradient GEMMs
  reading the same ReLU-backward select).  That no later multi-output fusion joins the two is
  what the deviceless compile of ``bench/xla_gpu_hlo.py --params-arg`` shows for every bias
  and batch-norm gradient of its train steps; the plan does not model multi-output fusion.
- **A reduction's epilogue** (the second rule): a reduction XLA runs with its reduction emitter
  ends its kernel unless its consumer is an intermediate op of one operand (a unary
  elementwise op, a view, a reduction over size-1 dimensions, which XLA simplifies to a
  bitcast) and the reduction has that one reader: ``IsProducerConsumerFusible`` in
  ``xla/service/gpu/gpu_fusible.cc`` refuses an input-fusible reduction producer unless every op
  of the consumer is ``IsIntermediate(hlo, 1)`` ("Reductions from/to continuous dims epilogue
  not fusible") and "reduction output fusion only works for single user".  So an SGD update
  ``p - lr * g`` of a gradient ``g`` that such a reduction makes is a kernel of its own.

``reduce_form`` classifies a reduction from its input and output shapes (the reduced axes are
read off them; a shape that reads two ways is left unplanned, ''): the rules hold for the
reductions over a leading dimension, the gradient of a broadcast parameter, of the two forms
XLA's reduction emitter takes (``GetReductionKindAndContiguousComponents``): a column reduction
``[reduced R, kept K]`` and a row reduction with a reduced batch ``[reduced B, kept K, reduced
R]`` (a per-channel sum over N, H, W of an NCHW tensor).  XLA runs one with its reduction
emitter ('emitter') unless the elemental loop is faster (``IsUnnestedReductionFasterThanElemental``,
``xla/service/gpu/ir_emission_utils.cc``; W = 32 threads per warp): a row reduction when R >= W
or W % R == 0; a column reduction unless R < W, or R < 2W and K < W, or R < 4W and K < 8, or
R < 8W and K < 3.  An elemental one ('elemental', a loop fusion) fuses as an elementwise op
does.

- **One row** (``ROW1``, ``in_context``): a reduction whose kept dimensions all have size 1 is a
  row reduction ``[1, 1, R]`` to XLA; where a reader scales its result by a constant, the
  Triton normalization rewriter does not take the row (the constant is a one-element array, not
  a splat broadcast: ``IsTriviallyFusible``, ``softmax_rewriter_triton.cc``) and it is an
  'emitter' reduction under the two rules above, with a third (``feeds_of``, "reduction
  prologue"): a producer that feeds an emitter reduction through fusible nodes does not join
  the kernel of a consumer that feeds none of the same reductions (XLA's priority fusion
  duplicates such a producer into both fusions; the plan keeps one copy and its result is read).
  A one-row layer norm is then three kernels, as on the lent H200.

Not planned: row reductions over trailing dimensions of more than one row (a softmax, a layer
norm, a pooling: their fusions are the Triton normalization rewriter's and the performance
model's), reductions of more alternating groups (XLA's ``ReductionSplitter`` splits them),
multi-output fusion.
"""

from __future__ import annotations

WARP = 32   # threads per warp of every NVIDIA GPU XLA targets
ROW1 = "row1"   # a one-row reduction's form before ``in_context`` reads its readers
# ops of a constant scale that stops the Triton normalization rewriter's match (``in_context``)
_SCALE_OPS = frozenset({"add", "sub", "mul", "div", "Add", "Sub", "Mul", "Div"})
# reductions that scale their own result (ONNX ReduceMean: XLA's reduce, then a multiply by 1/N)
_SELF_SCALED = frozenset({"ReduceMean"})
# op classes of an intermediate op (IsIntermediate: elementwise of one operand, bitcast)
_INTERMEDIATE = frozenset({"elementwise", "activation", "swish", "view"})


def kept_axes(ins: tuple, out: tuple) -> tuple | None:
    """The input axes a reduction from shape ``ins`` to ``out`` keeps (None: not readable from
    the shapes, or readable two ways): with kept dims, the axes reduced to size 1; else the
    only order-preserving match of ``out`` in ``ins``."""
    if len(out) == len(ins):
        return tuple(a for a, (i, o) in enumerate(zip(ins, out)) if not (o == 1 and i != 1))
    found = []

    def match(a: int, b: int, picked: tuple) -> None:
        if len(found) > 1:
            return
        if b == len(out):
            found.append(picked)
            return
        for k in range(a, len(ins) - (len(out) - b) + 1):
            if ins[k] == out[b]:
                match(k + 1, b + 1, picked + (k,))
    match(0, 0, ())
    return found[0] if len(found) == 1 else None


def reduce_form(op_class: str, ins: tuple | None, out: tuple | None, kept: tuple | None = None) -> str:
    """'emitter' / 'elemental' for a reduction over a leading dimension (module docstring),
    'trivial' for one whose reduced dimensions all have size 1, '' otherwise (not a
    reduction, or a form the rules leave unplanned); ``kept``: the kept axes where the node
    says them (a JAX reduction's ``axes`` word), else read off the shapes (``kept_axes``)."""
    if op_class != "reduce" or ins is None or out is None:
        return ""
    kept = kept_axes(tuple(ins), tuple(out)) if kept is None else kept
    if kept is None:
        return ""
    groups: list[list] = []   # [kept?, elements] per run of same-kind dims of size > 1
    for a, d in enumerate(ins):
        if d == 1:
            continue
        k = a in kept
        if groups and groups[-1][0] == k:
            groups[-1][1] *= d
        else:
            groups.append([k, d])
    kinds = tuple(k for k, _ in groups)
    if not any(not k for k in kinds):
        return "trivial"
    if kinds == (False, True):
        r, k = groups[0][1], groups[1][1]
        elemental = r < WARP or (r < 2 * WARP and k < WARP) or (r < 4 * WARP and k < 8) or (r < 8 * WARP and k < 3)
        return "elemental" if elemental else "emitter"
    if kinds == (False, True, False):
        r = groups[2][1]
        return "emitter" if r >= WARP or WARP % r == 0 else "elemental"
    if kinds == (False,):   # one row (every kept dimension of size 1): ``in_context`` decides
        r = groups[0][1]
        return ROW1 if r >= WARP or WARP % r == 0 else ""
    return ""


def in_context(form, ops, op_class, arity, consts, readers) -> list[str]:
    """``form`` with each one-row reduction (``ROW1``) an 'emitter' one where a reader (through
    single-input movement nodes: a broadcast to [1, 1] is a bitcast) is an add, subtract,
    multiply or divide (``ops[n]``) with a constant or literal operand (``consts[n]``: its
    constant positions), else ''.  Such a scale (a mean's 1/N, a variance's epsilon) is a
    one-element array in XLA's HLO, not a broadcast scalar, so the Triton normalization
    rewriter's matcher stops at it (``IsTriviallyFusible``, ``softmax_rewriter_triton.cc``) and
    the row fuses by the ordinary rules (module docstring: three kernels for a one-row layer
    norm on the lent H200).  (A max with a literal, softmax's ``max(-inf, m)``, is one XLA's
    algebraic simplifier removes: not a scale.)  An ONNX ReduceMean scales its own result."""
    def scaled(i, depth=0) -> bool:
        for r in readers(i):
            if ops[r] in _SCALE_OPS and arity[r] == 2 and consts[r]:
                return True
            if op_class[r] == "movement" and arity[r] == 1 and depth < 4 and scaled(r, depth + 1):
                return True
        return False
    return [("emitter" if ops[i] in _SELF_SCALED or scaled(i) else "") if f == ROW1 else f for i, f in enumerate(form)]


def feeds_of(form, fusible, readers) -> list[frozenset]:
    """Per node, the 'emitter' reductions it feeds through fusible nodes (each reader an
    'emitter' reduction, or a fusible node whose own set is added); nodes in graph
    (topological) order, so computed from the last."""
    out: list[frozenset] = [frozenset()] * len(form)
    for i in range(len(form) - 1, -1, -1):
        got: set = set()
        for r in readers(i):
            if form[r] == "emitter":
                got.add(r)
            elif fusible[r]:
                got |= out[r]
        out[i] = frozenset(got)
    return out


def refuses(i: int, j: int, form, op_class, arity, readers, matrix_readers, src, feeds=None) -> str:
    """Why consumer node ``j`` may not take in the kernel of its producer node ``i`` (views
    looked through), '' when it may.  Per node ``n``: ``form[n]`` (``reduce_form``),
    ``op_class[n]``, ``arity[n]`` (its input positions, literals counted), ``readers(n)``
    (launching nodes reading it, views looked through), ``matrix_readers(n)`` (how many of
    them are matrix nodes), ``src(n)`` (the launching producer of its first input, or None),
    ``feeds[n]`` (``feeds_of``; None: the third rule is not applied)."""
    if form[j] in ("emitter", "elemental") and matrix_readers(i):
        return "reduction beside a matrix kernel"
    hero = _hero(i, form, op_class, arity, src)
    one = arity[j] == 1 and (op_class[j] in _INTERMEDIATE or form[j] == "trivial")
    if hero is not None and (not one or len(readers(i)) > 1):
        return "reduction epilogue"
    if feeds is not None and feeds[i] and j not in feeds[i] and not feeds[i] & feeds[j]:
        return "reduction prologue"
    return ""


def _hero(i: int, form, op_class, arity, src) -> int | None:
    """The 'emitter' reduction whose result node ``i`` is, or reaches through ops of one
    input (unary elementwise ops, size-1 reductions), or None."""
    for _ in range(64):
        if form[i] == "emitter":
            return i
        if arity[i] != 1 or not (op_class[i] in _INTERMEDIATE or form[i] == "trivial"):
            return None
        i = src(i)
        if i is None:
            return None
    return None

