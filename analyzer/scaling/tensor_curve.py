"""Tensor-parallel points of a scaling curve from a Report: ``points(base, step1, fab, n, ...)``
-> (one ``parallel.Point`` per profile at ``n`` devices, the plan's summary, notes).

Megatron's column/row split of the graph (``analyzer.scaling.tensor``) gives each node's factor;
per device the step is the nodes' body times by their factors plus their launches (forward: the
training step's own forward, its BatchNorms in training mode, ``data_parallel.train_forward``;
and backward), the dropout kernels at their nodes' factors, the optimizer and Megatron's gradient
passes over the parameters one device holds, plus the plan's collectives on the critical path
less the part of each async backward all-reduce hidden under its weight-gradient GEMMs
(``analyzer.scaling.tensor_overlap``). A graph without a recognised column/row pair takes the
rule of thumb: the matrix products' share of the step / n, every second weight GEMM all-reduced.
``curve.scale`` calls ``points`` for ``parallel="tensor"``.
"""

from __future__ import annotations

from analyzer.ir.graph import PRECISION_BITS
from analyzer.scaling import collectives as C
from analyzer.scaling import data_parallel as DP
from analyzer.scaling import parallel as P
from analyzer.training import grad_passes as GP


def points(base, step1: dict, fab, n: int, train: bool, sequence_parallel: bool = False,
           passes=GP.OFF):
    """Tensor parallel over ``n`` devices as Megatron splits the graph
    (``analyzer.scaling.tensor``): per device, each node's body time (forward and backward)
    times its factor plus its launches, the step's dropout kernels at their nodes' factors, the
    optimizer over the parameters one device holds, and the plan's collectives on the critical
    path but the part of each column set's async backward all-reduce under its weight-gradient
    GEMMs (``tensor_overlap``; per profile in the summary's ``backward_allreduce_hidden_s``).
    Where no column/row pair is recognised, the rule of thumb instead (``_rule``). Returns
    (points, plan summary, notes)."""
    from analyzer.scaling import tensor as T
    from analyzer.scaling import tensor_overlap as TO
    from analyzer.training.step import backward_rows, dropout_forward_rows, optimizer_time

    pattern = T.find(base.nodes, base.model.get("outputs", ()))
    if not pattern.recognised:
        note = pattern.notes[0] + "; tensor parallel by the rule of thumb: the matrix work / N, " \
            "the rest repeated, every second weight GEMM all-reduced"
        return _rule(base, step1, fab, n, train), {"recognised": False}, [note]
    out, summary, notes, overlap = [], {}, [], {}
    for pred in base.predictions:
        h = pred.hardware
        prof = DP.profile_of(pred)
        bits = PRECISION_BITS.get(pred.precision) if pred.precision_explicit else None
        plan = T.plan(base.nodes, n, pattern=pattern, train=train,
                      sequence_parallel=sequence_parallel, params=base.totals.params,
                      elem_bytes=bits // 8 if bits else None)
        summary = plan.summary(base.nodes)
        notes = list(plan.notes)
        f = plan.factors
        fwd = device_forward_s(DP.train_forward(base, pred, train), f)
        comp = fwd
        if train and base.training is not None:
            # the ratio method's per-node rows, scaled to the step's backward (the kernel plan's
            # under a PyTorch runtime: ``training.backward_time``; 1 under the ratio method)
            rows = backward_rows(base, pred)
            raw = sum(body + launches for _, body, launches in rows)
            st = next(s for s in base.training.steps if s.hardware == h)
            k = st.backward_s / raw if raw > 0 else 1.0
            comp += k * sum(body * f[i] + launches for i, body, launches in rows)
            comp += sum(s * f[i] for i, s in dropout_forward_rows(base, pred, prof).items())
            comp += optimizer_time(prof, plan.params_per_device,
                                   base.training.counts.optimizer, pred.overlap)
        gp, comm = _passes(base, pred, passes, plan.params_per_device, fab, n, train)
        tm = DP.step_terms(base, pred, passes, factors=f, split=plan.split, t=n) if train else None
        gp = DP.with_terms(gp, tm)
        comp += sum(gp[k] for k in P.UPDATE_PASSES + P.STEP_TERMS) if gp else 0.0
        wg = TO.wgrad_seconds(base.nodes, plan, pred, prof) if train else {}
        hid = 0.0   # the async backward all-reduces' part under the wgrad GEMMs
        for c in plan.collectives:
            one = fab.collective(c.kind, c.nbytes, n)
            comm = comm + one
            hid += TO.hidden(one.total, wg.get(c.node, 0.0)) if c.phase == "backward" else 0.0
        overlap[h] = hid
        out.append(P.point(h, n, comp, comm, comm.total - hid, 0.0, step1[h][0],
                           calls=len(plan.collectives) + (1 if gp and gp["norm_allreduce"]
                                                          else 0) if n > 1 else 0,
                           grad_passes=gp))
    if overlap:
        summary["backward_allreduce_hidden_s"] = overlap
    return out, summary, notes


def device_forward_s(fp, factors) -> float:
    """One device's forward: ``fp``'s latency less each row's body times (1 - its node's
    tensor factor), launches kept (``fp``: the training step's forward where training,
    ``data_parallel.train_forward``)."""
    return fp.latency_s - sum((r.time_s - r.overhead_s) * (1 - factors[r.index]) for r in fp.nodes)


def _passes(base, pred, passes, params: int, fab, n: int, train: bool):
    """(seconds per pass or None, Comm) of Megatron's gradient passes over the ``params`` one
    tensor-parallel device holds, the norm all-reduced over the n tensor ranks."""
    if not (train and base.training is not None and base.training.counts.optimizer != "none"):
        return None, C.ZERO
    eb = PRECISION_BITS.get(pred.precision, 32) // 8
    return DP.passes_of(pred, passes, params, eb, fab, n)


def _rule(base, step1: dict, fab, n: int, train: bool) -> list:
    """The rule of thumb for a graph without a recognised pattern: the matrix products' share
    of the step divides by n, and every second weight GEMM (``[1::2]`` of those with a constant
    input) all-reduces its output (twice when training: forward and backward)."""
    out = []
    weight_gemms = [x for x in base.nodes if x.cost.mac_flops and x.constant_inputs]
    for pred in base.predictions:
        h = pred.hardware
        s = step1[h][0]
        mac_t = sum(r.time_s for r in pred.nodes if base.nodes[r.index].cost.mac_flops)
        frac = mac_t / pred.latency_s if pred.latency_s else 0.0
        comp = s * (1 - frac * (1 - 1 / n))   # (frac/n + 1 - frac); exactly s at n = 1
        comm = C.ZERO
        for x in weight_gemms[1::2]:
            c = fab.allreduce(x.cost.activation_bytes_written, n)
            comm = comm + c + (c if train else C.ZERO)
        out.append(P.point(h, n, comp, comm, comm.total, 0.0, s))
    return out
