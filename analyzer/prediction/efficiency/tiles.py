"""The tiled GEMM classes' padded work and waves (``kernel_time``): the output tile a library
runs a GEMM on (the set's tile or a smaller library tile for a grid that would leave SMs idle),
the padding of m, n (to the tile or the MMA granule) and k (to whole ``k_block``s, plus a tile's
``k_fill`` prologue/epilogue steps per split-K slice), the wave factor over the device's SMs and
the split-K factor, and the narrow-output factor.  Array code over ``xp`` (numpy or jax.numpy)."""

from __future__ import annotations

MMA_GRANULE = 16.0  # rows/cols a tensor-core MMA instruction covers (m16n8k16 on Ampere..Blackwell)
# split-K factors a GEMM library chooses among for a grid of fewer tiles than the device has SMs
# (cuBLAS heuristics and CUTLASS's split-K / stream-K kernels use 2..16 and more slices), each
# slice keeping at least SPLIT_K_MIN_K of K (a slice shorter than a few k-blocks of a 64..128-row
# tile does not pay for its partial-sum pass)
SPLIT_K = (1, 2, 4, 8, 16)
# the smaller output tiles (rows, columns) a GEMM library also has for grids that do not fill
# the device's SMs (cuBLAS / CUTLASS tile shapes from 128 x 128 down to 32 x 32)
LIBRARY_TILES = ((128.0, 128.0), (128.0, 64.0), (64.0, 64.0), (64.0, 32.0), (32.0, 32.0))
SPLIT_K_MIN_K = 256.0


def tiled_work(xp, per, arrays, zeros, mac, m, n, k, batch, tm, tn, waves_on, units):
    """The tiled classes' padded work (FLOPs: 2 x padded m x padded n x (padded k + split x
    k_fill) x batch x the multiply share; ``mac`` elsewhere), their wave factor, split-K count
    and narrow-output factor, and ``tiled`` (a tiled class with a GEMM view)."""
    # padded tile work (tiled classes with a GEMM view only)
    tiled = (tm > 0) & (tn > 0) & (m > 0) & (n > 0) & (k > 0)
    b1 = xp.maximum(batch, 1.0)
    known = tiled & (units > 0) & waves_on
    # a kernel that runs its inputs in blocks of k_block channels pads k to whole blocks (0: none)
    kb = per("k_block") if "k_block" in arrays else zeros
    kb1 = xp.maximum(kb, 1.0)
    kp = _straight_through(xp, k, xp.where(kb > 0, xp.ceil(k / kb1) * kb1, k))
    whole = (per("whole_tile") if "whole_tile" in arrays else zeros) > 0
    mp, np_, wave, split = _tile_choice(xp, m, n, k, tm, tn, b1, units, known, whole)
    share = per("mult_share") if "mult_share" in arrays else zeros
    algo = xp.where(share > 0, share, 1.0)
    # k_fill: a tile's fixed prologue and epilogue, in steps of its k loop, paid by each split-K slice
    kf = per("k_fill") if "k_fill" in arrays else zeros
    work = xp.where(tiled, 2.0 * mp * np_ * (kp + split * kf) * b1, mac) * algo
    # narrow outputs: a tiled kernel with few (padded) columns runs its inner loop at part of
    # its rate (time x 1 + (n_half / n)^2; n_half 0: off)
    nh = per("n_half") if "n_half" in arrays else zeros
    narrow = xp.where(tiled, 1.0 + (nh / xp.maximum(np_, 1.0)) ** 2, 1.0)
    return tiled, work, wave, split, narrow, algo


def _straight_through(xp, x, padded):
    """``padded`` (x rounded up to whole blocks) with the derivative of ``x``: under JAX the
    step function's zero slope is replaced by 1 (``x + stop_gradient(padded - x)``), so a
    gradient taken through a padded ``k`` (``analyzer.search.grad``: more FLOPs = a deeper k)
    sees the work grow with k, at the block padding of the nominal shape; numpy: ``padded``."""
    if getattr(xp, "__name__", "").startswith("jax"):
        import jax

        return x + jax.lax.stop_gradient(padded - x)
    return padded


def _tile_choice(xp, m, n, k, tm, tn, b1, units, known, whole=False):
    """(m padded, n padded, wave, split) of the tile a library runs an m x n output (``b1``
    pieces) on: the set's tile, or where waves over the SMs are modelled (``known``) the one of
    the set's tile and the ``LIBRARY_TILES`` no larger than it, with its split-K factor
    (``wave_split``), whose padded work x waves is least (a library's heuristic picks smaller
    tiles and splits K for grids that would leave SMs idle; the first of equals).  The small
    tiles are the same for every family: a family's fitted tile (its large-grid tile) does not
    limit how finely a small grid is cut.  ``whole`` (the set's ``whole_tile``): the library
    runs only the set's tile, whole (see ``_padded``); its split-K factor is still chosen."""
    whole = xp.asarray(whole, dtype=bool)
    mp = np_ = mt = nt = wave = split = None
    for i, (lm, ln) in enumerate(((0.0, 0.0),) + LIBRARY_TILES):
        ok = known & ~whole & (lm <= tm) & (ln <= tn) if i else known | ~known
        tm_f = xp.where(ok & (i > 0), lm, tm)
        tn_f = xp.where(ok & (i > 0), ln, tn)
        c_mp, c_np, c_mt, c_nt = _padded(xp, m, n, tm_f, tn_f, whole)
        c_wave, c_split = wave_split(xp, c_mt * c_nt * b1, k, units, known)
        if mp is None:
            mp, np_, mt, nt, wave, split = c_mp, c_np, c_mt, c_nt, c_wave, c_split
            if _none_known(xp, known):
                break           # no library tile can be chosen (``ok`` False): the set's tile
            continue
        better = ok & (c_mp * c_np * c_wave < mp * np_ * wave * (1.0 - 1e-9))
        mp, np_, mt, nt = (xp.where(better, a, b) for a, b in ((c_mp, mp), (c_np, np_), (c_mt, mt), (c_nt, nt)))
        wave, split = xp.where(better, c_wave, wave), xp.where(better, c_split, split)
    return mp, np_, wave, split


def _padded(xp, m, n, tm, tn, whole=False):
    """(m padded, n padded, row tiles, column tiles) of an m x n output on tm x tn tiles.  A
    dimension smaller than its tile runs on a narrower tile (the library picks skinny/GEMV
    kernels): padded to the MMA granule only, so a GEMV is not charged a full 128-row tile (a
    tile narrower than the granule, a CPU's vector width, is its own granule).  ``whole``: the
    class's kernels run the whole tile whatever the shape (an FMA-unit sgemm computes every
    element of its tile with guarded loads; cuBLAS's batched sgemm kept one tile per GPU over
    NeuSight's bmm rows), so a dimension smaller than the tile pads to the tile: a 64-wide
    output on a 128-wide tile does the work of 128."""
    tm1, tn1 = xp.maximum(tm, 1.0), xp.maximum(tn, 1.0)
    mt, nt = xp.ceil(m / tm1), xp.ceil(n / tn1)
    gm = xp.where(whole, tm1, xp.minimum(tm1, MMA_GRANULE))
    gn = xp.where(whole, tn1, xp.minimum(tn1, MMA_GRANULE))
    mp = xp.where(m >= tm1, mt * tm1, xp.ceil(m / gm) * gm)
    np_ = xp.where(n >= tn1, nt * tn1, xp.ceil(n / gn) * gn)
    return mp, np_, mt, nt


def wave_split(xp, tiles, k, units, known):
    """(wave factor, split-K factor) of a tiled kernel of ``tiles`` output tiles over ``units`` SMs.

    A library fills a device whose SMs outnumber a GEMM's tiles by splitting K (cuBLAS's split-K,
    CUTLASS's stream-K): of the factors ``SPLIT_K`` whose slices keep at least ``SPLIT_K_MIN_K`` of
    K (1 always), the one with the best wave utilisation ``ctas / (ceil(ctas / units) * units)``,
    ``ctas = tiles * split`` (the smallest of equals).  ``wave = 1 / utilisation``: the kernel runs
    ``ceil(ctas / units)`` waves of ``units`` SMs, each SM at ``peak / units``, so a grid of 8 tiles
    on 148 SMs that cannot split runs at 8/148 of the peak; a bigger device with the same per-SM
    rate is never slower.  Where ``known`` is False (no tile view, or an unknown SM count): 1, 1."""
    u1 = xp.maximum(units, 1.0)
    t = xp.maximum(tiles, 1.0)
    if _none_known(xp, known):
        one = xp.where(known, xp.ones_like(t), 1.0)     # the values and shape of the loop's 1, 1
        return one, one.copy()
    best_u, best_s = xp.zeros_like(t), xp.ones_like(t)
    for s in SPLIT_K:
        ok = (k >= s * SPLIT_K_MIN_K) | (s == 1)
        ctas = t * s
        util = ctas / (xp.ceil(ctas / u1) * u1)
        better = ok & (util > best_u * (1.0 + 1e-9))
        best_u = xp.where(better, util, best_u)
        best_s = xp.where(better, float(s), best_s)
    return xp.where(known, 1.0 / best_u, 1.0), xp.where(known, best_s, 1.0)


def _none_known(xp, known) -> bool:
    """numpy arrays where ``known`` is False throughout (no GPU wave model, e.g. a CPU profile
    or a fit's rows): the library-tile and split-K searches cannot change the result, so they
    are skipped (the same values).  Under JAX (traced) the searches always run."""
    return getattr(xp, "__name__", "") == "numpy" and not xp.any(known)


def boost_window(xp, mat, arrays):
    """A power-capped card's matrix seconds ``mat`` (computed at its sustained clock ``s``) when it
    runs the kernel's first ``boost_window_s`` (``tau``) busy seconds at its boost clock ``b``:
    ``mat / r`` where that fits in ``tau``, else ``tau + (mat * s - b * tau) / s = mat - tau (r - 1)``
    (``r = boost_ratio = b / s``; the effective clock over busy time ``T`` is ``s + (b - s) min(1,
    tau / T)``).  Unchanged where the arrays carry no ``boost_ratio`` (1: no boost)."""
    if "boost_ratio" not in arrays:
        return mat
    r, tau = xp.asarray(arrays["boost_ratio"]), xp.asarray(arrays["boost_window_s"])
    at_boost = mat / r
    return xp.where(at_boost <= tau, at_boost, mat - tau * (r - 1.0))


def boost_share(xp, boosted, arrays):
    """``boost_window``'s matrix seconds over those at the sustained clock (1: no boost), from its
    output ``boosted``: the inverse is ``boosted * r`` within the window, else ``boosted + tau (r - 1)``."""
    if "boost_ratio" not in arrays:
        return xp.ones_like(boosted)
    r, tau = xp.asarray(arrays["boost_ratio"]), xp.asarray(arrays["boost_window_s"])
    at_sustained = xp.where(boosted <= tau, boosted * r, boosted + tau * (r - 1.0))
    return xp.where(at_sustained > 0, boosted / xp.where(at_sustained > 0, at_sustained, 1.0), 1.0)


def kloop_bound(xp, per, arrays, zeros, k, tiles_s):
    """(matrix seconds, their factors for ``detail``) of a tiled class's serial k loop: ``kloop =
    k x kloop_s`` (``kloop_s = kloop_cycles / clock_hz``, ``cache_clock.with_clock``; 0 where the
    class has none or the clock is unknown), a lower bound on its matrix time ``tiles_s``: matrix =
    max(tiles_s, kloop), or their sum where the set's ``kloop_sum`` is 1.  Why: on a grid of few
    CTAs each CTA walks the whole GEMM depth ``k`` one step after another, each step latency-bound
    (a load, then the FMAs that wait for it), so the time grows with ``k`` whatever the FLOPs:
    cuDNN 9's fp32 implicit-GEMM convolutions on an H200 at batch 1 took 2.3 us + k x 22.7 ns for
    1x1 and 3x3 layers alike (k 512..4608; docs/accuracy.md, "Hopper FMA-unit convolution sets"),
    about 45 cycles per element at 1.98 GHz."""
    step = per("kloop_s") if "kloop_s" in arrays else zeros
    kloop = xp.maximum(k, 0.0) * step
    add = (per("kloop_sum") if "kloop_sum" in arrays else zeros) > 0
    on = kloop > 0
    return (xp.where(add, tiles_s + kloop, xp.maximum(tiles_s, kloop)),
            {"kloop_s": kloop + zeros, "kloop_k": xp.where(on, k, 0.0), "kloop_step_s": xp.where(on, step, 0.0),
             "kloop_sum": xp.where(add, 1.0, 0.0) + zeros, "tiles_s": tiles_s + zeros})
