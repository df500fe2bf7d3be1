"""The counts of one training step from a forward Report, and its memory footprint (no hardware).

Conventions (stated, so the numbers can be checked by hand):

- Which tensors need a gradient: a floating-point constant input of a node of rank >= 1 (a
  weight; a rank-0 constant is a literal of the exporter, 0.5 or sqrt(2), not a parameter) and
  every floating-point output of a node that has such an input upstream (integer and boolean
  tensors carry none: shape arithmetic, comparisons). Graph inputs (the data) do not.
- MatMul / Gemm / Conv (any node with MAC FLOPs): one backward product per operand that needs
  a gradient (dX and/or dW, each costing the forward's MACs): 2x the forward MACs when both
  do, 1x for the first layer (its input is data). Their other arithmetic (bias) is repeated
  once (the bias gradient is a sum over the batch).  Fused attention and other MAC ops with a
  gradient: 2x the forward MACs.
- Every other node on the gradient path: its forward arithmetic once more (vector and
  transcendental FLOPs, counted as vector FLOPs: the backward of exp, tanh, softmax, a norm is
  multiplies and adds over saved values).  Nodes off the path (shape arithmetic, the first
  layer's input side) cost nothing in backward.
- Optimizer update per parameter (fp32 master weights and states): none (no update) 0;
  SGD ``p -= lr*g`` 2 FLOPs,
  3 words moved; momentum ``v = mu*v + g; p -= lr*v`` 4 FLOPs, 5 words; Adam 12 FLOPs + 1
  sqrt, 7 words (p, g, m, v read; p, m, v written); AdamW Adam + decoupled decay (14 + 1).
- Memory: weights + gradients (one word of the weight dtype each) + optimizer state (fp32
  words per parameter: 0, 0, 1, 2, 2) + activations kept for backward (every node output on the
  gradient path, no recomputation: an upper bound) + each dropout's mask (1 byte per element).
  Activations scale with the batch, the rest does not: the largest batch that fits is
  ``floor((capacity - fixed) / activations_per_sample)``.

The time of the step: ``analyzer.training.step``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

OPTIMIZERS = {  # name: (vector FLOPs, transcendentals, fp32 state words, words moved) per param
    "none": (0, 0, 0, 0),
    "sgd": (2, 0, 0, 3),
    "momentum": (4, 0, 1, 5),
    "adam": (12, 1, 2, 7),
    "adamw": (14, 1, 2, 7),
}
_GEMM_LIKE = {"MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "QLinearMatMul",
              "QLinearConv", "ConvInteger", "dot_general", "conv_general_dilated", "FusedMatMul"}


def _floating(spec) -> bool:
    if spec is None:
        return False
    d = str(spec.dtype).lower()
    return d.startswith(("float", "bfloat", "f", "bf")) and not d.startswith("fn")


def _weight(spec) -> bool:
    """A constant input that is a parameter: floating, and not a rank-0 literal."""
    return _floating(spec) and not (spec.shape is not None and len(spec.shape) == 0)


@dataclass(frozen=True)
class NodeGrad:
    """What one node does in backward: gradient products (MAC nodes), and whether it is on the
    gradient path at all."""

    on_path: bool
    products: int   # backward MAC products, each the forward's MACs
    needs: tuple[bool, ...] = ()   # per input: its gradient is needed (a weight or on the path)


def gradient_plan(nodes) -> list[NodeGrad]:
    """Per node of a Report (graph order), which gradients it computes (module conventions)."""
    requires: set[str] = set()
    out = []
    for n in nodes:
        const = set(n.constant_inputs)
        need = []
        for k, name in enumerate(n.in_names):
            spec = n.in_specs[k] if k < len(n.in_specs) else None
            if k in const:
                need.append(_weight(spec))
            else:
                need.append(name in requires)
        # (an output of a known non-floating dtype carries no gradient: Shape, comparisons)
        floating_out = [x for x, o in zip(n.out_names, n.out_specs) if x and (o is None or _floating(o))]
        on_path = any(need) and bool(floating_out)
        products = 0
        if on_path and n.cost.mac_flops:
            if n.op in _GEMM_LIKE:
                products = sum(1 for x in need[:2] if x)
            else:
                products = 2
        if on_path:
            requires.update(floating_out)
        out.append(NodeGrad(on_path, products, tuple(need)))
    return out


@dataclass(frozen=True, kw_only=True)
class TrainCounts:
    """Exact FLOPs of one step, by phase; ``params`` and the optimizer named."""

    optimizer: str
    params: int
    forward_mac: int
    forward_vector: int
    forward_transcendental: int
    backward_mac: int
    backward_vector: int
    optimizer_vector: int
    optimizer_transcendental: int
    optimizer_bytes: int
    dropout_forward: int = 0      # the dropouts' multiplies (``training.dropout``), in forward_vector
    dropout_backward: int = 0     # their backward multiplies, in backward_vector

    @property
    def mac_flops(self) -> int:
        return self.forward_mac + self.backward_mac

    @property
    def flops(self) -> int:
        return (self.forward_mac + self.forward_vector + self.forward_transcendental
                + self.backward_mac + self.backward_vector + self.optimizer_vector
                + self.optimizer_transcendental)

    def to_dict(self) -> dict[str, Any]:
        fwd = {"mac_flops": self.forward_mac, "vector_flops": self.forward_vector,
               "transcendentals": self.forward_transcendental}
        bwd = {"mac_flops": self.backward_mac, "vector_flops": self.backward_vector}
        if self.dropout_forward or self.dropout_backward:
            fwd["of_which_dropout_vector_flops"] = self.dropout_forward
            bwd["of_which_dropout_vector_flops"] = self.dropout_backward
        return {"optimizer": self.optimizer, "params": self.params, "forward": fwd, "backward": bwd,
                "optimizer_update": {"vector_flops": self.optimizer_vector,
                                     "transcendentals": self.optimizer_transcendental,
                                     "bytes": self.optimizer_bytes},
                "mac_flops": self.mac_flops, "flops": self.flops}


def check_optimizer(name: str) -> str:
    from analyzer.errors import InputSpecError

    key = (name or "sgd").lower()
    if key not in OPTIMIZERS:
        raise InputSpecError(f"unknown optimizer '{name}' (known: {', '.join(OPTIMIZERS)})")
    return key


def train_counts(report, optimizer: str = "sgd", plan: list[NodeGrad] | None = None,
                 dropouts=()) -> TrainCounts:
    """The step's counts from a forward ``report`` (module conventions).  Each of ``dropouts``
    (``training.dropout.Placement``; an ONNX training-mode Dropout too, which the inference
    count leaves at zero: it is an identity there) adds n multiplies (y = x * mask * 1/(1-p),
    the mask and scale one factor) to the forward and, where its node is on the gradient path,
    n to the backward (dX = dY * mask * 1/(1-p))."""
    optimizer = check_optimizer(optimizer)
    plan = plan if plan is not None else gradient_plan(report.nodes)
    bm = bv = 0
    for n, g in zip(report.nodes, plan):
        if not g.on_path:
            continue
        c = n.cost
        if c.mac_flops:
            bm += c.mac_flops * g.products
            bv += c.vector_flops
        else:
            bv += c.vector_flops + c.transcendentals
    df = sum(pl.numel for pl in dropouts)
    db = sum(pl.numel for pl in dropouts if plan[pl.index].on_path)
    t = report.totals
    ov, ot, _, words = OPTIMIZERS[optimizer]
    return TrainCounts(optimizer=optimizer, params=t.params, forward_mac=t.mac_flops,
                       forward_vector=t.vector_flops + df, forward_transcendental=t.transcendentals,
                       backward_mac=bm, backward_vector=bv + db, optimizer_vector=ov * t.params,
                       optimizer_transcendental=ot * t.params, optimizer_bytes=words * 4 * t.params,
                       dropout_forward=df, dropout_backward=db)


@dataclass(frozen=True)
class Memory:
    weights: int
    gradients: int
    optimizer_state: int
    activations: int
    batch: int | None

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer_state + self.activations

    def max_batch(self, capacity: float) -> int | None:
        """Largest batch whose footprint fits ``capacity`` bytes (activations ∝ batch)."""
        if not self.batch or self.activations <= 0:
            return None
        fixed = self.weights + self.gradients + self.optimizer_state
        per_sample = self.activations / self.batch
        return max(0, math.floor((capacity - fixed) / per_sample))

    def to_dict(self) -> dict[str, Any]:
        return {"weights": self.weights, "gradients": self.gradients,
                "optimizer_state": self.optimizer_state, "activations": self.activations,
                "total": self.total}


def memory(report, optimizer: str, batch: int | None, weight_bytes: int = 4,
           plan: list[NodeGrad] | None = None) -> Memory:
    plan = plan if plan is not None else gradient_plan(report.nodes)
    p = report.totals.params
    act = 0
    for n, g in zip(report.nodes, plan):
        if g.on_path:
            act += n.cost.activation_bytes_written
    state = OPTIMIZERS[check_optimizer(optimizer)][2] * 4 * p
    return Memory(p * weight_bytes, p * weight_bytes, state, act, batch)
