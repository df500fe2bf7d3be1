"""The XLA calibration's launch figures net of their programs' predicted work
(``loop_scan.launch_work_s``), and its class fits with the whole fixed cost in the floor
(``class_fit.fit_class(..., ramp_fixed=False)``): closed forms and the figures' defining property
(the refit profile reproduces the scan's time per trip and the chain's time per link)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from analyzer import analyze_jax
from analyzer.measure.fit import class_fit
from analyzer.measure.xla import fit as xla_fit
from analyzer.measure.xla import loop_scan
from analyzer.measure.xla import rows as xr
from analyzer.prediction.cpu import loop_launch
from hardware_db.write import calibration_sources, write_profile
from xla_cpu_profile import calibrated_xla_doc


def _doc(floor_us: float = 0.3) -> dict:
    return calibrated_xla_doc({c: floor_us for c in ("gemm", "elementwise", "activation", "movement")}, 9.0,
                              eff=0.5, tflops=0.01, bw_gbs=10.0, pid="calibrated-work-test")


def _latency(path, fn, args) -> float:
    sds = tuple(jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype) for a in args)
    return analyze_jax(fn, *sds, hw=path, runtime="xla").predictions[0].latency_s


def test_the_launch_figures_net_of_the_work_reproduce_the_scan(tmp_path):
    # a slow profile (10 GFLOP/s, 10 GB/s at e 0.5): a trip's and a link's work are a part
    # of the measured 0.5 us a trip and 0.8 us a link; the figures take it off, so the profile
    # with them predicts the measured slopes exactly
    lo, hi, n = *xr.SCAN_TRIPS, xr.TINY_CHAIN
    m = {"scan_s": {str(lo): 20e-6, str(hi): 20e-6 + (hi - lo) * 0.5e-6},
         "chain_s": {"1": 12e-6, str(n): 12e-6 + (n - 1) * 0.8e-6}, "run_overhead_s": 9e-6}
    doc = _doc()
    work = loop_scan.launch_work_s(doc)
    assert 0.0 < work["trip"] < 0.5e-6 and 0.0 < work["link"] < 0.8e-6
    # (7 and 2 planned launches: test_xla_calibration's test_the_scan_program_plans_seven_launches_a_trip
    # and test_the_chain_plans_two_launches_a_link)
    loop_s = xla_fit.loop_launch_s(m, 7.0, work["trip"])
    prog_s = xla_fit.program_launch_s(m, 2.0, work["link"])
    assert loop_s == pytest.approx((0.5e-6 - work["trip"]) / 7, rel=1e-12)      # 7 launches a trip
    assert prog_s == pytest.approx((0.8e-6 - work["link"]) / 2, rel=1e-12)      # 2 launches a link
    doc["calibration"].update(loop_launch_us=loop_s * 1e6, program_launch_us=prog_s * 1e6)
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    path = write_profile(doc, tmp_path / "p.toml")
    # the scan's slope (the chain's is the same arithmetic: work["link"] + 2 x prog_s = 0.8 us)
    trip = (_latency(path, *xr.scan_program(hi)) - _latency(path, *xr.scan_program(lo))) / (hi - lo)
    assert trip == pytest.approx(0.5e-6, rel=1e-6)


def test_work_above_the_measured_time_holds_the_figure_at_1_ns():
    lo, hi = xr.SCAN_TRIPS
    m = {"scan_s": {str(lo): 8e-6, str(hi): 8e-6 + (hi - lo) * 0.07e-6}}
    assert xla_fit.loop_launch_s(m, 7.0, 0.01e-6) == pytest.approx(0.06e-6 / 7, rel=1e-9)
    assert xla_fit.loop_launch_s(m, 7.0, 0.2e-6) == 1e-9


def test_inserted_launches_take_the_loop_figure_in_a_body_and_the_program_figure_outside():
    fixed = np.array([0.5, 0.5, 0.7])      # floor + 0.2 us (0.3, 0.3, 0.5 floors)
    floors = np.array([0.3, 0.3, 0.5])
    loop = np.array([True, False, False])
    out = loop_launch.inserted_fixed(fixed, floors, loop, 0.01, 0.1)
    assert out == pytest.approx([0.5 - 0.3 + 0.01, 0.5 - 0.3 + 0.1, 0.7 - 0.5 + 0.1])
    assert loop_launch.inserted_fixed(fixed, floors, loop, None, None) == pytest.approx(fixed)


def test_a_fit_without_the_ramps_fixed_part_puts_the_fixed_cost_in_the_floor():
    # t = 1 us + B / (1 GB/s x 0.5), B from 64 B to 1 MB (F = 0): the ramp's fixed part and the
    # floor trade off; with ramp_fixed False, b_half <= 0 and the floor is the 1 us
    B = np.geomspace(64, 2 ** 20, 12)
    t = 1e-6 + B / (1e9 * 0.5)
    fit = class_fit.fit_class(np.zeros_like(B), B, t, 1e12, 1e9, ramp_fixed=False, noise_floor_s=1e-8)
    assert fit["b_half"] <= 0.0
    assert fit["floor_s"] == pytest.approx(1e-6, rel=0.05)
    assert fit["fit_mape"] < 2.0
