"""Tensor parallelism as Megatron-LM splits a transformer, for ``t`` devices: the plan of a
pattern ``analyzer.scaling.tensor_pattern.find`` recognised (sequence parallelism: Korthikanti
et al. 2022).

Communication of one step on ``t`` devices (Megatron's f/g operators), bytes = elements x
element bytes of the tensor:

- forward: one all-reduce of each row-parallel GEMM's output, one of the word embedding's output;
- backward (training): one all-reduce of the input gradient of each sibling set of column-
  parallel GEMMs (siblings share one, their input gradients summed on the device first), one of
  the LM head's input gradient; none where that input needs no gradient (the data itself).
- sequence parallelism: each of those all-reduces becomes a reduce-scatter (of the same tensor)
  plus an all-gather (of the same tensor) on the other side of the replicated region, in forward
  and backward alike, and the replicated nodes that carry activations (layer norms, dropouts,
  residual adds: every node on the gradient path but the word embedding's lookup) are split by
  the sequence: ``1/t`` too. Megatron's extra
  all-gather of a column input kept sharded for the weight gradient overlaps the input-gradient
  GEMM and is not charged.

Parameters: the column GEMMs' weights and biases (the region's constant tensors of more than one
element), the row GEMMs' weights (not their biases, added after the all-reduce), the word
embedding and the LM head are split ``t`` ways (``ceil(numel / t)`` per device); the rest is
replicated. Gradients and optimizer state follow the parameters.

- the vocab-parallel cross entropy (megatron/core/tensor_parallel/cross_entropy.py, Megatron's
  GPT loss at every tensor-parallel degree): where a SoftmaxCrossEntropyLoss reads the LM
  head's output (through reshapes), three forward all-reduces over the tensor group of one fp32
  word per row (rows = the logits' elements / the vocabulary): the logits' max, the target
  logit, the sum of exponentials; unchanged by sequence parallelism.

The cross entropy's own kernels as Megatron writes them replace the graph's loss on Megatron's
step (``analyzer.training.megatron_loss``); the backward all-reduces' overlap with the
weight-gradient GEMMs: ``analyzer.scaling.tensor_overlap``. Not modelled: per-device kernel
efficiency at the smaller shapes (a node's body time is divided by its factor, its launches are
not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from analyzer.scaling.tensor_pattern import SHAPE_ONLY, Pair, Pattern, find, weight_dims

__all__ = ["Collective", "Pattern", "Plan", "find", "plan"]


def _numel(spec) -> int | None:
    if spec is None or spec.shape is None:
        return None
    n = 1
    for d in spec.shape:
        if not isinstance(d, int):
            return None
        n *= d
    return n


def _elem_bytes(spec) -> int:
    """Bytes per element of a tensor spec (4 when its dtype is unknown)."""
    from analyzer.ir.graph import DTYPE_BITS

    bits = DTYPE_BITS.get(str(spec.dtype)) if spec is not None else None
    return max(1, bits // 8) if bits else 4


@dataclass(frozen=True)
class Collective:
    """One collective of the step: which, where, in which pass, of how many bytes."""

    kind: str        # all_reduce | reduce_scatter | all_gather
    phase: str       # forward | backward
    node: str        # the node whose tensor it moves
    elements: int
    nbytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "phase": self.phase, "node": self.node,
                "elements": self.elements, "bytes": self.nbytes}


@dataclass(frozen=True)
class Plan:
    """Tensor parallelism over ``t`` devices: per node index the factor its work is divided by
    (``factors[i]`` multiplies node i's body time), the collectives of one step, the node
    indices of column / row GEMMs, and the parameters on one device."""

    t: int
    sequence_parallel: bool
    train: bool
    recognised: bool
    factors: tuple[float, ...]
    collectives: tuple[Collective, ...]
    columns: tuple[int, ...]
    rows: tuple[int, ...]
    params: int               # the model's parameters
    params_per_device: int
    split_params: int         # of ``params``, those split t ways
    notes: tuple[str, ...] = ()
    pairs: tuple[Pair, ...] = field(default=(), repr=False)
    # node index -> its per-device output shapes (split nodes whose split axis is traced)
    shapes: dict = field(default_factory=dict, repr=False)
    # node index -> (K, N) of a split GEMM's weight on one device (column: N/t, row: K/t)
    weights: dict = field(default_factory=dict, repr=False)
    # names of the constant tensors split t ways (``_split_tensors``)
    split: frozenset = field(default=frozenset(), repr=False)

    def summary(self, nodes) -> dict[str, Any]:
        by = {}
        for c in self.collectives:
            k = by.setdefault(f"{c.kind}_{c.phase}", {"count": 0, "bytes": 0})
            k["count"] += 1
            k["bytes"] += c.nbytes
        return {"recognised": self.recognised, "sequence_parallel": self.sequence_parallel,
                "pairs": len(self.pairs),
                "column_parallel": [nodes[i].name for i in self.columns],
                "row_parallel": [nodes[i].name for i in self.rows],
                "split_nodes": sum(1 for f in self.factors if f < 1),
                "split_nodes_with_shapes": len(self.shapes),
                "collectives": by, "params": self.params,
                "params_per_device": self.params_per_device}


def _split_tensors(nodes, pat: Pattern) -> dict[str, int]:
    """name -> elements of each constant tensor the split divides t ways."""
    out: dict[str, int] = {}

    def add(n, k):
        if k < len(n.in_names) and n.in_names[k] and k in n.constant_inputs:
            e = _numel(n.in_specs[k])
            if e and e > 1:
                out[n.in_names[k]] = e

    def add_all(i):
        for k in range(len(nodes[i].in_names)):
            add(nodes[i], k)

    for p in pat.pairs:
        for i in p.columns + p.region:
            add_all(i)
        for i in p.rows:
            add(nodes[i], 1)
    if pat.embedding is not None:
        add(nodes[pat.embedding], 0)
    if pat.lm_head is not None:
        add_all(pat.lm_head)
    return out


def _tensor_elems(n, output: bool) -> tuple[int, int]:
    """(elements, element bytes) of node n's first output, or of its data input."""
    spec = (n.out_specs[0] if n.out_specs else None) if output else (n.in_specs[0] if n.in_specs else None)
    return _numel(spec) or 0, _elem_bytes(spec)


_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Relu", "Gelu", "FastGelu", "BiasGelu",
                          "Tanh", "Sigmoid", "Erf", "Pow", "Sqrt", "Exp", "Softmax", "Dropout",
                          "Where", "Cast", "Identity", "Neg", "Abs", "Max", "Min", "Clip",
                          "LeakyRelu", "HardSigmoid", "HardSwish", "Silu", "QuickGelu", "Not",
                          "Equal", "Softplus", "Log"})


def _reshape_axis(src: tuple, dst: tuple, axis: int) -> int | None:
    """The axis of ``dst`` that a split of ``src`` along ``axis`` lands on: the one whose
    preceding dims hold as many elements as ``src``'s before ``axis`` (a split of the major
    part of a merged or divided dim)."""
    before = math.prod(src[:axis])
    acc = 1
    for k, d in enumerate(dst):
        if acc == before and d != 1:
            return k
        acc *= d
    return None


def _trace_shapes(nodes, pairs, t: int) -> dict[int, tuple]:
    """Per split node, its per-device output shapes: the split axis followed from each column
    GEMM's output (its last axis) through the region by op (elementwise: same axis from the
    right; Transpose: permuted; Reshape: by element counts; Split, Softmax and batched MatMul:
    kept), divided by ``t`` (ceil). Row GEMMs: the full output. Nodes whose axis is lost are left
    out."""
    out: dict[int, tuple] = {}

    def cut(shape, ax):
        return tuple(-(-d // t) if k == ax else d for k, d in enumerate(shape))

    for p in pairs:
        axis: dict[str, int] = {}   # tensor -> split axis counted from the right (negative)
        for i in p.columns:
            n = nodes[i]
            o = n.out_specs[0]
            if o is not None and o.shape:
                axis[n.out_names[0]] = -1
                out[i] = (cut(o.shape, len(o.shape) - 1),)
        for i in sorted(p.region):
            n = nodes[i]
            ins = [(x, spec) for x, spec in zip(n.in_names, n.in_specs) if x in axis]
            if not ins or not all(o is not None and o.shape for o in n.out_specs):
                continue
            x, spec = ins[0]
            a = axis[x]
            shapes = [tuple(o.shape) for o in n.out_specs]
            if n.op in _ELEMENTWISE or n.op == "Split":
                new = a
            elif n.op == "MatMul":   # batched product: a split batch (head) axis is kept
                new = a if a < -2 else None
            elif n.op == "Transpose" and spec is not None and spec.shape:
                pos = _perm_of(tuple(spec.shape), shapes[0], len(spec.shape) + a)
                new = pos[0] - len(shapes[0]) if pos else None
            elif n.op in SHAPE_ONLY and spec is not None and spec.shape:
                k = _reshape_axis(tuple(spec.shape), shapes[0], len(spec.shape) + a)
                new = None if k is None else k - len(shapes[0])
            else:
                new = None
            if new is None:
                continue
            for name in n.out_names:
                if name:
                    axis[name] = new
            out[i] = tuple(cut(sh, len(sh) + new) for sh in shapes)
        for i in p.rows:
            o = nodes[i].out_specs[0]
            if o is not None and o.shape:
                out[i] = (tuple(o.shape),)
    return out


def _perm_of(src, dst, ax: int) -> list[int]:
    """Candidate positions in ``dst`` of ``src``'s axis ``ax`` (by matching sizes when the
    permutation itself is not on the node: the first position of equal size not taken by an
    earlier unique match)."""
    want = src[ax]
    hits = [k for k, d in enumerate(dst) if d == want]
    if len(hits) == 1:
        return hits
    # ambiguous sizes: keep the order of equal-sized axes
    same_before = sum(1 for k in range(ax) if src[k] == want)
    return [hits[same_before]] if same_before < len(hits) else []


def _params(nodes, pat: Pattern, t: int, params: int | None, notes: list) -> tuple[int, int, int]:
    """(params, of them split t ways, params on one device)."""
    split = _split_tensors(nodes, pat) if pat.recognised else {}
    if params is None:
        params = sum(split.values())
    split_total = sum(split.values())
    per_dev = params - split_total + sum(math.ceil(e / t) for e in split.values())
    if split_total > params:   # a tied weight seen under two names: split only the count
        notes.append(f"split weights ({split_total}) exceed the parameter count ({params}): "
                     "a tied or shared weight; parameters per device taken as params / t")
        split_total, per_dev = params, math.ceil(params / t)
    return params, split_total, per_dev


def _where_collectives(nodes, pat: Pattern, train: bool) -> list[tuple[str, int, bool]]:
    """``(phase, node index, its output?)`` of each all-reduce (module docstring): row outputs
    and the embedding's in forward; each column set's input gradient and the LM head's in
    backward, where that input needs a gradient."""
    from analyzer.training.step import gradient_plan

    needs_grad = {x for n, g in zip(nodes, gradient_plan(nodes)) if g.on_path
                  for x in n.out_names if x}
    out = []
    for p in pat.pairs:
        out += [("forward", i, True) for i in p.rows]
        seen = set()
        for i in p.columns if train else ():
            x = nodes[i].in_names[0]
            if x not in seen and x in needs_grad:
                seen.add(x)
                out.append(("backward", i, False))
    if pat.embedding is not None:
        out.append(("forward", pat.embedding, True))
    if pat.lm_head is not None and train and nodes[pat.lm_head].in_names[0] in needs_grad:
        out.append(("backward", pat.lm_head, False))
    return out


CE_WORD = 4   # the cross entropy's all-reduced words: fp32 (Megatron's ``output.float()``)


def _loss_rows(nodes, pat: Pattern) -> list[tuple[int, int]]:
    """(loss node index, rows) of each SoftmaxCrossEntropyLoss reading the LM head's output
    through shape-only nodes; rows = its logits' elements / the vocabulary (last dim)."""
    if pat.lm_head is None or not nodes[pat.lm_head].out_names:
        return []
    names = {nodes[pat.lm_head].out_names[0]}
    out = []
    for i in range(pat.lm_head + 1, len(nodes)):
        n = nodes[i]
        if not n.in_names or n.in_names[0] not in names:
            continue
        if n.op in SHAPE_ONLY:
            names.update(x for x in n.out_names if x)
        elif n.op == "SoftmaxCrossEntropyLoss":
            e, spec = _numel(n.in_specs[0]), n.in_specs[0]
            if e and spec.shape and isinstance(spec.shape[-1], int) and spec.shape[-1]:
                out.append((i, e // spec.shape[-1]))
    return out


def _factors(nodes, pat: Pattern, t: int, sequence_parallel: bool) -> list[float]:
    """Per node, what its work is divided by on one device (module docstring)."""
    factors = [1.0] * len(nodes)
    split = {i for p in pat.pairs for i in p.columns + p.region + p.rows}
    if pat.lm_head is not None:
        split.update((pat.lm_head,) + pat.lm_region)
    for i in split:
        factors[i] = 1.0 / t
    if sequence_parallel and split:
        # the replicated activation nodes (layer norms, dropouts, residual adds: every node on
        # the gradient path but the word embedding's lookup) split by the sequence
        from analyzer.training.step import gradient_plan

        for i, g in enumerate(gradient_plan(nodes)):
            if g.on_path and i not in split and i != pat.embedding and nodes[i].status != "folded":
                factors[i] = 1.0 / t
    return factors


def plan(nodes, t: int, *, pattern: Pattern | None = None, outputs=(), train: bool = True,
         sequence_parallel: bool = False, params: int | None = None,
         elem_bytes: int | None = None) -> Plan:
    """The split of ``nodes`` over ``t`` devices (module docstring). ``params``: the model's
    parameter count (the Report's; default: the constants' own count); ``elem_bytes``: bytes
    per activation element on the wire (default: the tensor's dtype)."""
    if t < 1 or int(t) != t:
        raise ValueError(f"tensor-parallel degree must be an integer >= 1, got {t!r}")
    pat = pattern if pattern is not None else find(nodes, outputs)
    notes = list(pat.notes)
    params, split_total, per_dev = _params(nodes, pat, t, params, notes)
    split = frozenset(_split_tensors(nodes, pat)) if pat.recognised else frozenset()
    colls: list[Collective] = []
    unknown = 0
    for phase, i, output in (_where_collectives(nodes, pat, train) if pat.recognised else ()):
        e, b = _tensor_elems(nodes[i], output)
        nb = e * (elem_bytes or b)
        unknown += not e
        kinds = ("reduce_scatter", "all_gather") if sequence_parallel else ("all_reduce",)
        colls += [Collective(k, phase, nodes[i].name, e, nb) for k in kinds]
    for i, rows in (_loss_rows(nodes, pat) if pat.recognised else ()):
        colls += [Collective("all_reduce", "forward", nodes[i].name, rows, rows * CE_WORD)] * 3
    uneven = [p for p in pat.pairs if (p.heads and p.heads % t)
              or any(weight_dims(nodes[i])[1] % t for i in p.columns)
              or any(weight_dims(nodes[i])[0] % t for i in p.rows)]
    if uneven:   # counts only: notes reach terminals, node names stay in the JSON lists
        heads = sorted({p.heads for p in uneven if p.heads and p.heads % t})
        notes.append(f"{len(uneven)} of {len(pat.pairs)} column/row pairs do not divide by {t}"
                     + (f" (heads {', '.join(map(str, heads))})" if heads else "")
                     + ": charged as if padded")
    if unknown:
        notes.append(f"{unknown} collectives of unknown tensor size charged 0 bytes "
                     "(their per-call cost still counted)")
    cols = sorted([i for p in pat.pairs for i in p.columns]
                  + ([pat.lm_head] if pat.lm_head is not None else []))
    rows = sorted(i for p in pat.pairs for i in p.rows)
    weights = {i: (k, -(-n // t)) for i in cols for k, n in [weight_dims(nodes[i])]}
    weights.update({i: (-(-k // t), n) for i in rows for k, n in [weight_dims(nodes[i])]})
    return Plan(t, sequence_parallel, train, pat.recognised,
                tuple(_factors(nodes, pat, t, sequence_parallel)) if pat.recognised
                else (1.0,) * len(nodes), tuple(colls), tuple(cols), tuple(rows), params,
                per_dev if pat.recognised else params, split_total, tuple(notes), pat.pairs,
                _trace_shapes(nodes, pat.pairs, t) if pat.recognised else {}, weights, split)
