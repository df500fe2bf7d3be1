"""The fit of the CPU kernel-time model (``calibrate``); predictions are the product's own path.

Pure functions of opcost's counts (no onnxruntime here). The form is ``efficiency.kernel_time``
(the jitted kernel's), evaluated here with one class's constants; a calibrated profile's
predictions go through ``analyzer.analyze(model, hw=profile)`` -> ``predict`` ->
``lowering.lower`` (which reads the ``[calibration.tables]``) -> ``kernels.run``.

The form (one kernel, seconds)
------------------------------
::

    t_kernel = floor_s + split + max(W / (peak * e_c),  (B + b_half) / (bw * e_bw * cache))
    cache    = 1 + l2_gain * s(B / l2_bytes),   s(x) = 1 / (1 + x**2)
    W        = F, or for the matrix classes (TILED_CLASSES) with a fitted tile_n: the work of
               the output columns padded to tile_n (and k to k_block where fitted: K_BLOCK_CLASSES),
               x (1 + (n_half / n_padded)**2)
    split    = par_s * x**4 / (1 + x**4), x = B / b_par   (fitted above 1 thread only)
               + piece_s * (batch - 1)                     (PIECE_CLASSES, rows with batch > 1)
    t_model  = run_overhead_s + sum over kernels (dispatch_s + t_kernel)

``F`` = opcost's flops of the node (mac + vector + transcendentals), ``B`` = its bytes (weights +
activations read + written), ``peak`` = the profile's measured fp32 matrix FLOP/s, ``bw`` = its
measured DRAM bandwidth. Per op class: ``floor_s``, ``e_c``, ``e_bw``, ``b_half``, ``l2_gain``.
``(B + b_half)/(bw e_bw)`` is the shared parameterisation's ``B / (bw e_bw b/(b + b_half))``
written without the division by B (identical for B > 0, defined at B = 0). ``cache`` is the
shared form's cache step (``efficiency.l2_step``) with ``l2_bytes`` = the L2 of the cores the
session runs on (per-core L2 x threads; ``calibrate``): a working set that fits the cores' own
L2 streams ``1 + l2_gain`` times faster than the class's L3/DRAM rate. On a 2-core EPYC (1 MB L2
per core) a GEMV with 0.26 MB of weights ran at 127 GB/s, with 2.4 MB at 96 GB/s; Add at
0.3-0.7 MB 130 GB/s, at 1.6-18 MB about 100 GB/s. Without the step one ``e_bw`` averaged the
two levels and tiny models (all weights in L2) were over-predicted by 20 %.

What the data on a 2-core EPYC (L2 1 MB/core, L3 32 MB) showed, and how the form absorbs it:
onnxruntime's elementwise kernels on a working set that fits the caches run *faster* than DRAM
bandwidth (calibration re-runs the same buffers, and a real network's activations are produced
just before they are read, so they are hot as well). So ``e_bw`` may exceed 1 (the fit bounds it
to [0.02, 8]) and ``b_half`` may be negative (bounded below by ``-B_min``, the smallest calibrated
size, so time stays positive): together they make the effective bandwidth of small/medium sizes
higher than DRAM's, which is the cache ramp of this machine. ``dispatch_s`` (the executor's
per-node cost outside the kernel, measured from a chain of N tiny ops) and ``run_overhead_s``
(one ``session.run``'s fixed cost) are machine constants, not per class.

``dispatch_s`` is separate from ``floor_s``: the calibration rows are wall-clock per node less
``dispatch_s``, so ``floor_s`` is what a kernel costs beyond the executor's per-node dispatch
(a calibrated profile's per-kernel fixed cost is ``floor_s + dispatch_s``: ``lowering``).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.measure.fit import nelder_mead

PARAMS = ("floor_s", "e_c", "e_bw", "b_half", "l2_gain")
# a row's kernel time is a difference of wall-clocks (row model - baseline - dispatch) whose
# run-to-run jitter is a few tenths of a microsecond: rows below this are fitted as this (a
# 0.01 us row would otherwise dominate the log-error fit of a class)
NOISE_FLOOR_S = 0.25e-6
# output columns per tile a calibration tries for the matrix classes (TILED_CLASSES): the fp32
# lanes of 128-, 256- and 512-bit vector registers, and two 512-bit registers
TILE_CANDIDATES = (4.0, 8.0, 16.0, 32.0)
# calibration classes whose rows are matrix kernels (a GEMM view: output columns to pad)
TILED_CLASSES = ("gemm", "conv", "conv_1x1", "conv1d")
# input-channel blocks a calibration tries for the pointwise convolutions at the levels with
# onnxruntime's NCHWc layout (efficiency's ``k_block``: MLAS blocks channels by its vector width,
# 8 fp32 with AVX2, 16 with AVX-512). 1 thread, 2-core AVX-512 EPYC, the conv_1x1 rows of runs aa
# and ab refitted: 7.4 / 7.7 % MAPE without, 4.2 / 4.1 % at 16 (8 changed nothing), its tile of
# output columns 8 -> 16; 2 threads 14.1 -> 11.3 %. The rows 1x1 24 -> 144 and 24 -> 128 at 52-56
# pixels had run at 0.73 and 0.72 of their prediction: their 24 input channels pad to 32.
K_BLOCKS = (8.0, 16.0)
K_BLOCK_CLASSES = ("conv_1x1",)
# A tiled kernel holds its output columns in vector registers; with one or two registers' worth
# its inner loop runs at part of its rate (efficiency's ``narrow``; onnxruntime 1.32, AVX-512
# EPYC, 1 thread: a 3x3 conv, 64 -> C_out channels at 64x64, 410 us at C_out 8-16, 602 at 32, 1145
# at 64, 2357 at 128: 286-295 us per 16 columns from 64 up, 1.43x that for the first 16: n_half
# about 10). A kernel split over threads pays the pool's fork/join (``par_s``): at 2 threads on a
# 2-core EPYC a chain of 20 LayerNorms over 2x16x64 took 40.8 us against 29.7 at 1 thread (2.0
# against 1.5 us a node), while 20 Adds of the same size (not split) took 11.5 us at both.
# The step is located by bytes for every class, although MLAS sizes a GEMM's threads by its
# multiplies (one per 64 K: 15x64x64 ran 0.84 us a node at 1 and 2 threads, 16x64x64 0.85 and
# 1.11): that rule, tried on the rows of 5 two-thread calibrations, fitted the gemm rows better
# (8.1-8.7 % MAPE against 8.8-9.5) but predicted the models worse (+0.3 to +2.2 points MAPE):
# the single-op rows overstate small kernels' fixed costs, which the byte step offsets.
# the largest fork/join cost of a kernel split over threads the fit may return (seconds), and
# the share by which the step must lower a class's loss to be kept (a step that explains
# nothing would only add noise to the class's other constants)
MAX_PAR_S = 4e-6
PAR_GAIN = 0.1
# the largest L2 gain the fit may return: L2 at 21x the class's L3/DRAM rate is beyond any
# measured cache ratio (the bound keeps a class without small rows from running away)
MAX_L2_GAIN = 20.0
# classes whose kernels loop over independent products (the view's batch: a batched MatMul's
# matrices, an Attention's batch x heads) and pay a fixed cost per extra one. onnxruntime 1.32 on a 2-core EPYC, 1 thread, single-op wall-clock (run overhead
# included): MatMul 16x16x16 4.00 / 4.60 / 5.17 / 8.24 us at batch 1 / 4 / 8 / 32 (0.14 us a
# matrix: 60 GFLOP/s, against 217 for 64x64x64); com.microsoft Attention (16 tokens, hidden 64,
# 4 heads) 8.6 / 13.0 / 21.8 us at batch 1 / 2 / 4 (4.4 us an item, 1.1 a head), at batch 1
# 6.8 / 7.1 / 8.6 / 12.9 us with 1 / 2 / 4 / 8 heads (0.9 us a head); a recurrent layer's steps x
# directions (2 threads: LSTM/GRU with H 64-128 took 1.3-2.4 us a step; with the serial FLOPs
# alone the 12 rnn rows fitted to 18.3 % MAPE, with a cost per step too to 7.4 %: 0.78 us a
# step; 1 thread: 3.8 -> 2.4 %, 0.39 us a step)
PIECE_CLASSES = ("gemm", "attention", "rnn")
# the largest per-piece cost the fit may return (seconds), and the share by which it must lower
# a class's loss to be kept
MAX_PIECE_S = 10e-6
PIECE_GAIN = 0.01
# a convolution that onnxruntime runs as im2col + GEMM (every rank-3 conv; at the levels without
# its NCHWc layout, every conv) copies its input into a k x m matrix first: a cost per element
# that its MACs do not carry. The 1-D rows of a 1-thread calibration (its saved rows refitted with
# bench/cpu_refit.py), least squares on relative error:
# a + b F 24.9 % MAPE, a + b F + c m k 18.2 % (c = 0.19 ns an element); the audio model's
# 1-channel stem (80 taps, 996 outputs: 80 K elements, 5.1 MFLOP) is predicted 34 us against 51
# profiled without it. IM2COL_CLASSES: fitted at every level; LAYOUT_FREE_IM2COL: also where
# onnxruntime's NCHWc layout is off. Kept where it lowers a class's loss by more than IM2COL_GAIN.
MAX_IM2COL_S = 2e-9
IM2COL_GAIN = 0.05
IM2COL_CLASSES = ("conv1d",)
LAYOUT_FREE_IM2COL = ("conv", "conv_dw")
# a recurrent layer (SERIAL_CLASSES) runs its input products for all steps as one GEMM, and its
# recurrent products as a chain of matrix-vector products, one per step and direction (at 2
# threads too: a bidirectional LSTM took 2.0x a forward one). onnxruntime 1.32, 1 thread, 10
# single LSTM/GRU models (T 8-128, I 128-512, H 128-256, one or two directions): least squares on
# relative error, a + F_in + F_rec 3.1 % MAPE (4.9 and 17.5 us per MFLOP), a + F 8.0 %: a
# recurrent FLOP costs 3.5x an input one. serial_s: its extra cost per FLOP (0 .. MAX_SERIAL_S),
# kept where it lowers the class's loss by more than SERIAL_GAIN.
SERIAL_CLASSES = ("rnn",)
MAX_SERIAL_S = 1e-10
SERIAL_GAIN = 0.05
# a dot that is not a matrix-vector product (its view's m > 1 and n > 1) pays a fixed cost per call
# beyond the class floor where the runtime runs it through a library that packs its operands and
# dispatches tasks (XLA's CPU backend: a YNNPACK fusion; a matrix-vector product runs in Eigen):
# dot_call_s, 0 .. MAX_DOT_CALL_S, fitted only where fit_class is asked (``dot_call``) and the
# class has rows of both kinds, kept where it lowers the class's loss by more than DOT_CALL_GAIN.
# Unlike the floor it stays on every such call inside a program (loop_launch replaces floors);
# inside a loop body the dot pays dot_trip_us a trip and dot_loop_us a loop instead (prediction.cpu.ynn_dot)
MAX_DOT_CALL_S = 10e-6
DOT_CALL_GAIN = 0.01
# a kernel that pays a cost per output element besides its MACs at the class's rate: XLA's CPU
# depthwise convolution (a YNNPACK fusion) took 26.4-29.1 ns an output at 3x3 (16 K to 590 K
# outputs, stride 1 and 2), 41-45 at 5x5, 62 at 7x7 on the 2-core EPYC calibration VM: about
# 19 ns + 0.9 ns a tap (its calibration rows), which the max of compute and memory did not fit
# (the class's floor went to 300 us). out_s: 0 .. MAX_OUT_S, fitted only where fit_class is asked
# (``per_output``), kept where it lowers the class's loss by more than OUT_GAIN
MAX_OUT_S = 1e-7
OUT_GAIN = 0.05
# a tiled fit's second start for the floor's parameter (sigmoid(3) = 0.95 of the smallest row)
FLOOR_START = 3.0
# fit_class's parameter vector, slot by slot: the base constants (floor, e_c, e_bw, b_half, the
# L2 gain), the tile's n_half, the thread-split step (par_s, b_par), the per-piece cost, the
# im2col cost, a strided im2col's extra, the serial FLOPs' cost, a library dot's cost per call,
# the cost per output element
(FLOOR, E_C, E_BW, B_HALF, L2_GAIN, N_HALF, PAR_S, B_PAR, PIECE_S, IM2COL_S, STRIDE_S,
 SERIAL_S, DOT_CALL, OUT_S) = range(14)
# slots PAR_S.. of a term not fitted (or not kept) hold these off values (_Fit.extra reads them
# as none)
OFF_SLOTS = (-60.0, 0.0, -60.0, -60.0, -60.0, -60.0, -60.0)
OFF = -50.0   # an optional slot at or below this: the term is off


def node_features(nodes: Iterable[Any], views: bool = False):
    """(op class per node, flops [N], bytes [N]) from opcost ``NodeCost``s: the class, FLOPs
    (mac + vector + transcendentals) and bytes lowering gives the same node. ``views``: also
    the matrix view ``[7, N]`` (mac flops, m, n, k, batch, strided, serial FLOPs; zeros for a
    node without one), what the tiled form reads (``kernel_time``'s ``view``)."""
    from analyzer.prediction.node_shapes import node_op_class, node_view

    classes, F, B, V = [], [], [], []
    for n in nodes:
        c = n.cost
        classes.append(node_op_class(n))
        F.append(float(c.mac_flops + c.vector_flops + c.transcendentals))
        B.append(float(c.bytes_moved))
        if views:
            V.append((float(c.mac_flops),) + node_view(n))
    out = classes, np.asarray(F, dtype=np.float64), np.asarray(B, dtype=np.float64)
    return out + (np.asarray(V, dtype=np.float64).reshape(-1, 7).T,) if views else out


def kernel_time(F, B, floor_s, e_c, e_bw, b_half, peak, bw, l2_gain=0.0, l2_bytes=0.0,
                view=None, tile_n=0.0, n_half=0.0, par_s=0.0, b_par=0.0, piece_s=0.0, im2col_s=0.0,
                im2col_stride_s=0.0, serial_s=0.0, k_block=0.0, dot_call_s=0.0, out_s=0.0):
    """The per-kernel form (seconds) for one class, numpy-broadcasting over ``F``/``B``: the
    product's ``efficiency.kernel_time`` with the class's constants (vector peak = matrix peak,
    transcendentals weighted 1), as the predictions evaluate it. ``l2_bytes`` 0: no cache step.
    ``view`` (``node_features(..., views=True)``'s, for the same rows) with ``tile_n`` > 0: the
    matrix work is padded to whole tiles of ``tile_n`` output columns (one row per tile:
    ``tile_m`` 1) and pays the narrow-tile factor of ``n_half``. ``par_s`` > 0: the fork/join
    of kernels split over threads, stepping in around ``b_par`` bytes. ``piece_s``: the fixed
    cost of each piece after the first of a ``view`` with batch > 1. ``im2col_s``: the cost per
    element (m x k x batch) of a ``view``'s im2col matrix, ``im2col_stride_s`` more where the
    view is strided (its sixth row), ``serial_s`` per serial FLOP (its seventh; a shorter view,
    as older saved rows hold: none). ``k_block`` > 0 (tiled): the view's k padded to whole blocks.
    ``dot_call_s``: once per row whose ``view`` has m > 1 and n > 1 (a library dot's call).
    ``out_s``: per output element of the ``view`` (m x n x max(batch, 1))."""
    F = np.atleast_1d(np.asarray(F, dtype=np.float64))
    B = np.atleast_1d(np.asarray(B, dtype=np.float64))
    z = np.zeros(1)
    tiled = view is not None and tile_n > 0
    consts = {"e_compute": z + e_c, "e_bw": z + e_bw, "b_half_bytes": z + b_half, "floor_s": z + floor_s,
              "tile_m": z + (1.0 if tiled else 0.0), "tile_n": z + (tile_n if tiled else 0.0),
              "wave_alpha": z, "l2_gain": z + l2_gain, "n_half": z + (n_half if tiled else 0.0),
              "k_block": z + (k_block if tiled else 0.0),
              "par_s": z + par_s, "b_par": z + b_par, "piece_s": z + piece_s,
              "im2col_s": z + (im2col_s if view is not None else 0.0),
              "im2col_stride_s": z + (im2col_stride_s if view is not None else 0.0),
              "serial_s": z + (serial_s if view is not None else 0.0),
              "dot_call_s": z + (dot_call_s if view is not None else 0.0),
              "out_s": z + (out_s if view is not None else 0.0), "trans_weight": 1.0}
    feats = {"op_class": np.zeros(np.broadcast(F, B).shape, np.int32), "mac_flops": F + 0 * B,
             "bytes": B + 0 * F}
    if view is not None:   # (untiled: tile_m 0, the work stays the flops; the batch counts pieces)
        mac, m, n, k, batch = (np.asarray(v, dtype=np.float64) for v in view[:5])
        feats.update({"mac_flops": mac, "vec_flops": F - mac, "m": m, "n": n, "k": k, "batch": batch})
        for j, name in ((5, "strided"), (6, "serial_flops")):
            if len(view) > j:
                feats[name] = np.asarray(view[j], dtype=np.float64)
    hw = {"matrix_peak": peak, "vector_peak": peak, "mem_bw": bw, "l2_bytes": float(l2_bytes)}
    return eff.kernel_time(np, feats, hw, consts)["time_s"]


# ---------------------------------------------------------------------------------------------
# the fit

def fit_class(F, B, t, peak: float, bw: float, l2_bytes: float = 0.0, view=None,
              tiles: Iterable[float] = (), parallel: bool = False, im2col: bool = False,
              k_blocks: Iterable[float] = (), noise_floor_s: float = NOISE_FLOOR_S,
              ramp_fixed: bool = True, dot_call: bool = False, per_output: bool = False) -> dict[str, float]:
    """Fit ``floor_s, e_c, e_bw, b_half`` (and ``l2_gain`` when ``l2_bytes`` > 0; else 0) of the
    form to measured kernel times ``t`` (seconds), minimising the squared log error (relative
    error: small and large kernels count alike). With a ``view`` (``node_features``'s) and
    candidate ``tiles`` (output columns per tile, e.g. ``TILE_CANDIDATES``), each tile is fitted
    too, with its ``n_half`` (0 .. 4 tiles), from the untiled fit's constants; the best of all
    (including no tile) is kept. ``parallel`` (rows measured at more than one thread): the
    thread-split step is fitted last (``par_s`` 0 .. 4 us, ``b_par`` within the rows' bytes)
    and kept where it lowers the loss by more than ``PAR_GAIN``. A ``view`` with rows of batch
    > 1: the per-piece cost ``piece_s`` (0 .. ``MAX_PIECE_S``) is fitted last, kept where it
    lowers the loss by more than 1 %. ``im2col`` with a ``view``: the cost per im2col element
    ``im2col_s`` (0 .. ``MAX_IM2COL_S``) is fitted last, kept where it lowers the loss by more
    than ``IM2COL_GAIN``. ``noise_floor_s``: rows under it are fitted as it (a runtime whose
    kernels cost less than onnxruntime's, XLA's, passes a lower one). ``k_blocks``: with each tile, the input depths (k) its kernels pad to
    are tried too (``k_block``; 0 kept among them: no padding). ``ramp_fixed`` False: ``b_half`` <= 0,
    so a kernel's whole fixed cost is ``floor_s`` (a positive ``b_half`` is a fixed cost
    ``b_half / (bw e_bw cache)`` that a runtime pricing launches apart from the floor would keep).
    ``dot_call`` with a ``view`` holding rows with m > 1 and n > 1 and rows without: the cost per
    call of such a dot ``dot_call_s`` (0 .. ``MAX_DOT_CALL_S``) is fitted last, kept where it lowers
    the loss by more than ``DOT_CALL_GAIN``. ``per_output`` with a ``view``: the cost per output
    element ``out_s`` (0 .. ``MAX_OUT_S``) is fitted last, kept where it lowers the loss by more
    than ``OUT_GAIN``. Returns the constants (``tile_n``/``n_half`` 0: untiled;
    ``par_s``/``b_par`` 0: no step; ``piece_s`` 0: none) plus ``fit_mape`` (%) and ``rows``."""
    F = np.asarray(F, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    ok = t > 0
    # rows under the noise floor are fitted as it; a class all of whose rows are under it
    # (views: Reshape aliases its input, 0.02-0.09 us) is fitted at their median instead
    noise = noise_floor_s if (t[ok] > noise_floor_s).any() or not ok.any() else float(np.median(t[ok]))
    F, B, t = F[ok], B[ok], np.maximum(t[ok], noise)
    view = None if view is None else np.asarray(view, dtype=np.float64)[:, ok]
    # tiles only where a row has a matrix view (a class without one has nothing to pad)
    tiles = tuple(tiles) if view is not None and (view[2] > 0).any() else ()
    fit = _Fit(F, B, t, peak, bw, l2_bytes, view)
    fit.ramp_fixed = ramp_fixed
    fit.untiled()
    fit.tiled(tiles, tuple(k_blocks))
    if parallel and len(t) >= 6:   # the step low, mid and high in the rows' bytes
        fit.stage(PAR_S, [(-1.0, b0) for b0 in (-1.5, 0.0, 1.5)], PAR_GAIN, (0.3, 0.2, 0.2, 0.3, 0.3, 0.3))
    if view is not None and (view[4] > 1).any():   # about 0.2 and 2.7 us a piece
        fit.stage(PIECE_S, [(-4.0,), (-1.0,)], PIECE_GAIN)
    if im2col and view is not None and (view[3] > 0).any() and len(t) >= 6:   # about 0.04, 0.5 ns
        # with strided and unstrided rows, a strided one's extra cost is fitted with it
        both = len(view) > 5 and (view[5] > 0).any() and ((view[5] == 0) & (view[3] > 0)).any()
        fit.stage(IM2COL_S, [(a, b_) for a in (-4.0, -1.0) for b_ in (-4.0, -1.0)] if both else [(-4.0,), (-1.0,)],
                  IM2COL_GAIN)
    if view is not None and len(view) > 6 and (view[6] > 0).any() and len(t) >= 6:   # about 2, 27 ps
        fit.stage(SERIAL_S, [(-4.0,), (-1.0,)], SERIAL_GAIN)
    if dot_call and view is not None and len(np.unique(_dots(view))) == 2:   # about 0.18 and 2.7 us
        fit.stage(DOT_CALL, [(-4.0,), (-1.0,)], DOT_CALL_GAIN)
    if per_output and view is not None and len(t) >= 4:   # about 2 and 27 ns an output
        fit.stage(OUT_S, [(-4.0,), (-1.0,)], OUT_GAIN)
    return fit.result()


def _dots(view) -> np.ndarray:
    """1 where a view's row is a dot that is not a matrix-vector product (m > 1 and n > 1), else 0."""
    return ((view[1] > 1) & (view[2] > 1)).astype(np.float64)


def _sig(v):
    return 1.0 / (1 + math.exp(min(max(-v, -50.0), 50.0)))


class _Fit:
    """One class's fit in hand: the rows, the machine figures, the best parameter vector so far
    (``best``: (x, loss, tile, k_block)); ``fit_class`` runs its steps in order."""

    def __init__(self, F, B, t, peak: float, bw: float, l2_bytes: float, view):
        self.F, self.B, self.t, self.peak, self.bw, self.l2_bytes, self.view = F, B, t, peak, bw, l2_bytes, view
        self.bmin = float(B[B > 0].min()) if (B > 0).any() else 0.0
        self.tmin = float(t.min())
        self.with_cache = l2_bytes > 0 and (B > 0).any()
        self.lo_b = math.log(max(self.bmin, 1.0))
        self.hi_b = math.log(max(float(B.max()) if len(B) else 1.0, 2.0))
        self.k_block = 0.0   # the k block of the fit in hand (the tiled fits set it)
        self.ramp_fixed = True   # False: b_half <= 0 (fit_class's ``ramp_fixed``)
        self.best = None

    def unpack(self, x):
        """(floor, e_c, e_bw, b_half, l2 gain) of a parameter vector."""
        tmin, bmin = self.tmin, self.bmin
        floor = tmin / (1 + math.exp(min(max(-x[FLOOR], -50.0), 50.0)))   # 0 .. smallest time
        e_c = min(max(math.exp(min(max(x[E_C], -20.0), 5.0)), 1e-4), 4.0)
        e_bw = min(max(math.exp(min(max(x[E_BW], -20.0), 5.0)), 0.02), 8.0)
        b_half = bmin * math.tanh(x[B_HALF]) if x[B_HALF] < 0 else bmin * math.expm1(min(x[B_HALF], 12.0))
        # the L2 step's gain: 0 .. MAX_L2_GAIN (x[L2_GAIN] = -inf without the step)
        gain = MAX_L2_GAIN / (1 + math.exp(min(max(-x[L2_GAIN], -50.0), 50.0))) if self.with_cache else 0.0
        # the ramp's fixed part (b_half at the cached rate) is a fixed cost too: with the floor,
        # no more than the smallest row's time (a 2-thread gemm fit had put 128 KB there:
        # 0.8 us on every kernel, a 10-wide classifier Gemm predicted 1.1 us, 0.24 in its model)
        b_half = min(b_half, (tmin - floor) * self.bw * e_bw * (1 + gain), math.inf if self.ramp_fixed else 0.0)
        return floor, e_c, e_bw, b_half, gain

    def dot_call(self, x) -> float:
        """``dot_call_s`` of a parameter vector (0: the slot off or absent)."""
        return MAX_DOT_CALL_S * _sig(x[DOT_CALL]) if len(x) > DOT_CALL and x[DOT_CALL] > OFF else 0.0

    def per_out(self, x) -> float:
        """``out_s`` of a parameter vector (0: the slot off or absent)."""
        return MAX_OUT_S * _sig(x[OUT_S]) if len(x) > OUT_S and x[OUT_S] > OFF else 0.0

    def extra(self, x, tile):
        """(n_half, par_s, b_par, piece_s, im2col_s, im2col_stride_s, serial_s) of a parameter
        vector (an optional slot <= OFF, or absent: that term is none)."""
        def opt(i, top):
            return top * _sig(x[i]) if len(x) > i and x[i] > OFF else 0.0

        n_half = tile * 4.0 * _sig(x[N_HALF]) if tile else 0.0
        rest = (opt(PIECE_S, MAX_PIECE_S), opt(IM2COL_S, MAX_IM2COL_S), opt(STRIDE_S, MAX_IM2COL_S),
                opt(SERIAL_S, MAX_SERIAL_S))
        if len(x) <= B_PAR or x[PAR_S] <= OFF:
            return (n_half, 0.0, 0.0) + rest
        return (n_half, MAX_PAR_S * _sig(x[PAR_S]),
                math.exp(self.lo_b + (self.hi_b - self.lo_b) * _sig(x[B_PAR]))) + rest

    def loss(self, x, tile=0.0):
        """Mean squared log error of the form at ``x`` over the rows."""
        floor, e_c, e_bw, b_half, gain = self.unpack(x)
        pred = kernel_time(self.F, self.B, floor, e_c, e_bw, b_half, self.peak, self.bw, gain, self.l2_bytes,
                           self.view, tile, *self.extra(x, tile), k_block=self.k_block,
                           dot_call_s=self.dot_call(x), out_s=self.per_out(x))
        if np.any(pred <= 0):
            return 1e9
        return float(np.mean((np.log(pred) - np.log(self.t)) ** 2))

    def untiled(self) -> None:
        """The base constants, from a grid of starts around the best compute and bandwidth
        efficiencies seen."""
        F, B, t, peak, bw = self.F, self.B, self.t, self.peak, self.bw
        with np.errstate(divide="ignore", invalid="ignore"):
            ec0 = np.nanmax(np.where(F > 0, F / (t * peak), np.nan)) if (F > 0).any() else 1.0
            eb0 = np.nanmax(np.where(B > 0, B / (t * bw), np.nan)) if (B > 0).any() else 1.0
        ec0 = float(ec0) if np.isfinite(ec0) and ec0 > 0 else 1.0
        eb0 = float(eb0) if np.isfinite(eb0) and eb0 > 0 else 1.0
        best = None
        for f0 in (-2.0, 0.0, 2.0):
            for bh in (-1.0, 0.0, 1.5, 4.0):
                for g0 in ((-4.0, 0.0) if self.with_cache else (0.0,)):
                    x0 = [f0, math.log(ec0), math.log(eb0), bh, g0]
                    x, v = nelder_mead.minimize(self.loss, x0, [1.0, 0.5, 0.5, 1.0, 1.0])
                    x, v = nelder_mead.minimize(self.loss, x, [0.3, 0.2, 0.2, 0.3, 0.3])
                    if best is None or v < best[1]:
                        best = (x, v)
        self.best = (list(best[0]) + [0.0], best[1], 0.0, 0.0)

    def tiled(self, tiles: tuple, k_blocks: tuple) -> None:
        """Each candidate tile (and, with it, each k block) from the untiled constants; kept
        where it fits better."""
        untiled = self.best
        # the tiled fits start from the untiled constants, with its cache gain and with a gain of
        # about 1.5 (from the untiled gain alone, one calibration's gemm fit lost its gain: its GEMVs
        # under the L2 size came out 12 % slow)
        gains = (untiled[0][L2_GAIN], -2.5) if self.with_cache else (untiled[0][L2_GAIN],)
        # and from its floor, or where that sits at the smallest row's time (its sigmoid saturated:
        # flat to the simplex) from 0.95 of it too (a 1-thread conv fit had stayed at its untiled
        # floor, 6.8 us, 11.1 % MAPE; from 0.95: 1.6 us, 5.7 %; rows of another run 2 % apart: 6.2 %)
        floors = (untiled[0][FLOOR],) + ((FLOOR_START,) if untiled[0][FLOOR] > FLOOR_START else ())
        for tile in tiles:
            for self.k_block in (0.0,) + k_blocks:
                for nh0 in (-2.0, 0.0):   # n_half about 0.5 and 2 tiles
                    for g0, f0 in ((g, f) for g in gains for f in floors):
                        x0 = [f0] + list(untiled[0][E_C:L2_GAIN]) + [g0, nh0]
                        x, v = nelder_mead.minimize(lambda z, tile=tile: self.loss(z, tile), x0,
                                                    [1.0, 0.5, 0.5, 1.0, 1.0, 1.0])
                        x, v = nelder_mead.minimize(lambda z, tile=tile: self.loss(z, tile), x,
                                                    [0.3, 0.2, 0.2, 0.3, 0.3, 0.3])
                        if v < self.best[1]:
                            self.best = (list(x), v, tile, self.k_block)
        self.k_block = self.best[3]

    def stage(self, slot: int, tails, gain: float, refine=(0.3,) * 6) -> None:
        """Fit the optional term at parameter slots ``slot..`` from the best fit so far, from each
        start in ``tails``, the other constants refitted and the optional terms before it moving
        only where they were kept (at their off values otherwise); kept where it lowers the loss
        by more than ``gain``."""
        base, tile = self.best, self.best[2]
        x0 = list(base[0][:slot])
        x0 += list(OFF_SLOTS[len(x0) - PAR_S:slot - PAR_S])
        on = [0.3 if x0[PAR_S if i < PIECE_S else i] > OFF else 0.0 for i in range(PAR_S, slot)]
        for tail in tails:
            x, v = nelder_mead.minimize(lambda z: self.loss(z, tile), x0 + list(tail),
                                        [1.0, 0.5, 0.5, 1.0, 1.0, 1.0] + on + [1.0] * len(tail))
            x, v = nelder_mead.minimize(lambda z: self.loss(z, tile), x, list(refine) + on + [0.3] * len(tail))
            if v < self.best[1] and v < base[1] * (1 - gain):
                self.best = (list(x), v, tile, self.k_block)

    def result(self) -> dict[str, float]:
        """The constants of the best fit, with its MAPE (%) and row count."""
        x, _, tile, _ = self.best
        t = self.t
        floor, e_c, e_bw, b_half, gain = self.unpack(x)
        n_half, par_s, b_par, piece_s, im2col_s, stride_s, serial_s = self.extra(x, tile)
        pred = kernel_time(self.F, self.B, floor, e_c, e_bw, b_half, self.peak, self.bw, gain, self.l2_bytes,
                           self.view, tile, n_half, par_s, b_par, piece_s, im2col_s, stride_s, serial_s,
                           k_block=self.k_block, dot_call_s=self.dot_call(x), out_s=self.per_out(x))
        mape = float(np.mean(np.abs(pred - t) / t) * 100)
        return {"floor_s": floor, "e_c": e_c, "e_bw": e_bw, "b_half": b_half, "l2_gain": gain,
                "tile_n": float(tile), "n_half": float(n_half), "k_block": float(self.k_block) if tile else 0.0,
                "par_s": float(par_s), "b_par": float(b_par),
                "piece_s": float(piece_s), "im2col_s": float(im2col_s), "im2col_stride_s": float(stride_s),
                "serial_s": float(serial_s), "dot_call_s": float(self.dot_call(x)), "out_s": float(self.per_out(x)),
                "rows": int(len(t)), "fit_mape": mape}

