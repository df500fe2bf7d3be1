"""Megatron-LM's training step over ``t x p x d`` devices: tensor parallel inside a pipeline
stage, p pipeline stages (optionally ``v`` interleaved model chunks per device), d data-parallel
replicas; ``parallel="pipeline"`` is the case t = d = 1.

Per node (``node_times``): the training forward's rows (``data_parallel.train_forward``: the
step's, BatchNorms in training mode) and ``training.step.backward_rows``, each
row's body times its tensor-parallel factor (``analyzer.scaling.tensor``; 1 without tensor
parallel) and / ``div`` (the linear rescale of data parallel when the global batch is not known),
launches kept, scaled to the step's forward and backward totals, plus each of the step's
dropout kernels (``training.step.dropout_forward_rows``) at its node's share; on Megatron's step
(``training.megatron_step``) plus the fused kernels' change in forward and the main-grad adds,
m per step, in backward.

Chunks: ``p v`` contiguous pieces of the graph, cut between ``pipeline`` layers: balanced (the
split whose slowest chunk, forward + backward + its outgoing sends per micro-batch, is fastest:
``schedules.partition``, exact) or even (``pipeline.bounds_even``); interleaved always even
(Megatron's: the repeated blocks must divide by ``p v``). Device s runs chunks s, s+p, ... Per micro-batch, device s's forward ``f_s`` (its
chunks' forward / m), the tensor-parallel collectives of its chunks' nodes ``a_s`` (the plan's,
of the micro-batch's bytes, on the critical path: Megatron's blocking f/g all-reduces), its
sends ``x_s`` (the activation at each of its chunk ends but the model's last, point to point to
the next chunk's device); the same for backward (``b_s``, ``a'_s`` less the part of each async
column all-reduce under its weight-gradient GEMMs: ``tensor_overlap``, ``y_s``: the gradients go
back from each chunk start but the first). A send goes over the intra-node link, or the
network when the two ranks sit in different nodes; it is counted once per boundary per
micro-batch, inside the device that sends it (the sender waits: Megatron's blocking p2p). With
``T(c) = schedules.pipeline_time(c, 0, m, v)``:

    T0 = T(f) + T(b),  T1 = T(f + a) + T(b + a'),  T2 = T(f + a + x) + T(b + a' + y)
    step = T2 + max_s U_s + DP + E

- compute = the busiest device's own work, ``max_s (m (f_s + b_s) + U_s)`` (U_s: its update);
  with equal stages, no communication and v = 1 the step is ``(m + p - 1)`` stage times each
  way, the bubble ``(p-1)/(m+p-1)`` of it; with m = 1 it is the one-device step plus the sends;
- bubble = ``T0 + max U - compute``; tensor comm = ``T1 - T0``; p2p = ``T2 - T1``;
- DP (data-parallel exposed): the part of the devices' gradient sync over their data groups
  past the end of their last backward, the pipeline's drain subtracted; E: the tied embedding's
  gradient all-reduce between the first and the last stage, exposed whole; 0 untied. Both, the
  gradient passes' norm all-reduce, the ranks and each group's fabric:
  ``analyzer.scaling.hybrid_groups``.

Parameters per device: its chunks' (``cost.params`` of their nodes; the last stage adds the tied
table's copy) times the tensor plan's per-device share (``params_per_device / params``: the
split layers' weights / t, the rest replicated, spread evenly over the stages' parameters, an
approximation). Memory: weights, gradients (zero2: / d), optimizer state (zero1, zero2: / d) and
the activations written by its nodes on the gradient path (each times its tensor factor) for
``schedules.in_flight`` micro-batches of the first device.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from analyzer.errors import InputSpecError
from analyzer.scaling import pipeline as PP
from analyzer.scaling import schedules as S
from analyzer.scaling.collectives import ZERO
from analyzer.scaling.hybrid_groups import (Layout, crosses, data_sync, embedding_sync,
                                            grad_passes, group_fabric)

HYBRID_DP_MODES = ("allreduce", "ddp", "megatron", "zero1", "zero2")



def node_times(report, pred, train: bool, factors=None, div: int = 1, terms=None):
    """(forward s, backward s) per node index (module docstring); ``terms``: Megatron's step
    kernels (``training.megatron_step.Terms``) added after the scaling (None: none)."""
    from analyzer.scaling.data_parallel import train_forward
    from analyzer.training.step import backward_rows

    n = len(report.nodes)
    f = factors or [1.0] * n
    fwd, bwd, raw_f, raw_b = [0.0] * n, [0.0] * n, 0.0, 0.0
    fp = train_forward(report, pred, train)   # (a training step's forward: BatchNorms in training mode)
    for r in fp.nodes:
        raw_f += r.time_s
        fwd[r.index] += r.overhead_s + (r.time_s - r.overhead_s) * f[r.index] / div
    if train and report.training is not None:
        st = next(x for x in report.training.steps if x.hardware == pred.hardware)
        for i, body, launches in backward_rows(report, pred):
            raw_b += body + launches
            bwd[i] += launches + body * f[i] / div
        kb = st.backward_s / raw_b if raw_b > 0 else 0.0
        bwd = [x * kb for x in bwd]
    kf = fp.latency_s / raw_f if raw_f > 0 else 0.0
    fwd = [x * kf for x in fwd]
    if train and report.training is not None:   # the step's dropout kernels, by node share
        from analyzer.scaling.data_parallel import profile_of
        from analyzer.training.step import dropout_forward_rows

        for i, s in dropout_forward_rows(report, pred, profile_of(pred)).items():
            fwd[i] += s * f[i] / div
    if terms is not None:
        fwd = [x + y for x, y in zip(fwd, terms.forward())]
        bwd = [x + y for x, y in zip(bwd, terms.backward())]
    return fwd, bwd


def chunk_bounds(report, fwd, bwd, chunks: int, m: int, split: str, tail) -> list[int]:
    """Node index bounds of ``chunks`` contiguous chunks (module docstring; ``tail(e, bytes)``
    the per-micro-batch send cost after layer end e, for the balanced split)."""
    n = len(report.nodes)
    cross, count = PP.crossing(report.nodes)
    ends = PP.layer_ends(count)
    if chunks > len(ends):
        raise InputSpecError(f"pipeline: {chunks} stages but the graph has {len(ends)} layers to "
                             "split (cuts where the fewest tensors cross)")
    if split == "even":
        bounds = PP.bounds_even(report.nodes, ends, chunks)
        if bounds is None:
            raise InputSpecError("pipeline split 'even': no repeated blocks found in the graph; "
                                 "use the balanced split")
        return bounds
    starts = [0] + [e + 1 for e in ends[:-1]]
    costs = [(sum(fwd[a:e + 1]) + sum(bwd[a:e + 1])) / m for a, e in zip(starts, ends)]
    cuts = S.partition(costs, chunks, [tail(e, cross[e]) for e in ends])
    return [0] + [ends[c - 1] + 1 for c in cuts] + [n]


def check_interleaved(report, lay: Layout, m: int) -> None:
    """Megatron's interleaved schedule needs the blocks divisible by ``p v`` and m a multiple of p."""
    if lay.v < 2:
        raise InputSpecError(f"interleaved schedule: give virtual stages >= 2 (model chunks per "
                             f"device); got {lay.v}")
    if lay.p < 2:
        raise InputSpecError("interleaved schedule: needs a pipeline of 2 or more stages")
    if m % lay.p:
        raise InputSpecError(f"interleaved schedule: micro-batches {m} must be a multiple of the "
                             f"pipeline stages {lay.p} (Megatron-LM requires it)")
    _, count = PP.crossing(report.nodes)
    found = PP.blocks(report.nodes, PP.layer_ends(count))
    if found is None:
        raise InputSpecError("interleaved schedule: no repeated blocks found in the graph to "
                             "divide into model chunks")
    if found[2] % (lay.p * lay.v):
        raise InputSpecError(f"interleaved schedule: the graph's {found[2]} repeated blocks do "
                             f"not divide into {lay.p} stages x {lay.v} virtual stages "
                             f"= {lay.p * lay.v} equal chunks (Megatron-LM requires it)")


@dataclass(frozen=True)
class Chunk:
    """One model chunk: its nodes, device, whole-batch forward and backward seconds (tensor
    factors applied), the bytes sent at its end (0: the model's last) and its parameters per
    device (tensor share applied; the last stage's tied copy included)."""

    first: int
    last: int
    device: int
    forward_s: float
    backward_s: float
    send_bytes: int
    params: int

    def to_dict(self) -> dict:
        return {"first_node": self.first, "last_node": self.last, "device": self.device,
                "forward_s": self.forward_s, "backward_s": self.backward_s,
                "send_bytes": self.send_bytes, "params": self.params}


def _send(fab, lay: Layout, c: int, nbytes: float):
    """The point-to-point send from chunk c to chunk c+1 (devices c % p and (c+1) % p)."""
    a, b = lay.rank(c % lay.p), lay.rank((c + 1) % lay.p)
    return fab.p2p(nbytes, crosses(fab, a, b))


def chunks(report, times, fab, lay: Layout, m: int, train: bool, split: str, share: float,
           tie) -> tuple[list[Chunk], list[int]]:
    """The ``p v`` chunks (module docstring) and per node the parameters whose gradient it
    produces on its device (the tied copy at the head when it is on another device)."""
    fwd, bwd = times
    C = lay.p * lay.v
    spans = crosses(fab, lay.rank(0), lay.rank(lay.p - 1))
    trips = 2 if train else 1

    def tail(_e, nbytes):
        return trips * fab.p2p(nbytes / m, spans).total

    bounds = chunk_bounds(report, fwd, bwd, C, m, "even" if lay.v > 1 else split, tail)
    cross, _ = PP.crossing(report.nodes)
    grads = [round(x.cost.params * share) for x in report.nodes]
    dev = [0] * len(report.nodes)
    for c in range(C):
        for i in range(bounds[c], bounds[c + 1]):
            dev[i] = c % lay.p
    if tie is not None and dev[tie.embedding] != dev[tie.head]:
        grads[tie.head] += -(-tie.elements // lay.t)   # the last stage's copy of the table
    out = []
    for c in range(C):
        a, z = bounds[c], bounds[c + 1]
        out.append(Chunk(a, z - 1, c % lay.p, sum(fwd[a:z]), sum(bwd[a:z]),
                         cross[z - 1] if c < C - 1 else 0, sum(grads[a:z])))
    return out, grads


def device_rows(chs: list[Chunk], fab, lay: Layout, m: int, train: bool, tp_comm):
    """Per device, per micro-batch: forward, backward, tensor comm forward and backward, sends
    forward and backward (seconds); and the step's Comm and calls of the tensor collectives and
    the sends (``tp_comm(chunk) -> (fwd Comm, bwd Comm, calls)`` per micro-batch)."""
    p = lay.p
    rows = {k: [0.0] * p for k in ("f", "b", "af", "ab", "x", "y")}
    comm, calls = ZERO, 0
    for c, ch in enumerate(chs):
        s = ch.device
        rows["f"][s] += ch.forward_s / m
        rows["b"][s] += ch.backward_s / m if train else 0.0
        cf, cb, k, hid = tp_comm(ch)
        rows["af"][s] += cf.total
        rows["ab"][s] += cb.total - hid if train else 0.0
        parts = [cf] + ([cb] if train else [])
        calls += m * k
        if c < len(chs) - 1:
            x = _send(fab, lay, c, ch.send_bytes / m)
            rows["x"][s] += x.total
            parts.append(x)
            calls += m
            if train:   # its gradient comes back from chunk c+1's device
                rows["y"][chs[c + 1].device] += x.total
                parts.append(x)
                calls += m
        for one in parts:
            for _ in range(m):
                comm = comm + one
    return rows, comm, calls


def tp_comm_of(report, tensor, fab, lay: Layout, m: int, wgrad=None):
    """``chunk -> (forward Comm, backward Comm, collectives, hidden s)`` per micro-batch: the
    tensor plan's collectives of the chunk's nodes at 1/m of their bytes over the tensor group
    (t consecutive ranks), and the part of the backward ones under their weight-gradient GEMMs
    (``wgrad``: node name -> the whole batch's seconds, ``tensor_overlap``); nothing without
    tensor parallel."""
    from analyzer.scaling import tensor_overlap as TO

    if tensor is None or lay.t == 1:
        return lambda ch: (ZERO, ZERO, 0, 0.0)
    where = {x.name: i for i, x in enumerate(report.nodes)}
    g = group_fabric(fab, lay.t, 1)
    wg = wgrad or {}

    def of(ch):
        f = b = ZERO
        k, hid = 0, 0.0
        for c in tensor.collectives:
            i = where.get(c.node)
            if i is None or not ch.first <= i <= ch.last:
                continue
            one = g.collective(c.kind, c.nbytes / m, lay.t)
            if c.phase == "forward":
                f = f + one
            else:
                b = b + one
                hid += TO.hidden(one.total, wg.get(c.node, 0.0) / m)
            k += 1
        return f, b, k, hid

    return of


def _direction(rows, keys, m: int, v: int) -> float:
    per = [sum(rows[k][s] for k in keys) for s in range(len(rows["f"]))]
    return S.pipeline_time(per, [0.0] * len(per), m, v)


def memory(report, chs, lay: Layout, m: int, schedule: str, eb: int, factors, mode: str,
           div: int = 1):
    """Bytes on the device that needs the most (module docstring; activations / ``div`` when
    ``report`` is at the global batch of ``div`` replicas); None without training."""
    from analyzer.training.step import OPTIMIZERS, gradient_plan

    tr = report.training
    if tr is None:
        return None
    on = gradient_plan(report.nodes)
    words = OPTIMIZERS[tr.counts.optimizer][2]
    held = S.in_flight(lay.p, m, schedule, lay.v)
    f = factors or [1.0] * len(report.nodes)
    best = None
    for s in range(lay.p):
        mine = [ch for ch in chs if ch.device == s]
        params = sum(ch.params for ch in mine)
        act = sum(report.nodes[i].cost.activation_bytes_written * f[i]
                  for ch in mine for i in range(ch.first, ch.last + 1) if on[i].on_path)
        shard = lay.d if mode in ("zero1", "zero2") else 1
        d = {"weights": params * eb,
             "gradients": -(-params * eb // (lay.d if mode == "zero2" else 1)),
             "optimizer_state": -(-words * 4 * params // shard),
             "activations": int(act * held / (m * div))}
        d["total"] = sum(d.values())
        if best is None or d["total"] > best["total"]:
            best = d
    return best


def step(report, pred, fab, lay: Layout, m: int, *, train: bool, schedule: str, split: str,
         tensor=None, div: int = 1, dp_mode: str = "allreduce", overlap: bool = False,
         bucket_mb=None, passes=None):
    """(parts: ``parallel.PARTS`` -> seconds, Comm of the step, calls, memory, record) of one
    prediction under ``lay`` (module docstring); ``tensor``: the ``tensor.plan`` when t > 1;
    ``passes``: Megatron's gradient passes (``grad_passes``; None: none)."""
    from analyzer.ir.graph import PRECISION_BITS
    from analyzer.scaling import data_parallel as DP
    from analyzer.scaling import embedding as EM
    from analyzer.scaling import tensor_overlap as TO
    from analyzer.scaling.data_parallel import profile_of
    from analyzer.training.step import optimizer_time

    if schedule == "interleaved":
        check_interleaved(report, lay, m)
    elif lay.v != 1:
        raise InputSpecError(f"virtual stages {lay.v} apply to the interleaved schedule only")
    if dp_mode not in HYBRID_DP_MODES:
        raise InputSpecError(f"data_parallel={dp_mode!r} with pipeline or tensor parallel is "
                             f"not modelled; give one of {', '.join(HYBRID_DP_MODES)}")
    eb = PRECISION_BITS.get(pred.precision, 32) // 8
    factors = list(tensor.factors) if tensor is not None else None
    share = tensor.params_per_device / report.totals.params \
        if tensor is not None and report.totals.params else 1.0
    terms = DP.step_terms(report, pred, passes, factors=factors, div=div, t=lay.t,
                          split=tensor.split if tensor is not None else frozenset(), m=m)
    if terms is not None:   # the main-grad adds run once per micro-batch
        terms = replace(terms, accumulate=tuple(m * x for x in terms.accumulate))
    times = node_times(report, pred, train, factors, div, terms)
    tie = EM.find(report.nodes) if lay.p > 1 else None
    chs, grads = chunks(report, times, fab, lay, m, train, split, share, tie)
    dev = [0] * len(report.nodes)
    for ch in chs:
        dev[ch.first:ch.last + 1] = [ch.device] * (ch.last - ch.first + 1)
    wgrad = TO.wgrad_seconds(report.nodes, tensor, pred, profile_of(pred)) \
        if (train and tensor is not None and lay.t > 1) else None
    rows, comm, calls = device_rows(chs, fab, lay, m, train,
                                    tp_comm_of(report, tensor, fab, lay, m, wgrad))
    upd, upd_c = [0.0] * lay.p, [0.0] * len(chs)
    opt = report.training.counts.optimizer if (train and report.training) else None
    if opt:   # each chunk's update over its parameters (/ d when zero1/zero2 shard the state)
        shard = lay.d if dp_mode in ("zero1", "zero2") else 1
        for c, ch in enumerate(chs):
            upd_c[c] = optimizer_time(profile_of(pred), ch.params / shard, opt, pred.overlap)
            upd[ch.device] += upd_c[c]
    gp, gcomm = grad_passes(pred, chs, fab, lay, passes if opt else None, dp_mode, eb)
    for s_, x in enumerate(gp["per_device"] if gp else ()):
        upd[s_] += x
    if gp:   # the step terms of the same device, inside its forward and backward rows
        mine = [i for i in range(len(dev)) if dev[i] == gp["device"]]
        gp["busiest"] |= {"accumulate": sum(terms.accumulate[i] for i in mine) if terms else 0.0,
                          "fused": sum(terms.fused[i] for i in mine) if terms else 0.0,
                          "vocab_parallel": sum(terms.vocab_forward[i] + terms.vocab_backward[i]
                                               for i in mine) if terms else 0.0}
    v = lay.v
    t0 = _direction(rows, ("f",), m, v) + _direction(rows, ("b",), m, v)
    t1 = _direction(rows, ("f", "af"), m, v) + _direction(rows, ("b", "ab"), m, v)
    t2 = _direction(rows, ("f", "af", "x"), m, v) + _direction(rows, ("b", "ab", "y"), m, v)
    compute = max(m * (rows["f"][s] + rows["b"][s]) + upd[s] for s in range(lay.p))
    dcomm, dp_exp, dcalls = data_sync(times, grads, dev, rows, fab, lay, mode=dp_mode,
                                      overlap=overlap, bucket_mb=bucket_mb, eb=eb) \
        if train else (ZERO, 0.0, 0)
    ecomm, ebytes = embedding_sync(tie, dev, fab, lay, eb) if train else (ZERO, 0)
    parts = {"compute": compute, "tensor_comm": t1 - t0,
             "bubble": max(0.0, t0 + max(upd) - compute), "p2p": t2 - t1,
             "data_parallel_exposed": dp_exp, "embedding_allreduce": ecomm.total,
             "grad_norm_allreduce": gcomm.total}
    record = {"chunks": [ch.to_dict() | {"update_s": u} for ch, u in zip(chs, upd_c)],
              "tied_embedding": None if tie is None else {
                  **tie.to_dict(), "allreduce_bytes": ebytes,
                  "stages": [dev[tie.embedding], dev[tie.head]]},
              "grad_passes": gp and gp["busiest"]}
    mem = memory(report, chs, lay, m, schedule, eb, factors, dp_mode, div)
    return (parts, comm + dcomm + ecomm + gcomm,
            calls + dcalls + (1 if ebytes else 0) + (1 if gcomm.total else 0), mem, record)
