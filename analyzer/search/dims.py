"""One graph at many dim assignments: counts as exact polynomials in the dims.

The counts of a graph whose shapes are products and sums of its symbolic dims (widths,
sequence lengths, batch) are polynomials in those dims, and so are the lowered kernel features
(sums of member counts, GEMM views).  ``fit``: lower the graph exactly at a tensor grid of
``d_i + 1`` values per dim (``d_i = min(#values, 4) - 1``: cubic at most per dim), interpolate
every kernel feature (in float64, on scaled dims, then back to monomial coefficients), and
verify at extra assignments against exact lowering: features within 1e-9 relative and the same
kernels, classes, peaks and fixed costs.  ``score_dims`` then evaluates the polynomials and the
kernel for a whole batch of assignments in one jitted call (float32, integer features rounded,
as ``kernels.run`` rounds counts to float32).  Where the check fails (a dim that enters through
a ceiling or a branch, a fusion plan that changes with the dims) every distinct assignment is
lowered exactly instead: slower, never wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np

from analyzer.prediction import kernels
from analyzer.search import batch

_FIT = ("mac_flops", "vec_flops", "trans_flops", "bytes", "m", "n", "k", "batch")
_MAX_DEGREE = 3
_RTOL = 1e-9
_CHUNK = 16384
TRACES = {"dims": 0}


@dataclass
class _Group:
    idx: list[int]          # profile indices
    low: Any                # Lowered at the first sample (structure, profile arrays)
    coeffs: np.ndarray      # [M, len(_FIT) + 1, K] monomial coefficients (last row: runs)
    integral: np.ndarray    # [len(_FIT) + 1, K] bool: the feature is an integer at every sample


@dataclass
class Fit:
    names: tuple[str, ...]
    exps: np.ndarray        # [M, V] exponents of each monomial
    groups: list[_Group]
    exact: bool             # True: polynomial path verified; False: point by point


def _assignments(dims: Mapping[str, Sequence[int]], product: bool):
    names = tuple(dims)
    vals = [np.asarray([dims[n]] if np.isscalar(dims[n]) else list(dims[n]), np.int64)
            for n in names]
    if product:
        grids = np.meshgrid(*vals, indexing="ij")
        a = np.stack([g.reshape(-1) for g in grids], axis=1)
    else:
        if len({len(v) for v in vals}) > 1:
            from analyzer.errors import InputSpecError

            raise InputSpecError("score_dims(product=False): the dim lists must have one length")
        a = np.stack(vals, axis=1)
    return names, a


def _features(low) -> np.ndarray:
    return np.stack([np.asarray(low.feats[f], np.float64) for f in _FIT] + [low.runs])


def _same_structure(a, b) -> bool:
    return (a.plan.members == b.plan.members
            and np.array_equal(a.feats["op_class"], b.feats["op_class"])
            and np.array_equal(a.matrix_peak, b.matrix_peak)
            and np.array_equal(a.vector_peak, b.vector_peak)
            and np.array_equal(a.fixed, b.fixed))


def _monomials(points: np.ndarray, exps: np.ndarray) -> np.ndarray:
    """[n, M] products of points[:, i] ** exps[m, i] (float64)."""
    return np.prod(points[:, None, :].astype(np.float64) ** exps[None, :, :], axis=2)


def fit(cm, model: Any, names: tuple[str, ...], assign: np.ndarray, inputs=None) -> Fit:
    def exact(point):
        opts = replace(cm.options, dims={n: int(v) for n, v in zip(names, point)},
                       inputs=dict(inputs) if inputs else None)
        return cm.lower(cm.count(model, opts))

    uniq = [np.unique(assign[:, i]) for i in range(len(names))]
    degs = [min(len(u), _MAX_DEGREE + 1) - 1 for u in uniq]
    samples = [u[np.round(np.linspace(0, len(u) - 1, d + 1)).astype(int)]
               for u, d in zip(uniq, degs)]
    exps = np.stack([g.reshape(-1) for g in np.meshgrid(*[np.arange(d + 1) for d in degs],
                                                        indexing="ij")], axis=1)
    grid = np.stack([g.reshape(-1) for g in np.meshgrid(*samples, indexing="ij")], axis=1)
    lows = [exact(p) for p in grid]
    first = lows[0]
    ok = all(len(l) == len(first) and all(_same_structure(a[1], b[1]) for a, b in zip(l, first))
             for l in lows)
    groups: list[_Group] = []
    if ok:
        scale = np.array([float(max(abs(u).max(), 1)) for u in uniq])
        vand = _monomials(grid / scale, exps)
        unscale = np.prod(scale[None, :] ** exps, axis=1)          # [M]
        for g, (idx, low) in enumerate(first):
            y = np.stack([_features(l[g][1]) for l in lows])        # [S, F, K]
            S, F, K = y.shape
            c = np.linalg.solve(vand, y.reshape(S, F * K)) / unscale[:, None]
            integral = np.all(np.abs(y - np.round(y)) == 0, axis=0)
            groups.append(_Group(idx, low, c.reshape(-1, F, K), integral))
        # verify at assignments the fit did not see (first, last, middle)
        sampled = {tuple(p) for p in grid.tolist()}
        checks = [p for p in (assign[0], assign[-1], assign[len(assign) // 2], assign[len(assign) // 3])
                  if tuple(p.tolist()) not in sampled]
        for p in {tuple(p.tolist()): p for p in checks}.values():
            got = exact(p)
            mono = _monomials(p[None, :], exps)[0]
            for grp, (_, low) in zip(groups, got):
                pred = np.einsum("m,mfk->fk", mono, grp.coeffs)
                pred = np.where(grp.integral, np.round(pred), pred)
                want = _features(low)
                if not (_same_structure(low, grp.low)
                        and np.allclose(pred, want, rtol=_RTOL, atol=1e-6)):
                    ok = False
    return Fit(names, exps, groups if ok else [], ok)


def _evaluator():
    import jax
    import jax.numpy as jnp

    def run(x, exps, coeffs, integral, op_class, mpeak, vpeak, bw, units, l2, consts, fixed, overlap):
        TRACES["dims"] += 1
        V = x.shape[1]
        deg = int(exps.shape and 4)
        pw = jnp.stack([jnp.ones_like(x), x, x * x, x * x * x], axis=2)[:, :, :deg]  # [B, V, 4]
        mono = jnp.prod(pw[:, jnp.arange(V)[None, :], exps], axis=2)                 # [B, M]
        vals = jnp.einsum("bm,mfk->bfk", mono, coeffs)
        vals = jnp.where(integral[None], jnp.round(vals), vals)
        K = coeffs.shape[2]

        def one(v):
            feats = {"op_class": op_class, **{f: v[i] for i, f in enumerate(_FIT)}}
            return kernels.kernel_terms(feats, v[len(_FIT)], jnp.ones(K, jnp.float32), mpeak,
                                        vpeak, bw, units, l2, consts, fixed, overlap)[3].sum(-1)
        return jax.vmap(one)(vals)

    return jax.jit(run)


_EVAL = None


def evaluate(cm, f: Fit, assign: np.ndarray) -> np.ndarray:
    global _EVAL
    if _EVAL is None:
        _EVAL = _evaluator()
    A = len(assign)
    lat = np.zeros((A, len(cm.profiles)))
    x_all = assign.astype(np.float32)
    chunk = min(_CHUNK, batch.pow2(A, 256))
    for grp in f.groups:
        low = grp.low
        args = (np.asarray(f.exps, np.int32), grp.coeffs.astype(np.float32), grp.integral,
                np.asarray(low.feats["op_class"], np.int32),
                low.matrix_peak.astype(np.float32), low.vector_peak.astype(np.float32),
                low.mem_bw.astype(np.float32), low.units.astype(np.float32),
                low.l2_bytes.astype(np.float32),
                {k: np.asarray(v, np.float32) for k, v in low.consts.items()},
                low.fixed.astype(np.float32), np.bool_(cm.overlap))
        for s in range(0, A, chunk):
            x = x_all[s:s + chunk]
            n = len(x)
            if n < chunk:
                x = np.concatenate([x, np.repeat(x[-1:], chunk - n, axis=0)])
            lat[s:s + n, grp.idx] = np.asarray(_EVAL(batch.shard(x, 1), *args))[:n]
    return lat


def score_dims(cm, model, dims, *, product=True, inputs=None, return_assignments=False):
    names, assign = _assignments(dims, product)
    f = fit(cm, model, names, assign, inputs)
    if f.exact:
        lat = evaluate(cm, f, assign)
    else:   # point by point over the distinct assignments
        uniq, inv = np.unique(assign, axis=0, return_inverse=True)
        lowered = [cm.lower(cm.count(model, replace(
            cm.options, dims={n: int(v) for n, v in zip(names, p)},
            inputs=dict(inputs) if inputs else None))) for p in uniq]
        lat = cm._latency(lowered)[0][np.asarray(inv).reshape(-1)]
    return (lat, assign) if return_assignments else lat
