"""JAX matrix-engine primitives: dot_general, conv_general_dilated, and Pallas kernels.

Same convention as ``rules/linear.py``: ``mac_flops`` = 2 x multiply-accumulates, counted from
the *output* shape times the reduction length, so every padding/stride setting is exact.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.kernel_words import with_word
from analyzer.errors import ShapeError
from analyzer.ir.graph import DTYPE_BITS

D = "jax"


def _mac_dtype(a, b) -> str | None:
    """The dtype the MAC array runs in: the wider input when the two differ (int8 x int8 -> int8
    even with an int32 ``preferred_element_type``: that is the accumulator)."""
    if a is None or b is None or a.dtype == b.dtype:
        return None
    return max((a.dtype, b.dtype), key=lambda d: DTYPE_BITS.get(d, 0))


# jax.lax.Precision levels in increasing order (a dot's ``precision`` param: one per operand)
_LEVELS = ("DEFAULT", "HIGH", "HIGHEST")


def precision_word(precision) -> str | None:
    """``precision=NAME`` of a dot's or convolution's ``precision`` param where it asks for more
    than the default: the higher of its operands' ``jax.lax.Precision`` levels (``HIGH``,
    ``HIGHEST``; a ``jax.default_matmul_precision`` context is already in the param) or a
    ``jax.lax.DotAlgorithmPreset``'s name (``BF16_BF16_F32_X6``); None for none or DEFAULT.  The
    counts never depend on it (the prediction prices a TPU's passes: ``prediction.tpu_mxu``)."""
    if precision is None:
        return None
    items = precision if isinstance(precision, (tuple, list)) else (precision,)
    names = [str(getattr(p, "name", p)).upper() for p in items if p is not None]
    levels = [n for n in names if n in _LEVELS]
    name = max(levels, key=_LEVELS.index) if len(levels) == len(names) and levels else (names or [None])[0]
    return None if name in (None, "DEFAULT") else f"precision={name}"


@register("dot_general", domain=D)
def dot_general(ins, outs, ctx, *, dimension_numbers, precision=None):
    """out = batch dims + lhs free dims + rhs free dims; each output element sums over the
    contracting dims: mac_flops = 2 * numel(out) * prod(lhs contracting dims).

    The kernel: ``lhs_transposed`` for a product without batch dims whose lhs is contracted over
    dims other than its trailing ones (``x^T g``, the weight gradient ``jax.grad`` writes), which
    XLA's CPU backend hands to Eigen where it gives every other product to YNNPACK
    (``bench/xla_diagnose.py dot-forms`` prints which library each form compiles to); then
    `` gemv=J`` for a matrix-vector product: no batch dims, operand ``J`` of rank 2 or more whose
    free (not contracted) dims hold one element (``x[1, K] @ W``: J = 0; ``W @ v[K, 1]``: J = 1),
    which XLA's CPU backend runs as an Eigen GEMV on a copy of that operand
    (``xla_cpu_fusion``); then `` rhs_transposed`` for a product without batch dims whose square
    rank-2 rhs is contracted over its dim 1 (``x @ W^T`` as one dot, which its shapes do not
    tell from ``x @ W``; XLA's GPU dot merging keeps the two apart: ``dot_merge``); last
    ``precision=NAME`` where its precision asks for more than the default (``precision_word``)."""
    (lc, rc), (lb, rb) = dimension_numbers
    a, b = ins[0].dims(), ins[1].dims()
    k = prod(a[i] for i in lc)
    if k != prod(b[i] for i in rc):
        raise ShapeError(f"dot_general contracting dims differ: {ins[0]} x {ins[1]} over {lc} / {rc}")
    if [a[i] for i in lb] != [b[i] for i in rb]:
        raise ShapeError(f"dot_general batch dims differ: {ins[0]} x {ins[1]} over {lb} / {rb}")
    lhs_transposed = not lb and sorted(lc) != list(range(len(a) - len(lc), len(a)))
    kernel = "lhs_transposed" if lhs_transposed else None
    vec = None if lb else next((j for j, (d, c) in enumerate(((a, lc), (b, rc)))
                                if len(d) >= 2 and prod(x for i, x in enumerate(d) if i not in c) == 1), None)
    if vec is not None:
        kernel = with_word(kernel, f"gemv={vec}")
    if not lb and len(b) == 2 and b[0] == b[1] and tuple(rc) == (1,):
        kernel = f"{kernel or ''} rhs_transposed".lstrip()
    return Work(mac_flops=2 * outs[0].numel() * k, mac_dtype=_mac_dtype(ins[0], ins[1]),
                kernel=with_word(kernel, precision_word(precision)))


def _taps(out: int, k: int, inp: int, lhs_dil: int) -> int:
    """Multiply-accumulates of one spatial dim, per (output feature, input feature) pair.

    ``lhs_dilation`` 1 (a convolution): every tap of every output position, padding included,
    ``out * k``, exactly as ONNX Conv is counted.  ``lhs_dilation`` > 1 (a transposed
    convolution, e.g. the input gradient of a strided conv): every real input element meets every
    tap, ``in * k``, exactly as ONNX ConvTranspose is counted; the zeros that the dilation
    inserts between input elements are not multiplied."""
    return (inp if lhs_dil > 1 else out) * k


@register("conv_general_dilated", domain=D)
def conv_general_dilated(ins, outs, ctx, *, dimension_numbers, lhs_dilation=None, feature_group_count=1,
                         batch_group_count=1, precision=None):
    """Each output element sums rhs_in_features * (kernel taps) products; rhs_in_features is
    already C / feature_group_count (and the full C under batch_group_count), so groups of either
    kind are exact; strides, padding and rhs dilation are in the output shape.
    mac_flops = 2 * N_out * O * prod(taps per spatial dim) * I (see ``_taps``)."""
    lhs, rhs, out = ins[0].dims(), ins[1].dims(), outs[0].dims()
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nsp = len(rhs_spec) - 2
    lhs_dilation = tuple(lhs_dilation or (1,) * nsp)
    in_features = rhs[rhs_spec[1]]
    taps = 1
    for d in range(nsp):
        taps *= _taps(out[out_spec[2 + d]], rhs[rhs_spec[2 + d]], lhs[lhs_spec[2 + d]],
                      lhs_dilation[d])
    n_out, o_feat = out[out_spec[0]], out[out_spec[1]]
    kernel = conv_kind(feature_group_count or 1, batch_group_count or 1, in_features,
                       all(rhs[rhs_spec[2 + d]] == 1 for d in range(nsp)))
    if out_spec[1] != 1:   # the output's feature dim where it is not dim 1 (NHWC: 3; the GEMM view's n)
        kernel = with_word(kernel, f"out_feature={out_spec[1]}")
    kernel = with_word(kernel, precision_word(precision))
    kernel = with_word(kernel, dims_word(lhs_spec, rhs_spec, out_spec))
    relayout = conv_relayout(lhs_spec, rhs_spec)
    if relayout:   # the operands not in a channels-last layout (the prediction's layout copies; last word)
        kernel = with_word(kernel, f"relayout={relayout}")
    return Work(mac_flops=2 * n_out * o_feat * taps * in_features,
                mac_dtype=_mac_dtype(ins[0], ins[1]), kernel=kernel)


def conv_kind(groups: int, batch_groups: int, in_features: int, pointwise: bool) -> str | None:
    """The kernel a convolution runs as, in ONNX Conv's order of tests (``op_classes.op_class_of``)
    where its weight's shape tells it only in an OIHW layout: ``batch_grouped`` (batch_group_count
    > 1: a grouped convolution's weight gradient), ``depthwise`` (groups of one input feature),
    ``pointwise`` (every spatial kernel dim 1, whatever the groups, strides, dilations and padding:
    an HWIO [1, 1, I, O] as an OIHW [O, I, 1, 1]), ``grouped`` (groups of more than one input
    feature); None for a dense convolution with a larger kernel."""
    if batch_groups > 1:
        return "batch_grouped"
    if groups > 1 and in_features == 1:
        return "depthwise"
    return "pointwise" if pointwise else "grouped" if groups > 1 else None


def dims_word(lhs_spec, rhs_spec, out_spec) -> str | None:
    """``dn=L...,R...,O...`` (the three specs' dims in a row, n each for rank n) where a
    convolution's dimension numbers are not NCHW / OIHW / NCHW (every spec ``0, 1, ..., n-1``:
    batch or output feature first, then feature, then spatial dims); None for those: the order of
    an ONNX Conv.  The prediction reads which tensors XLA's GPU compiler transposes for cuDNN
    (``prediction.xla_conv_layout``); counts never depend on it."""
    specs = (tuple(lhs_spec), tuple(rhs_spec), tuple(out_spec))
    if all(s == tuple(range(len(s))) for s in specs):
        return None
    return "dn=" + ",".join(str(int(d)) for s in specs for d in s)


def conv_relayout(lhs_spec, rhs_spec) -> str:
    """The operands (``"0"``, ``"1"``, ``"0,1"`` or ``""``) of a convolution whose dimension
    numbers (``lhs_spec``: batch, feature, spatial dims; ``rhs_spec``: output feature, input
    feature, spatial dims) are not row-major in the channels-last order XLA's CPU convolution
    runs (input batch, spatial..., feature: ``b01f``; kernel spatial..., input, output: ``01io``):
    a program input in another order is transposed before the convolution."""
    n = len(lhs_spec)
    lhs = (lhs_spec[0], *lhs_spec[2:], lhs_spec[1])
    rhs = (*rhs_spec[2:], rhs_spec[1], rhs_spec[0])
    return ",".join(str(j) for j, order in enumerate((lhs, rhs)) if tuple(order) != tuple(range(n)))


@register("pallas_call", domain=D)
def pallas_call(ins, outs, ctx, *, flops=0, transcendentals=0, bytes_accessed=0, has_dot=False):
    """A Pallas kernel, from its own ``CostEstimate`` (the frontend sends kernels without one to
    domain ``jax.pallas``, which has no rule: uncosted). The estimate's FLOPs are MAC work when
    the kernel body has a dot or conv, else vector work; bytes stay the inputs read and outputs
    written (the estimate's ``bytes_accessed`` is in the note)."""
    mac, vec = (flops, 0) if has_dot else (0, flops)
    return Work(mac_flops=mac, vector_flops=vec, transcendentals=transcendentals,
                note=f"from the kernel's cost_estimate (bytes_accessed={bytes_accessed})")
