"""Predictions: a Report's counts lowered onto hardware profiles and run through the kernels.

``predict(report, hw)`` returns new ``Prediction`` values and changes nothing; the Report that
carries them is ``report.with_predictions(preds)`` (what ``analyzer.analyze(..., hw=...)``
returns).  Every ``NodePrediction`` holds the ``index`` of its node in ``report.nodes``: rows
exist only for nodes that launch a kernel or run as a host-only op (an eager view:
``HostStep``), and ``Prediction.for_node(index)`` / ``Report.rows()`` join them to nodes by that
index.
"""

from __future__ import annotations

import itertools

from analyzer.options import EAGER_HOST_NAMES
from analyzer.prediction.kernels import BOUNDS
from analyzer.prediction.prediction import NodePrediction, Prediction
from analyzer.prediction.terms import KernelTable

__all__ = ["NO_KERNEL", "NodePrediction", "Prediction", "predict"]


def predict(report, hw, *, precision: str | None = None, overlap: bool = True,
            runtime: str | None = None, fused=None, l2: str | None = None) -> tuple[Prediction, ...]:
    """Predict per-layer latency of ``report`` on each profile in ``hw``: one new ``Prediction``
    per profile.  ``report`` is not changed; ``report.with_predictions(...)`` is the Report that
    carries them (calling this twice gives two independent results).

    ``hw``: profile ids, paths, profiles, or ``targets.Target``s already resolved (then
    ``runtime`` is theirs). ``runtime`` (``runtimes.RUNTIMES``): what runs the model, which
    decides the fusion, the per-kernel dispatch and the time predicted; default: xla for a JAX
    program, else the profile's ``default_runtime``, else its kind's (``targets.resolve``).  Per kernel ``time = runs * (fixed +
    max(compute, memory))`` (``overlap=False``: seed 003's additive ``compute + memory``); the
    model's latency is the sum of its kernels (one stream).  A fused kernel's time is shared
    among its nodes by their FLOPs and bytes; each row names its kernel.  A stream runtime
    (``Runtime.stream``: ``eager``) instead overlaps each kernel's host dispatch with the device
    time of the kernels before it (``runtimes.stream_times``): the latency is when the last kernel
    ends, and each kernel's rows share its exposed time (its device time + the host gap the device
    waited for); a row whose overhead (device fixed cost + exposed gap) is its largest term is
    ``overhead``-bound.  A host-only op (``Lowered.host_nodes``: an eager view that launches no
    kernel) is a step of host time only: on the stream its row is the host time the device
    waited for, under ``eager-op`` its host time; either way all overhead and in the latency.
    ``latency_s`` adds the profile's per-run fixed cost
    (``run_overhead_s``) once.

    ``fused``: a ``fusion.FusionRecord`` of the kernels onnxruntime runs for this model
    (``onnxruntime.record.fusion_record``); used by a runtime that reads its own record
    (``Runtime.fusion_record``) instead of its fusion patterns (``analyzer.analyze`` passes it
    when onnxruntime is installed).  ``l2``: the L2 state each GPU kernel starts in
    (``l2_state.STATES``; None: warm, the cache step of ``efficiency.kernel_time``; cold: the L2
    flushed before each kernel, every byte from DRAM; another kind warns and keeps its terms)."""
    from analyzer.prediction import l2_state
    from analyzer.prediction.kernels import run
    from analyzer.prediction.lowering import lower
    from analyzer.prediction.targets import groups, resolve

    fmt = report.model.get("format", "onnx") if isinstance(report.model, dict) else "onnx"
    l2_state.check(l2)
    targets = resolve(hw, runtime, fmt)
    # the model's outputs: always written, even where every reader is fused with the producer
    outputs = frozenset((report.model.get("outputs") if isinstance(report.model, dict) else None) or ())
    out: dict[int, Prediction] = {}
    for rt, idx in groups(targets):
        low = lower(report.nodes, [targets[p].profile for p in idx], precision, rt,
                    graph_outputs=outputs, fused=fused if rt.fusion_record else None, l2_state=l2)
        compute, memory, ovh, time, bound = run(low, overlap=overlap)
        for g, p in enumerate(idx):
            out[p] = _prediction(report, targets[p], low, g, compute[g], memory[g], ovh[g],
                                 time[g], bound[g], overlap, precision, l2_state.applies(targets[p].profile, l2))
    return tuple(out[p] for p in range(len(targets)))


def _prediction(report, target, low, g, compute, memory, ovh, time, bound, overlap,
                precision, cold: bool = False) -> Prediction:
    """One profile's Prediction: kernel times shared among member nodes, a row per host-only op
    (rows in graph order); ``cold``: its kernels start with the L2 flushed (``l2_state``)."""
    import numpy as np

    from analyzer.prediction import l2_state

    # the kernel table keeps each kernel's own terms; the rows take the stream's
    kernel_time, kernel_ovh, kernel_bound, host, gap = time, ovh, bound, None, None
    h_only = low.host_only[g] if low.host_nodes else np.zeros(0)
    host_gap = h_only          # a row per host-only op: its host time (eager-op: they add)
    if target.runtime.stream and low.host is not None:
        # the eager stream: row time = exposed time dev_end_i - dev_end_{i-1} = device + gap
        host = low.runs * low.host[g]
        device = time - host
        gap, host_gap = _stream(low, host, device, h_only)
        time = device + gap
        ovh = ovh - host + gap
        bound = np.argmax(np.stack([compute, memory, ovh]), axis=0)
    total = float(time.sum()) + float(host_gap.sum())   # the rows' time (shares are of this)
    run_overhead = float(low.run_overhead[g])
    # launches the runtime inserted with no original node (their cost is in their kernel's fixed)
    n_extra = sum(len(e) for e in low.plan.extra_ops)
    extra_launches = sum(len(e) * float(r) for e, r in zip(low.plan.extra_ops, low.runs))
    share = {b: 0.0 for b in BOUNDS}
    for i, b in enumerate(BOUNDS):
        share[b] = float(time[bound == i].sum()) / total if total > 0 else 0.0
    if total > 0:      # a host-only op's time is all overhead
        share["overhead"] += float(host_gap.sum()) / total
    rows = _rows(report, low, compute, memory, ovh, time, bound, host_gap, total)
    table = _kernel_table(low, g, compute, memory, kernel_ovh, kernel_time, kernel_bound, overlap,
                          host, gap, host_gap)
    notes = list(low.notes[g])
    prof, rt = target.profile, target.runtime
    if target.why != "requested":
        notes.insert(0, f"runtime {rt.name} ({target.why})")
    return Prediction(hardware=prof.id, hardware_name=prof.name, precision=low.precision, overlap=overlap,
                      latency_s=total + run_overhead, bound_share=share, nodes=tuple(rows),
                      warnings=_warnings(low, g) + _host_unused(rt), precision_explicit=precision is not None,
                      runtime=rt.name, time_definition=l2_state.time_definition(rt.time_definition, cold),
                      l2="cold" if cold else "warm", provenance=low.provenance[g],
                      provenance_detail=low.provenance_detail[g], notes=tuple(notes),
                      kernels=low.plan.kernels + n_extra, run_overhead_s=run_overhead,
                      launches=int(round(float(low.runs.sum() + extra_launches))), kernel_table=table,
                      target=target, host_ops=int(round(float(np.sum(low.host_runs))))
                      if low.host_nodes else 0)


# the warning of a prediction in which no node launches a kernel (its latency is the runtime's
# per-call costs alone): never a silent zero
NO_KERNEL = ("no node launches a kernel (every node is a view, a shape-only op or constant-folded): "
             "the latency is the runtime's per-call costs alone, 0 where it has none; a runtime that copies a "
             "graph input to a graph output is not modelled")


def _warnings(low, g) -> tuple[str, ...]:
    """The lowering's warnings of target ``g``, and ``NO_KERNEL`` where nothing launches."""
    none = not low.plan.kernels and not low.host_nodes and not any(low.plan.extra_ops)
    return tuple(low.warnings[g]) + ((NO_KERNEL,) if none else ())


def _host_unused(rt) -> tuple[str, ...]:
    """A warning where a host table other than the default was asked for and ``rt`` does not charge
    it (the ``eager`` stream charges a host's per-op figures, ``eager-op`` its per-call figures where
    the table has them: ``runtimes.EagerHost.op_call``): never a silent no-op."""
    from analyzer.prediction import runtimes

    if rt.host == EAGER_HOST_NAMES[0] or rt.name == "eager":
        return ()
    if rt.name == "eager-op" and runtimes.eager_host(rt.host).op_call is not None:
        return ()
    return (f"host table '{rt.host}' not charged: the {rt.name} runtime has no per-op host figures "
            "of it (host tables are the eager runtime's, and eager-op's where they state per-call figures)",)


def _rows(report, low, compute, memory, ovh, time, bound, host_gap, total) -> list[NodePrediction]:
    """The rows in graph order: each kernel's time shared among its members by weight; a
    host-only op's row its host time (``host_gap``), all overhead, no kernel."""
    f = low.feats
    flops = (f["mac_flops"] + f["vec_flops"] + f["trans_flops"]) * low.runs
    nbytes = f["bytes"] * low.runs
    host_at = {i: j for j, i in enumerate(low.host_nodes)}
    rows = []
    for i, k in enumerate(low.plan.kernel_of):
        n = report.nodes[i]
        if k < 0:
            j = host_at.get(i)
            if j is not None:
                t = float(host_gap[j])
                rows.append(NodePrediction(n.name, t, 0.0, 0.0, t, "overhead", float("inf"),
                                           t / total if total > 0 else 0.0, i, ""))
            continue
        w = float(low.member_weight[i])
        intensity = float(flops[k] / nbytes[k]) if nbytes[k] > 0 else float("inf")
        t = float(time[k]) * w
        rows.append(NodePrediction(n.name, t, float(compute[k]) * w, float(memory[k]) * w,
                                   float(ovh[k]) * w, BOUNDS[int(bound[k])], intensity,
                                   t / total if total > 0 else 0.0, i, low.kernel_names[k]))
    return rows


def _stream(low, host, device, h_only):
    """(exposed host gap before each kernel [K], exposed host time of each host-only op [H]) of
    the eager stream (``runtimes.stream_times``) over the kernels and the host-only ops in issue
    order: by node index, a kernel at its first member, a host-only op (``k = 0``) at its node."""
    import numpy as np

    from analyzer.prediction.runtimes import stream_times

    if not len(h_only):
        return stream_times(host, device)[1], h_only
    K = len(device)
    at = np.concatenate([np.asarray([m[0] for m in low.plan.members], np.int64),
                         np.asarray(low.host_nodes, np.int64)])
    order = np.argsort(at, kind="stable")
    _, g = stream_times(np.concatenate([host, h_only])[order],
                        np.concatenate([device, np.zeros(len(h_only))])[order])
    gaps = np.empty_like(g)
    gaps[order] = g
    return gaps[:K], gaps[K:]


def _kernel_table(low, g, compute, memory, ovh, time, bound, overlap=True, host=None,
                  gap=None, host_gap=None) -> KernelTable:
    """Profile ``g``'s per-kernel arrays (views of the lowering's; no copy per node)."""
    import numpy as np

    from analyzer.prediction.efficiency import kernel_time as eff

    cls = low.feats["op_class"]
    consts = {name: np.asarray(low.consts[name][g])[cls] for name in
              ("e_compute", "e_bw", "b_half_bytes", "floor_s", "sm_overlap", "l2_floor")}
    consts["trans_weight"] = float(low.consts["trans_weight"][g])
    return KernelTable(kernel_of=np.asarray(low.plan.kernel_of), names=low.kernel_names,
                       members=np.asarray([len(m) for m in low.plan.members]), weight=low.member_weight,
                       op_class=tuple(eff.OP_CLASSES[c] for c in cls), runs=low.runs,
                       mac=low.feats["mac_flops"], vec=low.feats["vec_flops"], trans=low.feats["trans_flops"],
                       nbytes=low.feats["bytes"], matrix_peak=low.matrix_peak[g],
                       vector_peak=low.vector_peak[g], mem_bw=float(low.mem_bw[g]), consts=consts,
                       fixed=low.fixed[g], compute=compute, memory=memory, overhead=ovh, time=time,
                       bound=bound, feats=low.feats, units=float(low.units[g]), l2_bytes=float(low.l2_bytes[g]),
                       class_consts={name: v[g] for name, v in low.consts.items()}, overlap=overlap,
                       host=host, gap=gap, host_nodes=tuple(low.host_nodes),
                       host_runs=low.host_runs if low.host_nodes else np.zeros(0),
                       host_only=low.host_only[g] if low.host_nodes else np.zeros(0),
                       host_gap=host_gap if host_gap is not None else np.zeros(0),
                       resident=None if low.resident is None else (low.resident_bytes[g], low.resident[g]),
                       split=None if low.split is None else (low.split_parts[g], low.split[g]),
                       ynn_dot=None if low.ynn_dot is None else low.ynn_dot[g],
                       loop_work=None if low.loop_work is None else low.loop_work[g],
                       per_output=None if low.per_output is None else (low.per_output[0], low.per_output[1][g]),
                       folded=dict(low.plan.folded),
                       merged={i: g[1:] for g in low.plan.merged for i in g[1:]},
                       apart={j: (i, why) for j, i, why in low.plan.apart},
                       inserted=_inserted(low, g),
                       onchip=None if low.onchip is None else (low.onchip[g], low.onchip_of[0],
                                                               float(low.onchip_of[1][g]),
                                                               float(low.onchip_of[2][g])),
                       dw_rate=None if low.dw_rate is None else (low.dw_outputs, low.dw_rate[g]),
                       placed=low.placed[g] if low.placed else {})


def _inserted(low, g: int) -> tuple:
    """Per kernel, (op, bytes) of each launch the runtime inserted into it, with its serial loop's
    seconds on profile ``g`` as a third item where it has one (``Lowered.extra_loop_s``)."""
    loops = iter(low.extra_loop_s[g] if low.extra_loop_s is not None else ())
    out = []
    for o, b in itertools.zip_longest(low.plan.extra_ops, low.plan.extra_bytes, fillvalue=()):
        row = []
        for op, nb in zip(o, b or (0,) * len(o)):
            s = float(next(loops, 0.0))
            row.append((op, nb, s) if s else (op, nb))
        out.append(tuple(row))
    return tuple(out)
