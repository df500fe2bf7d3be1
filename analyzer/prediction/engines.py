"""Engines and precisions: which engine of a profile a kernel's work runs on and at what peak.

- **peaks**: ``mac_flops`` run on the matrix engine (tensor cores, MXU, MAC array, AMX) when the
  profile lists a matrix peak for the kernel's compute dtype, else on the vector engine at that
  dtype; vector work and transcendentals on the vector engine (``peak``, ``kernel_peaks``). A
  device that lacks the dtype falls back along ``FALLBACK`` with a warning.
- **PyTorch's fp32 defaults** on an NVIDIA GPU under the PyTorch runtimes (``PYTORCH_RUNTIMES``):
  matmuls on the FMA units, cuDNN convolutions in TF32 (``tf32_convs``) for a model run in its own
  fp32 dtypes; precision ``"fp32"`` runs every product on the FMA units (both ``allow_tf32`` flags
  off), ``tf32`` every one on the tensor cores; fp32 matrix kernels on the
  FMA units take their own classes (``simt_classes``: ``gemm_simt`` ... ``conv3_simt``) and the
  constants of the engine they run on (``engine_sets``), at the share of the FMA peak the SM's FP32
  datapaths let a matrix product issue (``datapath_factor``); a power-capped card's peaks at its
  sustained clock (``clock_share``), its matrix kernels' first busy seconds at boost (``boost_terms``).
- **XLA's fp32 default** on an NVIDIA GPU under the ``xla`` runtime: f32 dots and convolutions in TF32 on
  the tensor cores unless they ask for HIGHEST (``xla_precision.gpu_peaks``, through ``precision_notes``).
- **what a prediction says** about them (``precision_notes``, ``lacks_dtype``).

Used by ``lowering`` (per profile) and the search's kernel cache (the same per-kernel rules).
"""

from __future__ import annotations

import numpy as np

from analyzer.errors import HardwareError
from analyzer.prediction import node_shapes
from analyzer.prediction import xla_precision, xla_tpu
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency.op_classes import CHANNELS_FIRST_CONV_OPS


PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "w8a16")
# a precision whose products run at another dtype's rate: w8a16 (int8 weights, int16 activations)
# at the device's 16-bit matrix rate (fp16, or its fallbacks), an assumption no device's figure
# states (the qnn runtime's fitted int8 x int16 rate replaces it on a Hexagon NPU: accelerators/qnn.py)
RATE_DTYPE = {"w8a16": "fp16"}

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

def peak(profile, engine: str, dtype: str, warn: set[str]) -> float:
    """FLOP/s of ``engine`` at ``dtype``, with the documented fallbacks.

    Vector work at a dtype without its own vector figure runs at the vector fp32 rate
    (a conservative choice: GPUs run fp16 elementwise at least that fast), never on the
    matrix engine unless the device has no vector figure at all.  fp32 matrix work on a TPU runs
    on the MXU at its bf16 peak (``mxu_bf16``), whatever vector fp32 figure the chip states."""
    if engine == "matrix" and mxu_bf16(profile, dtype):
        warn.add(f"{profile.id}: fp32 matrix products run on the MXU at its bf16 peak, one bf16 pass each at "
                 f"XLA's default dot precision on a TPU (jax.lax.Precision.DEFAULT; a product asking for HIGH "
                 f"or HIGHEST takes 3 or 6 passes, said apart)")
        return profile.peak_flops("matrix", "bf16")
    if engine == "vector":
        p = profile.peak_flops("vector", dtype) or profile.peak_flops("vector", "fp32")
        if p:
            return p
    other = "vector" if engine == "matrix" else "matrix"
    said = xla_tpu.no_int8_note(profile) if dtype == "int8" and not profile.peak_flops("matrix", "int8") else None
    if said and profile.peak_flops("matrix", "bf16"):
        warn.add(said)
        return profile.peak_flops("matrix", "bf16")
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


# convolution classes cuDNN runs as implicit GEMMs on the tensor cores (a depthwise convolution
# runs its own CUDA-core kernel: not here; an image stem on a family of ``stem_conv.FAMILIES`` is
# set back to the FMA peak after, ``stem_conv.fma_peaks``)
TF32_CONV_CLASSES = frozenset(eff.CLASS_CODE[c] for c in ("conv", "conv_1x1", "conv1d", "conv_grouped",
                                                           "conv_batch_grouped", "conv_simt", "conv3_simt",
                                                           "conv_stem"))
# runtimes whose kernels are PyTorch's own (eager and the kernel sum of the same kernels)
PYTORCH_RUNTIMES = ("eager", "eager-op", "kernel", "eager-kernel")


def fma_fp32(prof) -> bool:
    """True where ``prof`` runs fp32 matrix products on its FMA units: a GPU with a vector fp32
    figure and no fp32 matrix-engine figure (NVIDIA's CUDA cores: SIMT sgemm and cuDNN's fp32
    kernels)."""
    return prof.kind == "gpu" and bool(prof.peak_flops("vector", "fp32")) and not prof.peak_flops("matrix", "fp32")


def simt_classes(cls_l, dtypes, nodes, plan, runtime_name: str, profiles) -> tuple:
    """The kernels' class codes with each fp32 matrix kernel (``op_classes.SIMT_CLASS``) moved to
    its FMA-unit class, under a PyTorch runtime where some profile runs fp32 products on its FMA
    units (``fma_fp32``): ``gemm_simt``, ``bgemm_simt``, ``conv_simt``, or ``conv3_simt`` for an
    ungrouped 3x3 stride-1 2-D convolution (``winograd_shape``).  A profile of the same
    prediction whose kernels run elsewhere takes its fallback class's constants in those slots
    (``engine_sets``): the classes only name the kernel, the constants say the engine."""
    if not simt_applies(runtime_name, profiles):
        return cls_l
    return tuple(simt_code(c, d, lambda k=k: winograd_shape(
        nodes[max(plan.members[k], key=lambda i: nodes[i].cost.mac_flops)])) for k, (c, d) in enumerate(zip(cls_l, dtypes)))


def simt_applies(runtime_name: str, profiles) -> bool:
    """Whether ``simt_classes`` moves fp32 matrix kernels: a PyTorch runtime and some profile
    running fp32 products on its FMA units."""
    return runtime_name in PYTORCH_RUNTIMES and any(fma_fp32(q) for q in profiles)


def simt_code(code: int, dtype: str, winograd) -> int:
    """One kernel's class code under ``simt_classes``: an fp32 matrix class's FMA-unit class
    (``conv3_simt`` where ``winograd()``, a callable, says the convolution has the Winograd
    shape), else ``code``."""
    simt = eff.SIMT_CLASS.get(eff.OP_CLASSES[code]) if dtype == "fp32" else None
    if simt is None:
        return code
    return eff.CLASS_CODE["conv3_simt" if simt == "conv_simt" and winograd() else simt]


def winograd_shape(n) -> bool:
    """An ungrouped 2-D convolution with a 3x3 kernel and stride 1 (ONNX ``Conv`` family, channels
    first; the stride read from the shapes as ``node_shapes.strided_conv`` does, the dilation not
    in the specs: a dilated one counts too): the shape cuDNN runs as Winograd F(2x2,3x3) /
    F(4x4,3x3) or FFT."""
    if n.op not in CHANNELS_FIRST_CONV_OPS or n.op == "ConvTranspose" or len(n.in_specs) < 2:
        return False
    x, w = node_shapes.static_shape(n.in_specs[0]), node_shapes.static_shape(n.in_specs[1])
    if not x or not w or len(x) != 4 or len(w) != 4 or tuple(w[2:]) != (3, 3) or w[1] != x[1]:
        return False
    return node_shapes.strided_conv(n) == 0.0


def engine_sets(arrays: dict, prof, runtime_name: str, precision: str | None) -> dict:
    """``arrays`` with the FMA-unit classes' slots (``op_classes.SIMT_CLASS`` values) holding
    their fallback class's constants where ``prof`` runs those kernels on a matrix engine: a
    device with an fp32 matrix figure or no FMA fp32 path (``fma_fp32``), and PyTorch's TF32
    convolutions (``tf32_convs``'s rule) for the convolution classes.  The same dict otherwise."""
    simt = sorted(set(eff.SIMT_CLASS.values()) | {"conv3_simt"})
    if fma_fp32(prof):
        simt = [c for c in simt if c.startswith("conv")] if default_tf32_convs(prof, runtime_name, precision) else []
    if not simt:
        return arrays
    out = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in arrays.items()}
    for c in simt:
        i = eff.CLASS_CODE[c]
        j = eff.CLASS_CODE[next(x for x in eff.class_chain(c) if x not in eff.POOLED_CLASSES)]
        for name in eff.CLASS_PARAMS:
            out[name][i] = out[name][j]
    return out


def default_tf32_convs(prof, runtime_name: str, precision: str | None) -> bool:
    """Whether PyTorch's default runs ``prof``'s fp32 convolutions in TF32 on the tensor cores
    (``tf32_convs``'s condition): no precision given, a PyTorch runtime, an NVIDIA GPU with a TF32
    tensor-core figure.  The kernel times (``engine_sets``, ``tf32_convs``) and the eager plan's
    cuDNN launches (``lowering``: rule ``cudnn-nhwc`` under TF32) both follow it."""
    return (precision is None and prof.kind == "gpu" and (prof.vendor or "").lower() == "nvidia"
            and runtime_name in PYTORCH_RUNTIMES and bool(prof.peak_flops("matrix", "tf32")))


def tf32_convs(prof, runtime_name: str, precision: str | None, mpeak_row, cls, dtypes, mac) -> str | None:
    """PyTorch's precision defaults on an NVIDIA GPU with a TF32 tensor-core figure, under the
    ``eager`` and ``kernel`` runtimes: cuDNN convolutions run fp32 tensors in TF32 on the tensor
    cores (``torch.backends.cudnn.allow_tf32 = True``, the default since PyTorch 1.7), matmuls on
    the FMA units (``torch.backends.cuda.matmul.allow_tf32 = False``, the default since 1.12).
    These are the defaults of a model that runs in its own fp32 dtypes (``precision`` None): sets
    the fp32 convolution kernels' matrix peak in ``mpeak_row`` (in place) to the TF32 figure and
    returns the note that says so (None where nothing runs in fp32 on such a device).  An explicit
    ``precision="fp32"`` says what runs: every product in IEEE fp32 on the FMA units (both
    ``allow_tf32`` flags False), with a note; ``"tf32"`` puts every fp32 product on the tensor
    cores (the peaks already say so)."""
    if (prof.kind != "gpu" or (prof.vendor or "").lower() != "nvidia" or runtime_name not in PYTORCH_RUNTIMES
            or precision not in (None, "fp32")):
        return None
    tf32 = prof.peak_flops("matrix", "tf32")
    fp32 = [k for k, (d, m) in enumerate(zip(dtypes, mac)) if d == "fp32" and m]
    if not tf32 or not fp32:
        return None
    if precision == "fp32":
        return ("precision fp32: every fp32 product runs on the FMA units (torch.backends.cudnn.allow_tf32 "
                "= False, as PyTorch's matmuls by default); without a precision override convolutions take "
                "PyTorch's default, TF32 on the tensor cores")
    convs = [k for k in fp32 if cls[k] in TF32_CONV_CLASSES]
    for k in convs:
        mpeak_row[k] = tf32 * clock_share(prof)   # a capped card's tensor cores at its sustained clock
    matmuls = len(convs) < len(fp32)
    said = "PyTorch's defaults assumed: "
    if convs:
        said += (f"fp32 convolutions run in TF32 on the tensor cores ({tf32 / 1e12:g} TFLOP/s; "
                 f"torch.backends.cudnn.allow_tf32 = True)" + ("; " if matmuls else ""))
    if matmuls:
        said += ("fp32 matmuls run on the FMA units (torch.backends.cuda.matmul.allow_tf32 = False)")
    return said + ("; precision tf32 puts every fp32 product on the tensor cores, precision fp32 every one "
                   "on the FMA units")


def lacks_dtype(prof, dtypes) -> list[str]:
    """A warning per floating dtype the work runs in that ``prof`` lists no throughput for on any
    engine (bf16 on a T4, fp8 on an A100): the device may not run it at all, and the prediction
    takes a fallback's rate (``FALLBACK``)."""
    out = []
    for d in sorted(set(dtypes)):
        if d in PRECISIONS and d not in ("fp32", "int8", *RATE_DTYPE) and not (
                prof.peak_flops("matrix", d) or prof.peak_flops("vector", d)):
            out.append(f"{prof.id} lists no {d} throughput: the device may lack {d} (predicted at a "
                       f"fallback's rate; see the other warnings)")
    return out


def precision_notes(prof, runtime_name, precision, mpeak_row, warn: set, note: list, cls, dtypes, mac, vec,
                    trans, lowered=None) -> None:
    """What the precision rules add to one profile's lowering: a warning per dtype the device
    lists no throughput for (``lacks_dtype``; not one the peaks' fallback already warned of),
    PyTorch's TF32 defaults (``tf32_convs``: the fp32 convolutions' peaks in ``mpeak_row``, in
    place, and the note) and XLA's (``xla_precision.gpu_peaks``, with ``lowered`` = (nodes, fusion
    plan, kernel features): the fp32 dots' and convolutions' peaks, in place, and the note); a
    power-capped card's sustained clock (``clock_share``) and an SM's FP32 datapath factor
    (``datapath_factor``, where an fp32 product still runs on the FMA units) as notes."""
    warn.update(w for w in lacks_dtype(prof, [d for d, m, v, t in zip(dtypes, mac, vec, trans) if m or v or t])
                if not any(f"no {w.split(' lists no ')[1].split(' ')[0]} " in x for x in warn))
    said = tf32_convs(prof, runtime_name, precision, mpeak_row, cls, dtypes, mac)
    if said:
        note.append(said)
    moved = xla_precision.gpu_peaks(prof, runtime_name, precision, mpeak_row, clock_share(prof), (cls, dtypes, mac),
                                    lowered, note, warn) if lowered is not None else frozenset()
    if "w8a16" in dtypes:
        note.append(w8a16_note(prof))
    if clock_share(prof) < 1.0 and (any(mac) or any(vec)):
        note.append(f"{prof.id}'s compute peaks (FMA units and tensor cores) taken at its sustained clock, "
                    f"{prof.sustained_clock_ghz:g} of {prof.clock_ghz:g} GHz (a fitted figure: its profile's "
                    f"sources say where from)" + boost_note(prof))
    g = datapath_factor(prof)
    if g < 1.0 and any(m and fma_dtype(prof, d) and k not in moved for k, (d, m) in enumerate(zip(dtypes, mac))):
        note.append(f"{prof.id}'s matrix products on the FMA units reach {g:g} of its listed fp32 vector peak "
                    f"relative to the V100/P100/A100 SMs the FMA-unit constants were fitted on "
                    f"(fp32_datapath_factor, a fitted figure: its profile's sources name its SM design and the "
                    f"rows it was fitted on)")


def boost_note(prof) -> str:
    """What ``boost_terms`` adds to the sustained-clock note ('' where the profile has no window)."""
    r, tau = boost_terms(prof)
    return ("" if r == 1.0 else f"; a matrix kernel's first {tau * 1e3:g} ms of busy time at the boost clock "
            f"(boost_window_s, fitted: the effective clock over busy time T is sustained + (boost - sustained) "
            f"x min(1, {tau * 1e3:g} ms / T))")


def w8a16_note(prof) -> str:
    """What a w8a16 prediction assumes on ``prof`` (``RATE_DTYPE``): int8 weights, int16
    activations, products at its 16-bit matrix rate."""
    return (f"precision w8a16: weights read at 1 B an element (int8), activations at 2 B (int16); matrix "
            f"products at {prof.id}'s 16-bit (fp16) matrix rate, an assumption: no int8 x int16 figure is "
            "sourced (a runtime with a fitted rate of its own says so below)")


def kernel_peaks(prof, cache: dict, warn: set[str], anchor_dtype, mac_l, vec_l, trans_l):
    """Per kernel, the profile's matrix and vector FLOP/s at its dtype (1.0 where the kernel has no
    such work); ``cache``: (engine, dtype) -> (FLOP/s, the warnings it gave), kept per profile;
    the warnings of the peaks used go to ``warn``. One look-up per dtype used: the same peaks
    and warnings as one per kernel."""
    def cached(engine, d):
        hit = cache.get((engine, d))
        if hit is None:
            said: set[str] = set()
            hit = cache[(engine, d)] = (peak(prof, engine, d, said), tuple(said))
        warn.update(hit[1])
        return hit[0]

    f, g = clock_share(prof), datapath_factor(prof)
    rate = RATE_DTYPE.get
    mp = {d: cached("matrix", rate(d, d)) * f * (g if fma_dtype(prof, rate(d, d)) else 1.0)
          for d in {d for d, m in zip(anchor_dtype, mac_l) if m}}
    vp = {d: cached("vector", rate(d, d)) * f for d in {d for d, v, t in zip(anchor_dtype, vec_l, trans_l) if v or t}}
    return ([mp[d] if m else 1.0 for d, m in zip(anchor_dtype, mac_l)],
            [vp[d] if v or t else 1.0 for d, v, t in zip(anchor_dtype, vec_l, trans_l)])


def fma_dtype(prof, dtype: str) -> bool:
    """True where ``prof``'s matrix products at ``dtype`` run on its vector (FMA) units: no
    matrix-engine figure for the dtype, a vector one, and not a TPU's MXU pass (``mxu_bf16``)."""
    return (not prof.peak_flops("matrix", dtype) and bool(prof.peak_flops("vector", dtype))
            and not mxu_bf16(prof, dtype))


def mxu_bf16(prof, dtype: str) -> bool:
    """True where ``prof`` runs matrix products at ``dtype`` on the MXU in one bfloat16 pass: fp32
    on a TPU with a bf16 matrix figure and no fp32 one.  XLA's default dot precision on a TPU
    (``jax.lax.Precision.DEFAULT``: operands rounded to bf16, fp32 accumulation) is one MXU pass;
    the TPU's vector fp32 unit (the VPU) runs no dot.  A product asking for HIGH / HIGHEST takes 3 or 6
    passes (``tpu_mxu.precision_passes``)."""
    return (prof.kind == "tpu" and dtype == "fp32" and not prof.peak_flops("matrix", "fp32")
            and bool(prof.peak_flops("matrix", "bf16")))


def clock_share(prof) -> float:
    """``sustained_clock_ghz / clock_ghz`` of a power-capped GPU (both stated, sustained below
    boost), else 1: the share of its listed peaks, vector and matrix (tensor-core) alike, it
    holds under sustained load (one clock for the whole SM)."""
    s, c = getattr(prof, "sustained_clock_ghz", None), prof.clock_ghz
    return float(s) / float(c) if s and c and s < c else 1.0


def boost_terms(prof) -> tuple[float, float]:
    """(boost / sustained clock, boost window in seconds) of a power-capped GPU whose profile sets
    ``boost_window_s`` (``kernel_time.boost_window``: the matrix part of a kernel's compute term runs
    its first ``boost_window_s`` busy seconds at the boost clock), else (1, 0): the whole kernel at
    the sustained clock (``clock_share``)."""
    tau, f = getattr(prof, "boost_window_s", None), clock_share(prof)
    return (1.0 / f, float(tau)) if tau and f < 1.0 else (1.0, 0.0)


def datapath_factor(prof) -> float:
    """A GPU profile's ``fp32_datapath_factor`` (0 < g <= 1), else 1: the share of its listed fp32
    vector peak a matrix product run on its FMA units reaches, relative to the SMs the FMA-unit
    classes' constants were fitted on (V100, P100, A100; GA10x/AD10x partitions issue FP32 over 16
    lanes plus 16 shared with INT32, GH100 partitions over 32 under one warp scheduler).  Applied
    to the FMA-run matrix peaks only (``kernel_peaks``): vector work keeps the listed peak."""
    g = getattr(prof, "fp32_datapath_factor", None)
    return float(g) if prof.kind == "gpu" and g and 0.0 < g < 1.0 else 1.0
