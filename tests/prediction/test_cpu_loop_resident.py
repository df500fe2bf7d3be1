"""A loop body's weights stay in the cache after the first trip (``cpu.loop_resident``): a scan's
GEMV reads its closed-over weights at the calibrated stream rate on trip 1 and from the cache
(not binding) on trips 2..T; a program without a loop, a body whose weights overflow the cache
and a profile without ``cache_bytes`` are unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from hardware_db.write import calibration_sources, write_profile

T, K, N = 10, 256, 256            # trips; the GEMV 1 x K @ K x N
W_BYTES = 4 * K * N               # 262,144 B of fp32 weights, the same buffer every trip
PEAK, BW = 0.5e12, 38e9           # the profile's round figures (e_c = e_bw = 1, b_half 0)


def _profile(tmp_path, cache_bytes: float | None) -> str:
    table = {"floor_us": 0.5, "e_c": 1.0, "e_bw": 1.0, "b_half_bytes": 0.0, "l2_gain": 0.0,
             "rows": 10, "fit_mape": 5.0}
    cal = {"measured_on": "2026-11-24", "runtime": "xla", "threads": 2,
           "tables": {"gemm": dict(table), "elementwise": dict(table), "movement": dict(table)}}
    if cache_bytes is not None:
        cal["cache_bytes"] = cache_bytes
    doc = {"schema_version": 1, "id": "calibrated-loop-test", "name": "test cpu", "vendor": "AMD",
           "kind": "cpu", "family": "x86-cpu", "default_runtime": "xla",
           "matrix_tflops": {"fp32": PEAK / 1e12}, "vector_tflops": {"fp32": PEAK / 1e12},
           "memory": {"mem_bw_gbs": BW / 1e9}, "overhead": {"launch_overhead_us": 0.2},
           "sources": {"matrix_tflops.fp32": "test", "vector_tflops.fp32": "test",
                       "memory.mem_bw_gbs": "test", "overhead.launch_overhead_us": "test"},
           "calibration": cal}
    doc["sources"].update(calibration_sources(cal, "test"))
    return write_profile(doc, tmp_path / f"p{cache_bytes}.toml")


def _programs():
    import jax
    import jax.numpy as jnp

    w = jnp.asarray(np.random.default_rng(0).standard_normal((K, N)).astype(np.float32))

    def looped(xs):                       # xs [T, 1, K]: one GEMV per trip, w closed over
        return jax.lax.scan(lambda c, x: (c, x @ w), jnp.float32(0), xs)[1]

    def straight(x):                      # x [1, K]: the same GEMV once, no loop
        return x @ w

    return (looped, jax.ShapeDtypeStruct((T, 1, K), jnp.float32)), (straight, jax.ShapeDtypeStruct((1, K), jnp.float32))


def _predict(fn, shape, hw):
    from analyzer import analyze_jax

    return analyze_jax(fn, shape, hw=hw, runtime="xla")


def _dot(report):
    return next(i for i, n in enumerate(report.nodes) if n.op == "dot_general")


def test_trips_after_the_first_read_the_weights_from_the_cache(tmp_path):
    (looped, xs), _ = _programs()
    cold = _predict(looped, xs, _profile(tmp_path, None))
    hot = _predict(looped, xs, _profile(tmp_path, 2.0 ** 20))          # 1 MiB > 262,144 B
    # per launch: bytes = w 262,144 + x 4 x 256 + y 4 x 256 = 264,192 B
    #   stream:   max(compute 2 x 65,536 / 0.5e12 = 0.262 us, memory 264,192 / 38e9 = 6.952 us)
    #   resident: max(compute 0.262 us, memory (264,192 - 262,144) / 38e9 = 0.054 us) = 0.262 us
    # all trips = T x fixed + t_stream + (T - 1) x t_resident: (T - 1) x (0.262 - 6.952) us less
    stream = max(2 * K * N / PEAK, (W_BYTES + 8 * K) / BW)
    resident = max(2 * K * N / PEAK, (8 * K) / BW)
    assert hot.predictions[0].latency_s - cold.predictions[0].latency_s == pytest.approx(
        (T - 1) * (resident - stream), rel=1e-6)
    e = hot.predictions[0].explain(_dot(hot))
    assert e.runs == T and e.resident_bytes == W_BYTES
    assert e.resident_s * T == pytest.approx((T - 1) * (resident - stream), rel=1e-6)
    assert cold.predictions[0].explain(_dot(cold)).resident_bytes == 0.0
    assert any("loop-resident weights" in n for n in hot.predictions[0].notes)


def test_weights_larger_than_the_cache_stream_every_trip(tmp_path):
    (looped, xs), _ = _programs()
    small = _predict(looped, xs, _profile(tmp_path, 128 * 1024.0))     # 131,072 B < 262,144 B
    none = _predict(looped, xs, _profile(tmp_path, None))
    assert small.predictions[0].latency_s == none.predictions[0].latency_s
    assert not any("loop-resident" in n for n in small.predictions[0].notes)


def test_a_program_without_a_loop_is_unchanged(tmp_path):
    _, (straight, x) = _programs()
    hot = _predict(straight, x, _profile(tmp_path, 2.0 ** 20))
    none = _predict(straight, x, _profile(tmp_path, None))
    assert hot.predictions[0].latency_s == none.predictions[0].latency_s
    assert hot.predictions[0].explain(_dot(hot)).resident_s == 0.0


def test_explain_shows_the_term(tmp_path):
    from analyzer.render.explain import render_explain

    (looped, xs), _ = _programs()
    rep = _predict(looped, xs, _profile(tmp_path, 2.0 ** 20))
    text = render_explain(rep, _dot(rep), width=400)
    assert "of which loop-resident -" in text and "262 KB of cached loop-invariant weights" in text
