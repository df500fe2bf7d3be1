"""Kernel-time efficiency model: what fraction of the datasheet a GPU kernel reaches.

Predicts the **kernel** time of one kernel (the device time a profiler's kernel sum or a
CUDA-graph replay shows; no host dispatch, no fusion decisions) from opcost's exact counts
and a hardware profile, with per-architecture-family constants fitted on public measurements
(``hardware_db/efficiency/<family>.json``, written by ``bench/fit_efficiency.py``).

Model, per kernel of op class ``c`` (constants indexed by class)::

    compute_s = max(B(work / (matrix_peak * e_compute[c]) * wave(c) * narrow(c)), k * kloop_s[c])  (or their sum)
                + (vec_flops + trans_weight * trans_flops) / (vector_peak * e_compute[c])
    memory_s  = (dram_bytes + onchip_cost * onchip_bytes + b_half[c]) / (mem_bw * e_bw[c] * cache)
                + (bytes + reread) / (units * sm_bw[c])   (sm_overlap[c] = 1: the larger of the two terms, not their sum)
                + index_loop_s                            (PyTorch's small-index gather's serial steps)
                (+ or max with) row_s                     (PyTorch's row kernels: waves x a row's serial time)
    dram_bytes = (bytes - onchip_bytes) * (1 - l2_hit[c] * s(bytes / l2_bytes)) + reread_dram
    cache     = 1 + l2_gain[c] * s(bytes / l2_bytes),          s(x) = 1 / (1 + x**L2_STEP_POWER)
    sm_bw[c]  = bpc[c] * clock_hz                               (bytes per SM-cycle x the device clock)
    floor_s   = floor[c] * (1 - l2_floor[c] * s(bytes / l2_bytes))   (a warm start: 0 when cold)
                + par_s[c] * p(bytes / b_par[c])                 (p: the thread-split step)
                + piece_s[c] * max(batch - 1, 0)                 (the pieces of a batched kernel)
                + (im2col_s[c] + strided * im2col_stride_s[c]) * m * k * max(batch, 1)
                + serial_s[c] * serial_flops      (a CPU convolution's im2col, an RNN's recurrence)
                + dot_call_s[c] * [m > 1 and n > 1]  (a CPU library dot's call: not a matrix-vector product)
                + out_s[c] * m * n * max(batch, 1)   (a CPU kernel's cost per output element)
    time_s    = floor_s + max(compute_s, memory_s)

- ``work`` is ``mac_flops`` for every class, except for the tiled matrix classes (``tile_m[c] > 0``
  and a GEMM view ``m, n, k`` given) where it is the padded work of the tiles the kernel runs:
  ``2 * ceil(m/tm)*tm * ceil(n/tn)*tn * k * batch`` (a 129x129x129 GEMM on 128x128 tiles does the
  work of 256x256x129).  A dimension smaller than its tile pads only to the 16-wide MMA granule
  (libraries switch to skinny tiles / GEMV kernels there), or to the tile where the tile is
  narrower than that (a CPU's tile: its vector width).
- ``whole_tile`` (0: off): the class's kernels run only the set's tile, whole: a dimension
  smaller than the tile pads to the tile and no smaller ``LIBRARY_TILES`` tile is chosen (the
  split-K choice stays).  cuBLAS's batched FMA-unit sgemm (``bgemm_simt``: torch.bmm in fp32)
  ran one tile per GPU over all of NeuSight's bmm rows (A100 128x128, P100/P4 128x64), and an
  attention's ``P @ V`` (a 64-wide output) on a 128-wide tile does twice its useful work.
- ``k_fill`` (0: off): a tile's fixed prologue (its first operand loads) and epilogue (writing
  its output tile) in steps of its k loop: the padded work is ``2 * mp * np * (k + split *
  k_fill) * batch`` (each split-K slice is a tile of its own).  A 64-deep product (an attention's
  ``Q @ K^T``) pays it in full; ``bgemm_simt``'s is fitted (about 15 steps).
- ``mult_share`` (0: off, i.e. 1): the share of the direct product's multiplies the class's
  algorithm runs, applied to ``work``: cuDNN's Winograd F(2x2,3x3) runs 16 of the 36 multiplies of
  a 3x3 stride-1 convolution's output tile, F(4x4,3x3) 36 of 144, an FFT fewer still, each plus
  its transforms (``conv3_simt``: a fitted share, between those bounds).
- ``kloop_s`` (``tiles.kloop_bound``; 0: off): the serial k loop's lower bound on the matrix
  time, ``k x kloop_cycles[c] / clock_hz`` (``with_clock``): a small grid's CTAs each walk the
  whole GEMM depth one latency-bound step after another (Hopper's FMA-unit convolutions);
  ``kloop_sum = 1``: the k loop is added to the tiled time, not their max.
- ``B`` (``boost_window``; identity unless the constants carry ``boost_ratio``): a power-capped
  GPU's matrix seconds at its sustained clock, less what its boost window saves:
  ``B(M) = M / r`` where ``M / r <= tau``, else ``M - tau (r - 1)`` (``r``: boost / sustained clock,
  ``tau``: the profile's ``boost_window_s``).
- ``narrow`` (tiled classes): ``1 + (n_half[c] / n_padded)**2``: a CPU GEMM or convolution with
  one or two vector registers of output columns runs its inner loop at part of its rate.
- ``k_block`` (tiled classes; 0: off): ``k`` is padded to whole blocks of ``k_block`` too. A
  calibrated CPU's pointwise convolutions run in onnxruntime's NCHWc layout, whose channels come
  in blocks of the vector width (16 fp32 with AVX-512): 24 input channels do the work of 32.
- The fixed CPU terms, each calibrated (else 0) and measured in ``cpu_model``: ``piece_s`` per
  extra piece of a kernel looping over independent products (a batched MatMul's matrices);
  ``im2col_s`` per element of the k x m matrix a convolution run as im2col + GEMM copies first,
  ``im2col_stride_s`` more where a stride above 1 makes that copy a gather; ``serial_s`` per FLOP
  of an RNN's recurrent products (a chain of matrix-vector products, one per step); ``dot_call_s``
  per kernel whose view has m > 1 and n > 1 (XLA's CPU backend runs such a dot as a YNNPACK
  fusion, which packs its operands and hands tasks to the thread pool on every call; a
  matrix-vector product runs in Eigen without them); ``out_s`` per output element of the view
  (``m x n x max(batch, 1)``: XLA's CPU depthwise convolution, whose time is a cost per output
  plus one per output and tap, the second its MACs at the class's rate); ``par_s``.
- ``wave`` (tiled classes whose set has ``wave_alpha > 0``, when the number of units (SMs) is
  known; ``wave_alpha`` is a switch, not an exponent: 0 for a CPU's tiles and the datasheet
  sets): ``tiles = ceil(m/tm) * ceil(n/tn) * batch``; the library splits K into ``split`` slices
  when that fills the device better (``wave_split``: ``SPLIT_K`` factors, each slice at least
  ``SPLIT_K_MIN_K`` deep), ``ctas = tiles * split``, utilisation ``ctas / (ceil(ctas/units) *
  units)``, ``wave = 1 / utilisation``; the tile is the set's or a smaller one of
  ``LIBRARY_TILES``, whichever with its split gives the least padded work x waves: the kernel runs whole waves of per-SM work at
  ``peak / units`` per SM, so a small grid is held to its SMs' share of the peak, never to a
  fitted fraction that could make a bigger GPU slower.  The split's fp32 partial sums are not
  charged (a grid small enough to split keeps them in the L2).
- ``ramp``: a small kernel reaches ``b/(b+b_half)`` of the large-size bandwidth (Hockney's
  form: ``b_half / (bw * e_bw)`` seconds, scaled with the device's bandwidth; ``floor`` is fixed).
- ``cache`` (the last-level-cache term): a kernel whose working set (its ``bytes``: every input
  it reads and output it writes) fits the device's L2 (``l2_bytes``, the profile's
  ``onchip_mb``) reads inputs the previous kernel just wrote from L2, not DRAM, and streams at
  ``1 + l2_gain`` times its DRAM-streaming bandwidth; ``s`` is a smooth step in the ratio
  ``x = bytes / l2_bytes`` (``s(0.1) = 0.99``, ``s(1) = 0.5``, ``s(10) = 0.0099`` at power 2):
  the DRAM term is untouched for working sets several times the cache.  Why: in-model timings (the measurements the constants
  are fitted on, and the kernels opcost predicts) run each op on its producer's output, so
  memory-bound kernels up to the L2 size beat the DRAM roofline (vidur's A100 add: about
  2,035 GB/s at 35 MB, A40 add about 1.5x its DRAM rate at 3-10 MB); XLA's GPU cost model
  charges re-reads of a buffer that fits L2 at 2.5x the DRAM rate
  (shared/reference/digest_latency_modeling.md, mechanism 3).  Without the term one global
  ``e_bw`` has to average the cache-resident and the DRAM-streaming regimes and is wrong in
  both; with it ``e_bw`` is the DRAM-streaming fraction, identified on rows far above the cache
  and comparable across devices, and the cache size is the device's own.  ``l2_gain = 0`` (the
  default when a constants file has no value) or an unknown cache size (``l2_bytes = 0``)
  switches the term off.  Computed as ``(1 - tanh(p/2 * ln x)) / 2``: no overflow, finite gradients.
  That is the warm L2 state; a GPU kernel started with the L2 flushed (``prediction.l2_state``:
  cold) gets ``l2_bytes = 0`` from the lowering: ``s = 0``, every byte from DRAM, no cache gain.
- ``l2_floor`` (0..1; 0: off): the share of the class floor a warm start saves, times the same
  step ``s``: a kernel whose first operand tiles are in the L2 starts sooner than one that waits
  for DRAM (``warm_share``; ``l2_start_s``, the seconds it saves, is what ``kernels.kernel_terms``
  takes off the lowering's fixed cost).  Cold: ``s = 0``, the floor.
  The Hopper ``bgemm`` set's (``bench/hopper_bgemm.py``, fitted on the H200's L2-warm kernel sums;
  its floor is the pooled GEMM floor, fitted on graph replays, which their flushed kernel sums
  match: docs/accuracy.md, "GPU, H200 single ops").
- ``cold_start_s`` (seconds; 0: off): a set whose floor was measured with the L2 warm adds it
  times ``1 - s`` (``cold_start``): flushed (``s = 0``) or far over the L2, its first loads wait for
  DRAM. The Hopper memory-bound sets' (``bench/hopper_cold_start.py``: the H200's flushed-minus-warm
  kernel sums of calls far under its L2).  ``l2_start_s`` is what the L2 state takes off the fixed
  cost: ``floor x l2_floor x s - cold_start_s x (1 - s)``.
- ``reread_bytes`` / ``row_bytes`` (features; 0 or absent: none) with the profile scalars
  ``softmax_reread`` and ``softmax_l2_row`` (in ``consts``; absent: off): PyTorch's long-row CUDA
  softmax reads its rows again (``prediction.softmax_passes``).  Where ``row_bytes <=
  softmax_l2_row`` the re-reads are L2-served (``reread_l2``: they join the per-SM bytes only,
  as ``l2_hit`` prices bytes that skip DRAM); else DRAM-served (``reread_dram``: they join the
  per-SM bytes and ``dram_bytes``).  The cache step keeps the count's ``bytes``: a re-read is not
  more footprint.
- ``index_ids`` / ``index_slice`` (features; 0 or absent: none) with the profile scalar
  ``index_iter_s`` (in ``consts``; absent: off): PyTorch's small-index gather, an ``index_select``
  of 16 ids or fewer, whose every thread steps through the ids one after the other
  (``prediction.small_index``): ``index_loop_s = max(steps - 1, 0) x index_iter_s``, ``steps =
  ids x ceil(slice / (grid x block))`` with the kernel's grid over ``units`` SMs, added to the
  memory time (a chain of dependent loads: latency, not bandwidth).  On the same features the id
  load before the row load (``prediction.gather_latency``): ``memory x gather_rate + gather_dep_s``.
- ``row_kind`` / ``row_m`` / ``row_n`` (features; 0 or absent: none) with the profile's ``row_*``
  constants (in ``consts``; absent: off): PyTorch's LayerNorm, RMS norm and softmax kernels, one
  block or warp per row, ``row_s = ceil(M / (SMs x rows per SM)) x (c0 + steps x c_step) / clock``
  added to the memory time or overlapped with it, per kind (``prediction.row_kernels``).
- ``bpc`` (the per-SM term, issue #10): many memory-bound kernels never reach DRAM bandwidth;
  each SM moves a roughly fixed number of bytes per cycle for a given kernel (its memory-level
  parallelism / issue rate: the digest's mechanism 4, XLA caps bandwidth by active SMs at
  ``blocks * clock * 32 B``).  That rate is what transfers across devices: vidur's 2024 rmsnorm
  reaches 0.33 of the A100's DRAM bandwidth and 0.6 of the A40's, 4-5 bytes per SM-cycle on
  both's large rows; as a DRAM fraction it is off by 2x when carried over, as bytes per SM-cycle
  it is not.  The term adds ``bytes / (units * clock_hz * bpc)`` (Little's law: a kernel waits
  for DRAM and for its own SM-side issue in turn): a high ``bpc`` is DRAM-bound, a low one
  SM-bound, on any device.  ``l2_hit`` (0..1): the share of the bytes of a working set that fits
  the L2 that skips DRAM (they cost only the SM term): the cache regime is set by the device's
  own SM rate, not a multiple of its DRAM bandwidth (which does not transfer between a 6 MB GDDR6
  and a 40 MB HBM part).  ``sm_bw`` is derived by ``with_clock`` from ``bpc`` and a profile's
  clock (0 when either is unknown: off), never stored.  ``bpc = l2_hit = 0``: no term.
  ``sm_overlap = 1`` (a switch; 0 or absent: the sum): the memory time is the larger of the DRAM
  and per-SM terms, not their sum.  A vectorized streaming kernel with enough bytes in flight
  overlaps its SM-side issue with DRAM transfers (bench/fit_aic_elementwise.py: vLLM's and
  TensorRT-LLM's 16-byte-load quantize kernels reach 0.77-0.89 of DRAM bandwidth above 1.6 GB on
  GDDR and HBM parts alike and stream L2-resident inputs at a rate per SM-cycle set by the SMs:
  summing the two terms cannot give both, the larger of them does).  An SM-bound kernel takes it
  too, its DRAM ramp and cache share at 0 (the ``-pytorch2.3`` gather sets: PyTorch's 2024
  index_select moves about 2 bytes per SM-cycle on the A100 and the A40, 0.15 and 0.48 of their
  DRAM bandwidths; a DRAM term summed in would not carry between them).
  A set with ``per_element = 1`` issues per element, not per byte: its term scales by
  ``BPC_ELEM_BYTES / elem_bytes`` (``elem_bytes`` 0, unknown: per byte); the DRAM term stays per
  byte.  PyTorch's index_select gather before its vectorized rewrite (75 G elements/s on an A100
  at fp16 and fp32, bench/data/liger/README.md), and its LayerNorm, softmax and activation
  kernels, which load each element and compute in fp32 (their acc_type) whatever the storage
  dtype: the NVIDIA families' norm, activation and softmax sets (bench/efficiency_data.PER_ELEMENT).
- ``floor_clock_hz``: the clock of the device a set was fitted on. A kernel's floor (launch to
  first instruction, block scheduling, the last wave's drain) is a number of cycles, so
  ``with_clock`` scales it by ``floor_clock_hz / clock_hz`` for a device with a stated clock: the
  A100-fitted floors on the A40 (1.74 GHz) and the H200 (1.98 GHz), scored cross-device, improved
  in every pair with known clocks (`bench/fit_efficiency.py`'s report: norm 21.9% -> 17.1%
  A100 -> A40, 19.9% -> 11.8% A40 -> A100, GEMM 28.6% -> 16.2% A100 -> H200). 0: fixed seconds.
- ``par_s`` / ``b_par`` (a calibrated multi-threaded CPU): ``floor_s`` grows by
  ``par_s * p(bytes / b_par)``, ``p(x) = x**4 / (1 + x**4)``: onnxruntime splits a kernel over its
  threads only above a cost threshold, and a split kernel pays the pool's fork/join.
- GEMV-like shapes: ``bytes`` carries the weights (a skinny GEMM streams them: the memory term).
- ``onchip_bytes`` (``hw``, per kernel, per launch; absent: 0): the activation bytes an NPU
  runtime keeps in the NPU's own scratch memory (the ``qnn`` runtime's VTCM rule,
  ``accelerators/qnn.py``): they never reach DRAM, and each costs ``onchip_cost`` (``hw``; a
  family's fitted scalar) of a DRAM byte's time; the weights always come from DRAM.

Pure array code (no Python branching on values): pass ``numpy`` or ``jax.numpy`` as ``xp``; under
JAX it jits, vmaps and differentiates (almost everywhere: the ceilings and the max have kinks).
"""

from __future__ import annotations

from typing import Any, Mapping


from analyzer.prediction import gather_latency, row_kernels, softmax_passes
from analyzer.prediction.efficiency.cache_clock import (  # noqa: F401  (re-exported: one import for callers)
    L2_STEP_POWER, cold_start, l2_step, warm_share, with_clock)
from analyzer.prediction.efficiency.op_classes import (  # noqa: F401  (re-exported: one import for callers)
    CLASS_CODE, CLASS_FALLBACK, MATRIX_CLASSES, OP_CLASSES, POOLED_CLASSES, REFINES, SIMT_CLASS, SOFTMAX_WARP_ROW,
    class_chain, gemm_view, op_class_of)
from analyzer.prediction.efficiency.tiles import (  # noqa: F401  (re-exported: one import for callers)
    LIBRARY_TILES, MMA_GRANULE, SPLIT_K, SPLIT_K_MIN_K, boost_share, boost_window, kloop_bound, tiled_work,
    wave_split)

BPC_ELEM_BYTES = 2.0   # a per-element set's (``per_element = 1``) bpc is fitted at 2 bytes an element
# per-class constant arrays a constants set carries (keys of ``FamilyConstants.arrays``)
FILE_PARAMS = ("e_compute", "e_bw", "b_half_bytes", "floor_s", "tile_m", "tile_n", "wave_alpha", "l2_gain",
               "bpc", "l2_hit", "n_half", "par_s", "b_par", "piece_s", "im2col_s", "im2col_stride_s",
               "serial_s", "k_block", "per_element", "floor_clock_hz", "sm_overlap", "mult_share", "whole_tile",
               "k_fill", "dot_call_s", "floor_own", "l2_floor", "cold_start_s", "kloop_cycles", "kloop_sum",
               "out_s")
# ``sm_bw`` (bytes per second per SM) and ``kloop_s`` (seconds per k-loop element) are derived per
# device (with_clock), never read from a file
CLASS_PARAMS = FILE_PARAMS + ("sm_bw", "kloop_s")
# values a constants file may leave out (older files: no cache term, no per-SM term)
PARAM_DEFAULTS = dict.fromkeys(("l2_gain", "bpc", "l2_hit", "sm_bw", "n_half", "par_s", "b_par", "piece_s",
                                "im2col_s", "im2col_stride_s", "serial_s", "k_block", "per_element",
                                "floor_clock_hz", "sm_overlap", "mult_share", "whole_tile", "k_fill",
                                "dot_call_s", "floor_own", "l2_floor", "cold_start_s", "kloop_cycles", "kloop_sum",
                                "kloop_s", "out_s"),
                               0.0)
# the optional fixed CPU terms (class_fixed_s): (constant, a calibration table's key, seconds per unit)
CPU_FIXED_KEYS = (("piece_s", "piece_us", 1e-6), ("im2col_s", "im2col_ns", 1e-9),
                  ("im2col_stride_s", "im2col_stride_ns", 1e-9), ("serial_s", "serial_ns", 1e-9),
                  ("dot_call_s", "dot_call_us", 1e-6), ("out_s", "out_ns", 1e-9))
# the cache step s(x) = 1 / (1 + x**p), x = working set / L2, fixed: p = 2 matches vidur's A40 add (about
# 1.5x the DRAM rate at 0.5-1.5x L2, 1.07x at 2-5x, none above); other powers were not compared
SCALAR_PARAMS = ("trans_weight",)
# optional scalars of a family (0 where absent): the per-inference fixed seconds added once per
# prediction by the runtimes that time a whole graph call (``qnn``: W8A8 (int8) graphs and the others;
# ``xla`` on a TPU: ``run_fixed_s``, a jitted call's launch, ``xla_tpu``), and ``onchip_cost`` (``qnn``),
# the time of an activation byte kept in the NPU's on-chip memory as a fraction of a DRAM byte's, and
# ``qnn_deploy_s`` / ``qnn_deploy_int8_s`` (``qnn``): the per-inference difference between two deployments;
# ``qnn_w8a16_share`` (``qnn``): a w8a16 kernel's rate as a fraction of the int8 matrix peak;
# ``qnn_dw_output_rate`` (``qnn``): a W8A8 depthwise kernel's output elements per second
RUN_PARAMS = ("run_fixed_s", "run_fixed_int8_s", "onchip_cost", "qnn_deploy_s", "qnn_deploy_int8_s",
              "qnn_w8a16_share", "qnn_dw_output_rate")
# the thread-split step p(x) = x**p / (1 + x**p), x = bytes / b_par, fixed: onnxruntime splits a kernel
# above a cost threshold (p = 4 goes from 6 % to 94 % of the cost over a factor 4 in size)
PAR_STEP_POWER = 4.0


def kernel_time(xp, feats: Mapping[str, Any], hw: Mapping[str, Any], consts, detail: bool = False) -> dict:
    """Kernel time of N kernels on one device (or arrays broadcastable to [N]).

    ``feats``: ``op_class`` (int codes, ``CLASS_CODE``), ``mac_flops``, ``vec_flops``,
    ``trans_flops``, ``bytes``; optional ``m``, ``n``, ``k``, ``batch`` (GEMM view, 0 where not
    applicable), ``elem_bytes`` (of the kernel's dtype; 0 or absent: unknown).  ``hw``:
    ``matrix_peak``, ``vector_peak`` (FLOP/s for the dtype), ``mem_bw`` (B/s), ``units`` (SM
    count; 0 = unknown), ``l2_bytes`` (last-level cache, bytes; 0 or absent: no cache term),
    optional ``onchip_bytes`` (per kernel: bytes kept on chip, not charged to DRAM) and
    ``onchip_cost`` (the time of one of them as a fraction of a DRAM byte's).
    ``consts``: a ``FamilyConstants`` or a mapping of the arrays in ``CLASS_PARAMS`` (length
    ``len(OP_CLASSES)``; ``l2_gain``, ``l2_hit``, ``sm_bw`` may be absent: 0) plus ``trans_weight``;
    ``sm_bw`` comes from ``with_clock``.  Returns seconds: ``compute_s``, ``memory_s``,
    ``floor_s``, ``time_s`` and ``l2_start_s`` (what the L2 state takes off the fixed cost: a warm
    start's saving less a cold start)."""
    arrays = getattr(consts, "arrays", consts)
    cls = xp.asarray(feats["op_class"]).astype(xp.int32)
    mac = xp.asarray(feats["mac_flops"])
    zeros = xp.zeros_like(mac)

    def feat(name):
        return xp.asarray(feats[name]) if name in feats else zeros

    vec, trans, nbytes = feat("vec_flops"), feat("trans_flops"), feat("bytes")
    m, n, k, batch, eb = feat("m"), feat("n"), feat("k"), feat("batch"), feat("elem_bytes")

    def per(name):
        return xp.take(xp.asarray(arrays[name]), cls)

    e_c, e_bw, b_half, floor = per("e_compute"), per("e_bw"), per("b_half_bytes"), per("floor_s")
    tm, tn, waves_on = per("tile_m"), per("tile_n"), per("wave_alpha") > 0
    gain = per("l2_gain") if "l2_gain" in arrays else zeros
    hit = per("l2_hit") if "l2_hit" in arrays else zeros
    sm_bw = per("sm_bw") if "sm_bw" in arrays else zeros
    trans_w = xp.asarray(arrays["trans_weight"])
    units = xp.asarray(hw.get("units", 0.0)) * xp.ones_like(mac)
    tiled, work, wave, split, narrow, algo = tiled_work(xp, per, arrays, zeros, mac, m, n, k, batch,
                                                         tm, tn, waves_on, units)
    tiles_s = boost_window(xp, work / (xp.asarray(hw["matrix_peak"]) * e_c) * wave * narrow, arrays)
    matrix, kloop_d = kloop_bound(xp, per, arrays, zeros, k, tiles_s)
    compute = matrix + (vec + trans_w * trans) / (xp.asarray(hw["vector_peak"]) * e_c)
    step = l2_step(xp, nbytes, hw.get("l2_bytes", 0.0))
    # (split-K's fp32 partial sums, m x n x split x 4 bytes, are not charged: for the small grids
    # that split they stay in the L2, 1.6 MB for a 49 x 512 output in 16 slices)
    mbytes = nbytes
    # an NPU runtime's activations kept in the NPU's own scratch memory (``onchip_bytes``, per
    # launch: the ``qnn`` runtime's VTCM rule) never reach DRAM; 0 (absent) everywhere else
    kept = xp.asarray(hw["onchip_bytes"]) if "onchip_bytes" in hw else 0.0
    dram_bytes = (mbytes - kept) * (1.0 - hit * step)
    # PyTorch's long-row CUDA softmax re-reads (``softmax_passes``): L2-served (per-SM term only) or DRAM
    l2_reread, dram_reread = softmax_passes.rereads_of(xp, feat("reread_bytes"), feat("row_bytes"), arrays)
    mbytes, dram_bytes = mbytes + l2_reread + dram_reread, dram_bytes + dram_reread
    ramp_bytes = dram_bytes + b_half  # bytes / (bw * e * b/(b+h)) = (b + h) / (bw * e)
    if "onchip_bytes" in hw:   # an on-chip byte costs onchip_cost of a DRAM byte's time
        ramp_bytes = ramp_bytes + kept * xp.asarray(hw.get("onchip_cost", 0.0))
    # a negative b_half (a calibrated CPU's cache ramp: small working sets beat DRAM) never
    # makes the memory time negative
    cache = 1.0 + gain * step
    dram = xp.maximum(ramp_bytes, 0.0) / (xp.asarray(hw["mem_bw"]) * e_bw * cache)
    # the per-SM term: off where the class has no rate or the device's SM count or clock is unknown
    sm_on = (sm_bw > 0) & (units > 0)
    per_el = ((per("per_element") if "per_element" in arrays else zeros) > 0) & (eb > 0)
    sm_bytes = mbytes * xp.where(per_el, BPC_ELEM_BYTES / xp.where(per_el, eb, 1.0), 1.0)
    sm = xp.where(sm_on, sm_bytes / (xp.where(sm_on, units * sm_bw, 1.0)), 0.0)
    on, overlap = nbytes > 0, (per("sm_overlap") if "sm_overlap" in arrays else zeros) > 0
    memory, serial_d = serial_terms(xp, xp.where(on, xp.where(overlap, xp.maximum(dram, sm), dram + sm), 0.0),
                                    feat, units, eb, arrays)
    fixed, warm, cold = fixed_terms(xp, floor, nbytes, cls, arrays, hw, m, k, n, batch, feat)
    time = fixed + xp.maximum(compute, memory)
    out = {"compute_s": compute, "memory_s": memory, "floor_s": fixed + zeros, "time_s": time, "l2_start_s": floor * warm - cold}
    if detail:
        out.update(_detail(xp, tiled, mac, work / algo, wave, split, narrow, compute, vec, trans, trans_w, hw, e_c,
                           mbytes, dram_bytes, on, cache, b_half, dram, sm, sm_on, units, sm_bw, floor,
                           kept * xp.ones_like(mac)), warm_start=warm + zeros, cold_start_s=cold + zeros)
        out.update(**softmax_passes.reread_detail(xp, l2_reread, dram_reread, feat("row_bytes"), arrays, zeros + 1.0),
                   **{name: v + zeros for name, v in serial_d.items()},
                   onchip_cost=xp.asarray(hw.get("onchip_cost", 0.0)) + zeros, algo=algo + zeros,
                   **kloop_d,
                   clock=boost_share(xp, kloop_d["tiles_s"], arrays))   # (the tiles' time: matrix_s without a k loop)
    return out


def fixed_terms(xp, floor, nbytes, cls, arrays, hw, m, k, n, batch, feat):
    """(fixed seconds, warm share, cold seconds) per kernel: ``floor x (1 - l2_floor x s) +
    cold_start_s x (1 - s) + class_fixed_s`` (``warm_share``, ``cold_start``: the L2 state's start;
    ``class_fixed_s``: the CPU and batched-kernel fixed terms)."""
    l2 = hw.get("l2_bytes", 0.0)
    warm, cold = warm_share(xp, arrays, cls, nbytes, l2), cold_start(xp, arrays, cls, nbytes, l2)
    fixed = floor * (1.0 - warm) + cold + class_fixed_s(xp, nbytes, cls, arrays, m, k, batch, feat("strided"),
                                                        feat("serial_flops"), n=n)
    return fixed, warm, cold


def serial_terms(xp, memory, feat, units, eb, arrays):
    """(memory seconds with PyTorch's serial walks, their factors for ``detail``): the gathers'
    (``gather_latency.memory_s``: ``memory x gather_rate + index_loop_s + gather_dep_s``) and the
    row kernels' waves of rows (``row_kernels.combine``: ``row_s``, added or their max, per kind;
    a kernel is a gather or a row kernel, never both)."""
    memory, gather = gather_latency.memory_s(xp, memory, feat, units, eb, arrays)
    memory, rows = row_kernels.combine(xp, memory, feat("row_kind"), feat("row_m"), feat("row_n"), units, arrays)
    return memory, dict(rows, **gather)


def _detail(xp, tiled, mac, work, wave, split, narrow, compute, vec, trans, trans_w, hw, e_c, mbytes,
            dram_bytes, on, cache, b_half, dram, sm, sm_on, units, sm_bw, floor, kept):
    """Every factor of ``kernel_time``'s terms, per kernel (``Prediction.explain``): compute_s =
    matrix_s + vector_s, matrix_s = mac * pad * algo * wave * narrow / (matrix_peak * e_compute)
    (``pad``: the padded tiles' work over the direct count, a tile's ``k_fill`` steps included)
    (``algo``, the multiply share, is added by the caller);
    memory_s = dram_s + sm_s (or their max, ``sm_overlap``),
    dram_s = (dram_bytes + onchip_cost * onchip_bytes + b_half) / (mem_bw * e_bw * cache_gain),
    sm_s = bytes / sm_bw; cache_share = 1 - dram_bytes / (bytes - onchip_bytes) (``kept``: the
    bytes kept on chip)."""
    off = mbytes - kept
    return dict(pad=xp.where(tiled & (mac > 0), work / xp.where(mac > 0, mac, 1.0), 1.0), wave=wave,
               split_k=split, narrow=narrow, matrix_s=compute - (vec + trans_w * trans)
               / (xp.asarray(hw["vector_peak"]) * e_c),
               vector_s=(vec + trans_w * trans) / (xp.asarray(hw["vector_peak"]) * e_c),
               bytes=mbytes, dram_bytes=xp.where(on, dram_bytes, 0.0),
               cache_share=xp.where(on & (off > 0), 1.0 - dram_bytes / xp.where(off > 0, off, 1.0), 0.0),
               onchip_bytes=kept,
               cache_gain=cache, ramp_bytes=b_half, dram_s=xp.where(on, dram, 0.0), sm_s=xp.where(on, sm, 0.0),
               sm_bw=xp.where(sm_on, units * sm_bw, 0.0), class_floor_s=floor * xp.ones_like(mac))


def class_fixed_s(xp, nbytes, cls, arrays: Mapping[str, Any], m=0.0, k=0.0, batch=0.0, strided=0.0,
                  serial=0.0, n=0.0):
    """Seconds a calibrated CPU class adds to each kernel's fixed cost (0 where it has none: every
    GPU and TPU family): the fork/join of split kernels above 1 thread (``par_s`` stepping in at
    ``b_par`` bytes, ``p(x) = x**4 / (1 + x**4)``) plus, from the views, ``piece_s`` per extra piece
    of ``batch``, ``im2col_s`` per im2col element (``m x k x max(batch, 1)``), ``im2col_stride_s``
    more per element where ``strided`` (1), ``serial_s`` per ``serial`` FLOP (an RNN's recurrence),
    ``dot_call_s`` once where ``m`` > 1 and ``n`` > 1 (a dot that is not a matrix-vector product),
    ``out_s`` per output element (``m x n x max(batch, 1)``)."""
    out = xp.zeros_like(xp.asarray(nbytes, dtype=float))
    batch, im2col = xp.asarray(batch), xp.asarray(m) * xp.asarray(k) * xp.maximum(xp.asarray(batch), 1.0)
    dot = xp.where((xp.asarray(m) > 1.0) & (xp.asarray(n) > 1.0), 1.0, 0.0)
    outputs = xp.asarray(m) * xp.asarray(n) * xp.maximum(batch, 1.0)
    for name, count in (("piece_s", xp.maximum(batch - 1.0, 0.0)), ("im2col_s", im2col),
                        ("im2col_stride_s", im2col * xp.asarray(strided)), ("serial_s", xp.asarray(serial)),
                        ("dot_call_s", dot), ("out_s", outputs)):
        if name in arrays:
            out = out + xp.take(xp.asarray(arrays[name]), cls) * count
    if "par_s" not in arrays or "b_par" not in arrays:
        return out
    par_s = xp.take(xp.asarray(arrays["par_s"]), cls)
    b_par = xp.take(xp.asarray(arrays["b_par"]), cls)
    on = (par_s > 0) & (b_par > 0)
    return out + xp.where(on, par_s * (1.0 - l2_step(xp, nbytes, xp.where(on, b_par, 1.0), PAR_STEP_POWER)),
                             0.0)


def roofline_time(xp, feats: Mapping[str, Any], hw: Mapping[str, Any], overhead_s: float = 1.5e-6):
    """Today's datasheet roofline, for comparison: ``max(flops/peak, bytes/bw) + overhead``."""
    compute = (xp.asarray(feats["mac_flops"]) / xp.asarray(hw["matrix_peak"])
               + (xp.asarray(feats.get("vec_flops", 0.0)) + xp.asarray(feats.get("trans_flops", 0.0)))
               / xp.asarray(hw["vector_peak"]))
    return xp.maximum(compute, xp.asarray(feats["bytes"]) / xp.asarray(hw["mem_bw"])) + overhead_s
