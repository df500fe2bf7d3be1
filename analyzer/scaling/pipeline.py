"""Pipeline parallel from one device's per-layer predictions: p stages over p devices, m
micro-batches, GPipe or non-interleaved 1F1B.

Stages: a contiguous split of the graph's layers (graph order) minimising the largest stage's
per-micro-batch time, forward + backward + its outgoing sends (``schedules.partition``, exact).
A layer ends where the fewest tensors cross from the nodes before to the nodes after (in a
pre-LN transformer the residual stream alone: between blocks, where Megatron-LM cuts, and
between a block's attention and MLP halves), so a stage never cuts through an attention or an
MLP. ``split="even"``: Megatron-LM's equal blocks per stage instead (``bounds_even``).
The activation at a cut is every tensor a node before it produces and a node after it reads
(a residual stream included); one micro-batch's share is 1/m of it. It is sent point to point
to the next stage (forward) and its gradient comes back (backward), over the link between the
two devices: the intra-node link when both sit in one node, the network when the cut crosses a
node boundary (stage s on device s, nodes filled in order).

Step (``schedules.pipeline_time``, one direction at a time; ``F_s``, ``B_s`` stage s's forward
and backward per micro-batch, ``x_s`` its forward send, ``y_s`` its gradient send):

    T = sum_s (F_s + x_s) + (m-1) max_s (F_s + x_s) + sum_s (B_s + y_s) + (m-1) max_s (B_s + y_s)
        + max_s U_s                                          (U_s: the update of stage s's params)

Each send is counted once per boundary per micro-batch, inside the stage that sends it (the
sender waits for it: Megatron's blocking p2p); on the critical path are the first micro-batch's
p-1 sends each way and, m-1 times, the slowest stage's. With equal stages and no sends this is
``(m + p - 1)`` micro-batch stage times each way, of which ``(p-1)/(m+p-1)`` is the bubble; with
m = 1 it is the one-device step plus 2(p-1) sends. The row's parts: compute = the busiest
stage's own work (m (F_s + B_s) + U_s), exposed communication = T minus T without sends,
bubble = the rest.

Memory per device (the largest stage): its parameters' weights, gradients and optimizer state
(``analyzer.training.step`` conventions) and the activations kept for backward of the
micro-batches in flight: GPipe all m, 1F1B ``min(p, m)`` (the first stage's count; later
stages hold fewer).
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.errors import InputSpecError
from analyzer.scaling import schedules as S
from analyzer.scaling.collectives import ZERO


@dataclass(frozen=True)
class Stage:
    first: int          # first node index
    last: int           # last node index
    forward_s: float    # whole batch (m micro-batches)
    backward_s: float
    update_s: float
    send_bytes: int     # the whole batch's activation at the cut after this stage (0: last)
    params: int

    def to_dict(self) -> dict:
        return {"first_node": self.first, "last_node": self.last, "forward_s": self.forward_s,
                "backward_s": self.backward_s, "update_s": self.update_s,
                "send_bytes": self.send_bytes, "params": self.params}


def crossing(nodes) -> tuple[list[int], list[int]]:
    """``(bytes, count)``: ``[j]`` the bytes and the number of the tensors a node <= j produces
    and a node > j reads (top-level tensors; constants, folded nodes' outputs included, and
    graph inputs are on every stage)."""
    n = len(nodes)
    made: dict[str, tuple[int, int]] = {}
    last: dict[str, int] = {}
    for i, x in enumerate(nodes):
        for name in x.in_names:
            if name in made:
                last[name] = i
        for k, name in enumerate(x.out_names):
            spec = x.out_specs[k] if k < len(x.out_specs) else None
            if name and spec is not None and not x.level and x.status != "folded":
                made[name] = (i, spec.nbytes())
    diff, cnt = [0] * (n + 1), [0] * (n + 1)
    for name, z in last.items():
        a, b = made[name]
        if z > a:
            diff[a] += b
            diff[z] -= b
            cnt[a] += 1
            cnt[z] -= 1
    out_b, out_c, acc, acc_c = [], [], 0, 0
    for j in range(n):
        acc += diff[j]
        acc_c += cnt[j]
        out_b.append(acc)
        out_c.append(acc_c)
    return out_b, out_c


def layer_ends(count: list[int]) -> list[int]:
    """The node indices after which a stage may end: where the fewest tensors cross (between
    a transformer's blocks only the residual stream does; inside a block the branch too), and
    the last node. The nodes up to each end form one layer of the partition."""
    inner = count[:-1]
    # (a cut nothing crosses, such as after a folded constant's node, separates no work)
    low = min((c for c in inner if c > 0), default=0)
    return [j for j, c in enumerate(inner) if c == low] + [len(count) - 1]


def blocks(nodes, ends: list[int]):
    """(layers before the blocks, layers per block, blocks) of the repeated blocks, or None.
    Layers (``layer_ends``) are compared by their nodes' ops and output specs; the most frequent
    layer starts a block, the distance to its next occurrence is a block's length, and the run
    from its first occurrence must repeat with that period for all of its occurrences (a
    pre-LN transformer: attention half, MLP half, 36 times; the embedding before, the final
    norm and LM head after)."""
    starts = [0] + [e + 1 for e in ends[:-1]]
    sigs = [tuple((x.op, tuple(map(str, x.out_specs))) for x in nodes[a:e + 1])
            for a, e in zip(starts, ends)]
    where: dict = {}
    for i, sg in enumerate(sigs):
        where.setdefault(sg, []).append(i)
    occ = max(where.values(), key=len)
    if len(occ) < 2:
        return None
    first, k, count = occ[0], occ[1] - occ[0], len(occ)
    if first + count * k > len(sigs) or any(sigs[i] != sigs[i - k]
                                            for i in range(first + k, first + count * k)):
        return None
    return first, k, count


def bounds_even(nodes, ends: list[int], p: int) -> list[int] | None:
    """Megatron-LM's split: the repeated blocks (``blocks``) divided evenly over the stages
    (the first ``count % p`` stages one more), what comes before them on the first stage and
    what comes after on the last. Node index bounds, or None without repeated blocks."""
    found = blocks(nodes, ends)
    if found is None:
        return None
    first, k, count = found
    if p > count:
        raise InputSpecError(f"pipeline: {p} stages but the graph has {count} repeated blocks "
                             "to split evenly")
    out, at = [0], first
    for s in range(p - 1):
        at += k * (count // p + (1 if s < count % p else 0))
        out.append(ends[at - 1] + 1)
    return out + [len(nodes)]


def plan(report, pred, fab, p: int, m: int, train: bool, split: str = "balanced"):
    """(stages, sends per micro-batch forward, backward: one per boundary) for ``p`` stages;
    ``split`` balanced (the min-max partition) or even (``bounds_even``)."""
    from analyzer.scaling.data_parallel import layers, profile_of, scaled
    from analyzer.training.step import optimizer_time

    lay = layers(report, pred, train)
    fwd = scaled(lay.fwd, pred.latency_s)
    bwd = [0.0] * len(fwd)
    if train and report.training is not None:
        st = next(x for x in report.training.steps if x.hardware == pred.hardware)
        bwd = scaled(lay.bwd, st.backward_s)
    n = len(fwd)
    g, k = fab.split(p)
    cross, count = crossing(report.nodes)
    ends = layer_ends(count)
    if p > len(ends):
        raise InputSpecError(f"pipeline: {p} stages but the graph has {len(ends)} layers to "
                             "split (cuts where the fewest tensors cross)")
    trips = 2 if train else 1

    def send(nbytes: float, boundary: int):
        # boundary b sits between devices b-1 and b: across nodes when b is a multiple of g
        return fab.p2p(nbytes, crosses_node=k > 1 and boundary % g == 0)

    bounds = bounds_even(report.nodes, ends, p) if split == "even" else None
    if split == "even" and bounds is None:
        raise InputSpecError("pipeline split 'even': no repeated blocks found in the graph; "
                             "use the balanced split")
    if bounds is None:
        starts = [0] + [e + 1 for e in ends[:-1]]
        costs = [sum(fwd[a:e + 1]) / m + sum(bwd[a:e + 1]) / m for a, e in zip(starts, ends)]
        tail = [trips * send(cross[e] / m, g if k > 1 else 1).total for e in ends]
        cuts = S.partition(costs, p, tail)
        bounds = [0] + [ends[c - 1] + 1 for c in cuts] + [n]
    opt = report.training.counts.optimizer if (train and report.training) else None
    prof = profile_of(pred) if opt else None
    stages = []
    for s in range(p):
        a, z = bounds[s], bounds[s + 1]
        params = sum(lay.params[a:z])
        stages.append(Stage(a, z - 1, sum(fwd[a:z]), sum(bwd[a:z]),
                            optimizer_time(prof, params, opt, pred.overlap) if opt else 0.0,
                            cross[z - 1] if s < p - 1 else 0, params))
    fsend = [send(st.send_bytes / m, s + 1) if s < p - 1 else ZERO
             for s, st in enumerate(stages)]
    bsend = [ZERO] + fsend[:-1] if train else [ZERO] * p
    return stages, fsend, bsend


def step(stages, fsend, bsend, m: int):
    """(compute s, exposed communication s, bubble s, Comm of all sends): the module formula."""
    f = [st.forward_s / m for st in stages]
    b = [st.backward_s / m for st in stages]
    x = [c.total for c in fsend]
    y = [c.total for c in bsend]
    upd = max(st.update_s for st in stages)
    t0 = S.pipeline_time(f, [0.0] * len(f), m) + S.pipeline_time(b, [0.0] * len(b), m) + upd
    t = S.pipeline_time(f, x, m) + S.pipeline_time(b, y, m) + upd
    compute = max(st.forward_s + st.backward_s + st.update_s for st in stages)
    comm = ZERO
    for c in list(fsend) + list(bsend):
        for _ in range(m):
            comm = comm + c
    return compute, t - t0, max(0.0, t0 - compute), comm


def memory(report, stages, p: int, m: int, schedule: str, weight_bytes: int) -> dict | None:
    """Bytes on the device of the largest stage (module docstring); None without training."""
    from analyzer.training.step import OPTIMIZERS, gradient_plan

    tr = report.training
    if tr is None:
        return None
    plan_ = gradient_plan(report.nodes)
    words = OPTIMIZERS[tr.counts.optimizer][2]
    held = S.in_flight(p, m, schedule)
    best = None
    for st in stages:
        act = sum(report.nodes[i].cost.activation_bytes_written
                  for i in range(st.first, st.last + 1) if plan_[i].on_path)
        d = {"weights": st.params * weight_bytes, "gradients": st.params * weight_bytes,
             "optimizer_state": words * 4 * st.params, "activations": act * held // m}
        d["total"] = sum(d.values())
        if best is None or d["total"] > best["total"]:
            best = d
    return best
