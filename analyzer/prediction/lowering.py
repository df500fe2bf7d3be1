"""Lowering: a report's per-node counts + hardware profiles + a runtime -> the kernel arrays the
jitted cost kernel eats.

For one runtime and the profiles predicted under it:

1. **kernels**: the runtime's fusion plan (``fusion.py``) groups the nodes that do work into
   kernels; a kernel sums its members' counts, less the bytes of the tensors that pass only
   between them (never written, never read back).  Its op class (``efficiency.OP_CLASSES``) and
   GEMM view come from its heaviest member; ``runs`` is how often it launches (a loop body's
   kernels launch once per trip).
2. **dtype and peaks**: ``mac_flops`` run on the matrix engine (tensor cores, MXU, MAC array,
   AMX) when the profile lists a matrix peak for the kernel's compute dtype, else on the vector
   engine at that dtype; vector work and transcendentals on the vector engine.  A device that
   lacks the dtype falls back along ``FALLBACK`` with a warning (fp32 on a TPU runs at its bf16
   MXU rate, as XLA's default precision does).  fp32 on GPUs runs on the CUDA cores unless
   ``precision="tf32"``.  ``precision`` overrides the dtype of every floating tensor: the compute
   dtype *and* the bytes.
3. **efficiency constants** (``efficiency.py``, data in ``hardware_db/efficiency/``): a
   calibrated profile's own tables (``[calibration.tables.<class>]``: ``e_c``, ``e_bw``,
   ``b_half_bytes``, ``floor_us`` for every class of ``efficiency.OP_CLASSES`` it has; a class it
   lacks takes its ``CLASS_FALLBACK`` class's table, else the datasheet set); else its architecture family's fitted constants (a
   datasheet-only profile of a known family inherits them); else the generic GPU set for a GPU;
   else the datasheet set of its kind (peaks as stated).  Each prediction says which
   (``provenance``: calibrated / architecture constants / generic / datasheet).
4. **per-kernel fixed cost**: ``max(floor of the kernel's class, the profile's launch figure)``;
   a profile without a launch figure takes its kind's documented default
   (``runtimes.KIND_LAUNCH_US``), and the prediction says so.  Runtimes with host dispatch add a
   per-kernel dispatch (``runtimes.py``).  A profile calibrated with the runtime predicted
   measured its floors net of dispatch: its fixed cost is ``floor + dispatch``.
5. **per-run fixed cost**: a profile calibrated with the runtime predicted adds its measured
   ``calibration.run_overhead_us`` once per prediction (``Prediction.run_overhead_s``: the cost of
   one ``session.run`` besides its kernels); other profiles add nothing.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from analyzer.counting.engine import FOLDED, NodeCost
from analyzer.errors import HardwareError, InputSpecError
from analyzer.ir.graph import DTYPE_BITS, FLOAT_DTYPES
from analyzer.prediction import efficiency as eff
from analyzer.prediction import cpu_cold, fusion, runtimes
from analyzer.prediction.hardware import (complete_profile, host_dispatch, profile_memo,
                                          profile_terms)

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")

# IR dtype -> profile dtype key
PROFILE_DTYPE = {
    "float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16",
    "float8e4m3fn": "fp8", "float8e4m3fnuz": "fp8", "float8e5m2": "fp8", "float8e5m2fnuz": "fp8",
    "float4e2m1": "fp4", "int8": "int8", "uint8": "int8", "int4": "int4", "uint4": "int4",
}
# bits a floating tensor is stored in under each precision (tf32 is stored as fp32)
PRECISION_BITS = {"fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8}

# where to run a dtype the device has no figure for, in order of preference
FALLBACK = {
    "fp64": ("fp32",),
    "fp32": ("tf32", "bf16", "fp16"),
    "tf32": ("fp32", "bf16", "fp16"),
    "bf16": ("fp16", "fp32"),
    "fp16": ("bf16", "fp32"),
    "fp8": ("fp16", "bf16", "int8"),
    "fp4": ("fp8", "int4", "int8", "fp16", "bf16"),
    "int8": ("fp16", "bf16", "fp8"),
    "int4": ("int8", "fp8", "fp16", "bf16"),
}

PROVENANCE = ("calibrated", "architecture constants", "generic", "datasheet")


@dataclass(frozen=True)
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
    consts: dict                        # name -> [P, n_classes] (trans_weight: [P])
    fixed: np.ndarray                   # [P, K] per-launch fixed cost: max(floor, launch) + dispatch
    run_overhead: np.ndarray            # [P] seconds added once per prediction (session.run)
    precision: str
    warnings: tuple[tuple[str, ...], ...]   # per profile
    provenance: tuple[str, ...]             # per profile, one of PROVENANCE
    provenance_detail: tuple[str, ...]      # per profile, one sentence
    notes: tuple[tuple[str, ...], ...]      # per profile: assumptions the headline must show


def _compute_dtype(n: NodeCost, precision: str | None) -> str:
    dt = n.mac_dtype or next((o.dtype for o in n.out_specs if o is not None), "float32")
    if precision and dt in FLOAT_DTYPES:
        return precision
    return PROFILE_DTYPE.get(dt, "fp32")


def _peak(profile, engine: str, dtype: str, warn: set[str]) -> float:
    """FLOP/s of ``engine`` at ``dtype``, with the documented fallbacks.

    Vector work at a dtype without its own vector figure runs at the vector fp32 rate
    (a conservative choice: GPUs run fp16 elementwise at least that fast), never on the
    matrix engine unless the device has no vector figure at all."""
    if engine == "vector":
        p = profile.peak_flops("vector", dtype) or profile.peak_flops("vector", "fp32")
        if p:
            return p
    other = "vector" if engine == "matrix" else "matrix"
    for eng in (engine, other):
        p = profile.peak_flops(eng, dtype)
        if p:
            if eng == "matrix" and engine == "vector":
                warn.add(f"{profile.id} has no {engine}-engine {dtype} figure; that work runs at its "
                         f"{eng}-engine {dtype} peak ({p / 1e12:g} TFLOP/s)")
            return p
    for alt in FALLBACK.get(dtype, ()):
        for eng in (engine, other):
            p = profile.peak_flops(eng, alt)
            if p:
                warn.add(f"{profile.id} has no {dtype} throughput figure; {dtype} work runs at its "
                         f"{alt} {eng}-engine peak ({p / 1e12:g} TFLOP/s)")
                return p
    peaks = [(v, k, e) for e, tbl in (("matrix", profile.matrix_tflops), ("vector", profile.vector_tflops))
             for k, v in tbl.items() if v]
    if not peaks:
        raise HardwareError(f"hardware '{profile.id}' has no throughput figure at all; cannot "
                            f"predict compute time (calibrate the machine, or add a sourced "
                            f"matrix_tflops/vector_tflops figure to a copy of its profile)")
    v, k, e = max(peaks)
    warn.add(f"{profile.id} has no figure for {dtype} or its fallbacks; using its {k} {e} peak "
             f"({v:g} TFLOP/s)")
    return v * 1e12


def _node_bytes(n: NodeCost, precision: str | None) -> float:
    if precision is None:
        return float(n.cost.bytes_moved)
    bits = PRECISION_BITS[precision]
    return float(sum(b * bits / DTYPE_BITS[d] if d in FLOAT_DTYPES else b for d, b in n.bytes_by_dtype))


def _spec_bytes(spec, precision: str | None) -> int:
    if spec is None:
        return 0
    nb = spec.nbytes()
    if precision is not None and spec.dtype in FLOAT_DTYPES:
        return nb * PRECISION_BITS[precision] // DTYPE_BITS[spec.dtype]
    return nb


def _launches(n: NodeCost) -> bool:
    return n.status != FOLDED and bool(n.cost.flops or n.cost.bytes_moved)


def _fusion_nodes(nodes: list[NodeCost], precision: str | None,
                  memo: dict | None = None) -> list[fusion.FusionNode]:
    # the op class and byte tuples of a node, once per (op, specs, has-MACs) (repeated blocks;
    # ``memo``: a caller's dict kept across calls: a search's candidates repeat the same nodes)
    memo = {} if memo is None else memo
    out = []
    for n in nodes:
        key = (n.op, n.domain, n.in_specs, n.out_specs, bool(n.cost.mac_flops), precision)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (node_op_class(n),
                               tuple(_spec_bytes(s, precision) for s in n.in_specs),
                               tuple(_spec_bytes(s, precision) for s in n.out_specs))
        out.append(fusion.FusionNode(
            op=n.op, domain=n.domain, op_class=hit[0], level=n.level,
            inputs=n.in_names, outputs=n.out_names, input_bytes=hit[1], output_bytes=hit[2],
            launches=_launches(n), constant_inputs=frozenset(n.constant_inputs), name=n.name))
    return out


def _gemm_view(n: NodeCost) -> tuple[float, float, float, float, bool]:
    """(m, n, k, batch, batched) of a matrix node's work, from its specs and mac count."""
    if not n.cost.mac_flops:
        return 0.0, 0.0, 0.0, 0.0, False
    return _gemm_view_of(n.op, n.in_specs, n.out_specs, n.cost.mac_flops)


@functools.lru_cache(maxsize=4096)
def _gemm_view_of(op: str, in_specs, out_specs, mac_flops: int):
    """``_gemm_view`` of hashable parts (repeated blocks share them: computed once)."""
    ins = [s for s in in_specs if s is not None]
    out = next((s for s in out_specs if s is not None), None)
    try:
        if op in ("MatMul", "dot_general") and len(ins) >= 2 and ins[0].rank and ins[1].rank:
            m, nn, k, b, batched = eff.gemm_view(ins[0].dims(), ins[1].dims())
            return float(m), float(nn), float(k), float(b), batched
        if out is not None and out.rank and out.rank >= 2:
            d = out.dims()
            if op.startswith("Conv") or op.startswith("conv"):
                m = float(d[0] * int(np.prod(d[2:])))   # NCHW: rows = N x spatial
                nn = float(d[1])
            else:
                m = float(int(np.prod(d[:-1])))
                nn = float(d[-1])
            k = mac_flops / (2.0 * m * nn) if m and nn else 0.0
            return m, nn, k, 1.0, False
    except Exception:  # noqa: BLE001  (an unresolved dim: no view, the padded-work term is off)
        pass
    return 0.0, 0.0, 0.0, 0.0, False


def _shape(spec) -> tuple | None:
    if spec is None or spec.shape is None:
        return None
    return tuple(d if type(d) is int else None for d in spec.shape)


def node_op_class(n: NodeCost) -> str:
    batched = False
    if n.cost.mac_flops and n.op in ("MatMul", "dot_general"):
        batched = _gemm_view(n)[4]
    x = _shape(n.in_specs[0]) if n.in_specs else None
    w = _shape(n.in_specs[1]) if len(n.in_specs) > 1 else None
    return eff.op_class_of(n.domain, n.op, batched=batched, conv_input=x, conv_weight=w)


def _kernel_class(anchor_class: str, kernel_op: str) -> str:
    """The class of a kernel the runtime recorded as ``kernel_op`` (e.g. LayerNormalization for a
    decomposed norm, SkipLayerNormalization for Add + norm) whose heaviest original node is of
    ``anchor_class``: the recorded op's class, except where the anchor's is a refinement of it
    (``op_classes.REFINES``: bgemm, conv variants) or the op is unknown. (A fallback is not a
    refinement: a decomposed norm whose heaviest node is a ReduceMean runs the norm kernel.)"""
    if not kernel_op:
        return anchor_class
    k = eff.op_class_of("", kernel_op)
    if k == "other" or k == anchor_class or eff.REFINES.get(anchor_class) == k \
            or {k, anchor_class} <= {"gemm", "bgemm"}:
        return anchor_class
    return k


def _calibrated_for(profile, runtime_name: str) -> bool:
    cal = profile.calibration
    return bool(cal and cal.get("tables") and cal.get("runtime") == runtime_name)


def lower(nodes: list[NodeCost], profiles: list, precision: str | None, runtime: runtimes.Runtime,
          graph_outputs: frozenset[str] = frozenset(), fused: fusion.FusionRecord | None = None,
          memo: dict | None = None) -> Lowered:
    """``fused``: the runtime's own record of its kernels (replaces the fusion policy's
    patterns; ``fusion.plan``).  ``memo``: a dict the caller keeps across calls with the same
    profiles (``CostModel``): what depends only on a profile, op or dtype is computed once."""
    if precision is not None and precision not in PRECISIONS:
        raise InputSpecError(f"unknown precision '{precision}'; choose from {', '.join(PRECISIONS)}")
    last = memo.get("last") if memo is not None else None
    if last is not None and last[0] is nodes and last[1] == precision:
        fnodes, node_bytes = last[2], last[3]   # the same candidate under another runtime
    else:
        fnodes = _fusion_nodes(nodes, precision, None if memo is None else memo.setdefault("fusion", {}))
        node_bytes = [_node_bytes(n, precision) for n in nodes]
        if memo is not None:
            memo["last"] = (nodes, precision, fnodes, node_bytes)
    plan = fusion.plan(fnodes, runtime.fusion, graph_outputs, fused)
    K = plan.kernels
    # per kernel as lists (numpy item writes cost more); wbytes: weight bytes/launch (cpu_cold)
    mac_l, vec_l, trans_l, bytes_l, wbytes_l, runs_l, cls_l, view_l = ([] for _ in range(8))
    anchor_dtype, names = [], []
    weight = np.zeros(len(nodes))
    saved_bytes, kernel_ops, code = plan.saved_bytes, plan.kernel_ops, eff.CLASS_CODE
    for k, members in enumerate(plan.members):
        if len(members) == 1:  # (the common kernel: the general form below, one member)
            i = anchor = members[0]
            a, c = nodes[i], nodes[i].cost
            r = max(1, getattr(a, "runs", 1))
            mac_l.append(c.mac_flops / r)
            vec_l.append(c.vector_flops / r)
            trans_l.append(c.transcendentals / r)
            bytes_l.append(max(0.0, node_bytes[i] - saved_bytes[k]) / r)
            wbytes_l.append(c.weight_bytes * node_bytes[i] / max(c.bytes_moved, 1) / r)
            weight[i] = 1.0
        else:
            ms = [nodes[i] for i in members]
            anchor = max(members, key=lambda i: (nodes[i].cost.mac_flops, nodes[i].cost.flops,
                                                 node_bytes[i]))
            a = nodes[anchor]
            r = max(1, max(getattr(m, "runs", 1) for m in ms))
            mac_l.append(sum(m.cost.mac_flops for m in ms) / r)
            vec_l.append(sum(m.cost.vector_flops for m in ms) / r)
            trans_l.append(sum(m.cost.transcendentals for m in ms) / r)
            bytes_l.append(max(0.0, sum(node_bytes[i] for i in members) - saved_bytes[k]) / r)
            wbytes_l.append(sum(nodes[i].cost.weight_bytes * node_bytes[i]
                                / max(nodes[i].cost.bytes_moved, 1) for i in members) / r)
            tot = sum(nodes[i].cost.flops + node_bytes[i] for i in members) or 1.0
            for i in members:
                weight[i] = (nodes[i].cost.flops + node_bytes[i]) / tot
        runs_l.append(r)
        cls_l.append(code[_kernel_class(fnodes[anchor].op_class,
                                        kernel_ops[k] if kernel_ops else "")])
        view_l.append(_gemm_view(a)[:4])
        anchor_dtype.append(_compute_dtype(a, precision))
        names.append(nodes[members[0]].name)
    mac = np.array(mac_l, dtype=np.float64)
    vec = np.array(vec_l, dtype=np.float64)
    trans = np.array(trans_l, dtype=np.float64)
    nbytes = np.array(bytes_l, dtype=np.float64)
    wbytes = np.array(wbytes_l, dtype=np.float64)
    runs = np.array(runs_l, dtype=np.float64)
    cls = np.array(cls_l, dtype=np.int32)
    view = np.array(view_l, dtype=np.float64).reshape(K, 4).T.copy()
    P = len(profiles)
    mpeak = np.ones((P, K))
    vpeak = np.ones((P, K))
    bw = np.ones(P)
    units = np.zeros(P)
    l2 = np.zeros(P)
    fixed = np.zeros((P, K))
    run_overhead = np.zeros(P)
    consts = {p: np.zeros((P, len(eff.OP_CLASSES))) for p in eff.CLASS_PARAMS}
    consts["trans_weight"] = np.ones(P)
    warnings, provs, details, notes = [], [], [], []
    feats = {"op_class": cls, "mac_flops": mac, "vec_flops": vec, "trans_flops": trans,
             "bytes": nbytes, "m": view[0], "n": view[1], "k": view[2], "batch": view[3]}
    class_names = [eff.OP_CLASSES[c] for c in cls]
    extra_cls = [(k, eff.CLASS_CODE[eff.op_class_of("", op)])
                 for k, ops in enumerate(plan.extra_ops) for op in ops]
    for p, prof in enumerate(profiles):
        warn: set[str] = set()
        note: list[str] = []
        own = profile_memo(memo, prof, runtime.name)
        if "complete" not in own:
            done: list[str] = []
            own["complete"] = (complete_profile(prof, done), tuple(done))
        prof, done = own["complete"]
        note.extend(done)
        cache = own.setdefault("peaks", {})   # (engine, dtype) -> (FLOP/s, warnings it gave)

        def peak(engine, d):
            hit = cache.get((engine, d))
            if hit is None:
                said: set[str] = set()
                hit = cache[(engine, d)] = (_peak(prof, engine, d, said), tuple(said))
            warn.update(hit[1])
            return hit[0]

        mpeak[p] = [peak("matrix", d) if m else 1.0 for d, m in zip(anchor_dtype, mac)]
        vpeak[p] = [peak("vector", d) if v or t else 1.0 for d, v, t in zip(anchor_dtype, vec, trans)]
        if "terms" not in own:
            own["terms"] = profile_terms(prof)
        bw[p], units[p], l2[p], arrays, prov, detail, launch, said = own["terms"]
        note.extend(said)
        for name in eff.CLASS_PARAMS:
            consts[name][p] = arrays[name]
        consts["trans_weight"][p] = float(arrays["trans_weight"])
        floors = np.asarray(arrays["floor_s"])[cls]
        calibrated = _calibrated_for(prof, runtime.name)

        def fixed_of(floor_arr, names):
            if calibrated:
                # floors were fitted net of the measured per-node dispatch (calibrate)
                return floor_arr + (launch if runtime.host_dispatch else 0.0)
            f = np.maximum(floor_arr, launch)
            if runtime.host_dispatch:
                f = f + host_dispatch(prof, runtime, names, launch, note)
            return f

        fixed[p] = fixed_of(floors, class_names)
        if calibrated:
            run_overhead[p] = float(prof.calibration.get("run_overhead_us", 0.0)) * 1e-6
            if cpu_cold.applies(prof.calibration, wbytes):  # weights streamed from DRAM each run
                hw_p = {"matrix_peak": mpeak[p], "vector_peak": vpeak[p], "mem_bw": bw[p],
                        "units": units[p], "l2_bytes": l2[p]}
                fixed[p] += cpu_cold.cold_weight_s(prof.calibration, feats, wbytes, hw_p,
                                                   {n: consts[n][p] for n in consts})
                note.append(f"weights exceed {prof.id}'s last-level cache: read from DRAM each run")
        if extra_cls:
            # launches the runtime inserted with no original node: each its class's fixed cost
            codes = np.asarray([c for _, c in extra_cls], np.int32)
            add = fixed_of(np.asarray(arrays["floor_s"])[codes], [eff.OP_CLASSES[c] for c in codes])
            np.add.at(fixed[p], np.asarray([k for k, _ in extra_cls], np.int64), add)
        if runtime.fusion == "onnxruntime" or fused is not None:
            note.append(f"kernels: {plan.source}")
        warnings.append(tuple(sorted(warn)))
        provs.append(prov)
        details.append(detail)
        notes.append(tuple(note))
    # without an override, label the prediction by the dtype that carries most of the work
    w: dict[str, float] = {}
    for d, f, b in zip(anchor_dtype, mac + vec + trans, nbytes):
        w[d] = w.get(d, 0.0) + f + b
    label = precision or (max(w, key=w.get) if w else "fp32")
    return Lowered(runtime.name, plan, tuple(names), feats, runs, weight, mpeak, vpeak, bw, units, l2,
                   consts, fixed, run_overhead, label, tuple(warnings), tuple(provs), tuple(details), tuple(notes))


