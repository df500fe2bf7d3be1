"""XLA's YNNPACK dots inside and outside loops (``cpu.ynn_dot``): a dot of the gemm class whose view
has m > 1 and n > 1 pays ``dot_call_us`` once a launch outside loops, and inside a loop body
``dot_trip_us`` a trip plus ``dot_loop_us`` once per execution of its loop; a GEMV pays none. And
the fit of the two in-loop figures (``measure.xla.dot_scans``). Closed-form numbers; no wall-clock."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hardware_db.write import calibration_sources, write_profile

CALL_US, TRIP_US, LOOP_US = 2.0, 0.5, 7.0
LOOP_LAUNCH_US, PROG_US, RUN_US = 0.01, 0.1, 4.0


def _profile(tmp_path, figures: bool) -> str:
    from xla_cpu_profile import calibrated_xla_doc

    floors = {"gemm": 0.3, "elementwise": 0.2, "activation": 0.2, "movement": 0.2}
    doc = calibrated_xla_doc(floors, RUN_US, program_launch_us=PROG_US, loop_launch_us=LOOP_LAUNCH_US,
                             **({"dot_trip_us": TRIP_US, "dot_loop_us": LOOP_US} if figures else {}))
    if figures:
        doc["calibration"]["tables"]["gemm"]["dot_call_us"] = CALL_US
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return write_profile(doc, tmp_path / f"ynn_{figures}.toml")


def _scan(m: int, trips: int, head: bool = False):
    """h = tanh(h @ w + x_t) over ``trips`` trips, h [m, 64]; ``head``: the result times w again
    (one more dot, outside the loop)."""
    import jax
    import jax.numpy as jnp

    w = jnp.asarray(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))

    def f(h, xs):
        out = jax.lax.scan(lambda h, x: (jnp.tanh(h @ w + x), None), h, xs)[0]
        return out @ w if head else out
    return f, (jax.ShapeDtypeStruct((m, 64), jnp.float32), jax.ShapeDtypeStruct((trips, m, 64), jnp.float32))


def _predict(fn, shapes, hw):
    from analyzer import analyze_jax

    return analyze_jax(fn, *shapes, hw=hw, runtime="xla")


def _loop_dot(report):
    return next(i for i, n in enumerate(report.nodes) if n.op == "dot_general" and n.level)


@pytest.mark.parametrize("trips", [8, 64])
def test_a_scan_pays_the_loop_cost_once_and_the_trip_cost_each_trip(tmp_path, trips):
    fn, shapes = _scan(8, trips)
    old, new = (_predict(fn, shapes, _profile(tmp_path, f)) for f in (False, True))
    # the body's x[8, 64] @ w[64, 64] (a YNNPACK dot): dot_loop_us once + trips x dot_trip_us;
    # not dot_call_us (the call's cost outside loops): 7 + 8 x 0.5 = 11 us, 7 + 64 x 0.5 = 39 us
    extra = (LOOP_US + trips * TRIP_US) * 1e-6
    assert new.predictions[0].latency_s - old.predictions[0].latency_s == pytest.approx(extra, rel=1e-6)
    e = new.predictions[0].explain(_loop_dot(new))
    assert e.runs == trips
    # per launch: dot_trip_us + dot_loop_us / trips, inside fixed_s with the in-loop launch
    # figure in place of the class floor for the dot and the 3 launches XLA runs with it each trip
    # (the trip counter's copy, add and compare): 4 x 0.01 + 0.5 + 7 / 8 = 1.415 us at 8 trips
    assert [op for op, _ in e.inserted] == ["copy", "add", "lt"]
    assert e.ynn_dot_s == pytest.approx((TRIP_US + LOOP_US / trips) * 1e-6, rel=1e-12)
    assert e.fixed_s == pytest.approx((4 * LOOP_LAUNCH_US + TRIP_US + LOOP_US / trips) * 1e-6, rel=1e-9)
    assert any(n.startswith("YNNPACK dots: 0 outside loops") for n in new.predictions[0].notes)


def test_a_gemv_in_a_scan_pays_nothing(tmp_path):
    fn, shapes = _scan(1, 8)   # h[1, 64] @ w: a matrix-vector product (Eigen), no YNNPACK
    old, new = (_predict(fn, shapes, _profile(tmp_path, f)) for f in (False, True))
    assert new.predictions[0].latency_s == old.predictions[0].latency_s
    assert not any(n.startswith("YNNPACK dots") for n in new.predictions[0].notes)


def test_a_dot_outside_the_loop_pays_the_call(tmp_path):
    fn, shapes = _scan(8, 8, head=True)
    old, new = (_predict(fn, shapes, _profile(tmp_path, f)) for f in (False, True))
    # the loop's dot 7 + 8 x 0.5 = 11 us, the head's dot after the loop 2 us: 13 us
    assert new.predictions[0].latency_s - old.predictions[0].latency_s == pytest.approx(
        (LOOP_US + 8 * TRIP_US + CALL_US) * 1e-6, rel=1e-6)


def test_explain_shows_the_term(tmp_path):
    from analyzer.render.explain import render_explain

    fn, shapes = _scan(8, 8)
    rep = _predict(fn, shapes, _profile(tmp_path, True))
    text = render_explain(rep, _loop_dot(rep), width=400)
    # launches x (0.5 + 7 / 8) us = 8 x 1.375 us = 11 us
    assert "of which YNNPACK dot 11" in text and "dot_loop_us once per execution" in text


def test_loop_executions_are_the_runs_of_the_level_above():
    from analyzer.prediction.cpu.ynn_dot import loop_executions

    nodes = [SimpleNamespace(level="", runs=1), SimpleNamespace(level="a/", runs=5),
             SimpleNamespace(level="a/b/", runs=15)]
    # top level: 1; the outer body (5 trips) runs once; the inner body (3 trips) runs 5 times
    assert loop_executions(nodes, [[0], [1], [2]]).tolist() == [1.0, 1.0, 5.0]


def test_dot_s_closed_form():
    from analyzer.prediction.cpu.ynn_dot import dot_s, ynn_dots
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    g, e = CLASS_CODE["gemm"], CLASS_CODE["elementwise"]
    dots = ynn_dots(np.array([g, g, g, e]), np.array([8, 1, 8, 8]), np.array([64, 64, 64, 64]))
    assert dots.tolist() == [True, False, True, False]
    # outside: 2 us; in a 3 x 10-trip nested loop (30 launches, 3 executions): 0.5 + 7 x 3 / 30 us
    s = dot_s((2e-6, 0.5e-6, 7e-6), dots, np.array([False, True, True, True]), np.array([1, 30, 30, 30]),
              np.array([1, 3, 3, 3]))
    assert s.tolist() == pytest.approx([2e-6, 0.0, 0.5e-6 + 7e-6 * 3 / 30, 0.0], abs=1e-15)


def test_the_fit_recovers_both_figures_and_holds_them_at_zero():
    from analyzer.measure.xla.dot_scans import fit_once_and_per_trip

    trips = np.array([8, 64, 8, 64, 8, 64.0])
    pred = np.array([5, 9, 6, 14, 8, 25.0]) * 1e-6
    # measured = predicted + 3 us + trips x 0.4 us, exactly: the fit returns (3, 0.4) us
    once, trip = fit_once_and_per_trip(trips, pred, pred + 3e-6 + trips * 0.4e-6)
    assert once == pytest.approx(3e-6, rel=1e-9) and trip == pytest.approx(0.4e-6, rel=1e-9)
    # measured = predicted - 2 us + trips x 0.4 us: the once-a-loop cost held at 0, the trip cost
    # the one-variable least squares, so at least 0 and below 0.4 us
    once, trip = fit_once_and_per_trip(trips, pred, pred - 2e-6 + trips * 0.4e-6)
    assert once == 0.0 and 0.0 < trip < 0.4e-6
    # measured below predicted everywhere: both 0
    assert fit_once_and_per_trip(trips, pred, 0.5 * pred) == (0.0, 0.0)


def test_scan_times_are_shifted_to_the_rows_run_overhead():
    from analyzer.measure.xla.loop_scan import dot_scan_times

    measured = {"run_overhead_s": 9e-6, "dot_scan_run_overhead_s": 4e-6, "dot_scan_s": {"4": {"8": 10e-6}}}
    # a scan timed at 10 us beside a 4 us run overhead: 6 us over it, 15 us as the rows stand (9 us)
    assert dot_scan_times(measured) == {(4, 8): pytest.approx(15e-6, rel=1e-12)}
    assert dot_scan_times({"run_overhead_s": 9e-6}) == {}


def test_the_calibration_sets_the_figures_that_reproduce_its_scans():
    from xla_cpu_profile import calibrated_xla_doc

    from analyzer.measure.xla.dot_scans import predicted_scans, set_dot_loop_figures

    floors = {"gemm": 0.3, "elementwise": 0.2, "activation": 0.2, "movement": 0.2}
    doc = calibrated_xla_doc(floors, RUN_US, program_launch_us=PROG_US, loop_launch_us=LOOP_LAUNCH_US)
    keys = [(m, t) for m in (4, 16) for t in (8, 64)]
    pred = predicted_scans(doc, dict.fromkeys(keys, 0.0))
    # scans timed at the prediction + 7 us + trips x 0.5 us, beside a run overhead 5 us under the
    # rows' (4 us): the fit takes each at its excess over that overhead, and returns 7 and 0.5 us
    measured = {"run_overhead_s": RUN_US * 1e-6, "dot_scan_run_overhead_s": RUN_US * 1e-6 - 5e-6,
                "dot_scan_s": {str(m): {} for m in (4, 16)}}
    for m, t in keys:
        measured["dot_scan_s"][str(m)][str(t)] = pred[(m, t)] + (LOOP_US + t * TRIP_US) * 1e-6 - 5e-6
    set_dot_loop_figures(doc, measured, "test")
    assert doc["calibration"]["dot_loop_us"] == pytest.approx(LOOP_US, rel=1e-4)
    assert doc["calibration"]["dot_trip_us"] == pytest.approx(TRIP_US, rel=1e-4)
    assert "4 scans" in doc["sources"]["calibration.dot_trip_us"]
    # rows without the scans: neither figure
    bare = calibrated_xla_doc(floors, RUN_US)
    set_dot_loop_figures(bare, {"run_overhead_s": RUN_US * 1e-6}, "test")
    assert "dot_trip_us" not in bare["calibration"]
