"""Dropout in a training step (``Options.dropout``): where PyTorch's train mode runs it, and its
kernels.

An eval-mode export has no Dropout nodes, but a Hugging Face or torchvision model trains with
``model.train()``: each ``nn.Dropout`` of probability P > 0 runs PyTorch's fused dropout.  With
``dropout=P`` the step places one where transformer and CNN code conventionally puts
``nn.Dropout`` (``placements``), on the output of node ``index``:

- ``attention``: a Softmax whose output is read by a MatMul as its first operand, seen
  through views (the attention probabilities before P.V; GPT-2 and ViT cast them to their own
  dtype first);
- ``residual``: a residual Add (two activation inputs of the same shape) one of whose inputs is
  a projection, a Gemm or a MatMul of a constant weight, with its bias Add, seen through views
  (Reshape, Flatten, Squeeze, Unsqueeze, Identity, a Cast to its own dtype), and whose other
  input is not computed from that projection (GPT-2's tanh GELU adds x + 0.044715 x^3 to its
  projection's output: no residual): the branch before the Add;
- ``embedding``: the last Add of a chain of embedding sums (an Add one of whose inputs is an
  embedding: a Gather of a floating weight of rank 2, folded or not, seen through views, or a
  floating initializer of rank >= 2 added as is, a learned position embedding; the last: no
  reader of it is another), after its LayerNormalization where that Add's only reader is one;
- ``onnx``: a Dropout node of the graph in training mode (its ``training_mode`` input a
  constant true; its own ``ratio``, default 0.5), placed whatever ``dropout`` is.

A tensor already read by a Dropout node is never given a second one.  P = 0 places none
(``at::dropout`` returns its input; an ONNX Dropout of ratio 0 too).

Kernels, n elements of b bytes: forward one fused kernel (``fused_dropout`` /
``native_dropout``): reads x (n b), writes y (n b) and its mask (n bytes, bool); backward one
kernel (``native_dropout_backward``): reads dY (n b) and the mask (n), writes dX (n b).  Each
does n multiplies (vector FLOPs).  The forward kernels run on the forward's stream after its
kernels (``step``); the backward ones in the backward plan before their node's own kernels.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from analyzer.counting import kernel_words
from analyzer.counting.engine import DROPOUT_TRAIN, FOLDED
from analyzer.errors import InputSpecError
from analyzer.ir.graph import DTYPE_BITS, TensorSpec
from analyzer.prediction import fusion
from analyzer.training.grad_kernel import BwdKernel

_ONNX = ("", "ai.onnx")
_VIEWS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})
_PROJECTIONS = frozenset({"MatMul", "Gemm"})
KINDS = ("attention", "residual", "embedding", "onnx")


@dataclass(frozen=True)
class Placement:
    """One dropout: on output 0 of node ``index`` (``where``: a ``KINDS`` word), probability
    ``p``, ``numel`` elements of ``bits`` each."""

    index: int
    where: str
    p: float
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return prod(self.shape)

    def nbytes(self) -> int:
        """Bytes of the tensor (x, y, dX or dY): numel x the dtype's bits / 8."""
        return (self.numel * DTYPE_BITS.get(self.dtype, 32) + 7) // 8


class _Graph:
    def __init__(self, nodes):
        self.nodes = nodes
        self.producer, self.readers = fusion.tensor_index(nodes, lambda n: (n.out_names, n.in_names))

    def prod_of(self, i: int, p: int):
        n = self.nodes[i]
        t = n.in_names[p] if p < len(n.in_names) else ""
        return self.producer.get((n.level, t)) if t else None

    def through_views(self, j):
        """The first producer at or before ``j`` that is not a view (None: a graph input or an
        initializer)."""
        while j is not None and _is_view(self.nodes[j]):
            j = self.prod_of(j, 0)
        return j

    def out_readers(self, i: int) -> list[int]:
        n = self.nodes[i]
        return self.readers.get((n.level, n.out_names[0]), []) if n.out_names else []

    def reads_first(self, i: int, op: str) -> bool:
        """Whether a node ``op`` reads node ``i``'s output (seen through views) as input 0."""
        todo, seen = [i], set()
        while todo:
            j = todo.pop()
            t = self.nodes[j].out_names[0] if self.nodes[j].out_names else ""
            for r in self.out_readers(j):
                nr = self.nodes[r]
                if nr.op == op and nr.in_names and nr.in_names[0] == t:
                    return True
                if _is_view(nr) and r not in seen:
                    seen.add(r)
                    todo.append(r)
        return False

    def descends(self, j, start: int) -> bool:
        """Whether node ``j``'s output is computed from node ``start``'s (graph order is
        topological: only nodes after ``start`` can be)."""
        todo, seen = [j], set()
        while todo:
            k = todo.pop()
            if k is None or k < start or k in seen:
                continue
            if k == start:
                return True
            seen.add(k)
            todo.extend(self.prod_of(k, p) for p in range(len(self.nodes[k].in_names)))
        return False


def _is_view(n) -> bool:
    if n.domain not in _ONNX:
        return False
    if n.op in _VIEWS:
        return True
    return n.op == "Cast" and bool(n.in_specs) and n.in_specs[0] is not None and \
        n.out_specs[0] is not None and n.in_specs[0].dtype == n.out_specs[0].dtype


def _floating(spec) -> bool:
    return spec is not None and str(spec.dtype).startswith(("float", "bfloat"))


def _const(n, p: int) -> bool:
    return p in n.constant_inputs


def _projection(g: _Graph, j) -> bool:
    """Node ``j`` is a projection: Gemm, MatMul of a constant weight, or the bias Add of one."""
    if j is None:
        return False
    n = g.nodes[j]
    if n.domain not in _ONNX:
        return False
    if n.op == "Add" and len(n.in_names) == 2 and any(_const(n, p) for p in (0, 1)):
        src = next(p for p in (0, 1) if not _const(n, p))
        j2 = g.prod_of(j, src)
        return j2 is not None and _projection(g, j2) and g.nodes[j2].op != "Add"
    return n.op == "Gemm" or (n.op == "MatMul" and _const(n, 1))


def _embedding_input(g: _Graph, i: int, p: int) -> bool:
    n = g.nodes[i]
    spec = n.in_specs[p] if p < len(n.in_specs) else None
    if not _floating(spec):
        return False
    if _const(n, p) and spec.shape is not None and len(spec.shape) >= 2 and g.prod_of(i, p) is None:
        return True      # a learned position embedding (a parameter added as is)
    j = g.through_views(g.prod_of(i, p))
    if j is None:
        return False
    s = g.nodes[j]
    w = s.in_specs[0] if s.in_specs else None
    return s.op == "Gather" and _floating(w) and w.shape is not None and len(w.shape) == 2


def _embedding_sum(g: _Graph, i: int) -> bool:
    n = g.nodes[i]
    return n.op == "Add" and n.domain in _ONNX and n.status != FOLDED and len(n.in_names) == 2 \
        and any(_embedding_input(g, i, p) for p in (0, 1))


def _residual_branch(g: _Graph, i: int):
    """The node whose output is the projection branch of residual Add ``i`` (or None)."""
    n = g.nodes[i]
    if n.op != "Add" or n.domain not in _ONNX or n.status == FOLDED or len(n.in_specs) != 2 \
            or any(_const(n, p) for p in (0, 1)) or n.in_specs[0] is None \
            or n.in_specs[0].shape != (n.in_specs[1].shape if n.in_specs[1] else None):
        return None
    for p in (0, 1):
        j = g.prod_of(i, p)
        src = g.through_views(j)
        if _projection(g, src) and not g.descends(g.prod_of(i, 1 - p), src):
            return j     # (the other input computed from the branch: an activation's x + ...)
    return None


def placements(nodes, p: float | None) -> tuple[Placement, ...]:
    """The dropouts of one training step over a Report's ``nodes`` (module docstring), graph
    order; ``p``: the probability of the conventional ones (None or 0: none of those)."""
    g = _Graph(nodes)
    found: dict[int, str] = {}
    probs: dict[int, float] = {}
    for i, n in enumerate(nodes):
        if n.domain not in _ONNX or n.status == FOLDED:
            continue
        if n.op == "Dropout":
            r = _training_ratio(n)
            if r:
                found[i], probs[i] = "onnx", r
            continue
        if not p:
            continue
        if n.op == "Softmax" and g.reads_first(i, "MatMul"):
            found.setdefault(i, "attention")
        elif n.op == "Add":
            j = _residual_branch(g, i)
            if j is not None:
                found.setdefault(j, "residual")
            elif _embedding_sum(g, i) and not any(_embedding_sum(g, r) for r in g.out_readers(i)):
                readers = g.out_readers(i)
                at = readers[0] if len(readers) == 1 and nodes[readers[0]].op == \
                    "LayerNormalization" else i
                found.setdefault(at, "embedding")
    out = []
    for i in sorted(found):
        n = nodes[i]
        spec = n.out_specs[0] if n.out_specs else None
        if spec is None or not spec.is_static or not _floating(spec) or \
                any(nodes[r].op == "Dropout" for r in g.out_readers(i)):
            continue
        out.append(Placement(i, found[i], probs.get(i, p or 0.0), tuple(spec.shape),
                             str(spec.dtype)))
    return tuple(out)


def _training_ratio(n) -> float:
    """The ratio of a Dropout node in training mode (``engine.dropout_kernel``), else 0."""
    ratio = kernel_words.value(n.kernel, DROPOUT_TRAIN)
    return 0.0 if ratio is None else float(ratio)


def check(p) -> float | None:
    """``p`` as a probability in [0, 1) (None: no dropout); InputSpecError otherwise."""
    if p is None:
        return None
    try:
        v = float(p)
    except (TypeError, ValueError):
        raise InputSpecError(f"dropout must be a probability in [0, 1), not {p!r}") from None
    if not 0.0 <= v < 1.0:
        raise InputSpecError(f"dropout must be a probability in [0, 1), not {p!r}")
    return v


def forward_kernel(pl: Placement, name: str) -> BwdKernel:
    """``fused_dropout``: reads x, writes y and a 1-byte mask per element."""
    spec = TensorSpec(pl.shape, pl.dtype)
    return BwdKernel(pl.index, f"{name}/dropout", "dropout", "Dropout", (spec,),
                     (spec, TensorSpec(pl.shape, "bool")), vector_flops=pl.numel,
                     bytes_read=pl.nbytes(), bytes_written=pl.nbytes() + pl.numel)


def backward_kernel(pl: Placement, name: str) -> BwdKernel:
    """``native_dropout_backward``: reads dY and the mask, writes dX."""
    spec = TensorSpec(pl.shape, pl.dtype)
    return BwdKernel(pl.index, f"{name}/dropout_backward", "dropout_backward", "Mul",
                     (spec, TensorSpec(pl.shape, "bool")), (spec,), vector_flops=pl.numel,
                     bytes_read=pl.nbytes() + pl.numel, bytes_written=pl.nbytes())


def summary(nodes, places) -> dict:
    """The JSON of the placements: how many, where, on which node's output."""
    by: dict[str, int] = {}
    for pl in places:
        by[pl.where] = by.get(pl.where, 0) + 1
    return {"placed": len(places), "by_where": by,
            "nodes": [{"node": nodes[pl.index].name, "where": pl.where, "p": pl.p,
                       "elements": pl.numel} for pl in places]}

