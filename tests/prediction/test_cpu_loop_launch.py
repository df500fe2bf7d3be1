"""In-loop launches on XLA's CPU runtime (``cpu.loop_launch``): with ``calibration.loop_launch_us``
a loop body's kernels and the launches they carry (slices, updates, the trip counter) cost the
in-loop launch figure in place of their class floor; kernels outside a loop, and a profile
without the figure, are priced as before."""

from __future__ import annotations

import numpy as np
import pytest

from xla_cpu_profile import calibrated_xla_profile

FLOOR_US, LOOP_US, RUN_US = 0.5, 0.01, 4.0
K = 8                                   # the tiny body's 1 x K @ K x K dot


def _profile(tmp_path, loop_us: float | None) -> str:
    floors = dict.fromkeys(("gemm", "elementwise", "activation", "movement"), FLOOR_US)
    return calibrated_xla_profile(tmp_path / f"p{loop_us}.toml", floors, RUN_US, loop_launch_us=loop_us)


def _scan(trips: int):
    import jax

    from analyzer.measure.xla.rows import scan_program

    fn, args = scan_program(trips, K)
    return fn, tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)


def _straight():
    """n = 3 kernels outside any loop: a dot, its tanh, a dot (the tanh is read by a dot: a root);
    x is 2 x K, so neither dot is a GEMV with copies around it."""
    import jax
    import jax.numpy as jnp

    w = jnp.ones((K, K), jnp.float32)
    return (lambda x: jnp.tanh(x @ w) @ w), (jax.ShapeDtypeStruct((2, K), jnp.float32),)


def _pred(fn, shapes, hw):
    from analyzer import analyze_jax

    return analyze_jax(fn, *shapes, hw=hw, runtime="xla").predictions[0]


@pytest.mark.parametrize("trips", [8, 40])
def test_a_scan_of_T_trips_charges_each_in_loop_launch_the_loop_figure(tmp_path, trips):
    fn, shapes = _scan(trips)
    old, new = (_pred(fn, shapes, _profile(tmp_path, u)) for u in (None, LOOP_US))
    # 7 launches a trip (the dot, the fused tanh, x_t's slice, the stacked output's update,
    # the counter's copy, add, compare), all in the body: each costs LOOP_US in place of the
    # 0.5 us floor: T x 7 x (0.5 - 0.01) us less; the work terms are the same
    assert new.launches == old.launches == 7 * trips
    assert old.latency_s - new.latency_s == pytest.approx(trips * 7 * (FLOOR_US - LOOP_US) * 1e-6, rel=1e-6)   # (sums in float32)
    assert any("in-loop launches" in n for n in new.notes)
    assert not any("in-loop launches" in n for n in old.notes)


def test_the_time_per_trip_is_seven_loop_launches_and_the_bodys_work(tmp_path):
    p = _profile(tmp_path, LOOP_US)
    (f8, s8), (f40, s40) = _scan(8), _scan(40)
    per_trip = (_pred(f40, s40, p).latency_s - _pred(f8, s8, p).latency_s) / 32
    # fixed 7 x 0.01 us; the work: a 1x8x8 dot (128 FLOPs at 0.5 TFLOP/s, its 256 B weights
    # + 32 B in + 32 B out at 38 GB/s: memory-bound, 8.4 ns) and three elementwise kernels'
    # bytes: under 0.05 us a trip in all
    assert 7 * LOOP_US * 1e-6 < per_trip < 7 * LOOP_US * 1e-6 + 0.05e-6


def test_kernels_outside_a_loop_keep_their_class_floor(tmp_path):
    fn, shapes = _straight()
    old, new = (_pred(fn, shapes, _profile(tmp_path, u)) for u in (None, LOOP_US))
    assert new.launches == 3
    assert new.latency_s == old.latency_s                       # unchanged to the last digit
    # closed form: run overhead 4 us + 3 kernels x 0.5 us floor + their work (< 0.05 us)
    assert (RUN_US + 3 * FLOOR_US) * 1e-6 < new.latency_s < (RUN_US + 3 * FLOOR_US + 0.05) * 1e-6


def test_replace_floor_is_elementwise():
    from analyzer.prediction.cpu import loop_launch

    fixed = np.array([0.7e-6, 0.5e-6, 0.9e-6])
    floors = np.array([0.5e-6, 0.5e-6, 0.3e-6])
    got = loop_launch.replace_floor(fixed, floors, np.array([True, False, True]), 0.01e-6)
    assert got == pytest.approx([0.21e-6, 0.5e-6, 0.61e-6], rel=1e-12)
    assert loop_launch.loop_launch_s({}) is None and loop_launch.loop_launch_s({"loop_launch_us": 2.0}) == 2e-6
