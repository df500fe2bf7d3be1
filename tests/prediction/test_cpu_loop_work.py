"""A loop body's vector work on XLA's CPU runtime (``cpu.loop_work``): with
``calibration.loop_work_scale`` = r, a loop-body kernel on the vector engine costs its launch figure
plus r x its work; a dot, a kernel outside a loop and a profile without the figure are unchanged.
And the closed-form fit of r (``measure.xla.loop_work``). Closed-form numbers; no wall-clock."""

from __future__ import annotations

import numpy as np
import pytest

from hardware_db.write import write_profile

R, RUN_US, LOOP_LAUNCH_US, PROG_US, TFLOPS, TW = 0.25, 4.0, 0.01, 0.1, 0.5, 8.0
FLOORS = {"gemm": 0.3, "elementwise": 0.2, "activation": 0.2, "movement": 0.2}


def _doc(scale: float | None, bw_gbs: float = 1e6) -> dict:
    from xla_cpu_profile import calibrated_xla_doc

    # memory at 1 PB/s: every kernel here is held by its compute term
    return calibrated_xla_doc(FLOORS, RUN_US, tflops=TFLOPS, bw_gbs=bw_gbs, program_launch_us=PROG_US,
                              loop_launch_us=LOOP_LAUNCH_US, trans_weight=TW, loop_work_scale=scale)


def _tmp_toml() -> str:
    import os
    import tempfile

    return os.path.join(tempfile.mkdtemp(), "doc.toml")


def _profile(tmp_path, scale: float | None) -> str:
    return write_profile(_doc(scale), tmp_path / f"work_{scale}.toml")


def _predict(fn, args, hw):
    import jax

    from analyzer import analyze_jax

    sds = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), args)
    return analyze_jax(fn, *sds, hw=hw, runtime="xla")


def _node(report, op: str, in_loop: bool = True) -> int:
    return next(i for i, n in enumerate(report.nodes) if n.op == op and bool(n.level) == in_loop)


@pytest.mark.parametrize("trips", [8, 64])
def test_an_elementwise_body_pays_r_times_its_work(tmp_path, trips):
    from analyzer.measure.xla.rows import ew_scan_program

    fn, args = ew_scan_program(trips, 16, 1)   # h = tanh(h + x_t), h [16, 64]: 1,024 elements
    old, new = (_predict(fn, args, _profile(tmp_path, s)) for s in (None, R))
    # a trip's fused add + tanh: 1,024 adds + 8 x 1,024 tanh FLOPs = 9,216 FLOP at 0.5 TFLOP/s x e_c 1
    # = 18.432 ns; at r = 0.25 it costs 0.25 x 18.432 = 4.608 ns: 13.824 ns less a trip
    work = (1024 + TW * 1024) / (TFLOPS * 1e12)
    assert old.predictions[0].latency_s - new.predictions[0].latency_s == pytest.approx(
        trips * (1 - R) * work, rel=1e-6)
    e = new.predictions[0].explain(_node(new, "tanh"))
    assert e.runs == trips and e.compute_s == pytest.approx(trips * work, rel=1e-9)
    assert e.loop_work_s == pytest.approx((R - 1) * work, rel=1e-9)
    assert any(n.startswith("in-loop vector work: 1 loop-body kernel(s)") for n in new.predictions[0].notes)


def test_a_dot_in_the_body_keeps_its_class_rate(tmp_path):
    from analyzer.measure.xla.rows import dot_scan_program

    fn, args = dot_scan_program(8, 8)   # h = tanh(h @ w + x_t), h [8, 64], w 64x64
    old, new = (_predict(fn, args, _profile(tmp_path, s)) for s in (None, R))
    dot, act = _node(new, "dot_general"), _node(new, "tanh")
    assert new.predictions[0].explain(dot).loop_work_s == 0.0
    assert new.predictions[0].explain(dot).time_s == old.predictions[0].explain(dot).time_s
    # only the fused add + tanh (512 elements: 512 x 9 FLOP = 9.216 ns a trip) is scaled: 8 trips x 0.75 x 9.216 ns
    assert old.predictions[0].latency_s - new.predictions[0].latency_s == pytest.approx(
        8 * (1 - R) * 512 * (1 + TW) / (TFLOPS * 1e12), rel=1e-6)
    assert new.predictions[0].explain(act).loop_work_s < 0.0


def test_outside_a_loop_nothing_changes(tmp_path):
    import jax.numpy as jnp

    x = np.ones((16, 64), np.float32)
    old, new = (_predict(lambda h, x: jnp.tanh(h + x), (x, x), _profile(tmp_path, s)) for s in (None, R))
    assert new.predictions[0].latency_s == old.predictions[0].latency_s
    assert not any(n.startswith("in-loop vector work") for n in new.predictions[0].notes)


def test_explain_shows_the_term(tmp_path):
    from analyzer.measure.xla.rows import ew_scan_program
    from analyzer.render.explain import render_explain

    fn, args = ew_scan_program(8, 16, 1)
    rep = _predict(fn, args, _profile(tmp_path, R))
    text = render_explain(rep, _node(rep, "tanh"), width=400)
    # 8 launches x 0.75 x 18.432 ns = 110.6 ns
    assert "of which in-loop vector work -111 ns = launches x (loop_work_scale - 1)" in text


def test_vector_engine_and_delta_closed_form():
    from analyzer.prediction.cpu.loop_work import delta_s, vector_engine

    feats = {"mac_flops": np.array([100.0, 0.0, 10.0, 0.0]), "vec_flops": np.array([10.0, 5.0, 20.0, 0.0]),
             "trans_flops": np.array([0.0, 5.0, 0.0, 0.0])}
    # a dot (MAC over the rest) is the matrix engine; a kernel with no FLOPs (a copy) the vector one
    vec = vector_engine(feats)
    assert vec.tolist() == [False, True, True, True]
    d = delta_s(0.4, np.array([True, True, False, True]), vec, np.array([1e-6, 2e-6, 3e-6, 4e-6]))
    # (0.4 - 1) x work in a loop on the vector engine: -1.2 us, 0 (outside), -2.4 us
    assert d.tolist() == pytest.approx([0.0, -1.2e-6, 0.0, -2.4e-6], abs=1e-18)


def test_the_fit_is_the_closed_form_least_squares_and_is_clipped():
    from analyzer.measure.xla.loop_work import R_MIN, fit_scale

    a = np.array([10.0, 12.0, 20.0, 30.0]) * 1e-6
    w = np.array([4.0, 20.0, 40.0, 200.0]) * 1e-6
    # measured = a + 0.3 W exactly: r = 0.3
    assert fit_scale(a, a + w, a + 0.3 * w) == pytest.approx(0.3, rel=1e-12)
    # two scans, t = (12, 20) us, a = (10, 10), W = (4, 20): w/t = (1/3, 1); (t - a)/t = (1/6, 1/2)
    # r = (1/18 + 1/2) / (1/9 + 1) = (10/18) / (10/9) = 0.5
    assert fit_scale([10e-6, 10e-6], [14e-6, 30e-6], [12e-6, 20e-6]) == pytest.approx(0.5, rel=1e-12)
    assert fit_scale(a, a + w, 0.5 * a) == R_MIN        # below the launches alone: the least scale
    assert fit_scale(a, a + w, a + 2 * w) == 1.0        # slower than the classes: not above 1


def test_scan_times_are_shifted_to_the_rows_run_overhead():
    from analyzer.measure.xla.loop_scan import ew_scan_times

    measured = {"run_overhead_s": 9e-6, "ew_scan_run_overhead_s": 5e-6, "ew_scan_s": {"4/16": {"8": 20e-6}},
                "ew_scan_extra_s": {"2/1": {"256": 30e-6}}}
    # 20 us beside a 5 us run overhead: 15 us over it, 24 us as the rows stand (9 us)
    assert ew_scan_times(measured) == {(4, 16, 8): pytest.approx(24e-6, rel=1e-12)}
    assert ew_scan_times(measured, "ew_scan_extra_s") == {(2, 1, 256): pytest.approx(34e-6, rel=1e-12)}
    assert ew_scan_times({"run_overhead_s": 9e-6}) == {}


def test_the_calibration_sets_the_scale_that_reproduces_its_scans():
    from analyzer.measure.xla import rows as xr
    from analyzer.measure.xla.loop_work import predicted_scans, set_loop_work_scale

    doc = _doc(None, bw_gbs=38.0)
    keys = [(k, m, t) for k in xr.EW_SCAN_KERNELS for m in xr.EW_SCAN_ROWS for t in xr.EW_SCAN_TRIPS]
    pred = predicted_scans(doc, dict.fromkeys(keys, 0.0))
    # (a, W): a at the scale 0 and W the work it took off; a + W is the prediction without the figure
    fn, args = xr.ew_scan_program(8, 16, 1)
    full = _predict(fn, args, write_profile(doc, _tmp_toml())).predictions[0].latency_s
    assert sum(pred[(1, 16, 8)]) == pytest.approx(full, rel=1e-9) and pred[(1, 16, 8)][1] > 0
    # scans timed at a + 0.4 W, beside a run overhead 3 us under the rows' (4 us)
    measured = {"run_overhead_s": RUN_US * 1e-6, "ew_scan_run_overhead_s": RUN_US * 1e-6 - 3e-6, "ew_scan_s": {}}
    for k, m, t in keys:
        a, w = pred[(k, m, t)]
        measured["ew_scan_s"].setdefault(f"{k}/{m}", {})[str(t)] = a + 0.4 * w - 3e-6
    set_loop_work_scale(doc, measured, "test")
    assert doc["calibration"]["loop_work_scale"] == pytest.approx(0.4, rel=1e-6)
    assert "8 scans" in doc["sources"]["calibration.loop_work_scale"]
    bare = _doc(None)
    set_loop_work_scale(bare, {"run_overhead_s": RUN_US * 1e-6}, "test")
    assert "loop_work_scale" not in bare["calibration"]


def test_the_elementwise_scan_plans_its_kernels_and_the_counter_a_trip():
    import hardware_db
    from analyzer.measure.xla.rows import ew_scan_program

    # per trip: one loop fusion per carry and the counter's copy, add and compare (XLA's optimized
    # HLO runs the same: 4, 5 and 7 thunks a trip for 1, 2 and 4 carries)
    for k in (1, 2, 4):
        n = [_predict(*ew_scan_program(t, 16, k), hardware_db.get("epyc-9654")).predictions[0].launches
             for t in (8, 64)]
        assert (n[1] - n[0]) / 56 == k + 3
