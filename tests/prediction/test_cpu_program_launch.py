"""Kernels outside a loop on XLA's CPU runtime (``cpu.loop_launch.straight_fixed``): with
``calibration.program_launch_us`` each costs that figure in place of its class floor, and the run
adds the largest class floor's excess over it once; a one-kernel program and a profile without
the figure are priced as before."""

from __future__ import annotations

import numpy as np
import pytest

from xla_cpu_profile import calibrated_xla_profile

GEMM_US, ACT_US, PROG_US, LOOP_US, RUN_US = 0.5, 0.3, 0.1, 0.01, 4.0
K = 8


def _profile(tmp_path, prog_us: float | None, loop_us: float | None = None) -> str:
    floors = {"gemm": GEMM_US, "elementwise": ACT_US, "activation": ACT_US, "movement": ACT_US}
    return calibrated_xla_profile(tmp_path / f"p{prog_us}_{loop_us}.toml", floors, RUN_US,
                                  program_launch_us=prog_us, loop_launch_us=loop_us)


def _pred(fn, shapes, hw):
    from analyzer import analyze_jax

    return analyze_jax(fn, *shapes, hw=hw, runtime="xla").predictions[0]


def _straight():
    """3 kernels outside any loop: a dot (gemm), its tanh (activation), a dot; both dots are
    GEMVs (x is 1 x K), so the plan adds the copy of x before the first and of the result after
    the second (``xla_cpu_fusion`` rule 8): 5 launches (XLA: 5 thunks)."""
    import jax
    import jax.numpy as jnp

    w = jnp.ones((K, K), jnp.float32)
    return (lambda x: jnp.tanh(x @ w) @ w), (jax.ShapeDtypeStruct((1, K), jnp.float32),)


def test_a_straight_program_pays_a_launch_per_kernel_and_the_largest_floor_excess_once(tmp_path):
    fn, shapes = _straight()
    old, new = (_pred(fn, shapes, _profile(tmp_path, u)) for u in (None, PROG_US))
    assert new.launches == old.launches == 5
    # before: floors 0.5 + 0.3 + 0.5 and the two copies' movement floors 0.3 + 0.3 = 1.9 us;
    # after: 5 x 0.1 + max(0.5 - 0.1, 0.3 - 0.1) = 0.9 us; the work terms are the same: 1.0 us less
    assert old.latency_s - new.latency_s == pytest.approx(1.0e-6, rel=1e-5)
    # closed form: 4 us run overhead + 0.9 us + the work (5 tiny launches: < 0.05 us)
    assert (RUN_US + 0.9) * 1e-6 < new.latency_s < (RUN_US + 0.9 + 0.05) * 1e-6
    assert any("program launches: 3 kernel(s)" in n for n in new.notes)
    assert not any("program launches" in n for n in old.notes)


@pytest.mark.parametrize("links", [1, 5, 20])
def test_a_chain_of_n_links_is_n_times_two_launches_and_a_copy_plus_one_floor_excess(tmp_path, links):
    from analyzer.measure.xla.rows import dot_chain
    import jax

    fn, args = dot_chain(links, m=1, k=K)
    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
    old, new = (_pred(fn, shapes, _profile(tmp_path, u)) for u in (None, PROG_US))
    # n GEMVs and their tanh, and the copy of x (1 x K) before the first (XLA: 2n + 1 thunks)
    assert new.launches == 2 * links + 1
    # n dots at 0.5, n tanh and the copy at 0.3 before; (2n + 1) x 0.1 + (0.5 - 0.1) after
    saved = links * (GEMM_US + ACT_US) + ACT_US - ((2 * links + 1) * PROG_US + GEMM_US - PROG_US)
    assert old.latency_s - new.latency_s == pytest.approx(saved * 1e-6, rel=1e-5, abs=1e-12)


def test_a_one_kernel_program_is_priced_as_before(tmp_path):
    import jax
    import jax.numpy as jnp

    w = jnp.ones((K, K), jnp.float32)
    shapes = (jax.ShapeDtypeStruct((2, K), jnp.float32),)   # (M = 2: no GEMV copies; XLA: 1 thunk)
    old, new = (_pred(lambda x: x @ w, shapes, _profile(tmp_path, u)) for u in (None, PROG_US))
    assert new.launches == 1
    # 0.1 us launch + (0.5 - 0.1) us once = the 0.5 us floor
    assert new.latency_s == pytest.approx(old.latency_s, rel=1e-6)


def test_a_scan_keeps_its_loop_launches_and_pays_the_floor_excess_once(tmp_path):
    import jax

    from analyzer.measure.xla.rows import scan_program

    fn, args = scan_program(8, K)
    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
    loop_only, both = (_pred(fn, shapes, _profile(tmp_path, u, LOOP_US)) for u in (None, PROG_US))
    # every kernel of the program is in the body (56 launches at 0.01 us either way); the run adds
    # the largest floor excess, 0.5 - 0.1 = 0.4 us, once
    assert both.launches == loop_only.launches == 56
    assert both.latency_s - loop_only.latency_s == pytest.approx(0.4e-6, rel=1e-5)


def test_straight_fixed_replaces_floors_outside_loops_and_returns_the_excess():
    from analyzer.prediction.cpu import loop_launch

    fixed = np.array([0.7e-6, 0.5e-6, 0.9e-6])
    floors = np.array([0.5e-6, 0.5e-6, 0.3e-6])
    notes: list[str] = []
    got, once = loop_launch.straight_fixed(fixed, floors, np.array([False, True, False]), 0.1e-6, notes)
    # kernels 0 and 2 outside loops: 0.7 - 0.5 + 0.1, 0.9 - 0.3 + 0.1; kernel 1 as it was
    assert got == pytest.approx([0.3e-6, 0.5e-6, 0.7e-6], rel=1e-12)
    assert once == pytest.approx(0.4e-6, rel=1e-12)                       # max(0.5, 0.5, 0.3) - 0.1
    # a launch dearer than every floor: nothing once; no kernel: nothing once
    assert loop_launch.straight_fixed(fixed, floors, np.zeros(3, bool), 0.6e-6, [])[1] == 0.0
    assert loop_launch.straight_fixed(np.zeros(0), np.zeros(0), np.zeros(0, bool), 0.1e-6, [])[1] == 0.0
