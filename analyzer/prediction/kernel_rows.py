"""Per-node and per-kernel rows of a lowering: what each node and each kernel contributes, before
any profile is looked at (``lowering.lower`` turns the rows into arrays over profiles).

A node's fusion view (op class, bytes of each tensor it reads and writes, whether it launches),
its GEMM view and compute dtype are functions of the node's content alone, and so is the row of
a kernel that holds that node alone (the common kernel: under the ``none`` policy every kernel).
``kernel_rows`` memoises those rows across calls when the caller hands it ``keys``: one hashable
per node such that nodes of equal keys have equal content apart from their names (the search fast
path's node signatures, ``search.fastpath.signatures``); without keys every row is computed.
"""

from __future__ import annotations

import functools

import numpy as np

from analyzer.counting import kernel_words
from analyzer.counting.engine import FOLDED, NodeCost
from analyzer.ir.graph import DTYPE_BITS, FLOAT_DTYPES, PRECISION_BITS, WEIGHT_BITS
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction import dot_merge, fusion, xla_gpu_reduce
from analyzer.prediction.efficiency.op_classes import ATTENTION_OPS, CHANNELS_FIRST_CONV_OPS

RNN_OPS = frozenset({"RNN", "GRU", "LSTM"})   # recurrent layers: a GEMM view of one piece per step

ROWS_CAP = 200_000   # memoised kernel rows kept at most (cleared when full: fused sets vary)

# IR dtype -> profile dtype key
PROFILE_DTYPE = {
    "float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16",
    "float8e4m3fn": "fp8", "float8e4m3fnuz": "fp8", "float8e5m2": "fp8", "float8e5m2fnuz": "fp8",
    "float4e2m1": "fp4", "int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4",
}
# PRECISION_BITS (bits a floating tensor is stored in under each precision) is the IR's table,
# imported above: lowering and the search read it from here too


def compute_dtype(n: NodeCost, precision: str | None) -> str:
    dt = n.mac_dtype or next((o.dtype for o in n.out_specs if o is not None), "float32")
    if precision and dt in FLOAT_DTYPES:
        return precision
    return PROFILE_DTYPE.get(dt, "fp32")



def node_bytes(n: NodeCost, precision: str | None) -> float:
    """``n``'s bytes under ``precision``: every floating tensor at ``PRECISION_BITS[precision]``
    bits an element (integer ones as they are); a precision whose weights are narrower
    (``WEIGHT_BITS``: w8a16, weights 8 bits, activations 16) takes its floating weight bytes at
    their own width: ``bytes = Σ_dtype b x bits / dtype_bits - weight_bytes x (bits - w_bits) /
    weight_dtype_bits`` (``weight_float_bits``)."""
    if precision is None:
        return float(n.cost.bytes_moved)
    bits = PRECISION_BITS[precision]
    total = float(sum(b * bits / DTYPE_BITS[d] if d in FLOAT_DTYPES else b for d, b in n.bytes_by_dtype))
    wbits = weight_float_bits(n) if precision in WEIGHT_BITS else 0
    return total - n.cost.weight_bytes * (bits - WEIGHT_BITS[precision]) / wbits if wbits else total


def weight_float_bits(n: NodeCost) -> int:
    """Bits of one element of ``n``'s weights where they are floating: the dtype of its largest
    floating constant input (``constant_inputs``); 0 where it has none (integer weights, such as a
    quantized graph's, keep their bytes under every precision)."""
    specs = [n.in_specs[i] for i in n.constant_inputs if i < len(n.in_specs)]
    floats = [s for s in specs if s is not None and s.dtype in FLOAT_DTYPES]
    if not floats:
        return 0
    return DTYPE_BITS[max(floats, key=lambda s: s.nbytes() or 0).dtype]


def weight_part(n: NodeCost, nbytes: float, precision: str | None) -> float:
    """``n``'s weight bytes under ``precision`` (``nbytes``: all its bytes under it): the weights'
    share of its bytes as counted, or under a ``WEIGHT_BITS`` precision its floating weights at
    that width (``weight_bytes x w_bits / weight_dtype_bits``, at most ``nbytes``)."""
    c = n.cost
    wbits = weight_float_bits(n) if precision in WEIGHT_BITS else 0
    if not wbits:
        return c.weight_bytes * nbytes / max(c.bytes_moved, 1)
    return min(c.weight_bytes * WEIGHT_BITS[precision] / wbits, nbytes)


def _spec_bytes(spec, precision: str | None) -> int:
    if spec is None:
        return 0
    nb = spec.nbytes()
    if precision is not None and spec.dtype in FLOAT_DTYPES:
        return nb * PRECISION_BITS[precision] // DTYPE_BITS[spec.dtype]
    return nb


def _io_bytes(specs, counted: int, precision: str | None) -> tuple[int, ...]:
    """Bytes of each of a node's input or output ``specs`` under ``precision``.  A tensor whose size
    is data-dependent (NonZero's or NonMaxSuppression's output, and what reads it: a dim shape
    inference derives, ``unk__N``, that no option binds) takes an even share of what the node's
    rule counts (``counted``: its activation bytes read, or written; an upper bound its note
    states) less the sized tensors' bytes."""
    sized = [None if s is not None and s.unresolved else _spec_bytes(s, precision) for s in specs]
    if None not in sized:
        return tuple(sized)
    rest = max(counted - sum(b for b in sized if b is not None), 0) // sized.count(None)
    return tuple(rest if b is None else b for b in sized)


def _launches(n: NodeCost) -> bool:
    return n.status != FOLDED and bool(n.cost.flops or n.cost.bytes_moved)


def fusion_nodes(nodes: list[NodeCost], precision: str | None, memo: dict | None = None,
                 keys=None) -> tuple[list[fusion.FusionNode], list[float]]:
    """(the ``FusionNode`` of each node, each node's bytes under ``precision``)."""
    # the op class and byte tuples of a node, once per (op, specs, has-MACs) (repeated blocks;
    # ``memo``: a caller's dict kept across calls: a search's candidates repeat the same nodes);
    # with ``keys`` (see the module docstring) all of a node but its names, once per key
    memo = {} if memo is None else memo
    out = []
    nbytes = []
    FN = fusion.FusionNode
    for i, n in enumerate(nodes):
        key = (keys[i], precision) if keys is not None else \
            (n.op, n.domain, n.in_specs, n.out_specs, bool(n.cost.mac_flops), n.kernel, precision)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (node_op_class(n),
                               _io_bytes(n.in_specs, n.cost.activation_bytes_read, precision),
                               _io_bytes(n.out_specs, n.cost.activation_bytes_written, precision),
                               _launches(n), frozenset(n.constant_inputs),
                               node_bytes(n, precision) if keys is not None else None, _matrix2d(n),
                               dot_merge.dot_form(n.op, n.domain, n.in_specs, n.out_specs, n.cost.mac_flops, n.kernel),
                               _gemv(n), _reduce_form(n))
        out.append(FN(n.op, n.domain, hit[0], n.level, n.in_names, n.out_names, hit[1], hit[2],
                      _launches(n) if keys is None else hit[3],
                      frozenset(n.constant_inputs) if keys is None else hit[4], n.name, n.loop_io, n.kernel,
                      hit[6], hit[7], hit[8], hit[9]))
        nbytes.append(node_bytes(n, precision) if keys is None else hit[5])
    return out, nbytes


def _gemv(n: NodeCost) -> bool:
    """Whether ``n`` is a dot (JAX ``dot_general``, ONNX ``MatMul`` / ``Gemm``) whose GEMM view
    has m = 1 or n = 1: one operand has no dimension of size > 1 besides the contracted and
    batch ones (``fusion.FusionNode.gemv``, ``xla_gpu_joins``)."""
    if n.op not in ("dot_general", "MatMul", "Gemm") or not n.cost.mac_flops:
        return False
    m, nn = gemm_view(n)[:2]
    return m == 1.0 or nn == 1.0


def _reduce_form(n: NodeCost) -> str:
    """``xla_gpu_reduce.reduce_form`` of ``n`` from its first input's and output's shapes."""
    a = n.in_specs[0] if n.in_specs else None
    b = n.out_specs[0] if n.out_specs else None
    return xla_gpu_reduce.reduce_form(node_op_class(n), a.shape if a is not None else None,
                                      b.shape if b is not None else None)


def _matrix2d(n: NodeCost) -> bool:
    """Whether ``n``'s first two inputs (one, for a transpose) and first output are rank-2
    tensors (``fusion.FusionNode.matrix2d``)."""
    specs = n.in_specs[:2] + n.out_specs[:1]
    return bool(n.in_specs and n.out_specs) and all(s is not None and s.shape is not None and len(s.shape) == 2 for s in specs)


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
    x, o = _shape(n.in_specs[0]), _shape(n.out_specs[0])
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
    w, r = _shape(n.in_specs[1]), _shape(n.in_specs[2])
    if not w or not r or len(w) != 3 or len(r) != 3 or not w[2] or not r[2]:
        return 0.0
    return float(n.cost.mac_flops) * r[2] / (w[2] + r[2])


def node_view(n: NodeCost) -> tuple:
    """A node's view as its kernel row carries it and the CPU fit reads it: (m, n, k, batch) of
    ``gemm_view``, ``strided_conv``, ``serial_flops``."""
    return tuple(gemm_view(n)[:4]) + (strided_conv(n), serial_flops(n))


def _shape(spec) -> tuple | None:
    if spec is None or spec.shape is None:
        return None
    return tuple(d if type(d) is int else None for d in spec.shape)


def node_op_class(n: NodeCost) -> str:
    batched = False
    if n.cost.mac_flops and n.op in ("MatMul", "dot_general"):
        batched = gemm_view(n)[4]
    x = _shape(n.in_specs[0]) if n.in_specs else None
    # (a JAX convolution's weight shape is in its dimension numbers' order: its rule names its kind)
    w = _shape(n.in_specs[1]) if len(n.in_specs) > 1 and n.op not in RULE_NAMED_CONV_OPS else None
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


def member_part(n: NodeCost, fnode: fusion.FusionNode, nbytes: float, precision: str | None):
    """What a fused kernel's row takes of one member: (MAC FLOPs, vector FLOPs,
    transcendentals, FLOPs, bytes under the precision, weight bytes of those, launches, op
    class, GEMM view (m, n, k, batch, strided: ``strided_conv``, ``serial_flops``), compute dtype)."""
    c = n.cost
    return (c.mac_flops, c.vector_flops, c.transcendentals, c.flops, nbytes,
            weight_part(n, nbytes, precision), max(1, getattr(n, "runs", 1)),
            fnode.op_class, node_view(n), compute_dtype(n, precision))


def fused_row(parts, saved: float, kop: str = "") -> tuple:
    """The row of a kernel of one or more members (``member_part`` each, graph order) that does not
    move ``saved`` bytes: the members' sums per launch, its class, GEMM view and dtype taken
    from its heaviest member (MACs, then FLOPs, then bytes; the first of equals).  Dots merged
    into one (``kop`` one of ``dot_merge.KOPS``) are one GEMM of the merged shape: the heaviest
    member's view with the members' n summed (they share their first operand) or their m
    (they share their second)."""
    mac, vec, trans, flops, nbytes, wbytes, runs = list(zip(*parts))[:7]
    # the heaviest member; of equals the first (-j: the larger, the earlier)
    a = parts[-max(zip(mac, flops, nbytes, range(0, -len(parts), -1)))[3]]
    r = max(1, max(runs))
    view = a[8]
    if kop in dot_merge.KOPS:
        j = 1 if kop == dot_merge.KOPS[0] else 0
        view = view[:j] + (float(sum(p[8][j] for p in parts)),) + view[j + 1:]
    return (sum(mac) / r, sum(vec) / r, sum(trans) / r, max(0.0, sum(nbytes) - saved) / r,
            sum(wbytes) / r, r, eff.CLASS_CODE[kernel_class(a[7], kop)], view, a[9])


def kernel_rows(nodes: list[NodeCost], plan: fusion.FusionPlan, fnodes, nbytes: list[float],
                precision: str | None, memo: dict | None = None, keys=None):
    """``(rows, member weight [N])``: per kernel of ``plan`` the tuple (MAC FLOPs, vector FLOPs,
    transcendentals, bytes, weight bytes, each per launch; launches, op class code, GEMM view
    (m, n, k, batch, strided, serial FLOPs), compute dtype).  A kernel of one member is one node's row (memoised per
    key with ``keys`` and ``memo``); a fused kernel sums its members, less its saved bytes, and
    takes its class, view and dtype from its heaviest member (memoised per members' keys in
    order, saved bytes and op)."""
    weight = np.zeros(len(nodes))
    saved_bytes, kernel_ops = plan.saved_bytes, plan.kernel_ops
    cache = memo.setdefault(("rows", precision), {}) if keys is not None and memo is not None \
        else None
    if cache is not None and len(cache) > ROWS_CAP:
        cache.clear()
    rows = []
    for k, members in enumerate(plan.members):
        kop = kernel_ops[k] if kernel_ops else ""
        if len(members) == 1:  # (the common kernel: the general form below, one member)
            i = members[0]
            weight[i] = 1.0
            rk = (keys[i], saved_bytes[k], kop) if cache is not None else None
            row = cache.get(rk) if rk is not None else None
            if row is None:
                row = fused_row([member_part(nodes[i], fnodes[i], nbytes[i], precision)],
                                saved_bytes[k], kop)
                if rk is not None:
                    cache[rk] = row
        else:
            rk = (tuple([keys[i] for i in members]), saved_bytes[k], kop) \
                if cache is not None else None
            hit = cache.get(rk) if rk is not None else None
            if hit is not None:
                row, shares = hit
                for i, w in zip(members, shares):
                    weight[i] = w
                rows.append(row)
                continue
            row = fused_row([member_part(nodes[i], fnodes[i], nbytes[i], precision)
                             for i in members], saved_bytes[k], kop)
            tot = sum(nodes[i].cost.flops + nbytes[i] for i in members) or 1.0
            for i in members:
                weight[i] = (nodes[i].cost.flops + nbytes[i]) / tot
            if rk is not None:
                cache[rk] = (row, tuple(weight[i] for i in members))
        rows.append(row)
    return rows, weight


def main_dtype(anchor_dtype, mac_l, vec_l, trans_l, bytes_l) -> str:
    """The dtype that carries most of the work (FLOPs + bytes): a prediction's label without an
    override."""
    w: dict[str, float] = {}
    for d, m, v, t, b in zip(anchor_dtype, mac_l, vec_l, trans_l, bytes_l):
        w[d] = w.get(d, 0.0) + (m + v + t) + b
    return max(w, key=w.get) if w else "fp32"
