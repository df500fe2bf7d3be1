"""Per-node and per-kernel rows of a lowering: what each node and each kernel contributes, before
any profile is looked at (``lowering.lower`` turns the rows into arrays over profiles).

A node's fusion view (op class, bytes of each tensor it reads and writes, whether it launches),
its GEMM view (``node_shapes``) and compute dtype are functions of the node's content alone, and so is the row of
a kernel that holds that node alone (the common kernel: under the ``none`` policy every kernel).
``kernel_rows`` memoises those rows across calls when the caller hands it ``keys``: one hashable
per node such that nodes of equal keys have equal content apart from their names (the search fast
path's node signatures, ``search.fastpath.signatures``); without keys every row is computed.
"""

from __future__ import annotations

import numpy as np

from analyzer.counting import kernel_words
from analyzer.counting.engine import FOLDED, NodeCost
from analyzer.ir.graph import DTYPE_BITS, FLOAT_DTYPES, PRECISION_BITS, WEIGHT_BITS
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction import dot_merge, fusion, xla_conv_layout, xla_gpu_reduce, xla_gpu_rewrites
from analyzer.prediction.node_shapes import gemm_view, kernel_class, node_op_class, node_view

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
                               _gemv(n), _reduce_form(n), xla_conv_layout.node_layout(n, precision), _tree(n))
        out.append(FN(n.op, n.domain, hit[0], n.level, n.in_names, n.out_names, hit[1], hit[2],
                      _launches(n) if keys is None else hit[3],
                      frozenset(n.constant_inputs) if keys is None else hit[4], n.name, n.loop_io, n.kernel,
                      hit[6], hit[7], hit[8], hit[9], hit[10], hit[11]))
        nbytes.append(node_bytes(n, precision) if keys is None else hit[5])
    return out, nbytes


def _gemv(n: NodeCost) -> bool:
    """Whether ``n`` is a dot (JAX ``dot_general``, ONNX ``MatMul`` / ``Gemm``) that XLA's GPU
    compiler strength-reduces to a reduction (``xla_gpu_rewrites.strength_reduced``): its GEMM
    view has m = 1 or n = 1 (one operand has no dimension of size > 1 besides the contracted
    and batch ones) and is small enough (``fusion.FusionNode.gemv``, ``xla_gpu_joins``)."""
    if n.op not in ("dot_general", "MatMul", "Gemm") or not n.cost.mac_flops:
        return False
    m, nn, k = gemm_view(n)[:3]
    return xla_gpu_rewrites.strength_reduced(m, nn, k)


def _tree(n: NodeCost) -> tuple[int, ...]:
    """``xla_gpu_rewrites.tree`` of ``n`` from its first input's and output's shapes and its
    output bytes as counted."""
    a = n.in_specs[0] if n.in_specs else None
    b = n.out_specs[0] if n.out_specs else None
    if n.op not in xla_gpu_rewrites.TREE_OPS or a is None or b is None or a.shape is None or b.shape is None \
            or not all(type(d) is int for d in (*a.shape, *b.shape)):
        return ()
    kept = _said_kept(n)
    return xla_gpu_rewrites.tree(n.op, a.shape, xla_gpu_reduce.kept_axes(tuple(a.shape), tuple(b.shape))
                                 if kept is None else kept, b.nbytes() or 0)


def _reduce_form(n: NodeCost) -> str:
    """``xla_gpu_reduce.reduce_form`` of ``n`` from its first input's and output's shapes."""
    a = n.in_specs[0] if n.in_specs else None
    b = n.out_specs[0] if n.out_specs else None
    return xla_gpu_reduce.reduce_form(node_op_class(n), a.shape if a is not None else None,
                                      b.shape if b is not None else None, _said_kept(n))


def _said_kept(n: NodeCost) -> tuple[int, ...] | None:
    """The axes a reduction keeps by its ``axes=`` kernel word (a JAX reduction's), None without one."""
    axes = kernel_words.ints(n.kernel, "axes")
    a = n.in_specs[0] if n.in_specs else None
    if axes is None or a is None or a.shape is None:
        return None
    return tuple(i for i in range(len(a.shape)) if i not in axes)


def _matrix2d(n: NodeCost) -> bool:
    """Whether ``n``'s first two inputs (one, for a transpose) and first output are rank-2
    tensors (``fusion.FusionNode.matrix2d``)."""
    specs = n.in_specs[:2] + n.out_specs[:1]
    return bool(n.in_specs and n.out_specs) and all(s is not None and s.shape is not None and len(s.shape) == 2 for s in specs)


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
