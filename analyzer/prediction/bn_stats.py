"""PyTorch's batch-statistics kernel of a training-mode BatchNorm on CUDA: one block per channel,
each thread walking its share of the channel's N x H x W elements one load after another.

Which kernel (``aten/src/ATen/native/cuda/Normalization.cuh``, ``batch_norm_stats_cuda_template``;
the bf16/fp16 launches of rule ``bn-train``, ``bn_train``): x is viewed as [N, C, S] (S = H x W,
the product of the dims after C) and ``batch_norm_collect_statistics_kernel`` runs on a grid of
``C`` blocks of ``tf x ty`` threads, ``tf = getNumThreads(S)`` (the first of 32, 64, 128, 256, 512
that holds S, else 512) and ``ty = max(1, 512 / tf)`` (``MAX_BLOCK_SIZE`` 512 on CUDA).  Each
thread runs a Welford update over ``ceil(N / ty) x ceil(S / tf)`` elements of its channel, one
after the other (the update depends on the previous one), then the block merges its threads'
partials.  So the kernel is a latency chain per block, not a stream: a reduction over N x S per
channel with only C blocks in flight, the other elements' loads never overlapping one thread's.

The term (``loop_s``), in cycles of the SM clock::

    waves  = ceil(C / (SMs x BLOCKS_PER_SM))
    loop_s = waves x (WAVE_CYCLES + steps x STEP_CYCLES) / clock,   steps = ceil(N / ty) x ceil(S / tf)

The loop holds the launch's own start, so the launch costs the longer of its class's fixed cost
plus its bytes at the class's rate and ``loop_s`` (``lowering_fixed.extra_launch_s``).  A
[8, 64, 112, 112] bf16 x on the H200 (132 SMs, 1.98 GHz): tf 512, ty 1, 8 x 25 = 200 steps, one
wave: (2,950 + 200 x 515) / 1.98e9 = 53.5 us (measured 49.9; its 12.8 MB at the reduce rate with
the floor: 8.8 us).  Fitted (``bench/bn_stats_fit.py``) on the H200 only: the 106 statistics
kernels of ResNet-50's bf16 training steps at batch 1 and 8 (the H200 whole-model run's kernel
lists, torch 2.11; docs/accuracy.md, Whole models on the H200), a grid over the two cycle
constants, least squares in relative error;
the same rows chose the form (the loop beside the floor, not after it: rms 0.23 against 0.34)
and ``BLOCKS_PER_SM`` among 1, 2 and 4 (4 the thread limit, 2,048 / 512; 2 fits best: at 7 x 7 a
2,048-channel kernel takes 8 waves of 264 blocks where a 512-channel one takes 2, 14.3 and 4.6 us
at batch 8, so the register file, not the thread count, limits).  Summed over ResNet-50's 53
kernels at batch 8: 532.7 us against 528.7 measured (280.0 before); MobileNetV2's 52, the check
(not fitted): 545.5 against 523.3 at batch 8, 259.1 against 218.4 at batch 1 (the 1-step kernels
take the class floor, 4.0 us, above their 2.7 us).  Only where PyTorch's CUDA kernels run (an
NVIDIA GPU profile, ``profile_term``); no H100 row was read.
"""

from __future__ import annotations

MAX_BLOCK = 512                       # MAX_BLOCK_SIZE (CUDA)
THREAD_SIZES = (32, 64, 128, 256, MAX_BLOCK)   # getNumThreads
BLOCKS_PER_SM = 2                     # resident blocks per SM; chosen on the H200 rows (docstring)
WAVE_CYCLES = 2950.0                  # per wave: its start, the block's merge and write; fitted (docstring)
STEP_CYCLES = 515.0                   # per serial Welford step: one dependent load; fitted (docstring)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def threads(s: int) -> tuple[int, int]:
    """(tf, ty) of the kernel's block for ``S`` elements per (sample, channel) plane."""
    tf = next((t for t in THREAD_SIZES if s <= t), MAX_BLOCK)
    return tf, max(1, MAX_BLOCK // tf)


def loop(dims) -> tuple[int, int]:
    """(blocks, serial steps per thread) of the kernel over an x of ``dims`` [N, C, ...]."""
    n, c = int(dims[0]), int(dims[1])
    s = 1
    for d in dims[2:]:
        s *= int(d)
    tf, ty = threads(s)
    return c, ceil_div(n, ty) * ceil_div(s, tf)


def loop_s(xp, blocks, steps, units, cycle_s):
    """``loop_s`` per launch, array code: ``ceil(blocks / (units x BLOCKS_PER_SM)) x (WAVE_CYCLES +
    steps x STEP_CYCLES) x cycle_s`` (0 where ``blocks`` or ``cycle_s`` is 0; ``units`` 0: one wave)."""
    cap = xp.maximum(units * BLOCKS_PER_SM, 1.0)
    waves = xp.where(units > 0, xp.ceil(blocks / cap), 1.0)
    return xp.where(blocks > 0, waves * (WAVE_CYCLES + steps * STEP_CYCLES) * cycle_s, 0.0)


def profile_term(prof, clock_hz: float) -> float:
    """Seconds per SM cycle on ``prof`` where it runs PyTorch's CUDA kernels (an NVIDIA GPU) and a
    clock is known; else 0 (no term)."""
    family = getattr(prof, "family", "") or ""
    if getattr(prof, "kind", "") != "gpu" or not family.startswith("nvidia-") or not clock_hz or clock_hz <= 0:
        return 0.0
    return 1.0 / float(clock_hz)
