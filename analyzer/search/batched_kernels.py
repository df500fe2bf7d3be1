"""Batches: many lowered candidates through ONE jitted call, vmapped over candidates (and,
inside ``kernels.kernel_terms``, over profiles), sharded over the local JAX devices.

Candidates of different sizes share compiled kernels: each candidate's kernel arrays are padded
to a power-of-two bucket ``K_bucket`` (``kernels.bucket``) and the batch to a power-of-two
number of candidates (a multiple of the device count), so a search compiles a handful of
shapes once and reuses them.  Padded kernels are inactive (``active = 0``): they take no time.

The per-kernel times come back as float32 ``[C, P, K_bucket]`` and are summed in float64 on the
host, as ``predict`` sums them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from analyzer.prediction import kernels

FEATS = kernels.FEATS
TRACES = {"batch": 0}
_jitted = None


def _batched():
    global _jitted
    if _jitted is None:
        import jax

        def traced(feats, runs, active, mpeak, vpeak, bw, units, l2, consts, fixed, overlap, onchip=None):
            TRACES["batch"] += 1   # once per compilation
            if onchip is None:
                one = lambda f, r, a, mp, vp, fx: kernels.kernel_terms(   # noqa: E731
                    f, r, a, mp, vp, bw, units, l2, consts, fx, overlap)[3]
                return jax.vmap(one)(feats, runs, active, mpeak, vpeak, fixed)
            # the qnn runtime's activations kept on chip ([C, P, K] bytes, [P] their cost)
            two = lambda f, r, a, mp, vp, fx, kept: kernels.kernel_terms(   # noqa: E731
                f, r, a, mp, vp, bw, units, l2, consts, fx, overlap, (kept, onchip[1]))[3]
            return jax.vmap(two)(feats, runs, active, mpeak, vpeak, fixed, onchip[0])

        _jitted = jax.jit(traced)
    return _jitted


def pow2(n: int, at_least: int = 1) -> int:
    b = at_least
    while b < n:
        b *= 2
    return b


def devices() -> int:
    import jax

    return jax.local_device_count()


def shard(arrays, n_dev: int):
    """Put the candidate-batched ``arrays`` (a pytree, leading axis C) on a 1-D mesh of the
    local devices, split along C (identity with one device)."""
    if n_dev <= 1:
        return arrays
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.local_devices()), ("c",))
    return jax.device_put(arrays, NamedSharding(mesh, PartitionSpec("c")))


def _buckets(lows: Sequence) -> dict[int, list[int]]:
    """K bucket -> the positions in ``lows`` of its candidates."""
    by_bucket: dict[int, list[int]] = {}
    for i, low in enumerate(lows):
        by_bucket.setdefault(kernels.bucket(max(_count(low), 1)), []).append(i)
    return by_bucket


def kernel_times(lows: Sequence, overlap: bool = True) -> list[np.ndarray]:
    """Per-kernel times ``[P, K_c]`` (float64) of each ``lowering.Lowered`` in ``lows``; all
    share one runtime and one list of profiles.  One jitted call per K bucket."""
    out: list[np.ndarray | None] = [None] * len(lows)
    for kb, idx in _buckets(lows).items():
        time = _run_bucket([lows[i] for i in idx], kb, overlap)
        for c, i in enumerate(idx):
            out[i] = time[c, :, :_count(lows[i])].astype(np.float64)
    return out  # type: ignore[return-value]


def kernel_sums(lows: Sequence, overlap: bool = True) -> np.ndarray:
    """``[len(lows), P]``: each candidate's kernel times summed in float64 (what
    ``kernel_times`` gives, summed; a padded kernel takes exactly 0 s), a bucket at a time."""
    out = None
    for kb, idx in _buckets(lows).items():
        time = _run_bucket([lows[i] for i in idx], kb, overlap)
        sums = time[:len(idx)].astype(np.float64).sum(axis=2)
        if out is None:
            out = np.empty((len(lows), sums.shape[1]))
        out[idx] = sums
    return out if out is not None else np.zeros((0, 0))


def _count(low) -> int:
    """Its kernel count (a ``fastpath.kernel_cache.Kernels``' arrays are gathered only on
    use)."""
    ix = getattr(low, "ix", None)
    return len(ix) if ix is not None else len(low.runs)


def _run_bucket(lows, kb: int, overlap: bool) -> np.ndarray:
    n_dev = devices()
    C = len(lows)
    cb = pow2(C, max(8, n_dev))
    cb = -(-cb // n_dev) * n_dev
    first = lows[0]
    P = first.mem_bw.shape[0]
    group = next((g for g in (getattr(low, "group", None) for low in lows) if g is not None), None)
    if group is not None:
        # rows of one table (``fastpath.kernel_cache.Kernels``): the bucket gathered at once; padded
        # kernels, and those of any other candidate (lowered in full, e.g. one just learned
        # from: filled below), point at row 0 (finite values) and are inactive
        pad = [0] * kb
        ix = np.array([low.ix + pad[len(low.ix):] if getattr(low, "group", None) is group
                       else pad for low in lows] + [pad] * (cb - C), np.intp)
        n = np.zeros(cb, np.intp)
        n[:C] = [_count(low) for low in lows]
        active = (np.arange(kb) < n[:, None]).astype(np.float32)
        f, mp, vp, fx = group.take(ix)
        feats = {k: v.astype(np.int32 if k == "op_class" else np.float32) for k, v in f.items()}
        runs = group.runs[ix].astype(np.float32)
        mpeak, vpeak, fixed = (np.ascontiguousarray(a.transpose(1, 0, 2), np.float32)
                               for a in (mp, vp, fx))
        rest = [(c, low) for c, low in enumerate(lows) if getattr(low, "group", None) is not group]
    else:
        feats = {f: np.zeros((cb, kb), np.int32 if f == "op_class" else np.float32)
                 for f in FEATS}
        runs = np.ones((cb, kb), np.float32)
        active = np.zeros((cb, kb), np.float32)
        mpeak = np.ones((cb, P, kb), np.float32)
        vpeak = np.ones((cb, P, kb), np.float32)
        fixed = np.zeros((cb, P, kb), np.float32)
        rest = list(enumerate(lows))
    kept = np.zeros((cb, P, kb), np.float32) if getattr(first, "onchip", None) is not None else None
    for c, low in rest:
        K = len(low.runs)
        for f in FEATS:
            feats[f][c, :K] = low.feats[f]
        runs[c, :K] = low.runs
        active[c, :K] = 1.0
        mpeak[c, :, :K] = low.matrix_peak
        vpeak[c, :, :K] = low.vector_peak
        fixed[c, :, :K] = low.fixed
        if kept is not None:
            kept[c, :, :K] = low.onchip
    return _call(lows, feats, runs, active, mpeak, vpeak, fixed, n_dev, overlap, kept)


def _call(lows, feats, runs, active, mpeak, vpeak, fixed, n_dev: int, overlap: bool, kept=None):
    first = lows[0]
    consts = {k: np.asarray(v, np.float32) for k, v in first.consts.items()}
    batched = shard((feats, runs, active, mpeak, vpeak, fixed) + (() if kept is None else (kept,)), n_dev)
    onchip = None if kept is None else (batched[6], np.asarray(first.onchip_of[2], np.float32))
    time = _batched()(batched[0], batched[1], batched[2], batched[3], batched[4],
                      np.asarray(first.mem_bw, np.float32), np.asarray(first.units, np.float32),
                      np.asarray(first.l2_bytes, np.float32), consts, batched[5], np.bool_(overlap), onchip)
    return np.asarray(time)   # [C bucket, P, K bucket] float32
