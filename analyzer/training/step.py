"""One training step from a forward Report: counts, per-profile times, memory footprint.

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
  multiplies and adds over saved values) and twice its forward bytes (it reads the saved
  forward value and the output gradient and writes the input gradient).  Nodes off the path
  (shape arithmetic, the first layer's input side) cost nothing in backward.
- Backward bytes of a MAC node: its forward bytes per gradient product.
- Optimizer update per parameter (fp32 master weights and states): none (no update) 0;
  SGD ``p -= lr*g`` 2 FLOPs,
  3 words moved; momentum ``v = mu*v + g; p -= lr*v`` 4 FLOPs, 5 words; Adam 12 FLOPs + 1
  sqrt, 7 words (p, g, m, v read; p, m, v written); AdamW Adam + decoupled decay (14 + 1).
- Memory: weights + gradients (one word of the weight dtype each) + optimizer state (fp32
  words per parameter: 0, 0, 1, 2, 2) + activations kept for backward (every node output on the
  gradient path, no recomputation: an upper bound) + each dropout's mask (1 byte per element).
  Activations scale with the batch, the rest does not: the largest batch that fits is
  ``floor((capacity - fixed) / activations_per_sample)``.

Backward time.  Under a PyTorch runtime (eager, eager-op, kernel) on a GPU: the kernels
PyTorch's autograd launches (``backward_plan``, rules in ``backward_rules``), each priced by the
prediction stage like a forward kernel and run after the forward on the runtime's stream
(``backward_time``); a node no rule covers is priced by the ratio method below and counted
(``StepTime.backward_fallback``, the JSON's ``backward_plan.fallback_nodes``).  Under every
other runtime (xla, onnxruntime, coreml, edgetpu, tflite, qnn ...) and on other kinds of
device, the ratio method: per node, its forward kernel's compute and memory terms scaled by the
ratios of backward to forward FLOPs and bytes, plus one launch per backward kernel
(``overlap``: the max of the two terms, else their sum).  The optimizer update is a roofline
over the profile's datasheet vector peak and memory bandwidth plus one launch; optimizer
``none``: no update (forward + backward: ``loss.backward()`` timed between CUDA events).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from analyzer.ir.graph import PRECISION_BITS

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


@dataclass(frozen=True, kw_only=True)
class StepTime:
    """One profile's predicted step: phases in seconds, the footprint against its memory."""

    hardware: str
    forward_s: float
    backward_s: float
    optimizer_s: float
    memory: Memory
    capacity_bytes: float | None
    # the launch overheads inside forward + backward (what does not shrink with the batch)
    overhead_s: float = 0.0
    # how backward was priced: "kernel plan" (PyTorch autograd's kernels) or "ratio"
    backward_method: str = "ratio"
    backward_kernels: int = 0          # kernels of the plan (0 under the ratio method)
    backward_fallback: int = 0         # nodes of the plan priced by the ratio method
    backward_ratio_s: float = 0.0      # the ratio method's backward, for comparison
    dropout_forward_s: float = 0.0     # the dropout kernels' forward, inside forward_s
    dropout_backward_s: float = 0.0    # their backward under the ratio method, in backward_s

    @property
    def step_s(self) -> float:
        return self.forward_s + self.backward_s + self.optimizer_s

    @property
    def fits(self) -> bool | None:
        return None if self.capacity_bytes is None else self.memory.total <= self.capacity_bytes

    @property
    def max_batch(self) -> int | None:
        return None if self.capacity_bytes is None else self.memory.max_batch(self.capacity_bytes)

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "forward_s": self.forward_s,
                "backward_s": self.backward_s, "optimizer_s": self.optimizer_s,
                "step_s": self.step_s, "memory": self.memory.to_dict(),
                "capacity_bytes": self.capacity_bytes, "fits": self.fits,
                "max_batch": self.max_batch,
                "backward": {"method": self.backward_method, "kernels": self.backward_kernels,
                             "fallback_nodes": self.backward_fallback,
                             "ratio_method_s": self.backward_ratio_s},
                **({"dropout_forward_s": self.dropout_forward_s} if self.dropout_forward_s else {})}


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0


def backward_rows(report, prediction, plan: list[NodeGrad] | None = None) -> list[tuple[int, float, float]]:
    """Per node of ``prediction`` on the gradient path, ``(node index, body s, launches s)`` of
    its backward kernels by the module's conventions (the body scales with the work, the
    launches do not)."""
    plan = plan if plan is not None else gradient_plan(report.nodes)
    out = []
    for row in prediction.nodes:
        n, g = report.nodes[row.index], plan[row.index]
        if not g.on_path:
            continue
        c = n.cost
        f_flops = c.mac_flops + c.vector_flops + c.transcendentals
        f_bytes = c.weight_bytes + c.activation_bytes_read + c.activation_bytes_written
        if c.mac_flops:
            b_flops = c.mac_flops * g.products + c.vector_flops
            b_bytes = f_bytes * max(g.products, 1)
            kernels = max(g.products, 1)
        else:
            b_flops = c.vector_flops + c.transcendentals
            b_bytes = 2 * f_bytes
            kernels = 1
        comp = row.compute_s * _ratio(b_flops, f_flops)
        mem = row.memory_s * _ratio(b_bytes, f_bytes)
        body = max(comp, mem) if prediction.overlap else comp + mem
        out.append((row.index, body, row.overhead_s * kernels))
    return out


def optimizer_time(profile, params: float, optimizer: str, overlap: bool) -> float:
    """The update of ``params`` parameters: a roofline over the datasheet vector peak and memory
    bandwidth (``overlap``: the max of the two terms, else their sum) plus one launch."""
    counts = OPTIMIZERS[check_optimizer(optimizer)]
    if not any(counts):    # none: no update, no launch
        return 0.0
    peak = profile.peak_flops("vector", "fp32") or profile.peak_flops("matrix", "fp32")
    bw = (profile.mem_bw_gbs or 0) * 1e9
    opt_c = (counts[0] + counts[1]) * params / peak if peak else 0.0
    opt_m = counts[3] * 4 * params / bw if bw else 0.0
    launch = (profile.launch_overhead_us or 0.0) * 1e-6
    return (max(opt_c, opt_m) if overlap else opt_c + opt_m) + (launch if params else 0.0)


def step_time(report, prediction, profile, optimizer: str, batch: int | None,
              plan: list[NodeGrad] | None = None, bplan=None, dropouts=()) -> StepTime:
    """Backward and optimizer time of ``prediction`` (one profile's forward) by the module's
    conventions (``bplan``: the report's ``backward_plan``, built here when not given, with
    ``dropouts``' backward kernels); the memory footprint against ``profile.mem_gb``.  The
    ``dropouts``' forward kernels (``training.dropout``) are priced after the forward's and
    added to its time."""
    from analyzer.training import backward_time as bt
    from analyzer.training import dropout as D

    plan = plan if plan is not None else gradient_plan(report.nodes)
    ovh = sum(row.overhead_s for row in prediction.nodes)
    rows = {i: (body, launches) for i, body, launches in backward_rows(report, prediction, plan)}
    ratio = sum(body + launches for body, launches in rows.values())
    extra: dict[str, Any] = {"backward_ratio_s": ratio}
    if bt.applies(prediction, profile):
        if bplan is None:
            from analyzer.training.backward_plan import backward_plan

            bplan = backward_plan(report.nodes, plan, _outputs(report), dropouts)
        b = bt.backward_time(bplan, bt.as_nodes(bplan), prediction, profile, rows)
        bwd, ovh = b.backward_s, ovh + b.overhead_s
        extra.update(backward_method="kernel plan", backward_kernels=len(bplan.kernels),
                     backward_fallback=len(bplan.fallback))
    else:
        bwd, ovh = ratio, ovh + sum(launches for _, launches in rows.values())
        names = [report.nodes[pl.index].name for pl in dropouts]
        extra["dropout_backward_s"] = bt.seconds_of(
            [D.backward_kernel(pl, nm) for pl, nm in zip(dropouts, names)], prediction, profile, False)
        bwd += extra["dropout_backward_s"]
    fwd_drop = bt.seconds_of([D.forward_kernel(pl, report.nodes[pl.index].name) for pl in dropouts],
                         prediction, profile, True)
    opt = optimizer_time(profile, report.totals.params, optimizer, prediction.overlap)
    wbytes = PRECISION_BITS.get(prediction.precision, 32) // 8   # B per weight (4 when unknown)
    mem = memory(report, optimizer, batch, wbytes, plan)
    if dropouts:      # each dropout's mask is kept for backward: 1 byte per element
        mem = replace(mem, activations=mem.activations + sum(pl.numel for pl in dropouts))
    cap = profile.mem_gb * 1e9 if profile.mem_gb else None
    return StepTime(hardware=profile.id, forward_s=prediction.latency_s + fwd_drop, backward_s=bwd,
                    optimizer_s=opt, memory=mem, capacity_bytes=cap, overhead_s=ovh,
                    dropout_forward_s=fwd_drop, **extra)


@dataclass(frozen=True)
class Training:
    """The training view of one Report: counts (hardware-free) and one ``StepTime`` per
    profile (JSON key ``"training"``)."""

    counts: TrainCounts
    steps: tuple[StepTime, ...]
    batch: int | None
    backward_plan: Any = None    # backward_plan.BackwardPlan (hardware-free)
    plan_summary: dict | None = None   # its to_dict with the node names
    dropout: dict | None = None  # training.dropout.summary of the placements (None: none)

    def to_dict(self) -> dict[str, Any]:
        d = {"batch": self.batch, "conventions": "analyzer/training/step.py",
             **self.counts.to_dict(), "steps": [s.to_dict() for s in self.steps]}
        if self.plan_summary is not None:
            d["backward_plan"] = self.plan_summary
        if self.dropout is not None:
            d["dropout"] = self.dropout
        return d


def _outputs(report) -> tuple[str, ...]:
    """The graph's output names (each seeded with a gradient)."""
    model = report.model if isinstance(report.model, dict) else {}
    return tuple(model.get("outputs", ()) or ())


def training(report, optimizer: str = "sgd", batch: int | None = None,
             dropout: float | None = None) -> Training:
    """Counts, and a step per prediction the report carries; ``dropout``: the probability of
    the dropouts placed where PyTorch code conventionally puts them (``training.dropout``;
    None: none, but a training-mode export's own Dropout nodes)."""
    from analyzer.training import dropout as D
    from analyzer.training.backward_plan import backward_plan

    plan = gradient_plan(report.nodes)
    places = D.placements(report.nodes, D.check(dropout))
    counts = train_counts(report, optimizer, plan, places)
    bplan = backward_plan(report.nodes, plan, _outputs(report), places)
    steps = []
    for pred in report.predictions:
        # the profile the prediction was made on (a .toml file's, an edited one): never looked
        # up again by id; a Prediction built by hand without a target names a shipped profile
        if pred.target is not None:
            prof = pred.target.profile
        else:
            import hardware_db

            prof = hardware_db.get(pred.hardware)
        steps.append(step_time(report, pred, prof, optimizer, batch, plan, bplan, places))
    summary = None
    if places or dropout is not None:
        summary = {"p": dropout, **D.summary(report.nodes, places)}
    return Training(counts, tuple(steps), batch, bplan, bplan.to_dict(report.nodes), summary)
