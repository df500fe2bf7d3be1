"""A differentiable latency: a pure JAX function of per-node scale factors and the hardware.

``latency_fn(cm, candidate)`` lowers the candidate once per runtime group and returns
``f(node_scale, hw) -> latency [P]`` where ``node_scale = {"flops": [N], "bytes": [N]}``
multiplies each node's FLOPs (matrix, vector, transcendental alike) and bytes, and ``hw`` holds
the profile arrays the kernel eats (``matrix_peak``/``vector_peak``/``fixed`` ``[P, K]``,
``mem_bw`` ``[P]``; ``f.hw`` are the profiles' own values).  A kernel's features are its
lowering's own features plus ``(scale_i - 1) * count_i / runs`` of each member node: at
``f.node_scale`` (all ones) ``f`` is exactly the prediction less its per-run fixed cost
(``Prediction.run_overhead_s``: a constant callers add, ``whatif``) (a tiled GEMM's ``k`` scales
with its FLOPs, since its time follows the padded work ``2*m*n*k``), and ``jax.grad`` / ``jax.vmap``
accept it (almost everywhere: ``max`` and the tile ceilings have kinks).

``sensitivity``: ``dlat_dflops [P, N]`` (seconds per FLOP of node i), ``dlat_dbytes [P, N]``
(seconds per byte), ``dlat_dpeak [P]`` and ``dlat_dbw [P]`` (seconds per unit relative change
of all the profile's compute peaks / of its bandwidth: ``d latency / d ln peak``; negative) and
``dlat_dbw_abs [P]`` (seconds per B/s); ``dlat_dfixed [P]`` (seconds per unit relative change of
every kernel's fixed cost: launch / dispatch and floors); ``node_flops`` and ``node_bytes [N]``
(the counts the per-node derivatives are taken against: MAC + vector + transcendental FLOPs,
and bytes at the deploy precision).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.prediction import kernel_rows as kr
from analyzer.prediction import kernels

_FLOP_FEATS = ("mac_flops", "vec_flops", "trans_flops")


def _node_bytes(n, precision):
    return kr.node_bytes(n, precision)


class LatencyFn:
    """``f(node_scale, hw) -> [P]`` seconds; ``f.node_scale``, ``f.hw`` the nominal inputs;
    ``f.names`` the node names (index i of the scale vectors)."""

    def __init__(self, cm, counted):
        import jax.numpy as jnp

        self.names = tuple(n.name for n in counted.nodes)
        self.profiles = cm.hw
        nodes = counted.nodes
        N = len(nodes)
        self._groups = []
        hw = {"matrix_peak": [], "vector_peak": [], "fixed": [], "mem_bw": []}
        per_node = {"mac_flops": np.array([n.cost.mac_flops for n in nodes], np.float64),
                    "vec_flops": np.array([n.cost.vector_flops for n in nodes], np.float64),
                    "trans_flops": np.array([n.cost.transcendentals for n in nodes], np.float64),
                    "bytes": np.array([_node_bytes(n, cm.precision) for n in nodes])}
        self.node_flops = per_node["mac_flops"] + per_node["vec_flops"] + per_node["trans_flops"]
        self.node_bytes = per_node["bytes"]
        order = []
        for idx, low in cm.lower(counted):
            K = len(low.kernel_names)
            kof = np.asarray(low.plan.kernel_of)
            seg = np.where(kof >= 0, kof, K)          # nodes without a kernel: a dropped segment
            self._groups.append({
                "K": K, "seg": jnp.asarray(seg),
                "feats": {f: jnp.asarray(np.asarray(v, np.float32)) for f, v in low.feats.items()},
                "runs": jnp.asarray(np.asarray(low.runs, np.float32)),
                "per_node": {f: jnp.asarray(v, jnp.float32) for f, v in per_node.items()},
                "units": jnp.asarray(low.units, jnp.float32),
                "l2": jnp.asarray(low.l2_bytes, jnp.float32),
                "consts": {k: jnp.asarray(np.asarray(v, np.float32)) for k, v in low.consts.items()},
                "rows": slice(len(order), len(order) + len(idx)),
                # the host-only ops' host time (eager-op's views): no kernel, a constant
                "host_only": jnp.asarray(np.asarray(low.besides_kernels_s - low.run_overhead, np.float32)),
                # the qnn runtime's activations kept on chip (bytes per launch, their cost): constants
                "onchip": None if getattr(low, "onchip", None) is None else (
                    jnp.asarray(np.asarray(low.onchip, np.float32)), jnp.asarray(np.asarray(low.onchip_of[2], np.float32))),
            })
            order.extend(idx)
            hw["matrix_peak"].append(low.matrix_peak)
            hw["vector_peak"].append(low.vector_peak)
            hw["fixed"].append(low.fixed)
            hw["mem_bw"].append(low.mem_bw)
        self._order = np.argsort(order)       # group-concatenated rows -> profile order
        # hw arrays are lists per runtime group (kernel counts differ between groups)
        self.hw = {k: [jnp.asarray(np.asarray(a, np.float32)) for a in v] for k, v in hw.items()}
        self.node_scale = {"flops": jnp.ones(N, jnp.float32), "bytes": jnp.ones(N, jnp.float32)}
        self._overlap = cm.overlap

    def __call__(self, node_scale, hw):
        return _evaluate(self._arrays(), self._order, self._overlap, node_scale, hw)

    def _arrays(self) -> list[dict]:
        """The groups' arrays (a pytree: what ``_evaluate`` reads; K is the length of ``runs``)."""
        return [{k: v for k, v in grp.items() if k not in ("K", "rows")} for grp in self._groups]


def _evaluate(groups, order, overlap, node_scale, hw):
    """``LatencyFn``'s latency [P] from its groups' arrays (``LatencyFn._arrays``), the group ->
    profile row order, the overlap flag, the scale factors and the profile arrays: pure jnp, so
    one jitted function serves every latency function of the same array shapes."""
    import jax
    import jax.numpy as jnp

    out = []
    for g, grp in enumerate(groups):
        K = grp["runs"].shape[0]

        def ksum(x, grp=grp, K=K):
            return jax.ops.segment_sum(x, grp["seg"], num_segments=K + 1)[:K]

        feats = dict(grp["feats"])
        mac0 = feats["mac_flops"]
        for f in _FLOP_FEATS:
            feats[f] = feats[f] + ksum((node_scale["flops"] - 1.0) * grp["per_node"][f]) / grp["runs"]
        # a tiled GEMM's time follows its padded work 2*m*n*k: more FLOPs = a deeper k
        feats["k"] = feats["k"] * jnp.where(mac0 > 0, feats["mac_flops"] / jnp.where(
            mac0 > 0, mac0, 1.0), 1.0)
        feats["bytes"] = feats["bytes"] + ksum((node_scale["bytes"] - 1.0)
                                               * grp["per_node"]["bytes"]) / grp["runs"]
        t = kernels.kernel_terms(feats, grp["runs"], jnp.ones(K, jnp.float32),
                                 hw["matrix_peak"][g], hw["vector_peak"][g],
                                 hw["mem_bw"][g], grp["units"], grp["l2"], grp["consts"],
                                 hw["fixed"][g], overlap, grp["onchip"])[3]
        out.append(t.sum(-1) + grp["host_only"])
    return jnp.concatenate(out)[order]


def latency_fn(cm, candidate: Any) -> LatencyFn:
    return LatencyFn(cm, cm.count(candidate))


@dataclass(frozen=True, kw_only=True)
class Sensitivity:
    hw: tuple[str, ...]
    names: tuple[str, ...]
    latency_s: np.ndarray      # [P]
    dlat_dflops: np.ndarray    # [P, N] seconds per FLOP
    dlat_dbytes: np.ndarray    # [P, N] seconds per byte
    dlat_dpeak: np.ndarray     # [P] seconds per unit relative change of the compute peaks
    dlat_dbw: np.ndarray       # [P] seconds per unit relative change of the bandwidth
    dlat_dbw_abs: np.ndarray   # [P] seconds per (B/s)
    dlat_dfixed: np.ndarray    # [P] seconds per unit relative change of the fixed costs
    node_flops: np.ndarray     # [N] MAC + vector + transcendental FLOPs
    node_bytes: np.ndarray     # [N] bytes at the deploy precision


def sensitivity(cm, candidate: Any) -> Sensitivity:
    return sensitivity_of(cm, latency_fn(cm, candidate))


def sensitivity_of(cm, f: LatencyFn) -> Sensitivity:
    """The derivatives of one latency function (``LatencyFn(cm, counted)``)."""
    import jax.numpy as jnp

    P = len(cm.hw)
    # each group's profile rows (the peak / bandwidth / fixed scale factors it takes)
    rows = [jnp.asarray(np.asarray(range(P))[np.argsort(f._order)][grp["rows"]]) for grp in f._groups]
    ones = jnp.ones(P, jnp.float32)
    jac, latency = _jacobian()(f._arrays(), jnp.asarray(f._order), rows, f.hw, f.node_scale,
                               ones, ones, ones, overlap=f._overlap)
    d_scale, d_peak, d_bw, d_fixed = jac
    with np.errstate(divide="ignore", invalid="ignore"):
        dfl = np.where(f.node_flops > 0, np.asarray(d_scale["flops"]) / f.node_flops, 0.0)
        dby = np.where(f.node_bytes > 0, np.asarray(d_scale["bytes"]) / f.node_bytes, 0.0)
    bw_nominal = np.array([p.mem_bw_gbs * 1e9 if p.mem_bw_gbs else np.nan for p in cm.profiles])
    # + 0.0: a zero derivative is +0.0 (the compiled program may give -0.0 where nothing depends)
    dfl, dby = dfl + 0.0, dby + 0.0
    d_peak = np.diag(np.asarray(d_peak)) + 0.0
    d_bw = np.diag(np.asarray(d_bw)) + 0.0
    d_fixed = np.diag(np.asarray(d_fixed)) + 0.0
    return Sensitivity(hw=cm.hw, names=f.names, latency_s=np.asarray(latency, np.float64),
                       dlat_dflops=dfl, dlat_dbytes=dby, dlat_dpeak=d_peak, dlat_dbw=d_bw,
                       dlat_dbw_abs=d_bw / bw_nominal, dlat_dfixed=d_fixed, node_flops=f.node_flops,
                       node_bytes=f.node_bytes)


_JACOBIAN = None


def _jacobian():
    """jit of (groups' arrays, row order, each group's profile rows, profile arrays, node scales,
    peak / bandwidth / fixed scale factors [P]) -> (their Jacobians, the latency [P]): one
    compiled program, cached across calls with arrays of the same shapes (eager dispatch would
    compile each primitive); at unit factors the latency is ``f(f.node_scale, f.hw)``."""
    global _JACOBIAN
    if _JACOBIAN is None:
        import jax

        def jacobian(groups, order, rows, hw0, node_scale, peak, bw, fixed, overlap):
            def scaled(node_scale, peak, bw, fixed):
                hw = {k: list(v) for k, v in hw0.items()}
                for g, r in enumerate(rows):
                    ps, bs, fs = peak[r], bw[r], fixed[r]
                    hw["matrix_peak"][g] = hw["matrix_peak"][g] * ps[:, None]
                    hw["vector_peak"][g] = hw["vector_peak"][g] * ps[:, None]
                    hw["mem_bw"][g] = hw["mem_bw"][g] * bs
                    hw["fixed"][g] = hw["fixed"][g] * fs[:, None]
                lat = _evaluate(groups, order, overlap, node_scale, hw)
                return lat, lat

            return jax.jacrev(scaled, argnums=(0, 1, 2, 3), has_aux=True)(node_scale, peak, bw, fixed)

        _JACOBIAN = jax.jit(jacobian, static_argnames=("overlap",))
    return _JACOBIAN
