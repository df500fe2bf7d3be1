"""Lowering: per-node counts + hardware profiles -> the arrays the cost kernels eat.

For every node that launches a kernel (FLOPs or bytes > 0) and every profile:

- **engine and peak**: ``mac_flops`` run on the matrix engine (tensor cores, MXU,
  MAC array, AMX) when the profile lists a matrix peak for the node's compute dtype,
  else on the vector engine at that dtype.  ``vector_flops`` and ``transcendentals``
  run on the vector engine (transcendentals at the vector rate: no profile gives a
  sourced special-function rate yet).  A device that lacks the dtype altogether
  falls back along ``FALLBACK`` (e.g. fp32 on a TPU runs at the bf16 MXU rate, as
  XLA's default precision does; int8 on a device without int8 at fp16) and the
  prediction carries a warning saying so.  fp32 on GPUs runs on the CUDA cores
  unless ``precision="tf32"``.
- **precision**: ``precision`` overrides the dtype of every floating tensor: the
  compute dtype *and* the bytes (an fp32 export analysed as bf16 moves half the bytes).
- **bytes**: weights read + activations read + activations written (exact, per dtype).
- **overhead**: the profile's per-kernel launch/dispatch overhead, once per kernel;
  0 with a warning where the profile does not know it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzer.counting.engine import FOLDED, NodeCost
from analyzer.errors import HardwareError, Hint, InputSpecError
from analyzer.ir.graph import DTYPE_BITS, FLOAT_DTYPES

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


@dataclass(frozen=True)
class Lowered:
    """Arrays over (profiles P, kernel nodes N); times in the kernels come out in seconds."""

    names: list[str]             # N kernel nodes, graph order
    mac_flops: np.ndarray        # [N] float64
    vec_flops: np.ndarray        # [N] float64 (vector + transcendentals)
    bytes: np.ndarray            # [N] float64, at the requested precision
    matrix_peak: np.ndarray      # [P, N] FLOP/s for the node's mac dtype
    vector_peak: np.ndarray      # [P, N] FLOP/s
    mem_bw: np.ndarray           # [P] B/s
    overhead: np.ndarray         # [P] s per kernel
    precision: str
    warnings: list[list[str]]    # per profile


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
        raise HardwareError(f"hardware '{profile.id}' has no throughput figure at all; "
                            f"cannot predict compute time")
    v, k, e = max(peaks)
    warn.add(f"{profile.id} has no figure for {dtype} or its fallbacks; using its {k} {e} peak "
             f"({v:g} TFLOP/s)")
    return v * 1e12


def lower(nodes: list[NodeCost], profiles: list, precision: str | None) -> Lowered:
    if precision is not None and precision not in PRECISIONS:
        raise InputSpecError(f"unknown precision '{precision}'; choose from {', '.join(PRECISIONS)}")
    kern = [n for n in nodes if n.status != FOLDED and (n.cost.flops or n.cost.bytes_moved)]
    N = len(kern)
    mac = np.fromiter((n.cost.mac_flops for n in kern), np.float64, N)
    vec = np.fromiter((n.cost.vector_flops + n.cost.transcendentals for n in kern), np.float64, N)
    if precision is None:
        nbytes = np.fromiter((n.cost.bytes_moved for n in kern), np.float64, N)
    else:
        bits = PRECISION_BITS[precision]
        nbytes = np.fromiter(
            (sum(b * bits / DTYPE_BITS[d] if d in FLOAT_DTYPES else b for d, b in n.bytes_by_dtype)
             for n in kern), np.float64, N)
    mac_dt = [_compute_dtype(n, precision) for n in kern]
    P = len(profiles)
    mpeak = np.empty((P, N))
    vpeak = np.empty((P, N))
    bw = np.empty(P)
    ovh = np.empty(P)
    warnings: list[list[str]] = []
    for p, prof in enumerate(profiles):
        warn: set[str] = set()
        cache: dict[tuple[str, str], float] = {}

        def peak(engine, d):
            key = (engine, d)
            if key not in cache:
                cache[key] = _peak(prof, engine, d, warn)
            return cache[key]

        mpeak[p] = [peak("matrix", d) if m else 1.0 for d, m in zip(mac_dt, mac)]
        vpeak[p] = [peak("vector", d) if v else 1.0 for d, v in zip(mac_dt, vec)]
        if not prof.mem_bw_gbs:
            raise HardwareError(f"hardware '{prof.id}' has no mem_bw_gbs figure; cannot predict "
                                f"memory time (copy its profile, add a sourced value, pass {{hw}})",
                                hints=(Hint("hw", "FILE"),))
        bw[p] = prof.mem_bw_gbs * 1e9
        if prof.launch_overhead_us is None:
            warn.add(f"{prof.id} has no per-kernel launch overhead figure; overhead counted as 0")
            ovh[p] = 0.0
        else:
            ovh[p] = prof.launch_overhead_us * 1e-6
        warnings.append(sorted(warn))
    # without an override, label the prediction by the dtype that carries most of the work
    weight: dict[str, float] = {}
    for d, f, b in zip(mac_dt, mac + vec, nbytes):
        weight[d] = weight.get(d, 0.0) + f + b
    label = precision or (max(weight, key=weight.get) if weight else "fp32")
    return Lowered([n.name for n in kern], mac, vec, nbytes, mpeak, vpeak, bw, ovh, label, warnings)
