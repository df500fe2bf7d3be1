"""One training step from a forward Report: its counts and memory footprint
(``analyzer.training.counts``, whose docstring states their conventions), and per profile the
time of forward, backward and optimizer update.

Backward bytes, for the ratio method below: a node with MAC FLOPs moves its forward bytes per
gradient product (``counts.gradient_plan``); every other node on the gradient path twice its
forward bytes (it reads the saved forward value and the output gradient and writes the input
gradient); nodes off the path nothing.

Forward time: the forward prediction's latency, but under a runtime that runs the eager plan
(``eager``, ``eager-op``, ``eager-kernel``) on a graph with a BatchNorm the forward predicted again
with its BatchNorms in training mode (``forward_prediction``: rule ``bn-train``), plus the placed
dropouts' forward kernels (``training.dropout``).

Backward time.  Under a PyTorch runtime (eager, eager-op, kernel, eager-kernel) on a GPU: the kernels
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

from dataclasses import dataclass, replace
from typing import Any

from analyzer.ir.graph import PRECISION_BITS
from analyzer.training.counts import (
    OPTIMIZERS,
    Memory,
    NodeGrad,
    TrainCounts,
    check_optimizer,
    gradient_plan,
    memory,
    train_counts,
)


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
    forward_kernels: int = 0           # the forward's launches (training-mode BatchNorms, dropouts)
    bn_train: int = 0                  # BatchNorms the forward runs in training mode (rule bn-train)

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
                "max_batch": self.max_batch, "forward_kernels": self.forward_kernels,
                **({"bn_train": self.bn_train} if self.bn_train else {}),
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
    fpred = forward_prediction(report, prediction)
    ovh = sum(row.overhead_s for row in fpred.nodes)
    rows = {i: (body, launches) for i, body, launches in backward_rows(report, prediction, plan)}
    ratio = sum(body + launches for body, launches in rows.values())
    extra: dict[str, Any] = {"backward_ratio_s": ratio}
    if bt.applies(prediction, profile):
        if bplan is None:
            from analyzer.training.backward_plan import backward_plan

            bplan = backward_plan(report.nodes, plan, _outputs(report), dropouts)
        b = bt.backward_time(bplan, bt.as_nodes(bplan), fpred, profile, rows)
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
                         fpred, profile, True)
    opt = optimizer_time(profile, report.totals.params, optimizer, prediction.overlap)
    wbytes = PRECISION_BITS.get(prediction.precision, 32) // 8   # B per weight (4 when unknown)
    mem = memory(report, optimizer, batch, wbytes, plan)
    if dropouts:      # each dropout's mask is kept for backward: 1 byte per element
        mem = replace(mem, activations=mem.activations + sum(pl.numel for pl in dropouts))
    cap = profile.mem_gb * 1e9 if profile.mem_gb else None
    return StepTime(hardware=profile.id, forward_s=fpred.latency_s + fwd_drop, backward_s=bwd,
                    optimizer_s=opt, memory=mem, capacity_bytes=cap, overhead_s=ovh,
                    dropout_forward_s=fwd_drop, forward_kernels=fpred.launches + len(dropouts),
                    bn_train=batch_norms(report.nodes) if fpred is not prediction else 0, **extra)


def batch_norms(nodes) -> int:
    """BatchNorms of ``nodes``: BatchNormalization nodes that run and those the exporter folded
    into a Conv (its bias named ``onnx::Conv_*``)."""
    from analyzer.counting.engine import FOLDED
    from analyzer.training.backward_rules import FOLDED_BN_BIAS

    return sum(1 for n in nodes if n.status != FOLDED and n.domain in ("", "ai.onnx") and (
        n.op == "BatchNormalization" or (n.op == "Conv" and len(n.in_names) > 2
                                         and n.in_names[2].startswith(FOLDED_BN_BIAS))))


def forward_prediction(report, prediction):
    """The forward of a training step: ``prediction`` predicted again with its BatchNorms in
    training mode (``Runtime.train_forward``: the eager plan's rule ``bn-train``) where its
    runtime runs the eager plan and the graph has a BatchNorm (``batch_norms``); else
    ``prediction`` itself (no other kernel differs between eval and train mode; dropouts are
    placed apart, ``training.dropout``)."""
    from analyzer.prediction import eager_plan
    from analyzer.prediction.predict import predict

    t = prediction.target
    if t is None or t.runtime.fusion != eager_plan.POLICY or not batch_norms(report.nodes):
        return prediction
    hit = _FORWARD_MEMO.get(id(prediction))
    if hit is not None and hit[0] is report and hit[1] is prediction:
        return hit[2]
    train = replace(t, runtime=replace(t.runtime, train_forward=True))
    out = predict(report, [train], precision=prediction.precision if prediction.precision_explicit
                  else None, overlap=prediction.overlap, l2=prediction.l2)[0]
    if len(_FORWARD_MEMO) >= _FORWARD_MEMO_SIZE:
        _FORWARD_MEMO.pop(next(iter(_FORWARD_MEMO)))
    _FORWARD_MEMO[id(prediction)] = (report, prediction, out)   # (held: the ids stay unique)
    return out


# the last few ``forward_prediction`` results by (report, prediction) identity: a scaling curve
# asks for the same step's forward once per point and per device layout (both are frozen values)
_FORWARD_MEMO: dict[int, tuple] = {}
_FORWARD_MEMO_SIZE = 8


def dropout_forward_rows(report, prediction, profile) -> dict[int, float]:
    """Node index -> seconds of the forward dropout kernels the training step places on that
    node's output (``training.dropout``): each kernel alone (``backward_time.each_seconds``),
    scaled so that they sum to the step's ``dropout_forward_s`` (``step_time``'s pricing of
    them together); empty without dropouts. The per-device paths (tensor, pipeline) scale each
    by its node's share, as they scale the forward's rows."""
    from analyzer.training import backward_time as bt
    from analyzer.training import dropout as D

    tr = report.training
    st = next((s for s in tr.steps if s.hardware == prediction.hardware), None) if tr else None
    if st is None or not st.dropout_forward_s or not tr.dropout:
        return {}
    places = D.placements(report.nodes, tr.dropout.get("p"))
    secs = bt.each_seconds([D.forward_kernel(pl, report.nodes[pl.index].name) for pl in places],
                           prediction, profile)
    total = sum(secs)
    k = st.dropout_forward_s / total if total > 0 else 0.0
    out: dict[int, float] = {}
    for pl, s in zip(places, secs):
        out[pl.index] = out.get(pl.index, 0.0) + k * s
    return out


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
