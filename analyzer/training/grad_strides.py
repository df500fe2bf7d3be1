"""The strides of each gradient as autograd holds it, and the contiguous copies they cost.

A gradient a kernel writes is contiguous.  The gradient of a view is a view of the output's
gradient (``prediction.strides`` does the arithmetic): a Transpose's input gradient is the
output gradient permuted back; an Identity's, Dropout's (eval) or same-dtype Cast's is the same
tensor; a same-shape operand of Add/Sub passes dY through; Concat's inputs get narrow views of
dY; and a Reshape/Flatten/Squeeze/Unsqueeze's input gradient is ``grad.reshape(input sizes)``,
a view where aten's ``computeStride`` finds one, else a copy kernel (``clone``: attention's
``transpose_for_scores`` permuted back, then viewed as [B, S, H*D]).  A gradient of several
contributions is their sum, contiguous.

Kernels that take their output gradient contiguous copy a strided one first: convolution
(``convolution_backward`` takes ``grad_output.contiguous()``), softmax
(``host_softmax_backward``), layer and batch norm; a matmul's gradient GEMMs take dY as a matrix
(or batch of matrices) that cuBLAS reads with one unit stride (``strides.matrix_ok``), else a
copy (a matmul with a 2-D weight folds dY to [rows, N]: ``mm``; one of two batched operands
views it as [batch, M, N]: ``bmm``).  Elementwise and reduction kernels read strided tensors in
place.
"""

from __future__ import annotations

from math import prod

from analyzer.prediction import strides as st_
from analyzer.training.grad_kernel import BwdKernel, Ctx

_RESHAPE = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
_SAME = frozenset({"Identity", "Dropout"})
_CONTIGUOUS_DY = frozenset({"Conv", "ConvTranspose", "Softmax", "LogSoftmax", "LayerNormalization",
                            "BatchNormalization"})


class GradStrides:
    """Strides of the gradients of a plan's tensors (absent: contiguous)."""

    def __init__(self):
        self.of: dict[tuple[str, str], tuple[int, ...]] = {}

    def dy(self, c: Ctx):
        """(dims, strides) of node ``c``'s output gradient (None where unknown)."""
        o = c.out()
        if o is None or not c.n.out_names:
            return None, None
        return o, self.of.get((c.n.level, c.n.out_names[0]), st_.contiguous(o))

    def copy_before(self, c: Ctx) -> list[BwdKernel]:
        """The contiguous copy of a strided dY the node's backward kernels need first."""
        o, s = self.dy(c)
        if o is None or st_.is_contiguous(o, s):
            return []
        need = c.n.op in _CONTIGUOUS_DY
        if c.n.op in ("MatMul", "Gemm") and len(o) >= 2:
            b = c.ins(1)
            if b is not None and len(b) <= 2:     # folded: dY viewed as [rows, N] (mm)
                v = st_.view_strides(o, s, (prod(o[:-1]), o[-1]))
                need = v is None or not st_.matrix_ok(prod(o[:-1]), o[-1], *v)
            else:                                # batched: dY viewed as [batch, M, N] (bmm)
                v = st_.view_strides(o, s, (prod(o[:-2]), o[-2], o[-1]))
                need = v is None or not st_.matrix_ok(o[-2], o[-1], v[1], v[2])
        if not need:
            return []
        self.of.pop((c.n.level, c.n.out_names[0]), None)
        return [c.k("contiguous", "Transpose", [o], [o], read=prod(o), written=prod(o))]

    def send(self, c: Ctx, sends, contrib) -> list[BwdKernel]:
        """Record the strides of the input gradients node ``c`` sends (``sends``: (tensor,
        node, position); ``contrib``: gradients per tensor); returns the copy a reshape of a
        strided gradient needs (its own kernel)."""
        o, s = self.dy(c)
        out: list[BwdKernel] = []
        for t, j, p in sends:
            key = (c.n.level, t)
            if j != c.i or contrib[key] > 1 or o is None:
                continue
            x = c.ins(p)
            new = self._view_grad(c, p, x, o, s)
            if new is None and x is not None and c.n.op in _RESHAPE:
                out.append(c.k("copy", "Transpose", [x], [x], read=prod(x), written=prod(x)))
            elif new is not None and x is not None and not st_.is_contiguous(x, new):
                self.of[key] = tuple(new)
        return out

    @staticmethod
    def _view_grad(c: Ctx, p: int, x, o, s):
        """Strides of input ``p``'s gradient where it is a view of dY, else None."""
        op = c.n.op
        if x is None:
            return None
        if op in _RESHAPE:
            return st_.view_strides(o, s, x)
        if op == "Transpose" and len(x) == len(o):
            perm = st_.transpose_perm(c.n, len(o))
            new = [0] * len(o)
            for a, q in enumerate(perm):
                new[q] = s[a]
            return new
        same = tuple(x) == tuple(o)
        if op in _SAME or (op == "Cast" and c.n.in_specs[0].dtype == c.n.out_specs[0].dtype):
            return s if same else None
        if op in ("Add", "Sub") and same and not (op == "Sub" and p == 1):
            return s
        if op == "Concat" and len(x) == len(o):
            return s
        return None
