"""A BatchNorm's backward as PyTorch's native bf16/fp16 kernel runs it: two passes over x and dY,
each a per-channel serial loop.

Which kernel (``aten/src/ATen/native/cuda/Normalization.cuh``, ``batch_norm_backward_cuda_template``):
in bf16 and fp16 on NCHW (the H200 run's ``batch_norm_backward_kernel<c10::BFloat16, ...>``, one
per BatchNorm of ResNet-50 and MobileNetV2; fp32 runs cuDNN's ``bn_bw_1C11_*``, which reads x and
dY once) a grid of ``C`` blocks of ``tf x ty`` threads, the statistics kernel's geometry
(``prediction.bn_stats``).  Each block first reduces dY and dY x (x - mean) over its channel's
N x S elements (x and dY read), then walks them again to write dX (x and dY read again, dX
written): ``4 n + n`` elements moved where the rule counts ``2 n + n`` (``bn_reread``: the 2 n),
and ``2 x steps`` serial steps per thread.

The kernel costs, at the prediction's precision bf16 or fp16 (``native``), the longer of its
class time with the re-read bytes and the loop ``bn_stats.loop_s`` over ``2 x steps``, with the
statistics kernel's constants (fitted on the H200's forward statistics kernels; nothing fitted
here).  Where the precision is fp32 or TF32 (cuDNN), or the profile runs no PyTorch CUDA kernel
(``bn_stats.profile_term`` 0), nothing changes.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

NATIVE_PRECISIONS = ("bf16", "fp16")
PASSES = 2          # the reduction pass and the dX pass


def native(pred) -> bool:
    """Whether ``pred``'s BatchNorms run PyTorch's native kernel (bf16 or fp16)."""
    return pred.precision in NATIVE_PRECISIONS


def with_reread(plan, pred):
    """``plan`` with each BatchNorm backward's second-pass bytes read (``bn_reread``) where the
    native kernel runs; ``plan`` itself otherwise or where it has none."""
    if not native(pred) or not any(k.bn_reread for k in plan.kernels):
        return plan
    return replace(plan, kernels=tuple(replace(k, bytes_read=k.bytes_read + k.bn_reread) if k.bn_reread
                                       else k for k in plan.kernels))


def loop_s(plan, pred, profile) -> np.ndarray:
    """[K] seconds of each kernel's two-pass serial loop (``bn_stats.loop_s`` over ``PASSES x
    steps``) where the native kernel runs on a profile with the term; zeros elsewhere."""
    from analyzer.prediction import bn_stats
    from analyzer.prediction.hardware import clock_hz

    out = np.zeros(len(plan.kernels))
    cycle = bn_stats.profile_term(profile, clock_hz(profile)) if native(pred) else 0.0
    if not cycle:
        return out
    blocks = np.asarray([k.bn_loop[0] for k in plan.kernels], np.float64)
    steps = np.asarray([PASSES * k.bn_loop[1] for k in plan.kernels], np.float64)
    return bn_stats.loop_s(np, blocks, steps, float(getattr(profile, "units", 0) or 0), cycle)
