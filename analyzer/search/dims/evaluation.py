"""The jitted evaluation behind ``score_dims``: fitted count polynomials and the cost kernel
over a whole batch of dim assignments, laid out kernels x assignments.

``plan`` turns a verified ``polynomial.Fit`` into device arrays once per call:

- identical kernels (the same feature polynomials, op class, peaks and fixed cost on every
  profile of their group: q/k/v/o projections, every block of a repeated stack) are evaluated
  once and weighted by how many there are;
- monomials no feature uses are dropped (the fit's tensor grid has ``prod(d_i + 1)`` of them;
  a transformer block uses about ten), coefficients within 1e-12 of a column's scale are noise
  of the float64 solve and are zeroed before the fit is verified;
- each group's kernels are padded to a power of two (copies of its first kernel, weight 0), the
  monomials to a power of two (zero exponents, zero coefficients), the assignments to a fixed
  chunk of ``CHUNK`` rows: one compiled shape per graph, whatever the number of assignments.

``run`` (one jitted call per chunk of assignments): monomials ``[M, B]`` from the assignments in
float32, features ``[F, K, B]`` by one matmul, integer features rounded, then
``kernels.kernel_terms`` itself (the kernel ``analyze`` runs: its arrays broadcast over the
assignment axis, the last and fastest-varying one) and a compensated pairwise sum over the
kernels (error about 2 float32 ulps whatever the kernel count; ``analyze`` sums float32 kernel
times in float64).  The chunks are dispatched before any result is read (JAX runs them
asynchronously) and, with several local JAX devices, split along the assignments over them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.prediction import kernels
from analyzer.search import batched_kernels as batch

# the fitted kernel features (``Lowered.feats``) in order; ``runs`` is fitted after them
FIT = ("mac_flops", "vec_flops", "trans_flops", "bytes", "m", "n", "k", "batch", "reread_bytes", "row_bytes",
       "index_ids", "index_slice")
NFEAT = len(FIT) + 1
CHUNK = 16384
TRACES = {"dims": 0}
_jitted = None


def _key(grp, k: int) -> bytes:
    low = grp.low
    return b"".join((grp.coeffs[:, :, k].tobytes(), grp.integral[:, k].tobytes(),
                     np.int64(low.feats["op_class"][k]).tobytes(),
                     np.float64(low.feats["elem_bytes"][k]).tobytes(), low.matrix_peak[:, k].tobytes(),
                     low.vector_peak[:, k].tobytes(), low.fixed[:, k].tobytes()))


def _group_arrays(grp, used: np.ndarray, mb: int) -> dict:
    """One runtime group's kernels, deduplicated and padded (see the module docstring)."""
    low = grp.low
    K = grp.coeffs.shape[2]
    first: dict[bytes, int] = {}
    weight: list[float] = []
    cols: list[int] = []
    for k in range(K):
        j = first.setdefault(_key(grp, k), len(cols))
        if j == len(cols):
            cols.append(k)
            weight.append(0.0)
        weight[j] += 1.0
    kb = batch.pow2(len(cols), 8)
    cols += [cols[0]] * (kb - len(cols))
    weight += [0.0] * (kb - len(weight))
    coeffs = np.zeros((NFEAT, kb, mb), np.float32)
    coeffs[:, :, :len(used)] = grp.coeffs[used][:, :, cols].transpose(1, 2, 0)
    P = low.mem_bw.shape[0]

    def per_kernel(a):
        return np.asarray(a, np.float32)[:, cols][:, :, None]      # [P, kb, 1]

    return {"coeffs": coeffs, "integral": grp.integral[:, cols][:, :, None],
            "op_class": np.asarray(low.feats["op_class"], np.int32)[cols][:, None],
            "elem_bytes": np.asarray(low.feats["elem_bytes"], np.float32)[cols][:, None],
            "mpeak": per_kernel(low.matrix_peak), "vpeak": per_kernel(low.vector_peak),
            "fixed": per_kernel(low.fixed),
            "bw": np.asarray(low.mem_bw, np.float32).reshape(P),
            "units": np.asarray(low.units, np.float32).reshape(P),
            "l2": np.asarray(low.l2_bytes, np.float32).reshape(P),
            "consts": {k: np.asarray(v, np.float32) for k, v in low.consts.items()},
            "weight": np.asarray(weight, np.float32)[:, None]}


def plan(f) -> tuple[np.ndarray, list[dict]]:
    """(exponents ``[Mb, V]`` int32, per-group arrays) of a verified fit's groups that launch
    kernels (``live``)."""
    nz = np.zeros(len(f.exps), bool)
    for grp in live(f):
        nz |= np.any(grp.coeffs != 0, axis=(1, 2))
    nz[0] = True                                  # keep one monomial even for an empty graph
    used = np.flatnonzero(nz)
    mb = batch.pow2(len(used), 4)
    exps = np.zeros((mb, f.exps.shape[1]), np.int32)
    exps[:len(used)] = f.exps[used]
    return exps, [_group_arrays(g, used, mb) for g in live(f)]


def live(f) -> list:
    """The fit's groups with at least one kernel (a group of views only takes no time)."""
    return [g for g in f.groups if g.coeffs.shape[2]]


def _pairwise_sum(t):
    """Sum over axis 1 (a power of two long) in halves, each addition's rounding error kept
    (TwoSum) and added back at the end."""
    import jax.numpy as jnp

    err = jnp.zeros_like(t)
    while t.shape[1] > 1:
        h = t.shape[1] // 2
        a, b = t[:, :h], t[:, h:]
        s = a + b
        bb = s - a
        err = err[:, :h] + err[:, h:] + ((a - (s - bb)) + (b - bb))
        t = s
    return (t + err)[:, 0]


def _traced(x, exps, groups, overlap):
    import jax.numpy as jnp

    TRACES["dims"] += 1                           # once per compilation
    xt = x.T[None]                                # [1, V, B]
    e = exps[:, :, None]                          # [M, V, 1]
    x2 = xt * xt
    pw = jnp.where(e == 0, 1.0, jnp.where(e == 1, xt, jnp.where(e == 2, x2, x2 * xt)))
    mono = jnp.prod(pw, axis=1)                   # [M, B]
    out = []
    for g in groups:
        vals = jnp.einsum("fkm,mb->fkb", g["coeffs"], mono)
        vals = jnp.where(g["integral"], jnp.round(vals), vals)     # [F, K, B]
        shape = vals.shape[1:]
        feats = {"op_class": g["op_class"], "elem_bytes": g["elem_bytes"], **{n: vals[i] for i, n in enumerate(FIT)}}
        time = kernels.kernel_terms(
            feats, vals[NFEAT - 1], jnp.ones(shape, jnp.float32), g["mpeak"], g["vpeak"], g["bw"],
            g["units"], g["l2"], g["consts"], jnp.broadcast_to(g["fixed"], (g["fixed"].shape[0], *shape)),
            overlap)[3]                           # [P, K, B]
        out.append(_pairwise_sum(time * g["weight"][None]))          # [P, B]
    return out


def _evaluator():
    global _jitted
    if _jitted is None:
        import jax

        _jitted = jax.jit(_traced)
    return _jitted


def evaluate(f, assign: np.ndarray, overlap: bool, n_profiles: int) -> np.ndarray:
    """Kernel-time sums ``[A, n_profiles]`` (float64 of the float32 sums) at ``assign``."""
    import jax

    A = len(assign)
    out = np.zeros((A, n_profiles))
    if A == 0 or not live(f):
        return out
    exps, groups = plan(f)
    n_dev = batch.devices()
    if n_dev > 1:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        rep = NamedSharding(Mesh(np.array(jax.local_devices()), ("c",)), PartitionSpec())
        exps, groups = jax.device_put((exps, groups), rep)
    else:
        exps, groups = jax.device_put((exps, groups))
    run = _evaluator()
    x_all = assign.astype(np.float32)
    pending: list[tuple[int, int, Any]] = []
    for s in range(0, A, CHUNK):
        x = x_all[s:s + CHUNK]
        n = len(x)
        if n < CHUNK:
            x = np.concatenate([x, np.repeat(x[-1:], CHUNK - n, axis=0)])
        pending.append((s, n, run(batch.shard(x, n_dev), exps, groups, np.bool_(overlap))))
    for s, n, res in pending:
        for grp, r in zip(live(f), res):
            out[s:s + n, grp.idx] = np.asarray(r)[:, :n].T
    return out
