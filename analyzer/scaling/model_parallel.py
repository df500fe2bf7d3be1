"""Pipeline and hybrid (tensor x pipeline x data) points of a scaling curve from Reports
(``analyzer.scaling.hybrid`` has the step's model; ``curve.scale`` calls ``points``).

``parallel="pipeline"``: p = N stages, t = d = 1. ``parallel="hybrid"``: t = ``tensor_size``,
p = ``pipeline_size`` and d = N / (t p) data-parallel replicas (N a multiple of t p). With d > 1
each replica runs the global batch / d: re-analysed at that batch when the global batch is
known (``analyze_at``), else the kernel bodies / d (launches kept). The tensor plan
(``analyzer.scaling.tensor``) is made on the graph each device runs; t > 1 on a graph without
Megatron's column/row pattern is an error (the rule of thumb of ``parallel="tensor"`` has no
per-stage split).
"""

from __future__ import annotations

from analyzer.errors import InputSpecError
from analyzer.scaling import hybrid as H
from analyzer.scaling import hybrid_groups as HG
from analyzer.scaling import parallel as P


def layout(parallel: str, n: int, *, tensor_size: int, pipeline_size: int | None,
           virtual_stages: int) -> HG.Layout:
    """The ``hybrid_groups.Layout`` of ``n`` devices (module docstring)."""
    if n == 1:   # the one-device step (``points``)
        return HG.Layout()
    if parallel == "pipeline":
        return HG.Layout(1, n, 1, virtual_stages)
    t, p = tensor_size, pipeline_size or 1
    if n % (t * p):
        raise InputSpecError(f"hybrid parallel: {n} devices are not a multiple of tensor "
                             f"{t} x pipeline {p} = {t * p} (data-parallel replicas = devices "
                             "/ (tensor x pipeline))")
    return HG.Layout(t, p, n // (t * p), virtual_stages)


def _tensor_plan(rep, pred, lay: HG.Layout, train: bool, sequence_parallel: bool):
    from analyzer.ir.graph import PRECISION_BITS
    from analyzer.scaling import tensor as T

    if lay.t == 1:
        return None
    pattern = T.find(rep.nodes, rep.model.get("outputs", ()))
    if not pattern.recognised:
        raise InputSpecError(f"hybrid parallel with tensor size {lay.t}: {pattern.notes[0]}; "
                             "give tensor size 1 or a graph with Megatron's column/row GEMMs")
    bits = PRECISION_BITS.get(pred.precision) if pred.precision_explicit else None
    return T.plan(rep.nodes, lay.t, pattern=pattern, train=train,
                  sequence_parallel=sequence_parallel, params=rep.totals.params,
                  elem_bytes=bits // 8 if bits else None)


def _one_device(base, step1: dict, passes1: dict) -> list:
    """The one-device points: ``step1`` (Megatron's gradient passes included when they run;
    ``passes1``: profile -> their seconds per pass, or None)."""
    from analyzer.scaling.data_parallel import memory

    mems = {st.hardware: memory(st.memory, "ddp", 1)
            for st in (base.training.steps if base.training else ())}
    return [P.point(h, 1, s[0], H.ZERO, 0.0, 0.0, s[0], calls=0, memory=mems.get(h),
                    grad_passes=passes1.get(h)) for h, s in step1.items()]


def points(analyze_at, base, step1: dict, fab, n: int, lay: HG.Layout, m: int, *, train: bool,
           schedule: str, split: str, batch, sequence_parallel: bool = False,
           dp_mode: str = "allreduce", overlap: bool = False, bucket_mb=None, passes=None,
           passes1=None):
    """(points, plans) of ``n`` devices laid out as ``lay`` with ``m`` micro-batches per
    replica, Megatron's gradient passes ``passes`` (``training.grad_passes``; None: none); one
    device: the one-device step itself (``step1``, ``passes1`` its passes per profile)."""
    if n == 1:
        return _one_device(base, step1, passes1 or {}), []
    if lay.d > 1 and batch is not None and (batch % lay.d or lay.d > batch):
        raise InputSpecError(f"hybrid parallel: the global batch {batch} does not split evenly "
                             f"over {lay.d} data-parallel replicas")
    rep, div = base, 1
    if lay.d > 1:
        rep, div = (analyze_at(batch // lay.d), 1) if batch is not None else (base, lay.d)
    pts, plans = [], []
    for pred in rep.predictions:
        h = pred.hardware
        tensor = _tensor_plan(rep, pred, lay, train, sequence_parallel)
        parts, comm, calls, mem, record = H.step(
            rep, pred, fab, lay, m, train=train, schedule=schedule, split=split, tensor=tensor,
            div=div, dp_mode=dp_mode, overlap=overlap, bucket_mb=bucket_mb, passes=passes)
        exposed = sum(parts[k] for k in P.PARTS if k not in ("compute", "bubble"))
        pts.append(P.point(h, n, parts["compute"], comm, exposed, parts["bubble"], step1[h][0],
                           calls=calls, memory=mem, parts=parts,
                           grad_passes=record["grad_passes"]))
        stages = [c | {"first_name": rep.nodes[c["first_node"]].name,
                       "last_name": rep.nodes[c["last_node"]].name} for c in record["chunks"]]
        plans.append({"hardware": h, "devices": n, "tensor": lay.t, "pipeline": lay.p,
                      "data": lay.d, "virtual_stages": lay.v, "microbatches": m,
                      "stages": stages, "tied_embedding": record["tied_embedding"],
                      "parts": parts})
    return pts, plans
