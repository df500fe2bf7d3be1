"""Lowering: a report's per-node counts + hardware profiles + a runtime -> the kernel arrays the
jitted cost kernel eats.

For one runtime and the profiles predicted under it:

1. **kernels**: the runtime's fusion plan (``fusion.py``) groups the nodes that do work into
   kernels; a kernel sums its members' counts, less the bytes of the tensors that pass only
   between them (never written, never read back).  Its op class (``efficiency.OP_CLASSES``) and
   GEMM view come from its heaviest member; ``runs`` is how often it launches (a loop body's
   kernels launch once per trip).
2. **dtype and peaks** (``engines``): the engine each kernel's work runs on at its dtype, with
   the fallbacks, PyTorch's fp32 defaults (TF32 convolutions, FMA-unit matmuls and their classes)
   and what the prediction says of them.  ``precision`` overrides the dtype of every floating
   tensor: the compute dtype *and* the bytes.
3. **efficiency constants** (``efficiency.py``, data in ``hardware_db/efficiency/``): a
   calibrated profile's own tables (``[calibration.tables.<class>]``: ``e_c``, ``e_bw``,
   ``b_half_bytes``, ``floor_us`` for every class of ``efficiency.OP_CLASSES`` it has; a class it
   lacks takes its ``CLASS_FALLBACK`` class's table, else the datasheet set); else its architecture family's fitted constants (a
   datasheet-only profile of a known family inherits them); else the generic GPU set for a GPU;
   else the datasheet set of its kind (peaks as stated).  Each prediction says which
   (``provenance``: calibrated / architecture constants / generic / datasheet).
4. **per-kernel fixed cost**: ``max(floor of the kernel's class, the profile's launch figure)``
   (a set's warm start, ``l2_floor``, is taken off it by the kernel: ``kernels.kernel_terms``),
   except under a family's fitted constants (``architecture constants``), whose class floors were
   measured on the family's own kernels: there the class floor alone (the launch figures are
   assumed ones, several taken from another GPU, and the A40's measured elementwise floor, 1.19 us,
   sits under its 1.5 us one); a profile without a launch figure takes its kind's documented default
   (``runtimes.KIND_LAUNCH_US``), and the prediction says so.  Runtimes with host dispatch add a
   per-kernel dispatch (``runtimes.py``).  A profile calibrated with the runtime predicted
   measured its floors net of dispatch: its fixed cost is ``floor + dispatch``.
5. **per-run fixed cost**: a profile calibrated with the runtime predicted adds its measured
   ``calibration.run_overhead_us`` once per prediction (``Prediction.run_overhead_s``: the cost of
   one ``session.run`` besides its kernels); under ``qnn`` and ``xla`` on a TPU, the family's
   fitted per-call ``run_fixed_s`` (``qnn``, ``xla_tpu``); other profiles add nothing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from analyzer.counting.engine import NodeCost
from analyzer.errors import InputSpecError
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction import cudnn_conv, eager_plan, engines, fusion, runtimes, xla_cpu_fusion, xla_tpu
from analyzer.prediction import accelerator_terms, tpu_mxu, xla_conv_layout, xla_gpu_classes, xla_gpu_rewrites
from analyzer.prediction import l2_state as cache_state
from analyzer.prediction import pytorch_terms, stem_conv
from analyzer.prediction import lowering_fixed as lf
from analyzer.prediction.cpu import loop_launch as cpu_loop_launch
from analyzer.prediction import host_only as host_only_ops
from analyzer.prediction import kernel_rows as kr
from analyzer.prediction.hardware import complete_profile, gather_note, profile_memo, profile_terms

PROVENANCE = ("calibrated", "architecture constants", "generic", "datasheet")


@dataclass(frozen=True, kw_only=True)
class Lowered:
    """Arrays over (profiles P, kernels K) for one runtime; seconds, bytes, FLOPs as float64."""

    runtime: str
    plan: fusion.FusionPlan
    kernel_names: tuple[str, ...]       # K: the first member's name
    feats: dict                         # name -> [K] (per launch: counts / runs)
    runs: np.ndarray                    # [K] launches
    member_weight: np.ndarray           # [N nodes] share of its kernel's time (0 if none)
    matrix_peak: np.ndarray             # [P, K] FLOP/s
    vector_peak: np.ndarray             # [P, K]
    mem_bw: np.ndarray                  # [P]
    units: np.ndarray                   # [P] (0: unknown)
    l2_bytes: np.ndarray                # [P] last-level cache, bytes (profile onchip_mb; 0: unknown)
    consts: dict                        # name -> [P, n_classes] (trans_weight, softmax_passes' two: [P])
    fixed: np.ndarray                   # [P, K] per-launch fixed cost: max(floor, launch) + dispatch
    run_overhead: np.ndarray            # [P] seconds added once per prediction (session.run)
    precision: str
    warnings: tuple[tuple[str, ...], ...]   # per profile
    provenance: tuple[str, ...]             # per profile, one of PROVENANCE
    provenance_detail: tuple[str, ...]      # per profile, one sentence
    notes: tuple[tuple[str, ...], ...]      # per profile: assumptions the headline must show
    # [P, K] per-launch host dispatch, the part of ``fixed`` the host spends issuing the kernel
    # (0 for a runtime without host dispatch); a stream runtime overlaps it with the device
    # (``runtimes.stream_times``); a kernel's launches the runtime inserted (``extra_ops``) add
    # theirs.
    host: np.ndarray | None = None
    # [P, E] per launch the runtime inserted (``extra_ops`` flattened): its serial loop's seconds
    # (``bn_stats``: a training BatchNorm's statistics kernel; 0 none), None: no such launch
    extra_loop_s: np.ndarray | None = None
    # host-only ops (``FusionPlan.host_only``: node indices, graph order) and [P, H] the host
    # seconds of all runs of each: ``runtimes.HOST_ONLY_RATIO`` x the dispatch of a small
    # elementwise op x runs; no device time.  A stream runtime places them on its stream
    host_nodes: tuple[int, ...] = ()
    host_runs: np.ndarray | None = None     # [H] runs of each per model run
    host_only: np.ndarray | None = None
    # [P, K] a loop body's weights read from the cache after the first trip (``cpu.loop_resident``):
    # the bytes per launch, and the seconds per launch it adds to ``fixed`` (<= 0); None: none
    resident_bytes: np.ndarray | None = None
    resident: np.ndarray | None = None
    # [P, K] XLA's split of a loop fusion over a calibration's threads (``cpu.xla_partition``): its
    # parts (1: not split), and the seconds per launch the split adds to ``fixed`` (<= 0); None: none
    split_parts: np.ndarray | None = None
    split: np.ndarray | None = None
    # [P, K] seconds per launch XLA's YNNPACK dots add to ``fixed`` (``cpu.ynn_dot``); None: none
    ynn_dot: np.ndarray | None = None
    # [P, K] seconds per launch a loop body's vector work scale adds to ``fixed`` (``cpu.loop_work``,
    # <= 0); None: none
    loop_work: np.ndarray | None = None
    # ([K] output elements, [P, K] seconds per launch) of a calibrated class's cost per output
    # element (``efficiency.class_fixed_s``'s ``out_s``, inside ``fixed``), or None: none
    per_output: tuple | None = None
    # [P, K] activation bytes per launch kept in the NPU's on-chip memory, never charged to DRAM
    # (the ``qnn`` runtime: ``accelerators.qnn.onchip_bytes``); None: none (every other runtime)
    onchip: np.ndarray | None = None
    # with ``onchip``: ([K] weight bytes per launch, [P] budgets (B), [P] onchip_cost: an on-chip
    # byte's time as a fraction of a DRAM byte's, the family's fitted scalar)
    onchip_of: tuple = ()
    # [P, K] output elements per second the ``qnn`` runtime's depthwise kernels compute at
    # (``accelerators.qnn.dw_output_rate``; 0: not such a kernel) and [K] their output elements
    # per launch; None: no profile states a depthwise output rate
    dw_rate: np.ndarray | None = None
    dw_outputs: np.ndarray | None = None
    # [P] per profile: kernel index -> ``accelerators.Placed``, the factors of each kernel its
    # runtime's placement moved off the accelerator (empty: none)
    placed: tuple = ()

    @property
    def besides_kernels_s(self) -> np.ndarray:
        """[P] seconds a non-stream prediction adds to its kernels' sum: the per-run fixed cost
        and the host-only ops (what the search adds to a candidate's kernel sum)."""
        if self.host_only is None or not self.host_only.size:
            return self.run_overhead
        return self.run_overhead + self.host_only.sum(axis=-1)


def _calibrated_for(profile, runtime_name: str) -> bool:
    cal = profile.calibration
    return bool(cal and cal.get("tables") and cal.get("runtime") == runtime_name)


def lower(nodes: list[NodeCost], profiles: list, precision: str | None, runtime: runtimes.Runtime,
          graph_outputs: frozenset[str] = frozenset(), fused: fusion.FusionRecord | None = None,
          memo: dict | None = None, keys=None, l2_state: str | None = None) -> Lowered:
    """``graph_outputs``: the model's output names, each written even where its readers are fused with it
    (``fusion._collect``).  ``fused``: the runtime's own record of its kernels (``fusion.plan``).  ``memo``: a dict
    kept across calls with the same profiles (``CostModel``): what depends only on a profile, op or dtype is computed
    once.  ``keys``: with ``memo``, one per node, equal for nodes equal but for names.  ``l2_state``: the L2 state
    each GPU kernel starts in (``l2_state.STATES``: warm, the default, or cold: no cache step)."""
    precision, said_precision = _precision_of(precision, runtime, nodes)
    fnodes, node_bytes = _fusion_nodes(nodes, precision, memo, keys)
    plan = _plan(nodes, fnodes, node_bytes, runtime, graph_outputs, fused, profiles, precision)
    rows, weight = _kernel_rows(nodes, plan, fnodes, node_bytes, precision, memo, keys, fused, profiles)
    # per kernel as lists (numpy item writes cost more); wbytes: weight bytes/launch (cpu.cold)
    mac_l, vec_l, trans_l, bytes_l, wbytes_l, runs_l, cls_l, view_l, anchor_dtype = \
        zip(*rows) if rows else ((),) * 9
    names = [nodes[m[0]].name for m in plan.members]
    cls_l = _moved_classes(cls_l, anchor_dtype, (nodes, plan, fnodes), runtime, profiles)
    feats, view = _features(mac_l, vec_l, trans_l, bytes_l, cls_l, view_l, anchor_dtype, plan.kernels)
    cls_l = pytorch_terms.kernel_feats(feats, runtime.name, cls_l, (plan, nodes, fnodes), profiles)
    wbytes, runs = np.array(wbytes_l, dtype=np.float64), np.array(runs_l, dtype=np.float64)
    has_gather = bool((feats["op_class"] == eff.CLASS_CODE["gather"]).any())
    P, K = len(profiles), plan.kernels
    mpeak, vpeak = np.ones((P, K)), np.ones((P, K))
    bw, units, l2 = np.ones(P), np.zeros(P), np.zeros(P)
    fixed, host = np.zeros((P, K)), np.zeros((P, K))   # host: the dispatch part of fixed
    host_only = np.zeros((P, len(plan.host_only)))     # per host-only op, per run
    run_overhead = np.zeros(P)
    consts = pytorch_terms.empty_consts(P)
    warnings, provs, details, notes = [], [], [], []
    class_names = [eff.OP_CLASSES[c] for c in cls_l]   # (python ints: numpy's cost more)
    extra_cls, extra_loop = extra_classes(plan, runtime, profiles), None   # (extra_loop: ``Lowered``'s)
    onchip, cal, placed = None, lf.NO_CALIBRATED, [{} for _ in profiles]   # placed: kernel -> Placed, per profile
    label = precision or kr.main_dtype(anchor_dtype, mac_l, vec_l, trans_l, bytes_l)
    for p, prof in enumerate(profiles):
        warn, note = set(), list(said_precision)   # (the profile's warnings and notes)
        own = profile_memo(memo, prof, runtime.name)
        prof, (bw[p], units[p], l2[p], arrays, prov, detail, launch) = _profile_terms(own, prof, has_gather, note,
                                                                                      runtime.name, precision)
        l2[p] = cache_state.cache_bytes(prof, l2[p], l2_state, warn, note)   # (cold: 0 on a GPU)
        prof, bw[p], units[p] = xla_tpu.per_device(prof, runtime.name, bw[p], units[p], note)   # (TPU7x: 1 of 2)
        mpeak[p], vpeak[p] = engines.kernel_peaks(prof, own.setdefault("peaks", {}), warn, anchor_dtype,
                                           mac_l, vec_l, trans_l)
        engines.precision_notes(prof, runtime.name, precision, mpeak[p], warn, note, cls_l, anchor_dtype, mac_l,
                                vec_l, trans_l, (nodes, plan, feats))   # (PyTorch's and XLA's TF32 defaults)
        stem_conv.fma_peaks(prof, runtime.name, mpeak[p], cls_l, note)   # (image stems on the FMA units)
        tpu_mxu.precision_passes(prof, mpeak[p], anchor_dtype, (nodes, plan), warn)   # (HIGH / HIGHEST on a TPU)
        _set_consts(consts, p, arrays)
        pytorch_terms.profile_scalars(consts, p, prof, cache_state.applies(prof, l2_state))
        consts_p = {n: consts[n][p] for n in consts}
        floors = np.asarray(arrays["floor_s"])[feats["op_class"]]
        calibrated = _calibrated_for(prof, runtime.dispatch_name)
        fixed_of = functools.partial(lf.fixed_s, prof=prof, runtime=runtime, calibrated=calibrated,
                                     prov=prov, launch=launch, note=note)
        fixed[p] = fixed_of(floors, class_names, host_out=(said_host := []))
        host[p] = said_host[0]
        fixed[p], loop_s, once = cpu_loop_launch.xla_fixed(fixed[p], floors, nodes, plan, runs, prof, calibrated,
                                                           runtime.fusion, note)
        host_only[p] = host_only_ops.per_run_s(prof, runtime, calibrated, launch, note, len(plan.host_only))
        bw[p], run_overhead[p], onchip, placed[p] = accelerator_terms.per_profile(
            runtime, prof, arrays, label, note, (plan, fnodes, rows, fixed[p], bw[p]),
            (onchip, p, P, mpeak[p], vpeak[p], cls_l, anchor_dtype, feats["bytes"], wbytes, nodes))
        hw_p = {"matrix_peak": mpeak[p], "vector_peak": vpeak[p], "mem_bw": bw[p], "units": units[p], "l2_bytes": l2[p]}
        if calibrated:
            run_overhead[p], cal = lf.calibrated_terms(cal, p, prof, runtime, once, fixed, (
                nodes, fnodes, plan, feats, arrays, view, wbytes, runs), hw_p, consts, note)
        if extra_cls:   # launches the runtime inserted with no node of their own (``lf.add_at``)
            extra_loop, bn_loop = lf.extra_loop_row(extra_loop, p, P, plan, units[p], prof)
            lf.add_at(extra_cls, fixed[p], host[p], lf.inserted_s(
                extra_cls, nodes, plan, arrays, fixed_of, hw_p, consts_p, loop_s,
                cpu_loop_launch.program_launch_s(prof, calibrated, runtime.fusion), bn_loop))
        if runtime.fusion in ("onnxruntime", eager_plan.POLICY) or fused is not None:
            note.append(f"kernels: {plan.source}")
        for acc, v in ((warnings, tuple(sorted(warn))), (provs, prov), (details, detail), (notes, _once(note))):
            acc.append(v)
    return Lowered(runtime=runtime.name, plan=plan, kernel_names=tuple(names), feats=feats, runs=runs,
                   member_weight=weight, matrix_peak=mpeak, vector_peak=vpeak, mem_bw=bw, units=units,
                   l2_bytes=l2, consts=consts, fixed=fixed, run_overhead=run_overhead, precision=label,
                   warnings=tuple(warnings), provenance=tuple(provs), provenance_detail=tuple(details),
                   notes=tuple(notes), host=host, **host_only_ops.fields(nodes, plan, host_only), **lf.resident_fields(*cal[1:]),
                   placed=tuple(placed), extra_loop_s=extra_loop, **_qnn_fields(onchip, wbytes))


def _moved_classes(cls_l, anchor_dtype, graph, runtime, profiles) -> tuple:
    """The kernels' classes moved by the engine and compiler they run under: PyTorch's fp32 matrix
    kernels on FMA units (``engines.simt_classes``), image stems on them (``stem_conv.stem_classes``),
    XLA's own GPU kernels (``xla_gpu_classes``);
    ``graph``: (nodes, plan, fusion nodes)."""
    nodes, plan, fnodes = graph
    cls_l = engines.simt_classes(cls_l, anchor_dtype, nodes, plan, runtime.name, profiles)
    cls_l = stem_conv.stem_classes(cls_l, anchor_dtype, nodes, plan, runtime.name, profiles)
    return xla_gpu_classes.xla_classes(cls_l, runtime.fusion, fold_transposes(profiles), plan.members, fnodes)


def extra_classes(plan, runtime, profiles) -> list[tuple[int, int]]:
    """(kernel, class code) of each launch the runtime inserts with no node of its own
    (``plan.extra_ops``: cuDNN's extra kernels, XLA's layout transposes and tree-split stages),
    its class moved to XLA's own where XLA runs it (``xla_gpu_classes``)."""
    xla = xla_gpu_classes.applies(runtime.fusion, fold_transposes(profiles))
    out = []
    for k, ops in enumerate(plan.extra_ops):
        for op in ops:
            cls = eff.op_class_of("", cudnn_conv.op_of(op))
            out.append((k, xla_gpu_classes.xla_code(eff.CLASS_CODE[cls], [cls]) if xla else eff.CLASS_CODE[cls]))
    return out


def _kernel_rows(nodes, plan, fnodes, node_bytes, precision, memo, keys, fused, profiles):
    """``kernel_rows.kernel_rows``, with XLA's GPU dot strength reduction on the ``xla`` plan of
    GPU profiles (``xla_gpu_rewrites.strength_rows``: a strength-reduced dot's kernel is a
    ``reduce`` kernel of vector FLOPs)."""
    rows, weight = kr.kernel_rows(nodes, plan, fnodes, node_bytes, precision, memo, keys)
    if plan.policy == "xla" and fused is None and fold_transposes(profiles):
        rows = xla_gpu_rewrites.strength_rows(rows, plan, fnodes)
    return rows, weight


def _qnn_fields(onchip, wbytes) -> dict:
    """``Lowered``'s ``qnn`` fields from ``accelerators.qnn.profile_rows``' rows (None: another
    runtime): the kept bytes, (weight bytes, budgets, onchip_cost), and the depthwise output rate
    (None where no profile states one) with the output elements."""
    if onchip is None:
        return {}
    return {"onchip": onchip[0], "onchip_of": (wbytes, *onchip[1:3]),
            "dw_rate": onchip[4] if onchip[4].any() else None, "dw_outputs": onchip[3]}


def _once(note: list[str]) -> tuple[str, ...]:
    """Each note once, in order (the inserted launches' fixed cost charges the dispatch note
    the kernels' fixed cost charged already)."""
    return tuple(dict.fromkeys(note))


def _set_consts(consts: dict, p: int, arrays) -> None:
    """Row ``p`` of the per-profile constant arrays: the class parameters and trans_weight."""
    for name in eff.CLASS_PARAMS:
        consts[name][p] = arrays[name]
    consts["trans_weight"][p] = float(arrays["trans_weight"])


def _precision_of(precision: str | None, runtime, nodes) -> tuple[str | None, tuple[str, ...]]:
    """The precision a lowering runs at (checked) and what a runtime's own default says: the
    caller's, else the runtime's rule (``Runtime.precision_rule``: Core ML computes in fp16 on
    the ANE, the Edge TPU only int8), else None (each tensor's own dtype)."""
    if precision is not None and precision not in engines.PRECISIONS:
        raise InputSpecError(f"unknown precision '{precision}'; choose from {', '.join(engines.PRECISIONS)}")
    if precision is not None or runtime.precision_rule is None:
        return precision, ()
    chosen, said = runtime.precision_rule(nodes)
    return chosen, ((said,) if said else ())


def fold_transposes(profiles) -> bool:
    """Whether the ``xla`` policy plans XLA's GPU transpose folding (``transpose_fold.xla_folded``),
    dot merging (``dot_merge``) and fusions into matrix kernels (``xla_gpu_joins``): when every
    profile lowered together is a GPU (the rules are read from XLA's GPU compiler; a TPU's
    ``xla`` plan keeps its transposes, dots and matrix kernels apart)."""
    return bool(profiles) and all(getattr(p, "kind", "") == "gpu" for p in profiles)


def _plan_precision(precision: str | None, profiles, runtime_name: str) -> str | None:
    """The precision the eager plan's cuDNN rules take: ``tf32`` where no precision is given and
    PyTorch's default runs every profile's fp32 convolutions in TF32 (``engines.default_tf32_convs``,
    as the kernel times take them: docs/model.md, Precision), else ``precision``."""
    if precision is None and profiles and all(engines.default_tf32_convs(p, runtime_name, None) for p in profiles):
        return "tf32"
    return precision


def _plan(nodes, fnodes, node_bytes, runtime, graph_outputs, fused, profiles=(),
          precision: str | None = None) -> fusion.FusionPlan:
    """The kernels the runtime launches: the eager PyTorch plan (``eager_plan``: views, copies,
    joined patterns) for the ``eager`` policy, XLA's CPU kernels (``xla_cpu_fusion``) for the
    ``xla_cpu`` one, else the fusion policy's (or ``fused``'s; ``fusion.plan``'s ``fold_transposes``
    where every profile is a GPU).  The eager plan's fp32 convolutions run on the tensor cores under
    ``tf32`` or PyTorch's TF32 default (``_plan_precision``), with cuDNN 8.9's Winograd helpers on
    the FMA units but on Hopper (``cudnn_conv.winograd_helpers``); a training step's forward
    (``Runtime.train_forward``) runs its BatchNorms in training mode (rule ``bn-train``)."""
    if runtime.fusion == eager_plan.POLICY and fused is None:
        return eager_plan.plan(nodes, fnodes, node_bytes, graph_outputs,
                               tf32=_plan_precision(precision, profiles, runtime.name) == "tf32",
                               winograd=cudnn_conv.winograd_helpers(profiles), train=runtime.train_forward)
    if runtime.fusion == xla_cpu_fusion.POLICY and fused is None:
        return xla_cpu_fusion.plan(fnodes, graph_outputs)
    fold = fold_transposes(profiles)
    return fusion.plan(fnodes, runtime.fusion, graph_outputs, fused, fold,
                       xla_conv_layout.generation(profiles) if fold else "")


def _fusion_nodes(nodes, precision, memo, keys):
    """``kr.fusion_nodes`` of the candidate, reused from ``memo`` for the same candidate under
    another runtime."""
    last = memo.get("last") if memo is not None else None
    if last is not None and last[0] is nodes and last[1] == precision:
        return last[2], last[3]
    fnodes, node_bytes = kr.fusion_nodes(
        nodes, precision, None if memo is None else memo.setdefault("fusion", {}), keys)
    if memo is not None:
        memo["last"] = (nodes, precision, fnodes, node_bytes)
    return fnodes, node_bytes


def _features(mac_l, vec_l, trans_l, bytes_l, cls_l, view_l, anchor_dtype, K: int):
    """The kernel features (``Lowered.feats``: per launch, float64; the op class as int32) and
    the matrix view [6, K] (m, n, k, batch, strided, serial) of the kernel rows' columns."""
    view = np.array(view_l, dtype=np.float64).reshape(K, 6).T.copy()
    feats = {"op_class": np.array(cls_l, dtype=np.int32), "mac_flops": np.array(mac_l, dtype=np.float64),
             "vec_flops": np.array(vec_l, dtype=np.float64), "trans_flops": np.array(trans_l, dtype=np.float64),
             "bytes": np.array(bytes_l, dtype=np.float64), "m": view[0], "n": view[1], "k": view[2],
             "batch": view[3],
             "elem_bytes": np.array([kr.PRECISION_BITS.get(d, 0) / 8 for d in anchor_dtype], dtype=np.float64)}
    return feats, view


def _profile_terms(own: dict, prof, has_gather: bool, note: list[str], runtime_name: str = "",
                   precision: str | None = None):
    """(the profile with its documented defaults filled in, its terms (``profile_terms`` less
    their notes; the constants with the FMA-unit classes' slots for ``runtime_name`` and
    ``precision``: ``engine_sets``)), kept in ``own`` (the profile's memo) but for that last
    step; the notes of the defaults, the terms and (for a graph with a gather) the gather rule
    go to ``note``, in that order."""
    if "complete" not in own:
        done: list[str] = []
        own["complete"] = (complete_profile(prof, done), tuple(done))
    prof, done = own["complete"]
    note.extend(done)
    if "terms" not in own:
        own["terms"] = profile_terms(prof)
    *terms, said = own["terms"]
    if terms[4] == "architecture constants" and runtime_name and not runtimes.get(runtime_name).host_dispatch:
        # the fitted floors are the whole fixed cost (``lowering_fixed.fixed_s``): no launch figure is used
        said = tuple(s for s in said if " has no launch figure: " not in s)
    note.extend(said)
    terms[3] = stem_conv.engine_slot(engines.engine_sets(terms[3], prof, runtime_name, precision), prof,
                                     runtime_name, precision)
    if has_gather:
        if "gather_note" not in own:
            own["gather_note"] = gather_note(prof)
        if own["gather_note"]:
            note.append(own["gather_note"])
    return prof, terms
