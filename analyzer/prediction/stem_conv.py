"""Image-stem convolutions on the FMA units: the rule that prices an NVIDIA GPU's fp32 convolution of
fewer than ``STEM_CIN`` input channels on its CUDA cores, TF32 allowed or not.

Rule: under a PyTorch runtime (``engines.PYTORCH_RUNTIMES``), on a profile of a family in
``FAMILIES``, the kernel of an ungrouped 2-D convolution (ONNX ``Conv`` family, channels first) of
fp32 tensors (kernel dtype in ``DTYPES``: PyTorch's TF32 default, ``--precision tf32`` or ``fp32``)
whose input has fewer than ``STEM_CIN`` channels (``is_stem``: ResNet-50's 7x7 s2 3->64,
MobileNetV2's 3x3 s2 3->32, ViT-B/16's 16x16 s16 3->768 patch embedding) is class ``conv_stem``:
its constants are the family's FMA-unit ``conv_simt`` set (``CLASS_FALLBACK``) and its matrix peak
the FMA units' fp32 peak x the clock share x the SM's ``fp32_datapath_factor`` (``fma_peak``), not
the TF32 tensor-core peak.  A 3x3 stride-1 stem (VGG's) takes ``conv_simt``'s set too, not
``conv3_simt``'s: no such stem was measured, and Hopper's ``conv3_simt`` is an implicit GEMM as well.

Source: the kernel names of this repository's H200 run (torch 2.11, cuDNN 9; its single convolutions
and whole models: docs/accuracy.md, "Image-stem convolutions on the H200").  With TF32 allowed, every 3-channel stem ran a CUDA-core
kernel (``implicit_convolve_sgemm``, ``sm80_xmma_fprop_implicit_gemm_*_ffma``) but ResNet-50's at batch
8 and 32 (a tensor-core ``indexed_wo_smem`` kernel at 38-40 TFLOP/s, an FMA-unit rate); every
ungrouped convolution of 16 or more input channels ran a tensor-core kernel.  The bound between is
set at 4 channels, the TF32 tensor-core kernels' channel alignment (``alignc4`` in their names; 16
bytes, ``cudnn_conv.ALIGN_BYTES``); 4-15 channels were not measured.  Not by reduction depth: ViT's
patch embedding (3 x 16 x 16 = 768 per output) ran on the CUDA cores under TF32 where a 1x1
convolution of 16 channels (depth 16) ran on the tensor cores.  fp16 / bf16 stems keep their
tensor-core class: their kernels depend on the memory format, which an ONNX graph does not say (NCHW
bf16 ran ``implicit_convolve_sgemm<bf16>`` at batch 1, channels-last fp16 tensor-core kernels at up to
116 TFLOP/s at batch 32; priced at the FMA peak the latter were 2.7-4.4x too slow: docs/accuracy.md).

On a profile of another family lowered together with one of ``FAMILIES``, ``conv_stem`` takes the
constants of the engine its convolution runs on there (``engine_slot``) and the peak its dtype gives.
"""

from __future__ import annotations

from analyzer.prediction import engines, node_shapes
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency.op_classes import CHANNELS_FIRST_CONV_OPS

STEM_CIN = 4                                        # input channels below which a convolution is a stem
FAMILIES = frozenset({"nvidia-hopper"})             # the families whose data show it (the H200's)
STEM = eff.CLASS_CODE["conv_stem"]
# the classes a stem's kernel may have before the rule (tensor-core or FMA-unit convolution classes)
FROM = frozenset(eff.CLASS_CODE[c] for c in ("conv", "conv_1x1", "conv_simt", "conv3_simt"))
# the kernel dtypes the rule moves: fp32 tensors (TF32 allowed or not); fp16 / bf16 stems keep their class
DTYPES = frozenset({"fp32", "tf32"})
NOTE = ("fp32 image-stem convolutions (ungrouped, fewer than {n} input channels) run on the FMA units "
        "(CUDA cores), TF32 allowed or not, as cuDNN 9 ran them on the H200 (stem_conv): their "
        "matrix peak {p:.4g} TFLOP/s = fp32 FMA peak {v:g} TFLOP/s x clock share {f:.4g} x "
        "fp32_datapath_factor {g:g}, their constants the FMA-unit conv_simt set")


def is_stem(n) -> bool:
    """An ungrouped 2-D convolution (channels first, not transposed) of input [N, C, H, W] and
    filter [O, C, kh, kw] with C < ``STEM_CIN`` (static shapes)."""
    if n.op not in CHANNELS_FIRST_CONV_OPS or n.op == "ConvTranspose" or len(n.in_specs) < 2:
        return False
    x, w = node_shapes.static_shape(n.in_specs[0]), node_shapes.static_shape(n.in_specs[1])
    return bool(x) and bool(w) and len(x) == 4 and len(w) == 4 and w[1] == x[1] and 0 < x[1] < STEM_CIN


def family_of(prof) -> str:
    """``prof``'s constants family without a PyTorch-version variant's suffix."""
    from analyzer.prediction.hardware import family_name

    return family_name(prof).split("-pytorch")[0]


def applies(prof, runtime_name: str) -> bool:
    """Whether ``prof`` runs image stems on its FMA units: a PyTorch runtime, an NVIDIA GPU with an
    FMA fp32 path (``engines.fma_fp32``) of a family in ``FAMILIES``."""
    return (runtime_name in engines.PYTORCH_RUNTIMES and engines.fma_fp32(prof)
            and (prof.vendor or "").lower() == "nvidia" and family_of(prof) in FAMILIES)


def stem_classes(cls_l, dtypes, nodes, plan, runtime_name: str, profiles) -> tuple:
    """The kernels' class codes with each fp32 stem's kernel (its dtype in ``DTYPES``, its heaviest
    member ``is_stem``, its class in ``FROM``) moved to ``conv_stem``, where some profile
    ``applies``; else ``cls_l``."""
    if not any(applies(p, runtime_name) for p in profiles):
        return cls_l
    return tuple(stem_code(c, d, lambda k=k: is_stem(nodes[max(plan.members[k], key=lambda i: nodes[i].cost.mac_flops)]))
                 for k, (c, d) in enumerate(zip(cls_l, dtypes)))


def stem_code(code: int, dtype: str, stem) -> int:
    """One kernel's class under ``stem_classes``: ``conv_stem`` where its class is in ``FROM``, its
    dtype in ``DTYPES`` and ``stem()`` (a callable) says its convolution is a stem, else ``code``."""
    return STEM if code in FROM and dtype in DTYPES and stem() else code


def fma_peak(prof) -> float:
    """FLOP/s of a matrix product on ``prof``'s FMA units: the vector fp32 peak x the clock share
    (``engines.clock_share``) x the FP32 datapath factor (``engines.datapath_factor``)."""
    return prof.peak_flops("vector", "fp32") * engines.clock_share(prof) * engines.datapath_factor(prof)


def fma_peaks(prof, runtime_name: str, mpeak_row, cls, note: list) -> None:
    """Where ``prof`` ``applies``: the ``conv_stem`` kernels' matrix peaks in ``mpeak_row`` set to
    ``fma_peak`` (in place, after the precision defaults) and the note that says so."""
    stems = [k for k, c in enumerate(cls) if c == STEM]
    if not stems or not applies(prof, runtime_name):
        return
    p = fma_peak(prof)
    for k in stems:
        mpeak_row[k] = p
    note.append(NOTE.format(n=STEM_CIN, p=p / 1e12, v=prof.peak_flops("vector", "fp32") / 1e12,
                            f=engines.clock_share(prof), g=engines.datapath_factor(prof)))


def engine_slot(arrays: dict, prof, runtime_name: str, precision: str | None) -> dict:
    """``arrays`` (the class constants) with ``conv_stem``'s slot, on a profile the rule does not
    apply to, holding the tensor-core ``conv`` chain's constants where its convolutions run on a
    matrix engine (no FMA fp32 path, a tensor-core precision, or PyTorch's TF32 default): a copy;
    else ``arrays`` itself (the FMA-unit set ``conv_stem`` falls back to, as loaded)."""
    if applies(prof, runtime_name) or (engines.fma_fp32(prof) and (precision == "fp32" or (
            precision is None and not engines.default_tf32_convs(prof, runtime_name, precision)))):
        return arrays
    j = eff.CLASS_CODE[next(x for x in eff.class_chain("conv_stem") if x not in eff.POOLED_CLASSES)]
    out = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in arrays.items()}
    for name in eff.CLASS_PARAMS:
        out[name][STEM] = out[name][j]
    return out
