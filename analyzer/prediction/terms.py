"""The per-kernel records a ``Prediction`` keeps and gives (``predict.py``): ``KernelTable`` (one
profile's per-kernel arrays), ``KernelTerms`` (one kernel's arithmetic, ``Prediction.explain``)
and ``HostStep`` (a host-only op's host time, ``Prediction.host_step``).  Plain values."""

from __future__ import annotations

from typing import Any, NamedTuple


class HostStep(NamedTuple):
    """One host-only op on one profile (``Prediction.host_step``): an op the runtime runs on the
    host without a kernel (an eager PyTorch view), for people and renderers (``--explain``).
    ``host_s = runs x ratio x dispatch_s``; the row's time is ``exposed_s``: on the eager stream
    the host time the device waited for (``gap``), else ``host_s``."""

    runs: float
    host_s: float          # all runs
    ratio: float           # runtimes.HOST_ONLY_RATIO
    dispatch_s: float      # per run: the dispatch figure of a small elementwise op
    stream: bool
    exposed_s: float
    source: str


class KernelTerms(NamedTuple):
    """One node's kernel on one profile, term by term (``Prediction.explain``): what the
    kernel-time model was given and what each term came to.  Counts and bytes are per launch;
    the times are for all ``runs`` launches of the kernel (the node's row is ``member_share`` of
    them).  Plain values, for people and renderers (``--explain``)."""

    kernel: str
    members: int               # nodes fused into this kernel
    member_share: float        # this node's share of the kernel's time
    op_class: str              # efficiency class (hardware_db/efficiency)
    runs: float                # launches (a loop body's kernel launches once per trip)
    mac_flops: float
    vector_flops: float
    transcendental_flops: float
    bytes: float               # moved per launch, fused intermediates excluded
    intensity: float           # FLOPs per byte (inf: moves no bytes)
    engine: str                # "matrix" or "vector": the peak the ridge point uses
    matrix_peak: float         # FLOP/s at the kernel's dtype
    vector_peak: float
    mem_bw: float              # B/s
    ridge: float               # FLOP/byte where compute and memory time meet: peak / mem_bw
    effective_ridge: float     # the same with the efficiencies: peak * e_compute / (mem_bw * e_bw)
    e_compute: float           # efficiency constants of op_class on this profile
    e_bw: float
    b_half_bytes: float
    floor_s: float
    trans_weight: float
    fixed_s: float             # per launch: max(floor, launch figure) + host dispatch
    compute_s: float           # all launches
    memory_s: float
    overhead_s: float
    time_s: float
    bound: str
    attained_flops: float      # FLOP/s the kernel reaches: its FLOPs / its time
    provenance: str
    provenance_detail: str
    # every factor of the terms (``efficiency.kernel_time``'s detail), per launch unless said:
    # compute_s = runs * (matrix_s + vector_s); matrix_s = mac * pad * algo * wave * narrow * clock /
    # (matrix_peak * e_compute); memory_s = runs * (dram_s + sm_s) (their max where sm_overlap); dram_s = (dram_bytes +
    # b_half) / (mem_bw * e_bw * cache_gain); sm_s = bytes / sm_rate; time_s = runs * (fixed_s +
    # max(compute, memory)) (overlap; the sum where the prediction adds them)
    pad: float = 1.0           # padded tile work / MAC FLOPs (1: no tiles)
    wave: float = 1.0          # waves x units / CTAs (1: fills the device; see efficiency.tiles.wave_split)
    split_k: float = 1.0       # K slices the library splits the product into
    narrow: float = 1.0        # narrow-tile factor (a CPU's few output columns)
    algo: float = 1.0          # the algorithm's share of the direct multiplies (Winograd/FFT: < 1)
    clock: float = 1.0         # a capped card's boost window: matrix_s over its value at the sustained clock
    # the serial k loop (``efficiency.tiles.kloop_bound``), per launch: matrix_s = max(tiles_s, kloop_s)
    # (their sum where kloop_sum); kloop_s = kloop_k x kloop_step_s (kloop_cycles / clock); 0: off
    tiles_s: float = 0.0       # the tiles' matrix time (the line above matrix_s's formula)
    kloop_s: float = 0.0
    kloop_k: float = 0.0       # the GEMM depth k the loop walks
    kloop_step_s: float = 0.0  # one k element: kloop_cycles / clock
    kloop_sum: bool = False
    matrix_s: float = 0.0      # per launch
    vector_s: float = 0.0
    dram_bytes: float = 0.0    # bytes charged to DRAM: bytes (+ split-K partials) x (1 - cache_share)
    cache_share: float = 0.0   # share of the bytes served by the L2 (skip DRAM)
    # PyTorch's long-row CUDA softmax (``softmax_passes``): bytes re-read per launch beyond the
    # count, served by the L2 (rows in flight fit it: only the per-SM term) or by DRAM
    reread_l2_bytes: float = 0.0
    reread_dram_bytes: float = 0.0
    reread_row_bytes: float = 0.0   # one row's bytes; L2-served where <= reread_l2_row (L2 / (SMs x blocks))
    reread_l2_row: float = 0.0
    # PyTorch's small-index gather (``small_index``): the serial steps past the first, per launch
    index_loop_s: float = 0.0
    # PyTorch's gather on Hopper (``gather_latency``): the id load before the row load; memory_s =
    # runs x (gather_rate x inner + index_loop_s + gather_dep_s), inner the DRAM / per-SM terms
    gather_dep_s: float = 0.0
    gather_rate: float = 1.0
    # PyTorch's row kernels (``row_kernels``): waves of rows x one row's serial time, per launch,
    # in the memory time (added, or its max with the streaming terms: ``row_overlap``)
    row_s: float = 0.0         # = row_waves x (row_c0_s + row_steps x row_step_s)
    row_waves: float = 0.0     # ceil(rows / (SMs x rows resident per SM))
    row_steps: float = 0.0     # one row's serial steps (a thread's or lane's walk)
    row_c0_s: float = 0.0      # a row's fixed part, c0 cycles / clock
    row_step_s: float = 0.0    # one step, c_step cycles / clock
    row_overlap: float = 0.0   # 1: memory_s = max(streaming terms, row_s); 0: their sum
    cache_gain: float = 1.0    # the DRAM stream's speed-up for a working set that fits the L2
    dram_s: float = 0.0
    sm_s: float = 0.0          # the per-SM issue term
    sm_rate: float = 0.0       # B/s the SMs issue (units x bytes per SM-cycle x clock; 0: off)
    sm_overlap: bool = False   # the class takes max(DRAM, per-SM) instead of their sum
    units: float = 0.0         # SMs (0: unknown)
    l2_bytes: float = 0.0
    warm_start: float = 0.0    # share of floor_s a warm L2 start saves: l2_floor x cache step (0: none)
    l2_floor: float = 0.0      # the class's l2_floor (efficiency.warm_share)
    cold_start_s: float = 0.0  # seconds a cold start adds to fixed_s: cold_start_s x (1 - cache step)
    effective_roof: float = 0.0  # FLOP/s the terms held the kernel to: FLOPs / max(compute, memory)
    # the eager stream (``runtimes.stream_times``; all launches): host_s of time_s is the host's
    # dispatch, which overlaps earlier kernels; the row's kernel takes its exposed time
    # stream_s = device_s + gap_s, device_s = time_s - host_s, gap_s the host time the device
    # waited for before it (dev_end_i - dev_end_{i-1})
    stream: bool = False
    host_s: float = 0.0
    gap_s: float = 0.0
    stream_s: float = 0.0
    # a CPU loop body's weights read from the cache after the first trip (``cpu.loop_resident``):
    # bytes per launch, and seconds per launch (<= 0) already inside fixed_s
    resident_bytes: float = 0.0
    resident_s: float = 0.0
    # XLA's split of a loop fusion over a calibration's threads (``cpu.xla_partition``): its parts
    # (1: not split) and the seconds per launch (<= 0) it adds, already inside fixed_s
    split_parts: float = 1.0
    split_s: float = 0.0
    # XLA's YNNPACK dot (``cpu.ynn_dot``): seconds per launch, already inside fixed_s: dot_call_us
    # outside loops; in a loop body dot_trip_us + dot_loop_us x the loop's executions / launches
    ynn_dot_s: float = 0.0
    # a loop body's vector kernel at the calibrated share of its work (``cpu.loop_work``): seconds
    # per launch, (loop_work_scale - 1) x its work, already inside fixed_s
    loop_work_s: float = 0.0
    # a calibrated class's cost per output element (``efficiency.class_fixed_s``'s ``out_s``: XLA's
    # CPU depthwise convolution): seconds per launch, out_s x outputs, already inside fixed_s
    outputs: float = 0.0
    per_output_s: float = 0.0
    # an NPU runtime's activations kept on chip (``accelerators.qnn.onchip_bytes``; per launch):
    # activation bytes = bytes - weight_bytes; kept: onchip_bytes = min(activation bytes,
    # onchip_budget); dram_bytes = bytes - onchip_bytes (x the cache's share, 0 there);
    # dram_s = (dram_bytes + onchip_cost x onchip_bytes + b_half) / (mem_bw x e_bw x cache_gain)
    onchip: bool = False
    onchip_bytes: float = 0.0
    weight_bytes: float = 0.0
    onchip_budget: float = 0.0
    onchip_cost: float = 0.0
    # the ``qnn`` runtime's depthwise kernel (``accelerators.qnn.dw_output_rate``): its compute is
    # per output element whatever its window, compute_s = runs x dw_outputs / dw_rate (per launch
    # output elements; outputs/s at the kernel's precision); the peaks are set to give that time
    dw_outputs: float = 0.0
    dw_rate: float = 0.0
    # launches the runtime inserted into this kernel with no node of their own (``FusionPlan.extra_ops``:
    # an eager copy, a convolution's bias kernel, cuDNN's launches inside the call: ``cudnn:``), per
    # launch (op, bytes); each costs its class's fixed cost (cuDNN's: no dispatch) and its bytes at the
    # class's rate, already inside fixed_s; a launch with a serial loop (``bn_stats``: a training
    # BatchNorm's statistics kernel) carries its seconds third, (op, bytes, loop_s), and costs the
    # longer of its bytes' time and the loop
    inserted: tuple = ()
    # a kernel the runtime's placement moved off the accelerator (``accelerators.Placed``: the unit,
    # its rate, the switches and boundary bytes its segment pays here), or None: compute_s = runs x
    # work / rate (the peaks are set to rate / e_compute); switches x switch_s + moved_bytes / mem_bw
    # are in fixed_s over the launches
    placed: Any = None
    # where this kernel's class set comes from (the family file's provenance of ``op_class``: its
    # own fit, or the set it falls back to); "" where the profile's constants are not a family's
    class_provenance: str = ""


class KernelTable:
    """Per-kernel arrays of one profile, kept for ``Prediction.explain`` and ``roofline``
    (numpy arrays indexed by kernel; ``kernel_of``: node index -> kernel, -1 none).  Read-only
    by convention; not a dataclass, so that ``dataclasses.astuple`` of a Prediction keeps it
    whole (a copy is the same table)."""

    __slots__ = ("kernel_of", "names", "members", "weight", "op_class", "runs", "mac", "vec",
                 "trans", "nbytes", "matrix_peak", "vector_peak", "mem_bw", "consts", "fixed",
                 "compute", "memory", "overhead", "time", "bound", "feats", "units", "l2_bytes",
                 "class_consts", "overlap", "host", "gap", "host_nodes", "host_runs",
                 "host_only", "host_gap", "resident", "onchip", "split", "inserted", "ynn_dot", "loop_work", "per_output", "folded",
                 "merged", "apart", "dw_rate", "placed")

    def __init__(self, **values):
        # by keyword: twenty arrays of one length and type are too easy to pass in the wrong order
        if set(values) != set(self.__slots__):
            raise TypeError(f"KernelTable: missing {sorted(set(self.__slots__) - set(values))}, "
                            f"unknown {sorted(set(values) - set(self.__slots__))}")
        for name, v in values.items():
            object.__setattr__(self, name, v)

    kernel_of: Any
    names: tuple[str, ...]
    members: Any
    weight: Any
    op_class: tuple[str, ...]
    runs: Any
    mac: Any
    vec: Any
    trans: Any
    nbytes: Any
    matrix_peak: Any
    vector_peak: Any
    mem_bw: float
    consts: dict
    fixed: Any
    compute: Any
    memory: Any
    overhead: Any
    time: Any
    bound: Any
    feats: dict            # the lowering's per-kernel features (efficiency.kernel_time's input)
    units: float
    l2_bytes: float
    class_consts: dict     # this profile's per-class constants (efficiency.kernel_time's consts)
    overlap: bool
    host: Any              # [K] host dispatch of all launches inside ``time`` (stream runtimes; else None)
    gap: Any               # [K] exposed host gap before each kernel on the stream (else None)
    host_nodes: tuple[int, ...]   # node index of each host-only op (``Lowered.host_nodes``)
    host_runs: Any         # [H] its runs per model run (a loop body's: its trips)
    host_only: Any         # [H] host seconds of all runs of each host-only op
    host_gap: Any          # [H] its row's time: exposed on the stream, else host_only
    resident: Any          # (bytes [K], seconds [K]) per launch of ``cpu.loop_resident``, or None
    onchip: Any            # (kept [K], weight bytes [K], budget B, onchip_cost) per launch (``qnn``), or None
    split: Any             # (parts [K], seconds [K]) per launch of ``cpu.xla_partition``, or None
    inserted: tuple        # [K] per kernel: the (op, bytes) of each launch inserted into it (``KernelTerms.inserted``)
    ynn_dot: Any           # [K] seconds per launch of ``cpu.ynn_dot``, or None
    loop_work: Any         # [K] seconds per launch of ``cpu.loop_work``, or None
    per_output: Any        # ([K] output elements, [K] seconds per launch) of a class's ``out_s``, or None
    folded: dict           # node index -> the matrix product it is folded into (``FusionPlan.folded``)
    merged: dict           # node index -> the dots merged into one with it, itself included (``FusionPlan.merged``)
    apart: dict            # node index -> (producer node index, reason) kept apart at a reduction (``FusionPlan.apart``)
    dw_rate: Any           # ([K] output elements per launch, [K] outputs/s; 0: none) of ``qnn``'s depthwise kernels, or None
    placed: dict           # kernel -> ``accelerators.Placed``: the kernels a placement moved off the accelerator

    def detail(self, k: int) -> dict:
        """Every factor of kernel ``k``'s terms, per launch (``efficiency.kernel_time(detail=True)``)."""
        import numpy as np

        from analyzer.prediction.efficiency import kernel_time as eff

        f = {name: np.asarray(v)[k:k + 1] for name, v in self.feats.items()}
        hw = {"matrix_peak": float(self.matrix_peak[k]), "vector_peak": float(self.vector_peak[k]),
              "mem_bw": self.mem_bw, "units": self.units, "l2_bytes": self.l2_bytes,
              **({} if self.onchip is None else {"onchip_bytes": np.asarray(self.onchip[0])[k:k + 1],
                                                 "onchip_cost": self.onchip[3]})}
        out = eff.kernel_time(np, f, hw, self.class_consts, detail=True)
        return {name: float(np.asarray(v).reshape(-1)[0]) for name, v in out.items()}

    def __deepcopy__(self, memo):   # read-only arrays: a copy is the same table
        return self
