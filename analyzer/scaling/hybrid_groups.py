"""The device groups of Megatron-LM's ``t x p x d`` layout (``hybrid.step``) and the collectives
that synchronise them once per training step, after the pipeline's last backward.

Ranks (Megatron-LM's ``initialize_model_parallel`` default order, tensor fastest, then data,
then pipeline): rank = tp + t (dp + d pp). So a tensor-parallel group is t consecutive ranks
(inside a node when t <= devices per node), a data-parallel group d ranks t apart, a pipeline
d t ranks apart. A group's collective runs on ``group_fabric``: its members per node from the
stride, each device's network share that of a full node (every group of its kind communicates
at once).

Per step (a Comm over the group's fabric; ``eb`` bytes per gradient element):

- DP (``data_sync``, seconds exposed): each device all-reduces its parameters' gradients over its
  data group (``data_parallel.gradient_step``: Megatron's or DDP's buckets; ``overlap``: a bucket
  may start when the last micro-batch's backward has produced it: Megatron syncs on the last
  micro-batch only), exposing ``e_s`` past the end of its last backward. Device s's last backward
  ends ``L_s = sum_{j<s} (b_j + y_j) / v`` before device 0's (the drain; ``b``: backward, ``y``:
  gradient sends, seconds per micro-batch), so ``DP = max(0, max_s (e_s - L_s))``; 0 when d = 1;
- E (``embedding_sync``): the tied embedding's gradient, ``ceil(elements / t) eb`` bytes,
  all-reduced between the embedding's and the head's devices (``analyzer.scaling.embedding``),
  after the data-parallel sync, exposed whole; 0 untied or on one device;
- the gradient passes (``grad_passes``, ``training.grad_passes``): per chunk over its parameters
  (zero1 / zero2 shard them / d), summed per device into its update U_s; with clipping the norm
  (``NORM_BYTES``) all-reduced over the t x p model-parallel ranks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from analyzer.scaling.collectives import ZERO


@dataclass(frozen=True)
class Layout:
    """t tensor x p pipeline x d data-parallel devices, v model chunks per pipeline device."""

    t: int = 1
    p: int = 1
    d: int = 1
    v: int = 1

    @property
    def devices(self) -> int:
        return self.t * self.p * self.d

    def rank(self, pp: int, dp: int = 0, tp: int = 0) -> int:
        """Megatron's default order: ``tp + t (dp + d pp)``."""
        return tp + self.t * (dp + self.d * pp)


def group_fabric(fab, size: int, stride: int):
    """The fabric a group of ``size`` ranks ``stride`` apart communicates on: ``g`` members per
    node (``min(size, per_node // stride)``, 1 when the stride spans a node), each device's
    network share ``inter.bw * min(nics, G) / G`` of a full node of G."""
    G = fab.per_node
    if size <= 1 or G == 1:
        return fab
    g = max(1, min(size, G // stride)) if stride < G else 1
    share = fab.inter.bw * min(fab.nics, G) / G
    return replace(fab, inter=replace(fab.inter, bw=share), intra=fab.intra if g > 1 else None,
                   per_node=g, nics=g)


def crosses(fab, a: int, b: int) -> bool:
    """Ranks a and b in different nodes."""
    return fab.per_node == 1 or a // fab.per_node != b // fab.per_node


def data_sync(times, grads, dev, rows, fab, lay: Layout, *, mode: str, overlap: bool,
              bucket_mb, eb: int):
    """(Comm, exposed s, calls) of each device's gradient sync over its data group, the
    exposed part ``max(0, max_s (e_s - L_s))`` (module docstring)."""
    from analyzer.scaling import data_parallel as DP

    if lay.d == 1:
        return ZERO, 0.0, 0
    g = group_fabric(fab, lay.d, lay.t)
    kind = "megatron" if mode == "allreduce" else mode
    cap, first = (None, None) if mode == "allreduce" else DP.caps(kind, bucket_mb, overlap,
                                                                  lay.d, eb)
    fwd, bwd = times
    comm, calls, worst, lag = ZERO, 0, 0.0, 0.0
    for s in range(lay.p):
        idx = [i for i in range(len(dev)) if dev[i] == s]
        mine = DP.Layers(tuple(fwd[i] for i in idx), tuple(bwd[i] for i in idx),
                         tuple(grads[i] for i in idx))
        c, e, k = DP.gradient_step(mine, g, lay.d, mode=kind, bwd_s=rows["b"][s],
                                   overlap=overlap, cap=cap, first_cap=first, grad_bytes=eb,
                                   weight_bytes=eb)
        worst = max(worst, e - (lag + rows["y"][s] / lay.v))
        lag += (rows["b"][s] + rows["y"][s]) / lay.v
        comm, calls = comm + c, calls + k
    return comm, max(0.0, worst), calls


def embedding_sync(tie, dev, fab, lay: Layout, eb: int):
    """(Comm, bytes) of the tied table's gradient all-reduce between the embedding's and the
    head's devices (``analyzer.scaling.embedding``); (ZERO, 0) when untied or on one device."""
    if tie is None or dev[tie.embedding] == dev[tie.head]:
        return ZERO, 0
    a, b = lay.rank(dev[tie.embedding]), lay.rank(dev[tie.head])
    g = group_fabric(fab, 2, fab.per_node if crosses(fab, a, b) else 1)
    nbytes = -(-tie.elements // lay.t) * eb
    return g.allreduce(nbytes, 2), nbytes


def grad_passes(pred, chs, fab, lay: Layout, passes, dp_mode: str, eb: int):
    """(record, Comm) of Megatron's gradient passes (``training.grad_passes``): per chunk over
    its parameters (one gradient buffer per model chunk; norm and scale / d under zero1 and
    zero2, the zeroing and the divide / d under zero2), summed per device (``per_device``, inside
    each device's update U_s), the busiest device (``device``) and its seconds per pass
    (``busiest``); the norm all-reduced over the
    model-parallel group, t x p ranks (the stages' tensor groups, ranks tensor-fastest: inside a
    node when all its ranks are). (None, ZERO) when no pass runs."""
    from analyzer.scaling import data_parallel as DP
    from analyzer.training.grad_passes import NORM_BYTES

    if passes is None or not passes.on:
        return None, ZERO
    shard = lay.d if dp_mode in ("zero1", "zero2") else 1
    held = lay.d if dp_mode == "zero2" else 1
    per = [dict.fromkeys(("zero", "norm", "scale", "divide"), 0.0) for _ in range(lay.p)]
    for ch in chs:
        secs, _ = DP.passes_of(pred, passes, -(-ch.params // shard), eb,
                               zero_elements=-(-ch.params // held))
        for k in per[ch.device]:
            per[ch.device][k] += secs[k]
    ranks = lay.t * lay.p
    spans = crosses(fab, lay.rank(0), lay.rank(lay.p - 1, 0, lay.t - 1))
    g = group_fabric(fab, ranks, fab.per_node if spans else 1)
    comm = g.allreduce(NORM_BYTES, ranks) if (passes.clip_grad and ranks > 1) else ZERO
    totals = [sum(x.values()) for x in per]
    at = totals.index(max(totals))
    busiest = dict(per[at], norm_allreduce=comm.total)
    return {"per_device": totals, "busiest": busiest, "device": at}, comm
