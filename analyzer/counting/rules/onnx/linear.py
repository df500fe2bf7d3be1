"""Matrix-engine ops: MatMul, Gemm, Conv, ConvTranspose, Einsum.

``mac_flops`` = 2 x multiply-accumulates.  Counts come from the *output* shape
(which shape inference resolved for strides, pads, dilations, auto_pad and
broadcasting) times the reduction length, so every padding mode is exact.
Bias adds and alpha/beta scaling are vector work.  CausalConvWithState: the depthwise Conv plus
the optional SiLU (3 + 1 T per output element).
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.counting.rules.onnx.common import output, present
from analyzer.errors import ShapeError


@register("MatMul")
def matmul(ins, outs, ctx):
    a, b = ins[0], ins[1]
    # A 1-D A contributes its only dim as K; otherwise K is A's last dim.
    k = a.dim(-1)
    if b.rank >= 2 and b.dim(-2) != k:
        raise ShapeError(f"MatMul inner dims differ: {a} x {b}")
    # 2 * (elements of the broadcast output) * K
    return Work(mac_flops=2 * outs[0].numel() * k)


@register("Gemm")
def onnx_gemm(ins, outs, ctx, *, alpha=1.0, beta=1.0, transA=0, transB=0):
    """ONNX Gemm: ``gemm``, once A's K is B's (checked before the output, whose shape inference
    fails on a mismatch)."""
    a, b = ins[0].dims(), ins[1].dims()
    k, kb = a[0 if transA else 1], b[1 if transB else 0]
    if isinstance(k, int) and isinstance(kb, int) and k != kb:
        raise ShapeError(f"Gemm inner dims differ: {ins[0]}{' transposed' if transA else ''} x "
                         f"{ins[1]}{' transposed' if transB else ''} ({k} vs {kb})")
    return gemm(ins, outs, ctx, alpha=alpha, beta=beta, transA=transA)


def gemm(ins, outs, ctx, *, alpha=1.0, beta=1.0, transA=0):  # transB: n comes from the output
    a = ins[0].dims()
    m, k = (a[1], a[0]) if transA else (a[0], a[1])
    n = outs[0].dim(1)
    mn = m * n
    vector = 0
    if alpha != 1.0:
        vector += mn  # alpha * (A @ B)
    if len(ins) > 2 and ins[2] is not None:
        vector += mn  # + C (broadcast)
        if beta != 1.0:
            vector += mn  # beta * C
    return Work(mac_flops=2 * mn * k, vector_flops=vector)


@register("Conv")
def onnx_conv(ins, outs, ctx, *, group=1):
    """ONNX Conv (NCHW...): ``conv``, once the input's channels C are the weight's C/group x group
    (ONNX shape inference does not check them)."""
    w = ins[1].dims()
    c = ins[0].dim(1) if ins[0].rank >= 2 else None
    if isinstance(c, int) and isinstance(w[1], int) and c != w[1] * group:
        raise ShapeError(f"Conv input has {c} channels, its weight takes {w[1] * group} "
                         f"({group} group{'s' if group != 1 else ''} of {w[1]}): {ins[0]} x {ins[1]}")
    return conv(ins, outs, ctx)


def conv(ins, outs, ctx):  # group: the weight shape already divides the channels (any layout)
    w = ins[1].dims()  # [M, C/group, k1, k2, ...]
    y = outs[0]
    # each output element: (C/group) * prod(kernel) MACs
    macs_per_out = w[1] * prod(w[2:])
    bias = y.numel() if len(ins) > 2 and ins[2] is not None else 0
    return Work(mac_flops=2 * y.numel() * macs_per_out, vector_flops=bias)


@register("ConvTranspose")
def conv_transpose(ins, outs, ctx):
    x = ins[0]
    w = ins[1].dims()  # [C, M/group, k1, k2, ...]
    # every input element is scattered through (M/group) * prod(kernel) MACs
    macs = x.numel() * w[1] * prod(w[2:])
    bias = outs[0].numel() if len(ins) > 2 and ins[2] is not None else 0
    return Work(mac_flops=2 * macs, vector_flops=bias)


def _parse_einsum(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ShapeError(f"Einsum equation '{equation}' has {len(terms)} operands, node has {len(ranks)}")
    # Ellipsis: give the broadcast dims private upper-case letters (ONNX allows only lower case).
    ell_rank = max((r - (len(t) - 3) for t, r in zip(terms, ranks) if "..." in t), default=0)
    ell = "".join(chr(ord("A") + i) for i in range(ell_rank))
    expanded = []
    for t, r in zip(terms, ranks):
        if "..." in t:
            n = r - (len(t) - 3)
            t = t.replace("...", ell[ell_rank - n:] if n else "")
        if len(t) != r:
            raise ShapeError(f"Einsum term '{t}' does not match operand rank {r}")
        expanded.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:  # implicit output: letters seen once, sorted, after the ellipsis dims
        counts: dict[str, int] = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c.islower()))
    return expanded, out


@register("Einsum")
def einsum(ins, outs, ctx, *, equation):
    ranks = [s.rank for s in ins]
    terms, out = _parse_einsum(equation, ranks)
    size: dict[str, int] = {}
    for t, s in zip(terms, ins):
        for c, d in zip(t, s.dims()):
            if size.get(c, 1) == 1:
                size[c] = d
    if len(terms) == 1:
        # a single-operand einsum only sums (trace, reduction) or permutes
        total = prod(size[c] for c in set(terms[0]))
        return Work(vector_flops=total - prod(size[c] for c in out))
    # Contract left to right, keeping the letters still needed later or in the output.
    mac = vec = 0
    cur = terms[0]
    for i, t in enumerate(terms[1:], start=1):
        later = set(out).union(*terms[i + 1:])
        letters = set(cur) | set(t)
        keep = "".join(c for c in dict.fromkeys(cur + t) if c in later)
        contracted = letters - set(keep)
        n = prod(size[c] for c in letters)
        if contracted:
            mac += 2 * n  # one multiply-accumulate per point of the joint index space
        else:
            vec += n  # a broadcast product: multiplies only
        cur = keep
    # letters left in `cur` but not in the output are summed away at the end
    extra = set(cur) - set(out)
    if extra:
        vec += prod(size[c] for c in cur) - prod(size[c] for c in out)
    return Work(mac_flops=mac, vector_flops=vec)


@register("CausalConvWithState")
def causal_conv_with_state(ins, outs, ctx, *, activation="none"):
    # input (B, C, L...), weight (C, 1, k...), bias?, past_state?: a depthwise conv over the padded
    # input (group = channels)
    x, w = ins[0], ins[1]
    bias = ins[2] if present(ins, 2) else None
    y = output(outs)
    c = conv((x, w, bias), (y,), ctx)
    n = y.numel()
    silu = activation in ("silu", "swish")
    return Work(mac_flops=c.mac_flops, vector_flops=c.vector_flops + (3 * n if silu else 0),
                transcendentals=n if silu else 0, functions=(("logistic", n if silu else 0),))
