"""One graph at many dim assignments: counts as exact polynomials in the dims.

The counts of a graph whose shapes are products and sums of its symbolic dims (widths,
sequence lengths, batch) are polynomials in those dims, and so are the lowered kernel features
(sums of member counts, GEMM views).  ``fit``: lower the graph exactly at a tensor grid of
``d_i + 1`` values per dim and interpolate every kernel feature (in float64, on scaled dims,
then back to monomial coefficients; coefficients at the solve's noise level are zeroed,
those within 1e-9 of an integer rounded).  The
grid starts quadratic (``d_i = min(#values, 3) - 1``) and becomes cubic (``min(#values, 4) - 1``)
when the quadratic fit fails its check.  The check: exact lowerings at ``_N_CHECKS`` assignments
whose every coordinate lies off the grid's values (where the dim has such values) agree with the
polynomials (features within 1e-9 relative, the same kernels, classes, peaks and fixed costs).

``score_dims`` then evaluates the polynomials and the kernel for the whole batch in jitted calls
(``evaluation``: float32 as ``kernels.run``, integer features rounded) and compares the latencies
at the check points and at the grid's two corners with ``CostModel.score``'s (``analyze``'s) to
``LAT_RTOL``.  Where a check fails (a dim that enters through a ceiling or a branch, a fusion plan
that changes with the dims, float32 cancellation in a polynomial) every distinct assignment is
lowered exactly instead: slower, never wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from analyzer.search.dims import evaluation
from analyzer.search.dims.evaluation import FIT

_MAX_DEGREE = 3
_RTOL = 1e-9
_NOISE = 1e-12      # |scaled coefficient| below this share of its feature's largest sample: zero
_N_CHECKS = 4
LAT_RTOL = 5e-7     # score_dims vs score at the check points (the promise is 1e-6)


@dataclass
class _Group:
    idx: list[int]          # profile indices
    low: Any                # Lowered at the first sample (structure, profile arrays)
    coeffs: np.ndarray      # [M, len(FIT) + 1, K] monomial coefficients (last row: runs)
    integral: np.ndarray    # [len(FIT) + 1, K] bool: the feature is an integer at every sample


@dataclass
class Fit:
    names: tuple[str, ...]
    exps: np.ndarray        # [M, V] exponents of each monomial
    groups: list[_Group]
    exact: bool             # True: polynomial path verified; False: point by point
    checks: list = field(default_factory=list)   # [(assignment, exact lowering)] to compare with


def assignments(dims: Mapping[str, Sequence[int]], product: bool):
    """(names, the [A, V] int64 assignments, the sorted distinct values of each dim)."""
    names = tuple(dims)
    vals = [np.asarray([dims[n]] if np.isscalar(dims[n]) else list(dims[n]), np.int64)
            for n in names]
    uniq = [np.unique(v) for v in vals]
    if product:   # itertools.product order, written column by column (no meshgrid copies)
        shape = tuple(len(v) for v in vals)
        a = np.empty((int(np.prod(shape)), len(vals)), np.int64)
        for i, v in enumerate(vals):
            view = [1] * len(vals)
            view[i] = len(v)
            a[:, i] = np.broadcast_to(v.reshape(view), shape).reshape(-1)
    else:
        if len({len(v) for v in vals}) > 1:
            from analyzer.errors import InputSpecError

            raise InputSpecError("score_dims(product=False): the dim lists must have one length")
        a = np.stack(vals, axis=1)
    return names, a, uniq


def _features(low) -> np.ndarray:
    return np.stack([np.asarray(low.feats[f], np.float64) for f in FIT] + [low.runs])


def _same_structure(a, b) -> bool:
    return (a.plan.members == b.plan.members
            and np.array_equal(a.feats["op_class"], b.feats["op_class"])
            and np.array_equal(a.matrix_peak, b.matrix_peak)
            and np.array_equal(a.vector_peak, b.vector_peak)
            and np.array_equal(a.fixed, b.fixed)
            and np.array_equal(a.besides_kernels_s, b.besides_kernels_s))


def _same_groups(a, b) -> bool:
    return len(a) == len(b) and all(ia == ib and _same_structure(la, lb)
                                    for (ia, la), (ib, lb) in zip(a, b))


def _monomials(points: np.ndarray, exps: np.ndarray) -> np.ndarray:
    """[n, M] products of points[:, i] ** exps[m, i] (float64)."""
    return np.prod(points[:, None, :].astype(np.float64) ** exps[None, :, :], axis=2)


def _samples(uniq, degs):
    return [u[np.round(np.linspace(0, len(u) - 1, d + 1)).astype(int)] for u, d in zip(uniq, degs)]


def _check_points(uniq, samples, n: int) -> np.ndarray:
    """``n`` assignments (deterministic) whose coordinates avoid the grid's values per dim."""
    rng = np.random.default_rng(len(uniq))
    cols = []
    for u, s in zip(uniq, samples):
        off = np.setdiff1d(u, s)
        cols.append(rng.choice(off if len(off) else u, size=n))
    return np.stack(cols, axis=1)


def _fit_grid(exact, uniq, degs):
    """(exps, groups) interpolating the exact lowerings on the grid; None where the kernels
    differ between grid points."""
    exps = np.stack([g.reshape(-1) for g in np.meshgrid(*[np.arange(d + 1) for d in degs],
                                                        indexing="ij")], axis=1)
    grid = np.stack([g.reshape(-1) for g in np.meshgrid(*_samples(uniq, degs), indexing="ij")],
                    axis=1)
    lows = [exact(p) for p in grid]
    if not all(_same_groups(lows[0], l) for l in lows[1:]):
        return None
    scale = np.array([float(max(abs(u).max(), 1)) for u in uniq])
    vand = _monomials(grid / scale, exps)
    unscale = np.prod(scale[None, :] ** exps, axis=1)          # [M]
    groups = []
    for g, (idx, low) in enumerate(lows[0]):
        y = np.stack([_features(l[g][1]) for l in lows])        # [S, F, K]
        S, F, K = y.shape
        flat = y.reshape(S, F * K)
        raw = np.linalg.solve(vand, flat)                        # scaled coefficients
        cs = np.where(np.abs(raw) <= _NOISE * np.abs(flat).max(axis=0)[None, :], 0.0, raw)
        c = cs / unscale[:, None]
        near = np.round(c)      # 8.000000000000083 -> 8 (below float32's own rounding)
        c = np.where(np.abs(c - near) <= _RTOL * np.maximum(np.abs(c), 1.0), near, c)
        # a column whose cleaned coefficients miss a grid sample (a small term zeroed beside a
        # huge one: 8*d^3 + 4 over d = 1..32768) keeps its raw coefficients
        bad = ~np.all(np.isclose(vand @ (c * unscale[:, None]), flat, rtol=_RTOL, atol=1e-6), axis=0)
        c[:, bad] = raw[:, bad] / unscale[:, None]
        integral = np.all(y == np.round(y), axis=0)
        groups.append(_Group(idx, low, c.reshape(len(exps), F, K), integral))
    return exps, groups


def _agrees(got, point, exps, groups) -> bool:
    if len(got) != len(groups):
        return False
    mono = _monomials(point[None, :], exps)[0]
    for grp, (idx, low) in zip(groups, got):
        pred = np.einsum("m,mfk->fk", mono, grp.coeffs)
        pred = np.where(grp.integral, np.round(pred), pred)
        if not (idx == grp.idx and _same_structure(low, grp.low)
                and np.allclose(pred, _features(low), rtol=_RTOL, atol=1e-6)):
            return False
    return True


def fit(cm, model: Any, names: tuple[str, ...], assign: np.ndarray, inputs=None,
        values: Sequence[np.ndarray] | None = None) -> Fit:
    """``values``: the sorted distinct values of each dim in ``assign`` when the caller knows
    them (``np.unique`` over a million assignments costs more than a lowering)."""
    memo: dict[tuple[int, ...], Any] = {}

    def exact(point):
        key = tuple(int(v) for v in point)
        if key not in memo:
            opts = replace(cm.options, dims=dict(zip(names, key)),
                           inputs=dict(inputs) if inputs else None)
            memo[key] = cm.lower(cm.count(model, opts))
        return memo[key]

    uniq = list(values) if values is not None else [np.unique(assign[:, i])
                                                     for i in range(len(names))]
    tried = set()
    for cap in range(2, _MAX_DEGREE + 1):
        degs = tuple(min(len(u), cap + 1) - 1 for u in uniq)
        if degs in tried:
            break
        tried.add(degs)
        res = _fit_grid(exact, uniq, degs)
        if res is None:
            break
        exps, groups = res
        checks = _check_points(uniq, _samples(uniq, degs), _N_CHECKS)
        if all(_agrees(exact(p), p, exps, groups) for p in checks):
            corners = np.stack([[u[0] for u in uniq], [u[-1] for u in uniq]])
            pts = {tuple(p.tolist()): p for p in np.concatenate([checks, corners])}
            return Fit(names, exps, groups, True, [(p, exact(p)) for p in pts.values()])
    return Fit(names, np.zeros((1, len(names)), np.int64), [], False)


def _pointwise(cm, model, names, assign, inputs) -> np.ndarray:
    if not names:
        uniq, inv = assign, np.zeros(len(assign), np.int64)
    else:
        uniq, inv = np.unique(assign, axis=0, return_inverse=True)
    lowered = [cm.lower(cm.count(model, replace(
        cm.options, dims={n: int(v) for n, v in zip(names, p)},
        inputs=dict(inputs) if inputs else None))) for p in uniq]
    return cm._latency(lowered, detail=False)[0][np.asarray(inv).reshape(-1)]


def evaluate(cm, f: Fit, assign: np.ndarray) -> np.ndarray:
    """Latency ``[len(assign), P]`` of a verified fit (kernel sums + the per-run overhead)."""
    lat = evaluation.evaluate(f, assign, cm.overlap, len(cm.profiles))
    for grp in f.groups:
        lat[:, grp.idx] += np.asarray(grp.low.besides_kernels_s, np.float64)[None, :]
    return lat


def score_dims(cm, model, dims, *, product=True, inputs=None, return_assignments=False):
    names, assign, uniq = assignments(dims, product)
    lat = None
    f = fit(cm, model, names, assign, inputs, uniq) if names else None   # {}: one assignment
    if f is not None and f.exact:
        pts = np.stack([p for p, _ in f.checks])
        lat = evaluate(cm, f, np.concatenate([assign, pts]))
        want = cm._latency([low for _, low in f.checks], detail=False)[0]
        if np.allclose(lat[len(assign):], want, rtol=LAT_RTOL, atol=0):
            lat = lat[:len(assign)]
        else:
            lat = None
    if lat is None:
        lat = _pointwise(cm, model, names, assign, inputs)
    return (lat, assign) if return_assignments else lat
