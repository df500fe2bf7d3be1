"""Measuring the cold-weight figures of a CPU calibration: the effective last-level cache.

``capacity_models`` builds chains of GEMVs holding 0.25-2x the sysfs last-level cache of fp32
weights; ``measure`` times them and a GEMV whose weights are twice the cache, and
``fit_capacity`` fits ``time per byte = h / hot + (1 - h) / cold`` with ``h = s(W / C)``,
``s(x) = 1 / (1 + x**p)``. The prediction side (what a model whose weights overflow the cache
pays per run, from these figures) is ``analyzer.prediction.cpu.cold``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np



# chain layers of the capacity sweep: 1 x K @ K x N fp32 (2 MB of weights each)
CHAIN_K, CHAIN_N = 1024, 512


def capacity_models(llc_bytes: float, points: int = 8) -> list[tuple[Any, float]]:
    """(model, weight bytes) for chains of 1 x 1024 @ 1024 x 512 GEMVs (2 MB of fp32 weights a
    layer) holding 0.25-2x ``llc_bytes`` of weights in all, ``points`` sizes (no model of the
    accuracy bench has this shape)."""
    from onnx import TensorProto, helper, numpy_helper

    layer = 4.0 * CHAIN_K * CHAIN_N
    counts = sorted({max(1, int(round(x * llc_bytes / layer))) for x in np.geomspace(0.25, 2.0, points)})
    rng = np.random.default_rng(7)
    out = []
    for n in counts:
        inits, nodes, x = [], [], "x"
        for i in range(n):   # alternate K x N and N x K so each layer's output feeds the next
            shape = (CHAIN_K, CHAIN_N) if i % 2 == 0 else (CHAIN_N, CHAIN_K)
            inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.03).astype(np.float32), f"w{i}"))
            nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"h{i}"]))
            x = f"h{i}"
        width = CHAIN_N if n % 2 else CHAIN_K
        g = helper.make_graph(nodes, "capacity", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHAIN_K])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, width])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        out.append((m, n * layer))
    return out


def fit_capacity(weight_bytes, seconds) -> dict[str, float] | None:
    """``time / byte = h / hot + (1 - h) / cold``, ``h = 1 / (1 + (W / C)**p)``, fitted to chain
    timings (relative least squares; C on a grid from a quarter of the smallest to twice the
    largest size, p in 2..8, the two rates linear given them). None where the sweep shows no
    step (the cold rate within 15 % of the hot one) or the rates come out negative."""
    w = np.asarray(weight_bytes, dtype=np.float64)
    y = np.asarray(seconds, dtype=np.float64) / w
    best = None
    for p in (2.0, 3.0, 4.0, 6.0, 8.0):
        for cap in np.geomspace(w.min() / 4, w.max() * 2, 80):
            h = 1.0 / (1.0 + (w / cap) ** p)
            a = np.stack([h, 1.0 - h], axis=1) / y[:, None]   # relative residuals
            coef, *_ = np.linalg.lstsq(a, np.ones_like(y), rcond=None)
            if (coef <= 0).any():
                continue
            err = float(np.sum((a @ coef - 1.0) ** 2))
            if best is None or err < best[0]:
                best = (err, cap, p, coef)
    if best is None:
        return None
    _, cap, p, (inv_hot, inv_cold) = best
    if inv_cold < inv_hot * 1.15:
        return None
    return {"llc_effective_bytes": float(cap), "llc_step_power": float(p),
            "hot_bw_gbs": float(1e-9 / inv_hot), "cold_bw_gbs": float(1e-9 / inv_cold)}


def gemv_model(llc_bytes: float) -> tuple[Any, float]:
    """(a 1 x 4096 @ 4096 x N MatMul whose weights are about twice ``llc_bytes``, its bytes)."""
    from analyzer.measure.onnx_build import Builder

    k = 4096
    n = max(256, int(np.ceil(2 * llc_bytes / 4 / k / 256)) * 256)
    b = Builder(19)
    b.add("MatMul", [(1, 1, k)], weights=[(k, n)])
    return b.model(), 4.0 * (k * n + k + n)


def measure(timer: Callable[[Any], float], llc_bytes: float, dispatch_s: float, tries: int = 2) -> dict[str, float]:
    """The cold-weight figures of a calibration: ``cold_weight_bw_gbs`` (``gemv_model``'s bytes /
    its time less one dispatch) and, where the chains show a step, ``fit_capacity``'s
    ``llc_effective_bytes`` and ``llc_step_power`` (each chain the fastest of ``tries``).
    ``timer(model)``: wall-clock seconds of one run, the baseline model's taken out."""
    gemv, nbytes = gemv_model(llc_bytes)
    out = {"cold_weight_bw_gbs": nbytes / max(timer(gemv) - dispatch_s, 1e-8) / 1e9}
    models = capacity_models(llc_bytes)
    fit = fit_capacity([b for _, b in models], [min(timer(m) for _ in range(tries)) for m, _ in models])
    if fit:
        out.update({k: fit[k] for k in ("llc_effective_bytes", "llc_step_power")})
    return out
