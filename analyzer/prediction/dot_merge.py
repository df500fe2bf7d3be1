"""XLA's GPU ``DotMerger`` in the ``xla`` plan: dots that share an operand run as one dot.

XLA's GPU compiler runs ``DotMerger`` in its fixed-point simplification pipeline, after
``DotDimensionSorter`` and ``DotDecomposer`` and before ``TransposeFolding``, with
``max_size_to_merge = xla_gpu_dot_merger_threshold_mb << 20`` and a ``can_merge`` that keeps
apart dots of different stream ids (``RunOptimizationPasses``, ``xla/service/gpu/gpu_compiler.cc``).
The pass (``MergeDots``, ``TryMergeOperand``, ``TryMergeSameOperand``,
``xla/hlo/transforms/simplifiers/dot_merger.cc``) groups the dots by each operand they read;
in each class, in instruction order, it tries every pair (the dot made by a merge takes the
first one's place), and merges a pair when neither reaches the other, at least one of them is
a candidate (its result and operands take at most ``max_size_to_merge`` bytes) and they read
the same operand at the same side with equal element types and dimension numbers.  The merged
dot reads the shared operand and the concatenation of the two others along their
non-contracting dimension; slices of its result replace the two dots.

Planned here (``groups``), on the nodes whose dimension numbers their shapes fix (``dot_form``:
a JAX ``dot_general`` or an ONNX ``MatMul`` of ``a [..., K]`` contracted over its last
dimension and a rank-2 ``b``; after ``DotDecomposer`` every such dot has the same canonical
dimension numbers for each way ``b`` is contracted), the pass's order, its candidate size and
its reachability test (a merged group reaches what any member reaches, and what reaches a
member reaches the group's results).  The merged dots are one kernel, priced as one GEMM of
the merged shape (``KOPS``: ``kernel_rows.fused_row`` sums the members' ``n`` when they share
``a``, their ``m`` when they share ``b``), reading the shared operand once.

Not planned: the concatenation (of constants it is folded at compile time; of program inputs
it is an operand a Triton GEMM fusion reads in place, or a copy of its own when the GEMM
autotuner keeps the cuBLAS fallback, which its device timings decide) and the slices (a slice
read by a loop fusion fuses into it; one that is a program result or a GEMM's operand is a copy
the plan does not count).  Not implemented: ``TryMergeLHSWithRHSOperand`` (an operand shared
at different sides through a transpose), dots with batch dimensions or a second operand of
another rank, ``Gemm``, sparsity; operand precisions, layouts and stream ids are taken equal,
and the pipeline's later fixed-point rounds are not replayed.
"""

from __future__ import annotations

from math import prod

from analyzer.counting import kernel_words
from analyzer.prediction.fusion_legality import reach_bitsets

# ``xla_gpu_dot_merger_threshold_mb`` as installed jaxlib 0.10.2 sets it (its DebugOptions,
# ``jax._src.compiler.get_compile_options(...).executable_build_options.debug_options``: 64;
# openxla's ``debug_options_flags.cc`` read at an earlier commit sets 32), in bytes (``<< 20``)
THRESHOLD_BYTES = 64 << 20
# a merged kernel's op (``FusionPlan.kernel_ops``): the members share their first operand (the
# merged GEMM's n is their sum) or their second (its m is)
KOPS = ("DotMerger:n", "DotMerger:m")
_DOTS = frozenset({("jax", "dot_general"), ("", "MatMul")})


def dot_form(op: str, domain: str, in_specs, out_specs, mac_flops: int, kernel: str | None) -> str | None:
    """The key two dots must share to merge apart from their operand (``groups``): their
    canonical dimension numbers (``t``: the rank-2 ``b`` contracted over its dim 1, told by the
    shapes or, for a square ``b``, by the ``rhs_transposed`` word of a JAX dot's rule, while
    ``a`` has rank 2 or less: such a dot is canonical and ``DotDecomposer`` leaves it; ``n``
    any other, which it leaves or rewrites as ``[M, K] x [K, N]``: ``IsCanonical``,
    ``CanonicalizeDot``) and the three dtypes; None for a node that is no such dot."""
    words = kernel_words.words(kernel)
    if (domain, op) not in _DOTS or not mac_flops or len(in_specs) < 2 or not out_specs or "lhs_transposed" in words:
        return None
    a, b, o = in_specs[0], in_specs[1], out_specs[0]
    if a is None or b is None or o is None or None in (a.shape, b.shape, o.shape):
        return None
    if not all(type(d) is int for d in (*a.shape, *b.shape, *o.shape)) or len(b.shape) != 2 or not a.shape:
        return None
    t = "rhs_transposed" in words if b.shape[0] == b.shape[1] else b.shape[1] == a.shape[-1]
    k, n = (b.shape[1], b.shape[0]) if t else b.shape
    if a.shape[-1] != k or tuple(o.shape) != tuple(a.shape[:-1]) + (n,) or mac_flops != 2 * prod(o.shape) * k:
        return None
    return f"{'t' if t and len(a.shape) <= 2 else 'n'} {a.dtype} {b.dtype} {o.dtype}"


def of_nodes(nodes, preds, get) -> list[tuple[int, ...]]:
    """``groups`` of ``fusion.FusionNode``s (a dot that launches nothing is no candidate);
    ``preds()``: each node's producers, ``get((level, tensor))``: a tensor's producer."""
    forms = [nd.dot_form if nd.launches else None for nd in nodes]
    if sum(f is not None for f in forms) < 2:
        return []
    return groups([nd.level for nd in nodes], [nd.inputs for nd in nodes], forms,
                  [nd.input_bytes[:2] + nd.output_bytes[:1] for nd in nodes], preds(),
                  lambda level, t: get((level, t)))


def groups(levels, inputs, forms, io, preds, producer_of, threshold: int | None = None) -> list[tuple[int, ...]]:
    """The groups ``DotMerger`` merges, each ``(side, first member, other members...)`` in graph
    order (``side``: the position, 0 or 1, of the operand they share).  Per node ``j``:
    ``levels[j]`` its graph level, ``inputs[j]`` its input names, ``forms[j]`` its ``dot_form``
    (None: no candidate), ``io[j]`` the bytes of its two operands and its result, ``preds[j]``
    its producers (graph order is topological); ``producer_of(level, tensor)``: the node that
    makes a tensor, None for a graph input or constant (those come first: XLA numbers its
    parameters first); ``threshold``: ``max_size_to_merge`` (None: ``THRESHOLD_BYTES``)."""
    threshold = THRESHOLD_BYTES if threshold is None else threshold
    classes: dict[tuple[str, str], list[int]] = {}
    for j, f in enumerate(forms):
        if f is not None:
            for t in dict.fromkeys(inputs[j][:2]):
                if t:
                    classes.setdefault((levels[j], t), []).append(j)
    keys = [c for c, js in classes.items() if len(js) > 1]
    if not keys:
        return []
    made = {c: producer_of(*c) for c in keys}
    keys.sort(key=lambda c: (-1 if made[c] is None else made[c], classes[c][0]))
    reach, dead, out = _Reach(preds), set(), []
    for c in keys:
        slots = [[None, j] for j in classes[c]]   # [shared side (None: not merged yet), members...]
        for i, s in enumerate(slots):
            if s is None or (s[1] in dead and s[0] is None):
                continue
            for jj in range(i + 1, len(slots)):
                b = slots[jj][1] if slots[jj] is not None else None
                side = None if b is None or b in dead else _side(s, b, inputs, forms, io, threshold, reach)
                if side is None:
                    continue
                reach.merge(s[1:], b)
                s[0] = side
                s.append(b)
                dead.update(s[1:])
                slots[jj] = None
            if s[0] is not None:
                out.append(tuple(s))
    return sorted(out, key=lambda g: g[1])


def _side(s: list, b: int, inputs, forms, io, threshold: int, reach: "_Reach") -> int | None:
    """The side of the operand group ``s`` (``[side or None, members...]``) and dot ``b`` share
    when ``TryMergeOperand`` merges them, else None: the same form, the same operand at the same
    side (the first side when they share both), one of the two a candidate, neither reaching
    the other."""
    a = s[1]
    if forms[a] != forms[b]:
        return None
    sides = (s[0],) if s[0] is not None else (0, 1)
    side = next((p for p in sides if inputs[a][p] == inputs[b][p]), None)
    if side is None:
        return None
    size = io[a][side] + sum(io[m][1 - side] + io[m][2] for m in s[1:])
    if size > threshold and sum(io[b]) > threshold:
        return None
    return None if reach.related(s[1:], b) else side


class _Reach:
    """Reachability between nodes over the data edges (bitsets of ancestors and descendants),
    kept closed as ``DotMerger``'s graph adds a merged dot: every ancestor of a member reaches
    every descendant of every member."""

    def __init__(self, preds):
        self.anc, self.desc = reach_bitsets(preds)

    def related(self, members, b: int) -> bool:
        bits = sum(1 << m for m in members)
        return bool((self.anc[b] | self.desc[b]) & bits)

    def merge(self, members, b: int) -> None:
        group = [*members, b]
        bits = sum(1 << m for m in group)
        up, down = bits, bits
        for m in group:
            up |= self.anc[m]
            down |= self.desc[m]
        for x in _bits(up & ~bits):
            self.desc[x] |= down
        for y in _bits(down & ~bits):
            self.anc[y] |= up
        for m in group:
            self.anc[m] |= up & ~bits
            self.desc[m] |= down & ~bits


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low
