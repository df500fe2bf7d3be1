"""The kernels eager PyTorch's autograd launches for the backward of one exported node.

Each rule reads a forward node (its specs, which inputs need a gradient) and returns the
backward kernels autograd runs for it, in order, as ``BwdKernel`` records with their shapes and
bytes; ``None`` where no rule applies (the plan then prices that node by the FLOP/byte ratio
method and counts it).  The rules follow PyTorch's derivative formulas
(``tools/autograd/derivatives.yaml`` and the ATen backward kernels they name): every ATen op of a
formula is one kernel.  ``e`` is the element size of the node's floating dtype; ``dY`` the output
gradient, ``numel`` counts elements.

==========================  ===================================================================
forward node                backward kernels (derivative formula it comes from)
==========================  ===================================================================
MatMul, Gemm                ``mm``/``addmm``/``bmm``: dX = dY @ W^T (a GEMM M x K, reduction N)
                            and dW = X^T @ dY (K x N, reduction M: the rows of a folded
                            [B, S, K] input, B*S), each only where that operand needs a
                            gradient; operands of rank >= 3 on both sides: batched GEMMs over
                            the broadcast batch, plus a sum over the batch dims an operand was
                            broadcast along (``sum_to_size``).  Reads its two operands, writes
                            its result.  Gemm's C (a bias): ``sum`` of dY over the rows into
                            [N] (``maybe_multiply(grad, beta)`` summed to the bias's size).
Conv (ConvTranspose)        ``convolution_backward``: dgrad (input) and wgrad (weight), each
                            the forward's MACs at the forward's op class and shape (cuDNN's
                            implicit GEMMs of the same product, transposed); the bias: a sum of
                            dY over N and the spatial dims; a folded BatchNorm (bias named
                            ``onnx::Conv_*``): cuDNN's batch-norm backward, one kernel reading
                            the conv output and dY, writing dX (dgamma, dbeta inside it).
unary (Relu, Tanh,          ``threshold_backward``/``tanh_backward``/``sigmoid_backward``/
Sigmoid, Gelu, Exp, Log,    ``gelu_backward``/``elu_backward``...: one kernel reading the saved
LeakyRelu, Elu, Softplus,   tensor (input or output) and dY, writing dX (3 tensors).
HardSigmoid, HardSwish)
multi-op unary formulas     Erf ``2/sqrt(pi) * exp(-x.pow(2)) * grad`` 5 kernels; Sqrt
                            ``grad / (2 * result)`` 2; Reciprocal ``-grad * (result * result)``
                            3; Neg 1 (reads dY only); Abs ``grad * self.sgn()`` 2; Sin 2; Cos 3;
                            Clip ``where((x >= min) & (x <= max), grad, 0)`` 4.  Each kernel of
                            a formula is charged as a binary elementwise kernel (2 tensors read,
                            1 written): an upper bound for the unary steps.
exporter GELU / SiLU        the Div/Erf/Add/Mul/Mul (or 9-node tanh) chain and Sigmoid+Mul the
chains                      eager forward plan joins (``prediction.eager_plan``): one
                            ``gelu_backward``/``silu_backward`` kernel, x and dY read, dX written.
Add, Sub                    same shape: no kernel (the gradient passes through); an operand
                            broadcast: ``sum_to_size`` over the broadcast dims (reads dY,
                            writes the operand; aten's ``sum_to`` also sums the leading dims an
                            operand of lower rank lacks, size 1 or not: a [N] bias of a [1, N]
                            output is a kernel); Sub's second operand first ``neg`` (1 kernel).
Mul                         per operand needing a gradient: ``grad * other`` (1 kernel), plus the
                            ``sum_to_size`` reduction where that operand was broadcast.
Div                         the dividend: ``grad / other`` (1 kernel); the divisor:
                            ``-grad * ((self / other) / other)`` (4 kernels); broadcast sums.
Pow (scalar exponent)       ``pow_backward``: ``grad * (p * self.pow(p - 1))``: 3 kernels.
Where                       per branch: ``where(cond, grad, 0)`` (1 kernel) + broadcast sum.
Softmax, LogSoftmax         ``_softmax_backward_data``: one kernel (y, dY -> dX).
LayerNormalization          ``native_layer_norm_backward``: a dX kernel (reads x, dY, gamma and
                            the saved mean and rstd, 2 fp32 values per row; writes dX: norm
                            class) and, where gamma/beta need gradients, one dgamma/dbeta column
                            reduction (reads x, dY, mean, rstd; writes dgamma, dbeta: reduce
                            class).
BatchNormalization          one kernel (x, dY -> dX, dgamma, dbeta): cuDNN's in fp32 (x and dY
                            read once); PyTorch's native ``batch_norm_backward_kernel`` in
                            bf16/fp16, which reads x and dY again in a second pass and walks
                            each channel serially (``bn_backward``, priced at the prediction's
                            precision).
NegativeLogLikelihoodLoss   ``nll_loss_backward``: ``zero_`` of dX (writes X), then one kernel
                            writing ``-W[t] * dY`` (``/ total_weight`` under mean) at the M
                            target positions (reads dY, the targets, W[t]; writes M); X only.
SoftmaxCrossEntropyLoss     ``log_softmax`` + ``nll_loss``: the two kernels above, then
                            ``_log_softmax_backward_data`` (log-probabilities, dY -> dX).
==========================  ===================================================================

The ops that index, move or reduce data (Gather, Slice, Split, Concat, Expand, the reductions
and pools, Cast, views) have their rules in ``backward_movement``, the losses' bytes in
``backward_loss``; ``RULES`` maps every op.

Gradient accumulation (``backward_plan``): a tensor (activation or weight) whose gradient comes
from k > 1 consumers gets k - 1 add kernels (autograd's ``InputBuffer::add`` / ``AccumulateGrad``),
each reading two gradients and writing one.  A weight's first gradient is stored without a
kernel (``zero_grad(set_to_none=True)``, PyTorch's default since 2.0).
"""

from __future__ import annotations

from math import prod

from analyzer.training.backward_loss import cross_entropy, nll_loss
from analyzer.training.backward_movement import (
    VIEW_OPS, cast, expand, gather, reduce_mean, slice_, split, view)
from analyzer.training.grad_kernel import ONNX_DOMAINS, BwdKernel, Ctx, broadcast, sums

FOLDED_BN_BIAS = "onnx::Conv_"   # the TorchScript exporter's folded BatchNorm bias name


def _gemm(c: Ctx, p: int, m: int, n: int, k: int, batch: int = 1, suffix: str = "") -> BwdKernel:
    """The gradient of operand ``p`` as a GEMM ``[batch,] m x k @ k x n -> m x n`` (K the
    reduction): operands read, result written; ``dW`` for a weight, else ``dX``."""
    kind = "dW" if p in c.n.constant_inputs else "dX"
    a, b, o = ((m, k), (k, n), (m, n)) if batch == 1 else ((batch, m, k), (batch, k, n), (batch, m, n))
    return c.k(kind, "MatMul", [a, b], [o], read=batch * (m * k + k * n), written=batch * m * n,
               mac=2 * batch * m * n * k, gemm=(m, n, k, batch), suffix=suffix)


def matmul(c: Ctx):
    a, b = c.ins(0), c.ins(1)
    if a is None or b is None or len(a) < 2 or len(b) < 2:
        return None
    out = []
    if len(b) == 2 and c.n.op in ("MatMul", "Gemm") and (len(a) == 2 or c.n.op == "MatMul"):
        o = c.out()
        if c.n.op == "Gemm":      # transA/transB are not in the specs: M, N from Y, K from the MACs
            if o is None or len(o) != 2 or not o[0] or not o[1]:
                return None
            m, n = o
            k = c.n.cost.mac_flops // (2 * m * n)
        else:
            m, k, n = prod(a[:-1]), a[-1], b[-1]
        if c.needs[0]:
            out.append(_gemm(c, 0, m, k, n))        # dY [M, N] @ W^T [N, K]
        if c.needs[1]:
            out.append(_gemm(c, 1, k, n, m))        # X^T [K, M] @ dY [M, N]
        if len(c.needs) > 2 and c.needs[2] and o is not None:
            bias = c.ins(2)
            if bias is not None and sums(bias, o):
                out.append(c.reduce_to("dbias", o, bias))
        return out
    batch_dims = broadcast(a[:-2], b[:-2])
    batch = prod(batch_dims)
    m, k, n = a[-2], a[-1], b[-1]
    if c.needs[0]:
        out.append(_gemm(c, 0, m, k, n, batch, "_a"))     # dY @ B^T, batched
        if sums(a, tuple(batch_dims) + (m, k)):
            out.append(c.reduce_to("reduce", tuple(batch_dims) + (m, k), a, "_a"))
    if c.needs[1]:
        out.append(_gemm(c, 1, k, n, m, batch, "_b"))     # A^T @ dY, batched
        if sums(b, tuple(batch_dims) + (k, n)):
            out.append(c.reduce_to("reduce", tuple(batch_dims) + (k, n), b, "_b"))
    return out


def conv(c: Ctx):
    x, w, o = c.ins(0), c.ins(1), c.out()
    if x is None or w is None or o is None:
        return None
    mac = c.n.cost.mac_flops
    nx, nw, no = prod(x), prod(w), prod(o)
    out = []
    names = c.n.in_names
    folded = len(names) > 2 and names[2].startswith(FOLDED_BN_BIAS)
    if folded:      # the BatchNorm eager runs after the convolution (dgamma, dbeta inside)
        out.append(_native_bn(c, c.k("bn", "BatchNormalization", [o, o], [o], read=2 * no + 4 * o[1],
                                     written=no + 2 * o[1], vec=8 * no), o))
    elif len(c.needs) > 2 and c.needs[2]:
        out.append(c.reduce_to("dbias", o, (o[1],)))
    ins = tuple(s for s in c.n.in_specs[:2])
    if c.needs[0]:      # dgrad: dY and W read, dX written
        out.append(BwdKernel(c.i, f"{c.n.name}/dX", "dX", c.n.op, ins, (c.n.in_specs[0],), mac, 0, 0,
                             c.nb(no + nw), c.nb(nx)))
    if c.needs[1]:      # wgrad: X and dY read, dW written
        out.append(BwdKernel(c.i, f"{c.n.name}/dW", "dW", c.n.op, ins, (c.n.in_specs[1],), mac, 0, 0,
                             c.nb(nx + no), c.nb(nw)))
    return out


# unary ops: (kernels of the formula, transcendentals per element in one of them, tensors the
# single kernel reads)
UNARY = {"Relu": (1, 0, 2), "Tanh": (1, 0, 2), "Sigmoid": (1, 0, 2), "Gelu": (1, 1, 2),
         "Exp": (1, 0, 2), "Log": (1, 0, 2), "LeakyRelu": (1, 0, 2), "Elu": (1, 1, 2),
         "Softplus": (1, 1, 2), "HardSigmoid": (1, 0, 2), "HardSwish": (1, 0, 2),
         "Erf": (5, 1, 2), "Sqrt": (2, 0, 2), "Reciprocal": (3, 0, 2), "Neg": (1, 0, 1),
         "Abs": (2, 0, 2), "Sin": (2, 1, 2), "Cos": (3, 1, 2), "Clip": (4, 0, 2)}


def unary(c: Ctx):
    x = c.ins(0)
    if x is None or not c.needs[0]:
        return None if x is None else []
    kernels, trans, reads = UNARY[c.n.op]
    n = prod(x)
    return [c.elementwise("grad", x, reads, trans=n * trans if k == 0 else 0, suffix=f"{k}" if k else "")
            for k in range(kernels)]


def add(c: Ctx):
    o = c.out()
    if o is None or any(c.ins(p) is None for p in range(len(c.needs))):
        return None
    out = []
    for p, need in enumerate(c.needs[:2]):
        if not need:
            continue
        x = c.ins(p)
        if c.n.op == "Sub" and p == 1:
            out.append(c.elementwise("neg", o, 1, suffix=f"_{p}"))
        if sums(x, o):
            out.append(c.reduce_to("reduce", o, x, f"_{p}"))
    return out


def mul(c: Ctx):
    o = c.out()
    if o is None or len(c.needs) != 2 or c.ins(0) is None or c.ins(1) is None:
        return None
    out = []
    for p, need in enumerate(c.needs):
        if not need:
            continue
        x, other = c.ins(p), c.ins(1 - p)
        n = prod(o)
        if c.n.op == "Div" and p == 1:    # -grad * ((self / other) / other)
            out += [c.elementwise("grad", o, 2, suffix=f"_{p}_{k}") for k in range(4)]
        else:                             # grad * other / grad / other
            out.append(c.k("grad", "Mul", [o, other], [o], read=n + prod(other), written=n, vec=n,
                           suffix=f"_{p}"))
        if sums(x, o):
            out.append(c.reduce_to("reduce", o, x, f"_{p}"))
    return out


def pow_(c: Ctx):
    x = c.ins(0)
    if x is None or (len(c.needs) > 1 and c.needs[1]):
        return None
    if not c.needs[0]:
        return []
    n = prod(x)
    return [c.elementwise("grad", x, 2, trans=n if k == 0 else 0, suffix=f"{k}" if k else "")
            for k in range(3)]


def where(c: Ctx):
    o = c.out()
    if o is None or len(c.needs) != 3:
        return None
    out = []
    for p in (1, 2):
        if c.needs[p]:
            x = c.ins(p)
            if x is None:
                return None
            out.append(c.elementwise("grad", o, 2, op="Where", suffix=f"_{p}"))
            if sums(x, o):
                out.append(c.reduce_to("reduce", o, x, f"_{p}"))
    return out


def softmax(c: Ctx):
    o = c.out()
    if o is None:
        return None
    return [c.elementwise("grad", o, 2, op="Softmax")] if c.needs[0] else []


def layer_norm(c: Ctx):
    x = c.ins(0)
    if x is None:
        return None
    n, d = prod(x), x[-1] if x else 1
    rows = n // max(d, 1)
    out = []
    stats = (rows * 2 * 32 + c.bits - 1) // c.bits     # mean and rstd, fp32, in elements
    if c.needs[0]:
        out.append(c.k("dX", "LayerNormalization", [x, x], [x], read=2 * n + d + stats,
                       written=n, vec=8 * n))
    if any(c.needs[1:3]):
        params = sum(1 for p in (1, 2) if p < len(c.needs) and c.needs[p])
        out.append(c.k("dparams", "ReduceSum", [x, x], [(d,)] * params, read=2 * n + stats,
                       written=params * d, vec=4 * n))
    return out


def batch_norm(c: Ctx):
    x = c.ins(0)
    if x is None or len(x) < 2:
        return None
    n, ch = prod(x), x[1]
    return [_native_bn(c, c.k("grad", "BatchNormalization", [x, x], [x], read=2 * n + 4 * ch,
                              written=n + 2 * ch, vec=8 * n), x)] if any(c.needs) else []


def _native_bn(c: Ctx, k: BwdKernel, x) -> BwdKernel:
    """``k`` (a BatchNorm's backward over an x of dims ``x``) with what PyTorch's native
    bf16/fp16 kernel adds where it runs (``bn_backward``): its per-channel loop and the second
    pass's re-read of x and dY (2 n elements)."""
    if len(x) < 2:
        return k
    from dataclasses import replace

    from analyzer.prediction import bn_stats

    return replace(k, bn_loop=bn_stats.loop(x), bn_reread=c.nb(2 * prod(x)))


RULES = {"MatMul": matmul, "Gemm": matmul, "Conv": conv, "ConvTranspose": conv,
         **{op: unary for op in UNARY}, "Add": add, "Sub": add, "Mul": mul, "Div": mul,
         "Pow": pow_, "Where": where, "Softmax": softmax, "LogSoftmax": softmax,
         "LayerNormalization": layer_norm, "BatchNormalization": batch_norm, "Gather": gather,
         "Slice": slice_, "Split": split, "Expand": expand, "Cast": cast,
         **{op: reduce_mean for op in ("ReduceMean", "ReduceSum", "GlobalAveragePool",
                                       "AveragePool", "MaxPool")},
         "NegativeLogLikelihoodLoss": nll_loss, "SoftmaxCrossEntropyLoss": cross_entropy,
         **{op: view for op in VIEW_OPS}}


def kernels_of(i: int, n, needs) -> list[BwdKernel] | None:
    """The backward kernels of node ``i`` (a NodeCost) whose inputs ``needs`` gradients, or
    None where no rule applies (an op without one, a domain other than ONNX's, a shape that
    is not static)."""
    rule = RULES.get(n.op) if n.domain in ONNX_DOMAINS else None
    if rule is None:
        return None
    try:
        return rule(Ctx(i, n, needs))
    except (ZeroDivisionError, IndexError, TypeError):
        return None


def joined_kernel(i: int, n, x_spec, kind: str) -> BwdKernel | None:
    """The one backward kernel of a pattern the eager forward plan runs as one kernel (the
    exporter's GELU chain: ``gelu_backward``; SiLU: ``silu_backward``), anchored at node ``i``
    (the chain's first node, ``n``): x and dY read, dX written."""
    c = Ctx(i, n, (True,))
    x = c.dims(x_spec)
    if x is None:
        return None
    size = prod(x)
    return c.k(kind, "Gelu" if kind == "gelu" else "Sigmoid", [x, x], [x], read=2 * size,
               written=size, vec=8 * size, trans=size)
