"""The per device count curve of a model: ``scale(model, hw, devices, ...)`` -> a Report carrying
``Scaling`` (JSON ``"scaling"``: one entry per profile and device count; ``"crossover_devices"``:
profile -> the first device count whose communication exceeds its compute, or None).

Data parallel re-analyses the model at the local batch ``B/N`` when the global batch is known
(ONNX with ``batch=``), so the per-device compute carries the small-batch inefficiency seed 002
measured; otherwise (``rescale="linear"``) the launch overheads are held constant and the rest
of the step is divided by N. A JAX program (a function, with ``args=``, ``kwargs=`` and
``analyze_jax``'s keywords) is re-traced at ``B/N`` and all-reduces its parameter args'
gradients: ``analyzer.scaling.jax_program``; one that already runs over a device mesh
(``shard_map``) is one step at its mesh's device count: ``analyzer.scaling.mesh_program``.
Tensor parallel's points: ``analyzer.scaling.tensor_curve``; pipeline and hybrid:
``analyzer.scaling.model_parallel``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from analyzer.errors import InputSpecError
from analyzer.ir.graph import PRECISION_BITS
from analyzer.scaling import collectives as C
from analyzer.scaling import fabric as FB
from analyzer.scaling import jax_program as J
from analyzer.scaling import data_parallel as DP
from analyzer.scaling import model_parallel as MP
from analyzer.scaling import parallel as P
from analyzer.scaling import tensor_curve as TC
from analyzer.training import grad_passes as GP

PIPELINE_SPLITS = ("balanced", "even")


@dataclass(frozen=True)
class Scaling:
    parallel: str
    link: str
    points: tuple[P.Point, ...]
    setup: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def crossover(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for p in self.points:
            out.setdefault(p.hardware, None)
            if out[p.hardware] is None and p.communication_s > p.compute_s:
                out[p.hardware] = p.devices
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"scaling": [p.to_dict() for p in self.points],
                "crossover_devices": self.crossover(),
                "scaling_setup": {"parallel": self.parallel, "link": self.link, **self.setup,
                                  "notes": list(self.notes)}}


def _step(report, train: bool):
    """(profile id -> (step s, backward s, overhead s)) of a report's predictions."""
    if train:
        return {s.hardware: (s.step_s, s.backward_s, s.overhead_s) for s in report.training.steps}
    return {p.hardware: (p.latency_s, 0.0, sum(r.overhead_s for r in p.nodes))
            for p in report.predictions}


def fabric(link, *, per_node: int = 1, intra_link=None, algorithm: str = "nccl",
           link_efficiency: float = 1.0, node=None, nics: int | None = None) -> FB.Fabric:
    """The two-level fabric. ``node`` (a ``hardware_db.links.Node`` or its id) sets devices per
    node, the intra-node link, NVLS and the NICs per node (explicit arguments win; ``link``
    None takes the node's NIC link). ``algorithm`` nccl: the fitted NCCL model
    (hardware_db/collectives/nccl.json); ring / tree: the closed forms with no per-call cost."""
    from hardware_db import collectives, links

    nvls_efficiency, ring = 0.0, ()
    if node is not None:
        nd = node if hasattr(node, "gpus") else links.get_node(node)
        per_node = nd.gpus if per_node == 1 else per_node
        intra_link = intra_link or nd.intra_link
        nics = nics or nd.nics
        nvls_efficiency = nd.nvls_efficiency if nd.nvls else 0.0
        if intra_link == nd.intra_link:   # a ring's bottleneck link inside the node (PCIe host path)
            ring = tuple((n, nd.ring_gbs(n)[0] * 1e9 * link_efficiency) for n in range(2, nd.gpus + 1))
        if link is None:
            if nd.nic_link is None:
                raise InputSpecError(f"node '{nd.id}' has no network cards on record: give link=")
            link = nd.nic_link
    if link is None:
        link = "ib-fdr"   # seed 002's network, the default when neither link nor node is given
    inter = link if hasattr(link, "bytes_per_s") else links.get(link)
    intra = None
    if intra_link is not None:
        intra = intra_link if hasattr(intra_link, "bytes_per_s") else links.get(intra_link)
    if per_node > 1 and intra is None:
        raise InputSpecError("devices per node > 1 needs the link inside a node (intra_link=, "
                             "e.g. 'nvlink4' or 'pcie3')")
    consts = C.constants_from(collectives.nccl()) if algorithm == "nccl" else None
    return FB.Fabric(FB.Level.of(inter, link_efficiency),
                    replace(FB.Level.of(intra, link_efficiency, nvls_efficiency=nvls_efficiency), ring=ring) if intra else None, per_node,
                    algorithm, nics or 1, consts)


def scale(model: Any, hw: str | Sequence[str], devices: Sequence[int], *, link=None,
          parallel: str = "data", batch: int | None = None, train: bool = True,
          optimizer: str = "sgd", per_node: int = 1, intra_link=None, algorithm: str = "nccl",
          overlap: bool = False, buckets: int = 1, microbatches: int | None = None,
          schedule: str = "1f1b", rescale: str | None = None, link_efficiency: float = 1.0,
          node=None, nics: int | None = None, sequence_parallel: bool = False,
          data_parallel: str = "allreduce", bucket_mb: float | None = None,
          pipeline_split: str = "balanced", virtual_stages: int = 1, tensor_size: int = 1,
          pipeline_size: int | None = None, clip_grad="auto", zero_grad=None, megatron_step=None, options=None, **keywords):
    """The Report of ``model`` at the global batch on ``hw``, carrying the scaling curve over
    ``devices`` (see the module and ``analyzer.scaling.parallel`` for the models). ``link``: the
    network between nodes (default: the node's NIC link, else ib-fdr); ``node``: a node design of
    hardware_db/links/nodes.toml (devices per node, NVLink, NVLS, NICs per node);
    ``sequence_parallel``: tensor parallel with Megatron's sequence parallelism
    (``analyzer.scaling.tensor``). Data parallel: ``data_parallel`` allreduce (the whole
    gradient in ``buckets`` equal all-reduces), ddp, megatron, zero1, zero2 or zero3
    (``analyzer.scaling.data_parallel``), ``bucket_mb`` the bucket (zero3: unit) cap in MiB,
    ``overlap`` the collectives with backward. Pipeline: ``microbatches`` (default 4 x the
    stages), ``schedule`` gpipe, 1f1b or interleaved (``virtual_stages`` chunks per device),
    ``pipeline_split`` balanced or even; hybrid (Megatron's tensor x pipeline x data):
    ``tensor_size`` t, ``pipeline_size`` p (``analyzer.scaling.model_parallel``); gradient passes, Megatron's step: ``GP.resolve``."""
    from analyzer.api import analyze

    passes = _check_modes(parallel, schedule, data_parallel, bucket_mb, microbatches, train, clip_grad, zero_grad, megatron_step)
    _check_layout(parallel, schedule, virtual_stages, tensor_size, pipeline_size, pipeline_split)
    devs = _device_counts(devices)
    fab = fabric(link, per_node=per_node, intra_link=intra_link, algorithm=algorithm,
                 link_efficiency=link_efficiency, node=node, nics=nics)
    for n in devs:
        _whole_nodes(fab, n)   # a clear error before any work
    if J.is_program(model):   # a JAX function (analyzer.scaling.jax_program)
        return J.scaled(Scaling, model, hw, devs, fab, _fabric_notes(fab, algorithm), dict(
            parallel=parallel, batch=batch, train=train, optimizer=optimizer, overlap=overlap, buckets=buckets,
            rescale=rescale, options=options, algorithm=algorithm, data_parallel=data_parallel,
            bucket_mb=bucket_mb), keywords, requested=devices)
    kw = dict(keywords)
    if batch is not None:
        kw["batch"] = batch
    base = analyze(model, hw, options=options, train=train, optimizer=optimizer, **kw)
    plain1, passes1, step1 = _baseline(base, train, passes)
    precision = base.predictions[0].precision if base.predictions else "fp32"
    grad_bytes = base.totals.params * (PRECISION_BITS.get(precision, 32) // 8)   # B per gradient (4 when unknown)
    notes = _fabric_notes(fab, algorithm)
    mode = rescale or ("analyze" if batch is not None else "linear")
    points, tp_plans, pp_plans = [], [], []

    def at(b):   # the model at another (per-device) batch
        return analyze(model, hw, options=options, train=train, optimizer=optimizer,
                       **{**kw, "batch": b})

    for n in devs:
        if parallel == "data":
            points.extend(_data_points(
                at, base, step1, fab, n, rescale=mode, batch=batch, data_parallel=data_parallel,
                overlap=overlap, bucket_mb=bucket_mb, buckets=buckets, grad_bytes=grad_bytes, train=train,
                passes=passes, plain1=plain1, passes1=passes1))
        elif parallel == "tensor":
            pts, summary, tnotes = TC.points(base, step1, fab, n, train, sequence_parallel, passes)
            points.extend(pts)
            tp_plans += [{"devices": n, **summary}] if n > 1 else []
            notes.extend(x for x in tnotes if x not in notes)
        else:
            lay = MP.layout(parallel, n, tensor_size=tensor_size, pipeline_size=pipeline_size,
                            virtual_stages=virtual_stages)
            pts, plans = MP.points(
                at, base, step1, fab, n, lay, microbatches or 4 * lay.p, train=train,
                schedule=schedule, split=pipeline_split, batch=batch,
                sequence_parallel=sequence_parallel, dp_mode=data_parallel, overlap=overlap,
                bucket_mb=bucket_mb, passes=passes, passes1=passes1)
            points.extend(pts)
            pp_plans += plans
    setup = _setup(parallel, devs, fab, algorithm, notes, overlap=overlap, buckets=buckets, batch=batch,
                   train=train, mode=mode, grad_bytes=grad_bytes, sequence_parallel=sequence_parallel,
                   tp_plans=tp_plans, schedule=schedule, microbatches=microbatches,
                   pipeline_split=pipeline_split, pp_plans=pp_plans, data_parallel=data_parallel,
                   bucket_mb=bucket_mb, grad_passes=passes.to_dict(), layout=dict(virtual_stages=virtual_stages,
                                                    tensor_size=tensor_size, pipeline_size=pipeline_size))
    order = {p.hardware: i for i, p in enumerate(base.predictions)}
    points.sort(key=lambda p: (order.get(p.hardware, 0), p.devices))
    return base.with_scaling(Scaling(parallel, fab.inter.name, tuple(points), setup, tuple(notes)))


def _setup(parallel: str, devs, fab, algorithm: str, notes: list, *, overlap, buckets, batch, train, mode,
           grad_bytes, sequence_parallel, tp_plans, schedule, microbatches, pipeline_split, pp_plans,
           data_parallel, bucket_mb, layout=None, grad_passes=None) -> dict:
    """The curve's setup record (what was assumed, for the rows and JSON) of ``scale``; appends
    the pipeline schedule's note to ``notes``."""
    per_node = fab.per_node
    setup = {"devices": devs, "per_node": per_node, "nics": fab.nics, "algorithm": algorithm,
             "overlap": overlap,
             "buckets": buckets, "batch": batch, "train": train, "rescale": mode,
             "gradient_bytes": grad_bytes, "grad_passes": grad_passes}
    if parallel == "tensor":
        setup.update(sequence_parallel=sequence_parallel, tensor_plans=tp_plans)
    if parallel in ("pipeline", "hybrid"):
        setup.update(schedule=schedule, microbatches=microbatches or "4 x pipeline stages",
                     pipeline_split=pipeline_split, pipeline_plans=pp_plans, **(layout or {}))
        notes.append(_pipeline_note(parallel, schedule, pipeline_split))
    if parallel == "hybrid":
        setup.update(data_parallel=data_parallel, bucket_mb=bucket_mb,
                     sequence_parallel=sequence_parallel)
    if parallel == "data":
        setup.update(data_parallel=data_parallel, bucket_mb=bucket_mb)
    return setup


def _pipeline_note(parallel: str, schedule: str, split: str) -> str:
    """What the pipeline rows assume (``analyzer.scaling.hybrid``)."""
    how = ("equal repeated blocks, v chunks per device" if schedule == "interleaved" else
           "balanced on the per-layer times" if split == "balanced" else "of equal repeated blocks")
    note = (f"{schedule}: stages {how}; step = m x the slowest device + (sum of the others) / v, "
            "each way (v = 1 except interleaved; bubble (p-1)/(v m + p-1) for equal stages); "
            "activations in flight: GPipe m, 1F1B min(p, m), interleaved min(m, p + (p-1)/v); "
            "a tied embedding's gradient all-reduced between the first and last stage")
    if parallel == "hybrid":
        note += ("; ranks tensor fastest, then data, then pipeline (Megatron-LM's order); each "
                 "stage's gradients synced over its data group after its last micro-batch")
    return note


def _data_points(analyze_at, base, step1: dict, fab, n: int, *, rescale: str, batch, data_parallel,
                 overlap: bool, bucket_mb, buckets: int, grad_bytes: int, train: bool,
                 passes=GP.OFF, plain1=None, passes1=None) -> list:
    """Data parallel over ``n`` devices: the model at the local batch ``batch // n``
    (``analyze_at``) when ``rescale`` is analyze, else the global-batch step with its kernel
    bodies / n; then the gradient sync of ``data_parallel`` (``analyzer.scaling.data_parallel``;
    allreduce: ``parallel.exposed`` over ``buckets`` equal buckets). ``step1``: the one-device
    step with Megatron's gradient passes (``passes``; ``passes1`` their seconds per profile,
    the same at every batch), ``plain1`` without them."""
    plain1, passes1 = plain1 or step1, passes1 or {}
    if batch is not None and (n > batch or batch % n):
        raise InputSpecError(f"data parallel: the global batch {batch} does not split "
                             f"evenly over {n} devices (each runs batch / devices): give device "
                             f"counts that divide {batch}, or a global batch that {n} divides")
    rep = analyze_at(batch // n) if n > 1 and rescale == "analyze" else base
    if data_parallel != "allreduce":
        return DP.points(rep, fab, n, step1, mode=data_parallel, overlap=overlap,
                         bucket_mb=bucket_mb, div=1 if rep is not base else n, passes=passes)
    if n == 1:
        at_n = plain1
    elif rescale == "analyze":
        at_n = _step(rep, train)
    else:
        at_n = {h: (o + (s - o) / n, b / n, o) for h, (s, b, o) in plain1.items()}
    points = []
    mems = {st.hardware: st.memory for st in rep.training.steps} if rep.training else {}
    for h, (s, b, _) in at_n.items():
        comm, exp = P.exposed(lambda nb: fab.allreduce(nb, n), grad_bytes, b, overlap, buckets)
        mem = mems.get(h)
        if mem is not None and rep is base and n > 1:   # linear rescale: activations / n
            mem = replace(mem, activations=mem.activations // n)
        gp = passes1.get(h)
        points.append(P.point(h, n, s + sum((gp or {}).values()), comm, exp, 0.0, step1[h][0],
                              calls=buckets if n > 1 else 0,
                              memory=DP.memory(mem, "ddp", n) if mem is not None else None,
                              grad_passes=gp))
    return points


def _fabric_notes(fab, algorithm: str) -> list[str]:
    notes = [("NCCL model (algorithm and protocol by size, hardware_db/collectives/nccl.json)"
              if algorithm == "nccl" else f"{algorithm} all-reduce") + f" over {fab.inter.name}"
             + (f", {fab.per_node} devices per node over {fab.intra.name}" if fab.per_node > 1 else "")
             + (f", {fab.nics} NICs per node" if fab.nics > 1 else "")]
    if algorithm == "nccl":
        notes.append("NCCL's fitted constants (nccl-tests inside NVSwitch nodes) price the traffic "
                     f"inside a node; over {fab.inter.name} between nodes none was fitted or scored: "
                     "the unfitted ring or tree on the link's datasheet figures, plus the per-call "
                     "cost once per call")
    if fab.inter.alpha == 0:
        notes.append(f"{fab.inter.name}: no per-message latency on record (charged 0)")
    else:
        src = fab.inter.latency_source.split(": '")[0] or "not stated"
        notes.append(f"{fab.inter.name}: {fab.inter.alpha * 1e6:.3g} µs per message, charged per "
                     "network step (ring all-reduce 2(k-1) steps over k nodes, tree 2 ceil(log2 k); "
                     "the adapter's figure, no switch hop added: a lower bound); source: " + src)
    return notes


def _baseline(base, train: bool, passes):
    """(one-device step without Megatron's gradient passes, their seconds per profile, the step
    with them): ``_step``'s tuples, the passes added to the step."""
    plain = _step(base, train)
    one = _passes_one(base, passes)
    return plain, one, {h: (s + sum((one.get(h) or {}).values()), b, o)
                        for h, (s, b, o) in plain.items()}


def _passes_one(base, passes) -> dict:
    """Profile -> seconds per pass of Megatron's gradient passes and step terms on one device
    holding every parameter (None where none runs or the step has no update)."""
    from analyzer.ir.graph import PRECISION_BITS

    tr = base.training
    if not passes.on or tr is None or tr.counts.optimizer == "none":
        return {}
    return {p.hardware: DP.with_terms(DP.passes_of(p, passes, base.totals.params,
                                                   PRECISION_BITS.get(p.precision, 32) // 8)[0],
                                      DP.step_terms(base, p, passes))
            for p in base.predictions}


def _check_modes(parallel, schedule, data_parallel, bucket_mb, microbatches, train, clip_grad="auto",
                 zero_grad=None, megatron_step=None):
    """Bad input names its value (InputSpecError: the CLI's exit 2); returns the gradient passes
    that run (``training.grad_passes.resolve``; none without training)."""
    if parallel not in P.PARALLEL:
        raise InputSpecError(f"parallel must be one of {', '.join(P.PARALLEL)}; got {parallel!r}")
    if schedule not in P.SCHEDULES:
        raise InputSpecError(f"schedule must be one of {', '.join(P.SCHEDULES)}; got {schedule!r}")
    if data_parallel not in DP.MODES:
        raise InputSpecError(f"data_parallel must be one of {', '.join(DP.MODES)}; "
                             f"got {data_parallel!r}")
    if bucket_mb is not None and not (isinstance(bucket_mb, (int, float)) and bucket_mb > 0):
        raise InputSpecError(f"bucket_mb must be a number > 0 (MiB); got {bucket_mb!r}")
    if microbatches is not None and (not isinstance(microbatches, int)
                                     or isinstance(microbatches, bool) or microbatches < 1):
        raise InputSpecError(f"microbatches must be an integer >= 1; got {microbatches!r}")
    if data_parallel != "allreduce" and parallel == "data" and not train:
        raise InputSpecError(f"data_parallel={data_parallel!r} models a training step: "
                             "give train=True")
    return GP.resolve(parallel, data_parallel, clip_grad, zero_grad, megatron_step) if train else GP.OFF


def _whole_nodes(fab, n: int) -> None:
    """``n`` devices fill whole nodes of the fabric (InputSpecError, not the model's ValueError)."""
    try:
        fab.split(n)
    except ValueError as e:
        raise InputSpecError(f"{e}: give a device count that is a multiple of the devices per "
                             "node") from None


def _device_counts(devices) -> list[int]:
    """The sorted device counts, 1 included (the baseline)."""
    devs = sorted({int(d) for d in devices})
    if not devs or devs[0] < 1:
        raise InputSpecError("devices: give device counts >= 1, e.g. 1,2,4,8")
    return devs if 1 in devs else [1, *devs]


def _check_layout(parallel, schedule, virtual_stages, tensor_size, pipeline_size,
                  pipeline_split) -> None:
    """The pipeline split, the hybrid and interleaved sizes (InputSpecError names the value)."""
    if pipeline_split not in PIPELINE_SPLITS:
        raise InputSpecError(f"pipeline_split must be balanced or even; got {pipeline_split!r}")
    for name, val in (("virtual_stages", virtual_stages), ("tensor_size", tensor_size)):
        if not isinstance(val, int) or isinstance(val, bool) or val < 1:
            raise InputSpecError(f"{name} must be an integer >= 1; got {val!r}")
    if pipeline_size is not None and (not isinstance(pipeline_size, int) or pipeline_size < 1):
        raise InputSpecError(f"pipeline_size must be an integer >= 1; got {pipeline_size!r}")
    if parallel == "hybrid" and pipeline_size is None:
        raise InputSpecError("parallel='hybrid' needs pipeline_size (1: tensor x data only)")
    if parallel != "hybrid" and (tensor_size != 1 or pipeline_size is not None):
        raise InputSpecError("tensor_size and pipeline_size apply to parallel='hybrid'")
    if schedule == "interleaved" and virtual_stages < 2:
        raise InputSpecError(f"schedule 'interleaved' needs virtual_stages >= 2 (model chunks "
                             f"per device); got {virtual_stages}")
    if schedule != "interleaved" and virtual_stages != 1:
        raise InputSpecError(f"virtual_stages={virtual_stages} applies to schedule "
                             "'interleaved' only")
