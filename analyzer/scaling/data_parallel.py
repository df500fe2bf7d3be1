"""Data parallel the way PyTorch DDP, Megatron-LM's DDP and ZeRO / FSDP do it, from one device's
per-layer predictions at the local batch (``analyzer.scaling.schedules`` has the timelines).

Modes (``scale(..., data_parallel=...)``), ``d`` devices, ``P`` parameters:

- ``allreduce``: the whole gradient in ``buckets`` equal all-reduces (``parallel.exposed``).
- ``ddp``: PyTorch DDP. Gradients in reverse parameter order, buckets of ``bucket_mb`` MiB
  (default 25; the first bucket 1 MiB: ``bucket_cap_mb=25`` and the 1 MiB first bucket of
  torch.nn.parallel.DistributedDataParallel's documentation), each all-reduced when the
  backward of its last layer has finished (``overlap``), else all after backward.
- ``megatron``: Megatron-LM's DDP (megatron/core/distributed/distributed_data_parallel_config.py,
  core v0.7: ``bucket_size`` = max(40,000,000, 1,000,000 x d) parameters when
  ``overlap_grad_reduce``, one bucket without it); ``bucket_mb`` overrides.
- ``zero1``: optimizer state sharded: the update runs over P/d parameters, its state is /d;
  gradients all-reduced in Megatron's buckets; after the update the parameters are
  all-gathered (P x weight bytes, on the critical path).
- ``zero2``: as zero1, the gradients reduce-scattered (bucket by bucket) instead of all-reduced
  and held /d.
- ``zero3`` (FSDP full shard): parameters /d as well; units of ``bucket_mb`` MiB of parameters
  (default 25) in forward order, each all-gathered before its forward and again before its
  backward (one unit ahead), its gradients reduce-scattered after its backward; no gather
  after the update. Memory adds the two largest units gathered whole (the one computing and
  the one prefetched).

Megatron's passes over the gradients (``passes``: ``analyzer.training.grad_passes``; on by
default for ``megatron``): the buffer zeroed, the norm and the scale over the gradients the
device updates (P, or P/d when the optimizer state is sharded; the zeroing and the divide over
the gradients it holds), inside compute; the norm's all-reduce over the model-parallel group, of
one rank in data parallel: none. Megatron's own step kernels (``training.megatron_step``): the
fused kernels' change in forward, the main-grad adds in backward, Megatron's loss over the
graph's in both (``training.megatron_loss``; at the local batch; with the linear rescale the
fused kernels' bodies / d and the loss at the global batch's rows / d), and accelerate's
all-reduce of the loss (one fp32 word) over the d ranks, exposed.

Which node produces a gradient: the node that first consumes the parameter in graph order (its
``cost.params``), so a weight used twice is ready when the earlier use's backward ends. The
gradient is one word of the prediction's precision per parameter. Per-layer times are the
prediction's forward rows and ``training.step.backward_rows``, scaled to the step's forward and
backward totals. Memory per device uses opcost's training convention
(``analyzer.training.step``): weights and gradients one word of the weight dtype each, optimizer
state in fp32 words (Adam: m and v, 8 B per parameter; with fp32 weights the weights are the
master copy, so ZeRO's "12 B" of mixed precision is 8 B here), activations at the local batch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from analyzer.scaling import schedules as S
from analyzer.scaling.collectives import ZERO

MODES = ("allreduce", "ddp", "megatron", "zero1", "zero2", "zero3")
MIB = 1024 * 1024
TORCH_BUCKET_MB = 25          # torch DDP bucket_cap_mb default
TORCH_FIRST_BUCKET = 1 * MIB  # torch DDP's first bucket
MEGATRON_BUCKET_PARAMS = 40_000_000   # Megatron core DDP: max(40M, 1M x d) parameters
MEGATRON_BUCKET_PER_DEVICE = 1_000_000


@dataclass(frozen=True)
class Layers:
    """Per node index (graph order): forward and backward seconds (raw prediction rows) and the
    parameters whose gradient the node produces."""

    fwd: tuple[float, ...]
    bwd: tuple[float, ...]
    params: tuple[int, ...]


def train_forward(report, pred, train: bool = True):
    """The forward whose rows a training step's devices run: the step's own
    (``training.step.forward_prediction``: its BatchNorms in training mode, rule ``bn-train``,
    where the eager plan runs) when ``train`` and ``report`` carries a training step; else
    ``pred`` (inference, or a runtime whose forward is the same in both modes)."""
    if not train or report.training is None:
        return pred
    from analyzer.training.step import forward_prediction

    return forward_prediction(report, pred)


def layers(report, pred, train: bool = True) -> Layers:
    """The ``Layers`` of one prediction: its training forward's rows' times (``train_forward``),
    ``backward_rows`` (body + launches; zeros when not ``train``) and each node's ``cost.params``."""
    from analyzer.training.step import backward_rows

    n = len(report.nodes)
    fwd, bwd = [0.0] * n, [0.0] * n
    for r in train_forward(report, pred, train).nodes:
        fwd[r.index] += r.time_s
    if train:
        for i, body, launches in backward_rows(report, pred):
            bwd[i] += body + launches
    return Layers(tuple(fwd), tuple(bwd), tuple(x.cost.params for x in report.nodes))


def caps(mode: str, bucket_mb: float | None, overlap: bool, d: int, elem_bytes: int):
    """(bucket cap bytes or None for one bucket, first bucket's cap or None)."""
    if bucket_mb is not None:
        cap = bucket_mb * MIB
        return cap, (min(TORCH_FIRST_BUCKET, cap) if mode == "ddp" else None)
    if mode == "ddp":
        return TORCH_BUCKET_MB * MIB, TORCH_FIRST_BUCKET
    if mode == "zero3":
        return TORCH_BUCKET_MB * MIB, None
    if not overlap:
        return None, None
    return max(MEGATRON_BUCKET_PARAMS, MEGATRON_BUCKET_PER_DEVICE * d) * elem_bytes, None


def scaled(raw, total: float) -> list[float]:
    """``raw`` times ``total / sum(raw)`` (zeros when the sum is 0)."""
    s = sum(raw)
    return [x * total / s for x in raw] if s > 0 else [0.0] * len(raw)


def gradient_step(lay: Layers, fab, d: int, *, mode: str, bwd_s: float, overlap: bool, cap,
                  first_cap, grad_bytes: int, weight_bytes: int):
    """(Comm, exposed s, calls) of a bucketed gradient all-reduce (ddp, megatron, zero1) or
    reduce-scatter (zero2), plus zero1/zero2's parameter all-gather after the update."""
    bwd = scaled(lay.bwd, bwd_s)
    finish, acc = [0.0] * len(bwd), 0.0
    for i in range(len(bwd) - 1, -1, -1):   # backward runs the graph in reverse
        acc += bwd[i]
        finish[i] = acc
    order = [i for i in range(len(bwd) - 1, -1, -1) if lay.params[i]]
    groups = S.buckets([lay.params[i] * grad_bytes for i in order], cap, first_cap)
    kind = "reduce_scatter" if mode == "zero2" else "all_reduce"
    comm, ready, dur = ZERO, [], []
    for g in groups:
        c = fab.collective(kind, sum(lay.params[order[x]] for x in g) * grad_bytes, d)
        comm = comm + c
        dur.append(c.total)
        ready.append(max(finish[order[x]] for x in g) if overlap else bwd_s)
    exposed = S.exposed_after(S.stream(ready, dur), bwd_s)
    calls = len(groups)
    if mode in ("zero1", "zero2") and d > 1:
        ag = fab.allgather(sum(lay.params) * weight_bytes, d)
        comm, exposed, calls = comm + ag, exposed + ag.total, calls + 1
    return comm, exposed, calls


def sharded_step(lay: Layers, fab, d: int, *, fwd_s: float, bwd_s: float, overlap: bool, cap,
                 grad_bytes: int, weight_bytes: int):
    """(Comm, exposed s, calls, gathered bytes held at once: the two largest units) of
    ZeRO-3 / FSDP units."""
    fwd, bwd = scaled(lay.fwd, fwd_s), scaled(lay.bwd, bwd_s)
    groups = S.buckets([float(p) for p in lay.params], cap / weight_bytes)
    f_u = [sum(fwd[i] for i in g) for g in groups]
    b_u = [sum(bwd[i] for i in g) for g in groups]
    p_u = [sum(lay.params[i] for i in g) for g in groups]
    gather = [fab.allgather(p * weight_bytes, d) if p else ZERO for p in p_u]
    scatter = [fab.reduce_scatter(p * grad_bytes, d) if p else ZERO for p in p_u]
    comm = ZERO
    for g, r in zip(gather, scatter):
        comm = comm + g + g + r
    calls = 3 * sum(1 for p in p_u if p)
    live = sorted(p_u, reverse=True)[:2]   # the unit computing and the one prefetched
    held = sum(live) * weight_bytes
    if not overlap:
        return comm, comm.total, calls, held
    fe, be = S.sharded_units(f_u, b_u, [g.total for g in gather], [r.total for r in scatter])
    exposed = max(0.0, fe - sum(f_u)) + max(0.0, be - sum(b_u))
    return comm, exposed, calls, held


def memory(mem, mode: str, d: int, unit_bytes: int = 0) -> dict:
    """Bytes per device (``mem``: one device's ``training.step.Memory`` at the local batch)."""
    w, g, o, a = mem.weights, mem.gradients, mem.optimizer_state, mem.activations
    if mode in ("zero1", "zero2", "zero3"):
        o = -(-o // d)
    if mode in ("zero2", "zero3"):
        g = -(-g // d)
    if mode == "zero3":
        w = -(-w // d) + unit_bytes
    return {"weights": w, "gradients": g, "optimizer_state": o, "activations": a,
            "total": w + g + o + a}


def passes_of(pred, passes, elements: int, eb: int, fab=None, ranks: int = 1,
              zero_elements: int | None = None):
    """(seconds per pass of ``parallel.GRAD_PASSES`` but the step terms, the norm all-reduce's
    Comm) of one device updating ``elements`` gradient elements and holding ``zero_elements``
    (default the same: zeroed and divided), the norm all-reduced over ``ranks`` model-parallel
    ranks on ``fab``; (None, ZERO) when no pass runs."""
    from analyzer.training import grad_passes as GP

    if not passes.on:
        return None, ZERO
    prof = profile_of(pred)
    secs = GP.seconds(pred, prof, elements, eb, replace(passes, zero_grad=False, megatron=False))
    held = GP.seconds(pred, prof, zero_elements or elements, eb,
                      GP.GradPasses(None, passes.zero_grad, passes.megatron))
    secs.update(zero=held["zero"], divide=held["divide"])
    comm = fab.allreduce(GP.NORM_BYTES, ranks) if (passes.clip_grad and ranks > 1) else ZERO
    secs["norm_allreduce"] = comm.total
    return secs, comm


def step_terms(report, pred, passes, **kw):
    """Megatron's own step kernels of one prediction (``training.megatron_step.terms``, keywords
    passed on) when ``passes.megatron`` and the step updates parameters; else None."""
    from analyzer.training import megatron_step as MS

    tr = report.training
    if passes is None or not passes.megatron or tr is None or tr.counts.optimizer == "none":
        return None
    return MS.terms(report, pred, profile_of(pred), **kw)


def with_terms(secs: dict | None, tm) -> dict | None:
    """``secs`` (a ``passes_of`` record) with the step terms' sums (``accumulate``, ``fused``,
    ``cross_entropy``: Megatron's loss over the graph's, forward and backward; 0 without them)."""
    if secs is None:
        return None
    return secs | {"accumulate": sum(tm.accumulate) if tm else 0.0,
                   "fused": sum(tm.fused) if tm else 0.0,
                   "vocab_parallel": sum(tm.vocab_forward) + sum(tm.vocab_backward) if tm else 0.0}


def profile_of(pred):
    """The profile a prediction was made on."""
    if pred.target is not None:
        return pred.target.profile
    import hardware_db

    return hardware_db.get(pred.hardware)


def points(rep, fab, d: int, step1: dict, *, mode: str, overlap: bool, bucket_mb: float | None,
           div: int = 1, passes=None) -> list:
    """One ``parallel.Point`` per profile of ``rep`` (the model at the local batch; or at the
    global batch with ``div = d``: linear rescale, kernel bodies / d, launches kept) under
    ``mode``. Compute = forward + backward + the update (over P/d parameters when sharded) +
    Megatron's gradient passes (``passes``, a ``training.grad_passes.GradPasses``; None: none);
    on Megatron's step with a loss node, accelerate's all-reduce of the loss (one fp32 word)
    over the d ranks, exposed (``training.megatron_loss``)."""
    from analyzer.ir.graph import PRECISION_BITS
    from analyzer.scaling import parallel as P
    from analyzer.training import megatron_loss as ML
    from analyzer.training.step import optimizer_time

    out = []
    for pred, st in zip(rep.predictions, rep.training.steps):
        f_launch = sum(r.overhead_s for r in train_forward(rep, pred).nodes)
        b_launch = st.overhead_s - f_launch
        fwd_s = st.forward_s if div == 1 else f_launch + (st.forward_s - f_launch) / div
        bwd_s = st.backward_s if div == 1 else b_launch + (st.backward_s - b_launch) / div
        eb = PRECISION_BITS.get(pred.precision, 32) // 8
        params = rep.totals.params
        shard = mode.startswith("zero")
        opt = optimizer_time(profile_of(pred), params / d if shard else params,
                             rep.training.counts.optimizer, pred.overlap)
        held = -(-params // d) if mode in ("zero2", "zero3") else params
        gp, gcomm = passes_of(pred, passes, -(-params // d) if shard else params, eb,
                              zero_elements=held) if passes is not None else (None, ZERO)
        opt += sum(gp[k] for k in P.UPDATE_PASSES) if gp else 0.0
        tm = step_terms(rep, pred, passes, div=div)
        gp = with_terms(gp, tm)
        if tm:   # the fused kernels and the loss in forward, the adds and the loss in backward
            fwd_s, bwd_s = fwd_s + sum(tm.forward()), bwd_s + sum(tm.backward())
        lay = layers(rep, pred)
        cap, first = caps(mode, bucket_mb, overlap, d, eb)
        unit = 0
        if d == 1:
            comm, exposed, calls = ZERO, 0.0, 0
        elif mode == "zero3":
            comm, exposed, calls, unit = sharded_step(lay, fab, d, fwd_s=fwd_s, bwd_s=bwd_s,
                                                      overlap=overlap, cap=cap, grad_bytes=eb,
                                                      weight_bytes=eb)
        else:
            comm, exposed, calls = gradient_step(lay, fab, d, mode=mode, bwd_s=bwd_s,
                                                 overlap=overlap, cap=cap, first_cap=first,
                                                 grad_bytes=eb, weight_bytes=eb)
        mem = st.memory if div == 1 else replace(st.memory,
                                                 activations=st.memory.activations // div)
        # accelerate's loss_func: the loss averaged over the data group, one fp32 word
        lc = fab.allreduce(4, d) if (tm and d > 1 and ML.sites(rep.nodes)) else ZERO
        gcomm, calls = gcomm + lc, calls + (1 if lc.total else 0)
        out.append(P.point(pred.hardware, d, fwd_s + bwd_s + opt, comm + gcomm,
                           exposed + gcomm.total, 0.0, step1[pred.hardware][0], calls=calls,
                           memory=memory(mem, mode if d > 1 else "ddp", d, unit), grad_passes=gp))
    return out
