"""Two of XLA's GPU HLO rewrites that change how many kernels a dot or a reduction runs as, which
the ``xla`` plan applies on a GPU profile (``fusion.plan`` with ``fold_transposes``; the
lowering's rows, ``strength_rows``):

- **Dot strength reduction** (``DotStrengthReduction::InstructionMatchesPattern``,
  ``xla/service/gpu/transforms/dot_strength_reduction.cc``; ``GpuAlgebraicSimplifier::
  ShouldStrengthReduceDotToReduce`` before it): a dot one of whose operands is a vector (every
  dimension of size > 1 a batch or contracted one: the simplifier strips size-1 dimensions
  first) becomes ``reduce(multiply(broadcast(x), W))`` when both operands are vectors, or when
  ``IsMatrixMultiplicationTooSmallForRewriting(dot, 10^7)`` (``xla/service/gpu/matmul_utils.cc``):
  ``(M + N) x K < 10^7``, M and N the non-contracted sizes of the two operands (batch dimensions
  left out), K the contracted one.  (A dot Triton cannot handle is rewritten too: every float
  dot of the ``xla`` plan is taken as one it handles.)  So ``x[1, 1024] @ W[1024, 1024]``
  (``1025 x 1024 = 1.05e6``) runs as a reduction fusion and ``x[1, 4096] @ W[4096, 4096]``
  (``1.68e7``) as a GEMM.  Planned (``strength_reduced``, the ``gemv`` of
  ``fusion.FusionNode``): the dot is one kernel of class ``reduce`` (``strength_rows``): its
  multiply-adds are vector FLOPs (``2 M N K``), its bytes the dot's own (the matrix read once,
  the vector, the output).  Its elementwise producers join it as an operand prologue
  (``xla_gpu_joins``).
- **Tree reduction** (``TreeReductionRewriter``, ``xla/service/gpu/transforms/
  tree_reduction_rewriter.cc``, run to a fixed point; the bounds in
  ``xla/service/gpu/reduction_utils.cc``): XLA's reduction emitter writes each output element
  from one block, so a reduction the emitter runs (``IsReductionFromOrToContiguousDimensions``:
  its form is a row ``[B, K, R]`` or a column ``[K1, R, K2]`` reduction,
  ``GetReductionKindAndContiguousComponents``, and the emitter beats the elemental loop,
  ``xla_gpu_reduce``'s rule) that is not race free is split in two reductions, two kernels.
  Race free: a row reduction with ``R <= 1024 x 16`` (``MinThreadsXRowReduction`` x the row
  tile; 1024 with ptxas 12.2 or later) and ``B <= 8`` (``BatchedReductionRaceFreeBound``); a
  column reduction with ``R <= 32 x 128`` (warp x the column tile).  A row reduction with
  ``B > 8`` first reduces ``R`` (``[B x K]`` written), then ``B``; otherwise the last reduced
  dimension ``R`` is cut into ``k1 x k2`` (``ComputeSplitParams``: ``k2 ~ sqrt(R)`` at most the
  bound, the least padding, a power of 2 among equals, the two maybe swapped), the first kernel
  reducing ``k2`` and writing ``k1`` partials per output element, the second reducing ``k1``.
  Planned (``tree``, ``with_tree_launches``): a reduction node's first kernel writes the
  partials instead of its result, and each further stage is a launch of class ``reduce``
  carried by the node's kernel (``FusionPlan.extra_ops``), reading the stage before and
  writing its own output; the stages of each part split again while they are not race free.
  So ``sum(x)`` over ``2^22`` elements runs as ``[2048, 2048] -> [2048]`` then
  ``[2048] -> []``, and a column mean of ``[65536, 64]`` as ``[256, 256, 64] -> [256, 64]``
  then ``[256, 64] -> [64]`` (and the mean's scale apart, ``xla_gpu_reduce``).

Not planned: the tree split of a strength-reduced dot's own reduction (its orientation is the
operand layout's), the reductions of more alternating groups (``ReductionSplitter``), variadic
reductions (argmax), the padding the split adds (fused into the first kernel: no bytes); a
consumer the plan fused with a split reduction stays in the reduction's first kernel.
"""

from __future__ import annotations

import dataclasses
import math

from analyzer.prediction import scan_launches
from analyzer.prediction.efficiency import kernel_time as eff

# IsMatrixMultiplicationTooSmallForRewriting's threshold as DotStrengthReduction passes it
STRENGTH_REDUCE_ELEMENTS = 10_000_000
WARP = 32                      # threads per warp (WarpSize)
ROW_BOUND = 1024 * 16          # MinThreadsXRowReduction (ptxas >= 12.2) x row tile x
COLUMN_BOUND = WARP * 128      # warp x column tile y
BATCH_BOUND = 8                # BatchedReductionRaceFreeBound
# ops that are one HLO reduce of one operand (JAX primitives, ONNX ops)
TREE_OPS = frozenset({"reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
                      "reduce_xor", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                      "ReduceSumSquare", "ReduceL1", "ReduceL2"})
_REDUCE = eff.CLASS_CODE["reduce"]


def strength_reduced(m: float, n: float, k: float) -> bool:
    """Whether a dot of GEMM view ``m x n x k`` (batch left out) with ``m == 1`` or ``n == 1``
    is strength-reduced to a reduction (module docstring): both are 1, or ``(m + n) k < 10^7``."""
    if m != 1 and n != 1:
        return False
    return (m == 1 and n == 1) or (m + n) * k < STRENGTH_REDUCE_ELEMENTS


def as_reduce(row: tuple) -> tuple:
    """A ``kernel_rows`` row (MACs, vector FLOPs, transcendentals, bytes, weight bytes, runs,
    class code, view, dtype) as a strength-reduced dot's kernel: its MACs counted as vector
    FLOPs, class ``reduce``."""
    return (0.0, row[0] + row[1]) + row[2:6] + (_REDUCE,) + row[7:]


def strength_rows(rows: list, plan, fnodes) -> list:
    """``rows`` (one per kernel of ``plan``) with each kernel holding a strength-reduced dot
    (``FusionNode.gemv``) as ``as_reduce`` makes it."""
    return [as_reduce(r) if any(fnodes[i].gemv for i in m) else r for r, m in zip(rows, plan.members)]


def _dims(ins: tuple, kept: tuple):
    """XLA's ``ReductionDimensions`` (is_row, (d0, d1, d2)) of a reduction of shape ``ins``
    keeping axes ``kept`` (size-1 dimensions dropped, row-major layout), or None: more than
    three alternating groups (``ReductionSplitter``'s) or nothing reduced."""
    groups: list[list] = []   # [kept?, elements]
    for a, d in enumerate(ins):
        if d != 1:
            k = a in kept
            if groups and groups[-1][0] == k:
                groups[-1][1] *= d
            else:
                groups.append([k, d])
    kinds = tuple(g[0] for g in groups)
    size = [g[1] for g in groups]
    if False not in kinds or len(groups) > 3:
        return None
    if kinds == (False,):
        return True, (1, 1, size[0])
    if kinds == (True, False):
        return True, (1, size[0], size[1])
    if kinds == (False, True):
        return False, (1, size[0], size[1])
    if kinds == (False, True, False):
        return True, tuple(size)
    return False, tuple(size)   # (True, False, True)


def _emitter(is_row: bool, d: tuple) -> bool:
    """``IsUnnestedReductionFasterThanElemental`` (``xla_gpu_reduce.reduce_form``'s rule)."""
    if is_row:
        return d[2] >= WARP or WARP % d[2] == 0
    r, k = d[1], d[2]
    return not (r < WARP or (r < 2 * WARP and k < WARP) or (r < 4 * WARP and k < 8) or (r < 8 * WARP and k < 3))


def _race_free(is_row: bool, d: tuple) -> bool:
    return d[2] <= ROW_BOUND and d[0] <= BATCH_BOUND if is_row else d[1] <= COLUMN_BOUND


def split_params(n: int, bound: int, is_row: bool) -> tuple[int, int]:
    """``ComputeSplitParams``' (k1, k2) for a reduced dimension of ``n`` elements (the first
    kernel reduces ``k2``, the second ``k1``)."""
    k2 = min(math.isqrt(n), bound)
    pad = (k2 - n % k2) % k2
    k1 = (n + pad) // k2
    for i in range(k2 - 1, k2 // 2, -1):
        p = (i - n % i) % i
        if p < pad or (p == pad and i & (i - 1) == 0):
            pad, k1 = p, (n + p) // i
    k2 = (n + pad) // k1
    if _swap(k1, k2, n, bound, is_row):
        k1, k2 = k2, k1
    return k1, k2


def _swap(k1: int, k2: int, n: int, bound: int, is_row: bool) -> bool:
    """``ShouldSwapInnerAndOuterReducedMinorDimension``."""
    if k1 > bound:
        return False
    if not is_row:
        return True
    if k2 % 2 == 0 and n % 2 == 0:
        return k2 * 2 < k1 or k1 % 2 == 0
    return n % 2 == 0 or k1 % 2 != 0


def stages(is_row: bool, d: tuple) -> list[int]:
    """The elements each kernel of a reduction of ``ReductionDimensions`` (``is_row``, ``d``)
    writes, in launch order, the last its result (one kernel: ``[result]``)."""
    out = d[1] if is_row else d[0] * d[2]
    if not _emitter(is_row, d) or _race_free(is_row, d):
        return [out]
    if is_row and d[0] > BATCH_BOUND:
        outer = (False, (1, d[0], d[1])) if d[1] > 1 else (True, (1, 1, d[0]))
        return stages(True, (1, d[0] * d[1], d[2])) + stages(*outer)
    if is_row:
        k1, k2 = split_params(d[2], ROW_BOUND, True)
        return stages(True, (d[0], d[1] * k1, k2)) + stages(True, (1, d[1], k1))
    k1, k2 = split_params(d[1], COLUMN_BOUND, False)
    return stages(False, (d[0] * k1, k2, d[2])) + stages(False, (d[0], k1, d[2]))


def tree(op: str, ins, kept, out_bytes: int) -> tuple[int, ...]:
    """The bytes each kernel of a reduction node writes after the tree split (``stages``; its
    element size ``out_bytes`` / its result's elements), () when it is not split: ``op`` one
    of ``TREE_OPS``, input shape ``ins``, kept axes ``kept`` (``xla_gpu_reduce.kept_axes``)."""
    if op not in TREE_OPS or ins is None or kept is None or not all(type(x) is int for x in ins):
        return ()
    dims = _dims(tuple(ins), tuple(kept))
    if dims is None:
        return ()
    chain = stages(*dims)
    if len(chain) == 1 or not chain[-1]:
        return ()
    eb = out_bytes / chain[-1]
    return tuple(int(round(c * eb)) for c in chain)


def with_tree_launches(p, fnodes):
    """Plan ``p`` with each launching node's tree split (``FusionNode.tree``): its kernel writes
    the first stage's partials instead of the result (``saved_bytes`` less their difference)
    and carries one ``reduce`` launch per further stage (``extra_ops`` the node's op,
    ``extra_bytes`` the stage before read and its own output written); ``p`` itself when no
    node is split."""
    extra, saved = [], list(p.saved_bytes)
    for i, nd in enumerate(fnodes):
        k = p.kernel_of[i]
        if not nd.tree or k < 0:
            continue
        saved[k] -= nd.tree[0] - nd.tree[-1]
        extra += [(k, nd.op, a + b) for a, b in zip(nd.tree, nd.tree[1:])]
    if not extra:
        return p
    return scan_launches.add_launches(dataclasses.replace(p, saved_bytes=tuple(saved)), extra)
