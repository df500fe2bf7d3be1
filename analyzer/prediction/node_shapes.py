"""What a node's shapes and counts say about its work, before any profile is looked at: its GEMM
view (``gemm_view``: m, n, k, batch of its matrix work), whether it is a strided convolution
(``strided_conv``), its recurrent FLOPs (``serial_flops``), and its op class (``node_op_class``,
which reads the view's batched flag; ``kernel_class``: a runtime-recorded kernel's class). Every
function here is of one node's content alone; ``kernel_rows`` builds the rows of a lowering from
them (imports run one way: this module imports nothing of ``kernel_rows``).
"""

from __future__ import annotations

import functools

import numpy as np

from analyzer.counting import kernel_words
from analyzer.counting.engine import NodeCost
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency.op_classes import ATTENTION_OPS, CHANNELS_FIRST_CONV_OPS

RNN_OPS = frozenset({"RNN", "GRU", "LSTM"})   # recurrent layers: a GEMM view of one piece per step

def gemm_view(n: NodeCost) -> tuple[float, float, float, float, bool]:
    """(m, n, k, batch, batched) of a matrix node's work, from its specs and mac count."""
    if not n.cost.mac_flops:
        return 0.0, 0.0, 0.0, 0.0, False
    return _gemm_view_of(n.op, n.in_specs, n.out_specs, n.cost.mac_flops, n.cost.transcendentals,
                         out_feature(n.kernel))


def out_feature(kernel: str | None) -> int:
    """The output's feature dim a convolution's rule names (``Work.kernel`` word ``out_feature=D``:
    a JAX convolution whose dimension numbers put it elsewhere than dim 1, NHWC's 3), else 1 (NCHW,
    ONNX's layout)."""
    return int(kernel_words.value(kernel, "out_feature") or 1)


def _heads(trans: int, b: int, s: int, hidden: int) -> int:
    """An attention's heads from its softmax's exps (one per score: batch x heads x pairs, full
    or causal; ``counting.rules.onnx.attention.sdpa``); 1 where they do not divide out."""
    for pairs in (s * s, s * (s + 1) // 2):
        h, r = divmod(trans, b * pairs) if b * pairs else (0, 1)
        if not r and h >= 1 and hidden % h == 0:
            return h
    return 1


@functools.lru_cache(maxsize=4096)
def _gemm_view_of(op: str, in_specs, out_specs, mac_flops: int, trans: int = 0, feature: int = 1):
    """``_gemm_view`` of hashable parts (repeated blocks share them: computed once); ``feature``: a
    convolution's output feature dim (``out_feature``)."""
    ins = [s for s in in_specs if s is not None]
    out = next((s for s in out_specs if s is not None), None)
    try:
        if op == "dot_general" and len(ins) >= 2 and ins[0].rank and ins[1].rank and out is not None:
            view = dot_general_view(tuple(ins[0].dims()), tuple(ins[1].dims()), tuple(out.dims()), mac_flops)
            if view is not None:
                return view
        if op in ("MatMul", "dot_general", "FusedMatMul") and len(ins) >= 2 and ins[0].rank and ins[1].rank:
            m, nn, k, b, batched = eff.gemm_view(ins[0].dims(), ins[1].dims())
            if op == "FusedMatMul":   # (its transB is not in the specs: k from A, n from the count)
                k = ins[0].dims()[-1]
                nn = mac_flops / (2.0 * m * k * b) if m and k and b else 0.0
            return float(m), float(nn), float(k), float(b), batched
        if op in RNN_OPS and len(ins) >= 3 and ins[0].rank == 3 and ins[1].rank == 3 and ins[2].rank == 3:
            # one piece per step and direction, in turn (cpu_model.PIECE_CLASSES): B rows of
            # [I + H] x [G*H]. Y is [T, dirs, B, H] (layout 0) or [B, T, dirs, H]; without Y, layout 0
            dirs, gh, i = ins[1].dims()
            y = out.dims() if out is not None and out.rank == 4 else None
            t, b = ((y[0], y[2]) if y[1] == dirs else (y[1], y[0])) if y else ins[0].dims()[:2]
            return float(b), float(gh), float(i + ins[2].dims()[2]), float(t * dirs), False
        if out is not None and out.rank and out.rank >= 2:
            d = out.dims()
            if op in CHANNELS_FIRST_CONV_OPS:
                nn = float(d[feature])   # NCHW (feature 1): rows = N x spatial; NHWC (3) the same rows
                m = float(int(np.prod(d)) // d[feature])
            elif op in ATTENTION_OPS and out.rank >= 3:
                # one piece per batch item and head (the kernel loops over them:
                # cpu_model.PIECE_CLASSES); a [B, S, hidden] output's heads from its exps
                b = float(int(np.prod(d[:-2])) * (_heads(trans, d[0], d[1], d[2]) if out.rank == 3 else 1))
                m, nn = float(d[-2]), float(d[-1])
                return m, nn, mac_flops / (2.0 * m * nn * b) if m and nn else 0.0, b, False
            else:
                m = float(int(np.prod(d[:-1])))
                nn = float(d[-1])
            k = mac_flops / (2.0 * m * nn) if m and nn else 0.0
            return m, nn, k, 1.0, False
    except Exception:  # noqa: BLE001  (an unresolved dim: no view, the padded-work term is off)
        pass
    return 0.0, 0.0, 0.0, 0.0, False


def dot_general_view(lhs: tuple, rhs: tuple, out: tuple, mac_flops: int):
    """(m, n, k, batch, batched) of a ``dot_general`` from its shapes and MAC count (its dimension
    numbers are not in the specs): the output is batch + lhs free + rhs free dims, so ``batch + 2
    contracting = rank(lhs) + rank(rhs) - rank(out)``; of the splits whose sizes agree (batch x
    free x contracted elements of each operand, and the MACs), the one with the fewest batch dims:
    m and n the products of the free dims, k of the contracted ones. Read as ONNX's MatMul (batch
    dims broadcast, the last two the matrix), a weight gradient ``x^T g`` of x [8, 784] and
    g [8, 256] was a 8 x 256 x 8 product: 0.01 us of tensor-core work on an A100 for its 3.2
    MFLOP (1 us for the forward product with the same MACs). None where no split agrees (then
    the MatMul reading stands)."""
    rl, rr, ro = len(lhs), len(rhs), len(out)
    for nb in range(0, min(rl, rr) + 1):
        two_nc = rl + rr - ro - nb
        if two_nc < 0 or two_nc % 2:
            continue
        nc = two_nc // 2
        nl, nr = rl - nb - nc, rr - nb - nc
        if nl < 0 or nr < 0 or nb + nl + nr != ro:
            continue
        b = int(np.prod(out[:nb], dtype=np.int64))
        m = int(np.prod(out[nb:nb + nl], dtype=np.int64))
        n = int(np.prod(out[nb + nl:], dtype=np.int64))
        if not b or not m or not n:
            continue
        k, r = divmod(int(np.prod(lhs, dtype=np.int64)), b * m)
        if r or b * n * k != int(np.prod(rhs, dtype=np.int64)) or 2 * b * m * n * k != mac_flops:
            continue
        return float(m), float(n), float(k), float(b), b > 1
    return None


def strided_conv(n: NodeCost) -> float:
    """1.0 for a channels-first convolution with a stride above 1 in some spatial dim, else 0.0
    (``efficiency.class_fixed_s``'s strided im2col). The stride is not in the specs: a dim is
    taken as strided where its output is shorter than its input and at most half of it,
    ``o < i`` and ``2 o <= i + 1``. A stride of 1 gives ``o >= i - d (k - 1)`` (pads >= 0): the
    rule holds for every pad and dilation except a stride-1 conv whose unpadded window
    ``d (k - 1)`` spans half its input or more, whose im2col is that small."""
    if n.op not in CHANNELS_FIRST_CONV_OPS or not n.in_specs or not n.out_specs:
        return 0.0
    x, o = static_shape(n.in_specs[0]), static_shape(n.out_specs[0])
    if not x or not o or len(x) != len(o) or len(x) < 3:
        return 0.0
    return float(any(a and b and b < a and 2 * b <= a + 1 for a, b in zip(x[2:], o[2:])))


def serial_flops(n: NodeCost) -> float:
    """The FLOPs of a recurrent layer's (RNN, GRU, LSTM) recurrent products: each step's product
    with the previous hidden state waits for the step before it, a chain of small matrix-vector
    products, while the input products of all steps form one GEMM. ``mac * H / (I + H)`` with I
    and H from its weights W ``[dirs, G*H, I]`` and R ``[dirs, G*H, H]``
    (``counting.rules.onnx.recurrent``); 0 for any other node."""
    if n.op not in RNN_OPS or n.domain not in ("", "ai.onnx") or len(n.in_specs) < 3:
        return 0.0
    w, r = static_shape(n.in_specs[1]), static_shape(n.in_specs[2])
    if not w or not r or len(w) != 3 or len(r) != 3 or not w[2] or not r[2]:
        return 0.0
    return float(n.cost.mac_flops) * r[2] / (w[2] + r[2])


def node_view(n: NodeCost) -> tuple:
    """A node's view as its kernel row carries it and the CPU fit reads it: (m, n, k, batch) of
    ``gemm_view``, ``strided_conv``, ``serial_flops``."""
    return tuple(gemm_view(n)[:4]) + (strided_conv(n), serial_flops(n))


def static_shape(spec) -> tuple | None:
    """``spec``'s shape with each symbolic dim as None; None where the spec or its shape is."""
    if spec is None or spec.shape is None:
        return None
    return tuple(d if type(d) is int else None for d in spec.shape)


def node_op_class(n: NodeCost) -> str:
    """``n``'s op class (``efficiency.op_classes``): its op's, a dot batched by its GEMM view, a
    long softmax row's block kernel, the kind a counting rule names, a grouped convolution."""
    batched = False
    if n.cost.mac_flops and n.op in ("MatMul", "dot_general"):
        batched = gemm_view(n)[4]
    x = static_shape(n.in_specs[0]) if n.in_specs else None
    # (a JAX convolution's weight shape is in its dimension numbers' order: its rule names its kind)
    w = static_shape(n.in_specs[1]) if len(n.in_specs) > 1 and n.op not in RULE_NAMED_CONV_OPS else None
    cls = eff.op_class_of(n.domain, n.op, batched=batched, conv_input=x, conv_weight=w)
    if cls == "softmax" and int(kernel_words.value(n.kernel, "row") or 0) > eff.SOFTMAX_WARP_ROW:
        return "softmax_block"   # a long row: the block-per-row kernel (op_classes.SOFTMAX_WARP_ROW)
    word = kernel_words.head(n.kernel)
    if word in KERNEL_CLASSES and cls in ("gemm", "conv"):
        return KERNEL_CLASSES[word]   # the rule's word (a JAX convolution's groups, a dot's form)
    if cls == "conv":
        if n.op in GROUPED_BY_SHAPE_OPS and grouped_by_shape(x, w):
            return "conv_grouped"
    return cls


# the class of a kernel a counting rule names (``Work.kernel``)
KERNEL_CLASSES = {"grouped": "conv_grouped", "batch_grouped": "conv_batch_grouped", "depthwise": "conv_dw",
                  "pointwise": "conv_1x1", "lhs_transposed": "gemm_tn"}
# convolutions whose rule names their kind (``counting.rules.jax.linear.conv_kind``) where the
# weight's shape cannot: an HWIO [1, 1, I, O] or [3, 1, I, O] read as OIHW has one input channel
# (depthwise) and a 1x1 kernel only where I = O = 1
RULE_NAMED_CONV_OPS = frozenset({"conv_general_dilated"})
# convolutions whose weight is [M, C/group, k...] (not ConvTranspose's [C, M/group, k...], nor a
# JAX convolution's, whose dimension numbers may order it [I, O, k...]: its rule says instead)
GROUPED_BY_SHAPE_OPS = CHANNELS_FIRST_CONV_OPS - {"ConvTranspose", "conv_general_dilated"}


def grouped_by_shape(x, w) -> bool:
    """A convolution of ``GROUPED_BY_SHAPE_OPS`` with groups of more than one input channel and
    fewer than all: its weight [M, C/group, k...] has fewer input channels than its input
    [N, C, ...] has."""
    if not x or not w or len(x) < 3 or len(w) < 3 or x[1] is None or w[1] is None:
        return False
    return 1 < w[1] < x[1] and x[1] % w[1] == 0


def kernel_class(anchor_class: str, kernel_op: str) -> str:
    """The class of a kernel the runtime recorded as ``kernel_op`` (e.g. LayerNormalization for a
    decomposed norm, SkipLayerNormalization for Add + norm) whose heaviest original node is of
    ``anchor_class``: the recorded op's class, except where the anchor's is a refinement of it
    (``op_classes.REFINES``: bgemm, conv variants) or the op is unknown. (A fallback is not a
    refinement: a decomposed norm whose heaviest node is a ReduceMean runs the norm kernel.)"""
    if not kernel_op:
        return anchor_class
    k = eff.op_class_of("", kernel_op)
    if k == "other" or k == anchor_class or eff.REFINES.get(anchor_class) == k \
            or {k, anchor_class} <= {"gemm", "bgemm"}:
        return anchor_class
    return k
