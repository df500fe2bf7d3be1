"""What precision an XLA program's f32 matrix products ask for, and XLA's GPU default for them.

- **the asked precision** (``kernel_precisions``): per kernel, the ``precision=NAME`` word of its
  heaviest matrix node's rule (``counting.rules.jax.linear.precision_word``: ``HIGH``, ``HIGHEST``
  or a ``jax.lax.DotAlgorithmPreset`` name; none for DEFAULT).  A TPU prices it as bf16 MXU passes
  (``tpu_mxu.precision_passes``), an NVIDIA GPU as below.
- **XLA's TF32 default on an NVIDIA GPU** (``gpu_peaks``): under the ``xla`` runtime, on a GPU
  whose profile has a TF32 tensor-core figure, with no caller precision, an fp32 dot or
  convolution kernel runs on the tensor cores in TF32 unless it asks for more.  Sources: JAX docs,
  "Matmul precision" (https://docs.jax.dev/en/latest/201/precision.html): "By default ...
  float32 dot products may be computed with reduced-precision arithmetic internally (bfloat16 on
  TPU, TF32 on recent GPUs)"; jax.lax.Precision (DEFAULT the fastest, HIGH "using tensorfloat32
  where available", HIGHEST float32); google/jax issue 18934 ("DEFAULT with FP32 inputs does
  matmul in FP32 on V100, TF32 on A100/H100"); XLA's cuBLAS GEMM thunk
  (``xla/service/gpu/matmul_utils.cc``, ``IsTf32Allowed``): TF32 allowed where no algorithm is set
  and the operands' highest precision is at most HIGH, else where the algorithm's inputs are TF32.
  Measured: the H200's f32 dots and convolutions run ``sm90_xmma_gemm_f32f32_tf32f32_f32_*`` and
  ``sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_*`` kernels (the XLA single-op run's kernel
  names; docs/accuracy.md, "XLA's TF32 default").

  Per kernel (``MATRIX_CLASSES``; a depthwise convolution, ``conv_dw``, is not one: cuDNN runs it
  in a CUDA-core kernel of its own, as PyTorch's rule, ``engines.TF32_CONV_CLASSES``, says):
  DEFAULT / HIGH / ``TF32_TF32_F32`` run at the TF32 peak, ``TF32_TF32_F32_X3`` at a third of it
  (3 TF32 passes), ``BF16_BF16_F32[_X3/_X6/_X9]`` at the bf16 peak over 1 / 3 / 6 / 9 passes (XLA's
  Triton emitters split each f32 operand into bf16 parts); HIGHEST and ``F32_F32_F32`` stay fp32 on
  the FMA units, and so does a dot with m = 1 or n = 1 (XLA rewrites it into a reduction fusion,
  measured ``input_reduce_fusion``).  Each peak is taken at the card's sustained clock (the caller's
  ``share``).  A GPU without a TF32 figure (V100, T4, P100) keeps fp32; a caller's precision
  ``fp32`` keeps every product on the FMA units, ``tf32`` puts every one on the tensor cores (the
  peaks say so).  The kernels keep their class (the ``gemm`` / ``conv`` constants; the PyTorch
  runtimes' FMA-unit classes, ``engines.simt_classes``, never apply under ``xla``): a kernel left on
  the FMA units (HIGHEST, a GEMV) takes its class's constants at the FMA peak, as every fp32 XLA
  kernel did before this rule; no XLA FMA-unit GEMM was measured to fit others on.
"""

from __future__ import annotations

from analyzer.counting import kernel_words
from analyzer.prediction.efficiency import kernel_time as eff

# the classes of an XLA dot's or convolution's kernel that cuBLAS / cuDNN / Triton run as a GEMM
# (a dot on a GPU profile is in XLA's own classes, ``xla_gpu_classes``)
MATRIX_CLASSES = frozenset(eff.CLASS_CODE[c] for c in ("gemm", "gemm_tn", "bgemm", "conv", "conv_1x1", "conv1d",
                                                        "conv_grouped", "conv_batch_grouped", "xla_gemm",
                                                        "xla_bgemm"))
# the dot classes whose m = 1 or n = 1 form XLA runs as a reduction fusion (``kernel_rows._gemv``)
DOT_CLASSES = frozenset(eff.CLASS_CODE[c] for c in ("gemm", "gemm_tn", "bgemm", "xla_gemm", "xla_bgemm"))
# requested precision -> (the dtype whose matrix peak it runs at, passes); None: no word (DEFAULT)
GPU_PASSES = {None: ("tf32", 1), "HIGH": ("tf32", 1), "TF32_TF32_F32": ("tf32", 1),
              "TF32_TF32_F32_X3": ("tf32", 3), "BF16_BF16_F32": ("bf16", 1), "BF16_BF16_F32_X3": ("bf16", 3),
              "BF16_BF16_F32_X6": ("bf16", 6), "BF16_BF16_F32_X9": ("bf16", 9)}
FP32_NAMES = ("HIGHEST", "F32_F32_F32")   # IEEE fp32 products: the FMA units


def kernel_precisions(nodes, plan) -> tuple:
    """Per kernel of ``plan``, the precision its heaviest matrix node asks for (``NAME`` of its
    rule's ``precision=NAME`` word) or None; () where no node asks for one."""
    if not any(kernel_words.value(n.kernel, "precision") is not None for n in nodes):
        return ()
    out = []
    for ms in plan.members:
        n = nodes[max(ms, key=lambda i: nodes[i].cost.mac_flops)]
        name = kernel_words.value(n.kernel, "precision")
        out.append(name if name and n.cost.mac_flops else None)
    return tuple(out)


def nvidia_tf32(prof) -> float | None:
    """The TF32 tensor-core peak (FLOP/s) of an NVIDIA GPU profile, else None."""
    if prof.kind != "gpu" or (prof.vendor or "").lower() != "nvidia":
        return None
    return prof.peak_flops("matrix", "tf32") or None


def gpu_peaks(prof, runtime_name: str, precision: str | None, mpeak_row, share: float, kernels, lowered,
              note: list, warn: set) -> frozenset:
    """XLA's f32 products on an NVIDIA GPU (the module docstring's rule): sets the matrix peak in
    ``mpeak_row`` (in place) of each fp32 matrix kernel moved to the tensor cores, adds the note
    that says so to ``note`` (and a warning per precision name without a GPU rule), and returns the
    moved kernels' positions.  ``kernels``: (class codes, dtypes, MAC FLOPs) per kernel;
    ``lowered``: (nodes, fusion plan, kernel features with the GEMM view's ``m`` and ``n``)."""
    tf32 = nvidia_tf32(prof) if runtime_name == "xla" and precision in (None, "fp32") else None
    cls, dtypes, mac = kernels
    fp32 = [k for k, (c, d, f) in enumerate(zip(cls, dtypes, mac)) if d == "fp32" and f and c in MATRIX_CLASSES]
    if not tf32 or not fp32:
        return frozenset()
    if precision == "fp32":
        note.append("precision fp32: every f32 dot and convolution runs on the FMA units (as "
                    "jax.lax.Precision.HIGHEST); without a precision override XLA's default runs them in TF32 on "
                    "the tensor cores")
        return frozenset()
    nodes, plan, feats = lowered
    names = kernel_precisions(nodes, plan) or (None,) * len(cls)
    moved, passes, kept, gemv = set(), set(), set(), False
    for k in fp32:
        name = names[k]
        if cls[k] in DOT_CLASSES and (feats["m"][k] == 1.0 or feats["n"][k] == 1.0):
            gemv = True
            continue
        if name not in GPU_PASSES:
            kept.add(name)
            continue
        dtype, n = GPU_PASSES[name]
        mpeak_row[k] = (prof.peak_flops("matrix", dtype) or tf32) * share / n
        moved.add(k)
        if n > 1 or dtype != "tf32":
            passes.add(f"{name}: {n} {dtype} pass{'es' if n > 1 else ''}")
    warn.update(f"{prof.id}: precision {x} has no GPU rule here; its f32 products priced on the FMA units"
                for x in kept if x not in FP32_NAMES)
    if moved or gemv or kept:
        note.append(_note(tf32, bool(moved), sorted(passes), gemv, bool(kept)))
    return frozenset(moved)


def _note(tf32: float, moved: bool, passes: list[str], gemv: bool, kept: bool) -> str:
    """What ``gpu_peaks`` assumed, in words (``moved``: some kernel runs on the tensor cores;
    ``passes``: the dot algorithms priced as passes; ``gemv``: some m = 1 / n = 1 dot, ``kept``:
    some kernel asking for HIGHEST, left on the FMA units)."""
    parts = [f"f32 dots and convolutions run in TF32 on the tensor cores ({tf32 / 1e12:g} TFLOP/s; "
             f"jax.lax.Precision.DEFAULT or HIGH)"] if moved else []
    if passes:
        parts.append(f"dot algorithms as passes on the tensor cores ({', '.join(passes)})")
    if gemv:
        parts.append("f32 dots with m = 1 or n = 1 run as reductions on the FMA units")
    if kept:
        parts.append("f32 products asking for jax.lax.Precision.HIGHEST run on the FMA units" + (
            "" if moved else f" (DEFAULT or HIGH would run them in TF32 on the tensor cores, {tf32 / 1e12:g} TFLOP/s)"))
    return ("XLA's default assumed: " + "; ".join(parts)
            + ("; precision fp32 or jax.lax.Precision.HIGHEST runs them on the FMA units" if moved else ""))
