"""XLA CPU's split of a loop fusion over the cores: the ``xla`` runtime's kernels on a profile
calibrated with it (``calibration.threads``).

XLA's CPU compiler runs its parallel task assigner after fusion (``ParallelTaskAssigner``,
``xla/service/cpu/parallel_task_assignment.cc`` of openxla/xla; its ``DefaultCostModel`` and
``ShapePartitionAssigner``; the facts in ``RULE``). ``threads`` is the cores XLA may schedule on
(its ``max_parallelism``: the module's intra-op threads, else ``NumSchedulableCPUs``). An
elementwise op or a loop fusion (also a gather, transpose, concatenate, reduce-window, ...; never
a dot, a convolution run by a library, nor a custom YNNPACK fusion) gets a task count from its
``HloCostAnalysis`` figures, ``flops``, ``transcendentals`` and ``bytes`` accessed:

- I/O-bound (``flops / bytes <= 1``): ``min(threads, ceil(sqrt(threads)), bytes // 256 KiB)``;
- otherwise: ``min(threads, (flops + 2 transcendentals + 10 bytes) // 100,000)``;

at least 1, and no more than the elements of its result's outer dims (not applied here: a
kernel that large with a result of fewer elements than threads is a reduction, which XLA runs
in YNNPACK, 4,096 elements or more). A kernel of ``p > 1``
tasks is outlined with ``outer_dimension_partitions`` and its ``p`` parts run on XLA's thread
pool: the optimized HLO of the calibration's programs (``bench/xla_partitions.py``) has 31 of
148 rows so on a 2-core VM (``p = 2``: adds, activations, SGD updates of 65,536 elements or
more, the layer norms' and the softmax's [rows, cols] output fusions, gathers, transposes, two
pool gradients), none of them a YNNPACK reduction; the rule below splits the same kernels of
those rows but the softmax's exp (XLA runs it inside a YNNPACK fusion).

opcost's figures for the rule: the bytes a kernel accesses as XLA's cost analysis counts a
fusion's (``accessed_bytes``: each tensor it reads from outside and each result it writes, once,
views looked through; per launch) and its vector FLOPs and transcendentals, except that XLA's HLO expands some ops into elementwise
arithmetic before its cost analysis counts them (``EXPANDED_FLOPS``: ``erfc``, a GELU's
``jax.nn.gelu(approximate=False)``; an ``erf`` stays one transcendental). Eligible kernels
(``eligible``): every member fuses in a loop fusion (``fusion_xla.fusible``; not a YNNPACK
reduction, not a pooling, which XLA runs in YNNPACK) or is a max pool's gradient (its expansion's
reduce-window and scatter are loop fusions).

Time of a kernel split into ``p`` parts: its fixed cost once, and the work term
``max(compute(F / p), memory(B x m))`` (``partition_s``: what that changes against the whole
kernel on one core). The cores' FLOPs are independent: each runs ``1 / p`` of them. Their memory
is not: the profile's ``mem_bw`` is the machine's (all cores') rate, a kernel on one core streams
at a share ``s`` of it (``calibration.core_bw_share``, ``0 < s <= 1``), a kernel split over ``p``
cores at ``min(p s, 1)`` of it. An unsplit kernel's memory term is
``B / (mem_bw e_bw ...)`` with its class's fitted ``e_bw`` (which holds ``s``: ``e_bw = s e'``,
``e'`` the kernel's efficiency against one core's share), so a split one's is the same term at
``B x m`` bytes, with

    m = memory_share(p, s) = s / min(p s, 1)      (bytes over bytes; 1 where p = 1)

e.g. ``p = 2``, ``s = 0.7``: ``m = 0.7`` (the kernel streams at the whole machine's rate,
``1 / 0.7`` times one core's); ``s <= 1 / p``: ``m = 1 / p`` (each core at its own share: ``B / p``
at one core's rate); ``s = 1``: ``m = 1`` (one core already streams at the machine's rate). A
profile without ``core_bw_share`` (unknown: null) takes ``m = 1 / p`` and says so in its note. The
calibration's fits take each row's kernels so too (``measure.xla.fit``: ``F / p``, ``B x m``) and
fit ``s`` (``measure.xla.fit.CORE_BW_SHARES``).
"""

from __future__ import annotations

import math

import numpy as np

from analyzer.counting import kernel_words

# XLA's DefaultCostModel (xla/service/cpu/parallel_task_assignment.cc, openxla/xla, read at commit
# fb55df1a9d69; the newest stored), its constants and what its comments say of them
RULE = {
    "source": "openxla/xla xla/service/cpu/parallel_task_assignment.cc (DefaultCostModel, "
              "ParallelTaskAssignment::GetTargetParallelTaskCount), commit fb55df1a9d69",
    "io_bound_flops_per_byte": 1.0,       # flops / bytes accessed <= 1: I/O bound
    "io_min_bytes_per_task": 256 * 1024,  # "256KB L2 Cache size"
    "min_cost_per_task": 100_000,         # "Minimum per-thread cost is 100us of work on a 2GHz core"
    "flop_cost": 1.0, "transcendental_cost": 2.0, "byte_cost": 10.0,
}
# HLO elementwise ops per element (HloCostAnalysis: 1 flop each) XLA expands an op into, which
# opcost counts as one transcendental: erfc's polynomial, counted in the optimized HLO of
# jax.nn.gelu(x, approximate=False) over 16,384 fp32 (64 ops an element besides its one exp, 4
# of them the GELU's own); JAX primitive names
EXPANDED_FLOPS = {"erfc": 60}
# kernels of these op classes are XLA loop fusions besides the fusible ones (a max pool's gradient)
_LOOP_CLASSES = frozenset({"pool_grad"})
# fusible classes XLA runs as YNNPACK fusions (a custom fusion: never partitioned)
_YNN_CLASSES = frozenset({"pooling", "pool1d"})


def tasks(nbytes: float, flops: float, trans: float, threads: int) -> int:
    """XLA's task count for a kernel of ``nbytes`` accessed, ``flops`` and ``trans``
    (transcendentals) on ``threads`` cores (the module docstring's rule)."""
    r = RULE
    if threads <= 1 or nbytes <= 0:
        return 1
    if flops / nbytes <= r["io_bound_flops_per_byte"]:
        cap, cost, per = min(threads, math.ceil(math.sqrt(threads))), nbytes, r["io_min_bytes_per_task"]
    else:
        cap, per = threads, r["min_cost_per_task"]
        cost = r["flop_cost"] * flops + r["transcendental_cost"] * trans + r["byte_cost"] * nbytes
    return int(max(1, min(cap, cost // per)))


def eligible(fnodes, members) -> bool:
    """Whether a kernel of ``members`` (node indices into ``fnodes``) is an XLA loop fusion."""
    from analyzer.prediction import fusion_xla, xla_cpu_fusion

    def loop(nd) -> bool:
        if nd.op_class in _LOOP_CLASSES:
            return True
        return (fusion_xla.fusible(nd) and nd.op_class not in _YNN_CLASSES
                and not xla_cpu_fusion.ynn_reduction(nd))
    ms = [fnodes[i] for i in members if fnodes[i].launches]
    return bool(ms) and all(loop(nd) for nd in ms)


def kernel_parts(nodes, fnodes, plan, feats, runs, threads: int) -> np.ndarray:
    """[K] the parts XLA splits each kernel of ``plan`` into on ``threads`` cores (1: not
    split); ``nodes``/``fnodes``: the graph's ``NodeCost`` and ``FusionNode`` lists;
    ``feats``/``runs``: the lowering's per-launch features and launches."""
    from analyzer.prediction import fusion

    out = np.ones(plan.kernels)
    if threads <= 1:
        return out
    producer, consumers = fusion.tensor_index(fnodes)
    for k, members in enumerate(plan.members):
        if not eligible(fnodes, members):
            continue
        r = max(float(runs[k]), 1.0)
        expanded = sum(nodes[i].cost.transcendentals for i in members if nodes[i].op in EXPANDED_FLOPS) / r
        extra = sum(EXPANDED_FLOPS[nodes[i].op] * nodes[i].cost.transcendentals for i in members
                    if nodes[i].op in EXPANDED_FLOPS) / r
        out[k] = tasks(accessed_bytes(fnodes, members, producer, consumers), float(feats["vec_flops"][k]) + extra,
                       float(feats["trans_flops"][k]) - expanded, threads)
    return out


def accessed_bytes(fnodes, members, producer, consumers) -> float:
    """The bytes a kernel of ``members`` accesses as XLA's cost analysis counts a fusion's: each
    tensor it reads from outside it once, each result a node outside it reads (or nothing
    reads) once, looking through nodes that launch nothing (views); a max pool's gradient, its
    expansion's reduce-window (``xla_cpu_fusion`` rule 9): the operand and ``R`` int32 iotas of
    its shape read, the window's value and its ``R`` indices written."""
    from analyzer.prediction import xla_cpu_fusion as xc

    inside = set(members)
    seen: set[tuple[str, str]] = set()
    total = 0.0
    for i in members:
        nd = fnodes[i]
        rank = kernel_words.value(nd.kernel, "rank")
        if nd.op == "select_and_scatter_add" and rank is not None and len(nd.input_bytes) >= 2:
            r = int(rank)
            total += (1 + r) * (nd.input_bytes[0] + nd.input_bytes[1])
            continue
        for t, b in zip(nd.inputs, nd.input_bytes):
            if t and (nd.level, t) not in seen:
                src = xc._source(nd.level, t, fnodes, producer, set())
                if src is None or src < 0 or src not in inside:
                    seen.add((nd.level, t))
                    total += b
        readers = xc._readers(i, fnodes, consumers)
        if not readers or any(u not in inside for u in readers):
            total += sum(nd.output_bytes)
    return total


def memory_share(parts, share: float | None):
    """The bytes factor ``m`` of a kernel split into ``parts`` parts (the module docstring):
    ``share / min(parts x share, 1)`` with ``share`` the profile's ``core_bw_share``; ``1 / parts``
    where it is None (unknown); 1 where ``parts`` is 1. ``parts``: a number or an array."""
    p = np.maximum(np.asarray(parts, np.float64), 1.0)
    if share is None:
        return 1.0 / p
    return np.where(p > 1, share / np.minimum(p * share, 1.0), 1.0)


def core_bw_share(calibration) -> float | None:
    """A calibration's ``core_bw_share`` (None where it has none)."""
    s = (calibration or {}).get("core_bw_share")
    return None if s is None else float(s)


def partition_s(parts: np.ndarray, feats: dict, hw_p: dict, consts_p: dict,
                share: float | None = None) -> np.ndarray:
    """[K] seconds a launch changes by running its ``parts`` parts at once (<= 0; 0 where 1):
    the work term of FLOPs / ``parts`` and bytes x ``memory_share(parts, share)`` less that of
    ``feats`` (``kernel_time``'s ``max(compute, memory)``; ``hw_p``/``consts_p``: one profile's
    figures and constants; ``share``: its ``core_bw_share``)."""
    from analyzer.prediction.efficiency import kernel_time as eff

    split = parts > 1
    if not split.any():
        return np.zeros_like(parts)
    m = memory_share(parts, share)
    scaled = {k: (v / parts if k in ("mac_flops", "vec_flops", "trans_flops") else v * m if k == "bytes" else v)
              for k, v in feats.items()}
    whole = eff.kernel_time(np, feats, hw_p, consts_p)
    part = eff.kernel_time(np, scaled, hw_p, consts_p)
    delta = (np.maximum(part["compute_s"], part["memory_s"]) - np.maximum(whole["compute_s"], whole["memory_s"]))
    return np.where(split, delta, 0.0)


def note(parts: np.ndarray, threads: int, prof_id: str, n_extra: int = 0, share: float | None = None) -> str:
    """The prediction's note of the split kernels (``n_extra``: and inserted launches; ``share``:
    the profile's ``core_bw_share``, None: unknown)."""
    n = int((parts > 1).sum())
    more = f" and {n_extra} inserted launch{'es' if n_extra != 1 else ''}" if n_extra else ""
    mem = (f"its bytes at min(parts x {share:.3g}, 1) of the machine's bandwidth, one core's share {share:.3g}"
           if share is not None else
           "its bytes at parts x one core's rate: the profile has no core_bw_share (unknown)")
    return (f"{n} kernel{'s' if n != 1 else ''}{more} split over {prof_id}'s {threads} calibrated threads "
            f"(XLA's parallel task assignment: a loop fusion of 256 KiB or more; its FLOPs over the parts, {mem})")


def add_fixed(split, p: int, fixed: np.ndarray, prof, nodes, fnodes, plan, feats, runs, hw_p: dict,
              consts_p: dict, notes: list[str]):
    """Add what XLA's split changes of each launch to ``fixed[p]`` (profile ``p``'s per-launch
    fixed seconds, [P, K], in place) where ``plan`` is the ``xla_cpu`` plan and ``prof`` a
    calibration of it with ``threads`` above 1 (``partition_s``, and the inserted launches'); its
    note to ``notes``. Returns ``split`` ((parts, seconds) arrays [P, K], created on the first
    profile with a split kernel: ``Lowered.split_parts``, ``Lowered.split``) with row ``p`` set."""
    from analyzer.prediction import xla_cpu_fusion

    threads = int((prof.calibration or {}).get("threads") or 1)
    if plan.policy != xla_cpu_fusion.POLICY or threads <= 1:
        return split
    share = core_bw_share(prof.calibration)
    parts = kernel_parts(nodes, fnodes, plan, feats, runs, threads)
    delta = partition_s(parts, feats, hw_p, consts_p, share)
    n_extra = _extra_split(delta, plan, threads, hw_p, consts_p, share)
    if not ((parts > 1).any() or n_extra):
        return split
    fixed[p] += delta
    notes.append(note(parts, threads, prof.id, n_extra, share))
    if split is None:
        split = (np.ones_like(fixed), np.zeros_like(fixed))
    split[0][p], split[1][p] = parts, delta
    return split


def fields(split) -> dict:
    """``Lowered``'s split fields of ``add_fixed``'s arrays (none: left at None)."""
    return {} if split is None else {"split_parts": split[0], "split": split[1]}


def _extra_split(fixed_p: np.ndarray, plan, threads: int, hw_p: dict, consts_p: dict,
                 share: float | None = None) -> int:
    """Add to ``fixed_p`` (in place) what XLA's split changes of the launches the plan inserted
    that move bytes (``FusionPlan.extra_bytes``: layout transposes, GEMV copies, loop slices:
    loop fusions that read and write their bytes, I/O-bound): the memory term of ``bytes x
    memory_share(p, share)`` less that of ``bytes``, on the kernel carrying each; returns how many
    are split."""
    from analyzer.prediction.efficiency import kernel_time as eff

    got = [(k, op, b) for k, (ops, bs) in enumerate(zip(plan.extra_ops, plan.extra_bytes or ()))
           for op, b in zip(ops, bs) if b > 0 and tasks(b, 0.0, 0.0, threads) > 1]
    if not got:
        return 0
    codes = np.asarray([eff.CLASS_CODE[eff.op_class_of("", op)] for _, op, _ in got], np.int32)
    moved = np.asarray([b for _, _, b in got], np.float64)
    p = np.asarray([tasks(b, 0.0, 0.0, threads) for b in moved], np.float64)
    hw = {**hw_p, "matrix_peak": 1.0, "vector_peak": 1.0}

    def mem(nbytes):
        return eff.kernel_time(np, {"op_class": codes, "mac_flops": np.zeros_like(nbytes), "bytes": nbytes},
                               hw, consts_p)["memory_s"]
    np.add.at(fixed_p, np.asarray([k for k, _, _ in got], np.int64), mem(moved * memory_share(p, share)) - mem(moved))
    return len(got)
