"""The backward kernels of the loss ops (``backward_rules``' table continued; the same
conventions: PyTorch's derivative formulas, every ATen op of a formula one kernel).

Scores X of [N, C] or [N, C, d1..dk], targets T of [N] or [N, d1..dk] (M = numel(T) positions),
an optional class weight W of [C] (a constant: no gradient); only X gets a gradient.  The
reduction is the node's ``reduction`` attribute (ONNX default ``mean``; the counting rule's
``reduction=`` kernel word); the output's rank must agree with it (a scalar for ``sum`` and
``mean``, T's shape for ``none``), else no rule applies.

- NegativeLogLikelihoodLoss: ``nll_loss_backward`` (``derivatives.yaml``: ``nll_loss_forward``;
  ATen's ``nll_loss_backward_out_cuda`` / ``nll_loss2d_backward``, the [N, C, d1..dk] form
  viewed as [N, C, 1, D]: no copy of a contiguous tensor) launches two kernels:
  ``grad_input.zero_()`` (writes numel(X)) and one kernel that writes ``-W[t] * dY`` (divided by
  the total weight under ``mean``) at the M target positions: it reads dY (M elements under
  ``none``, 1 otherwise), T (M integers of T's dtype), W at the M picked classes and, reduced,
  the total weight (1 element, ``mean`` only: the ``sum`` kernel does not load it); it writes
  M elements (an ``ignore_index`` position is skipped at run time: an upper
  bound), 1 multiply per position.
- SoftmaxCrossEntropyLoss: ``cross_entropy_loss`` is ``nll_loss_nd(log_softmax(X, 1), T, W)``:
  the two kernels above, then ``_log_softmax_backward_data`` (``derivatives.yaml``:
  ``_log_softmax``): one kernel reading the log-probabilities and their gradient, writing dX
  (numel(X) each).
"""

from __future__ import annotations

from math import prod

from analyzer.ir.graph import DTYPE_BITS
from analyzer.counting import kernel_words
from analyzer.training.grad_kernel import Ctx


def _reduction(c: Ctx) -> str:
    """The loss node's reduction (its counting rule's ``reduction=`` kernel word)."""
    return kernel_words.value(c.n.kernel, "reduction") or "mean"


def _nll(c: Ctx, x, t) -> list:
    """``nll_loss_backward``: the zero fill of dX and the scatter at the M targets."""
    m, n = prod(t), prod(x)
    mean = _reduction(c) == "mean"
    reduced = len(c.out()) == 0
    tbits = DTYPE_BITS.get(c.n.in_specs[1].dtype, 64)
    t_el = (m * tbits + c.bits - 1) // c.bits      # the targets, in elements of X's dtype
    weighted = len(c.n.in_specs) > 2 and c.n.in_specs[2] is not None
    read = (1 if reduced else m) + t_el + (m if weighted else 0) + (1 if mean else 0)
    dy = () if reduced else t
    return [c.k("zero", "Mul", [], [x], read=0, written=n),
            c.k("scatter", "ScatterND", [dy, t], [x], read=read, written=m, vec=m)]


def nll_loss(c: Ctx):
    x, t, o = c.ins(0), c.ins(1), c.out()
    if x is None or t is None or o is None or len(x) < 2:
        return None
    if o != (t if _reduction(c) == "none" else ()):
        return None
    return _nll(c, x, t) if c.needs[0] else []


def cross_entropy(c: Ctx):
    ks = nll_loss(c)
    if not ks:
        return ks
    x = c.ins(0)
    return ks + [c.elementwise("grad", x, 2, op="Softmax")]
