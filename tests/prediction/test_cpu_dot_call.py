"""A library dot's cost per call (``dot_call_s``, a calibration table's ``dot_call_us``): charged once
to each kernel whose matrix view has m > 1 and n > 1 (XLA's CPU backend runs such a dot as a
YNNPACK fusion), never to a matrix-vector product, and not replaced by the launch figures inside a
program. Closed-form numbers; no wall-clock assertions."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.measure.fit import class_fit as cpu_model
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency.constants import load_constants

FLOOR_US, CALL_US, RUN_US, PROG_US = 0.3, 2.0, 4.0, 0.1
PEAK = 0.5e12   # FLOP/s (the test profile's 0.5 TFLOP/s at e_c 1)


def test_kernel_time_adds_dot_call_s_once_to_a_dot_and_not_to_a_gemv():
    # two gemm-class kernels of 524,288 FLOPs (64 x 64 x 64 and a 1 x 64 x 4096 GEMV), 1 KB each:
    # compute 524,288 / 0.5e12 = 1.048576 us; the dot pays the 2 us call, the GEMV does not
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v)
              for k, v in load_constants("datasheet").arrays.items()}
    g = eff.CLASS_CODE["gemm"]
    arrays["dot_call_s"][g] = CALL_US * 1e-6
    arrays["floor_s"][g] = FLOOR_US * 1e-6
    arrays["e_compute"][g] = 1.0
    arrays["tile_m"][g] = arrays["tile_n"][g] = 0.0
    feats = {"op_class": np.array([g, g]), "mac_flops": np.array([524288.0] * 2), "bytes": np.array([1e3] * 2),
             "m": np.array([64.0, 1.0]), "n": np.array([64.0, 4096.0]), "k": np.array([64.0, 64.0]),
             "batch": np.array([1.0, 1.0])}
    hw = {"matrix_peak": PEAK, "vector_peak": PEAK, "mem_bw": 1e15, "units": 0.0}
    t = eff.kernel_time(np, feats, hw, arrays)["time_s"]
    assert t[0] == pytest.approx((FLOOR_US + CALL_US + 1.048576) * 1e-6, rel=1e-9)
    assert t[1] == pytest.approx((FLOOR_US + 1.048576) * 1e-6, rel=1e-9)


def _rows():
    """16 gemm-class rows (6 GEMVs) timed by the form at floor 0.3 us, e_c 0.6, e_bw 1, and a
    2 us call on the dots: (mac, bytes, seconds, view)."""
    m = np.array([1, 1, 1, 1, 1, 1, 2, 8, 16, 32, 64, 128, 256, 512, 48, 200.0])
    n = np.array([48, 128, 512, 1024, 16, 256, 96, 48, 96, 48, 64, 128, 256, 512, 1024, 200.0])
    k = np.array([32, 128, 256, 1024, 96, 64, 64, 32, 128, 64, 64, 128, 256, 512, 1024, 96.0])
    mac, nbytes = 2 * m * n * k, 4 * (m * k + k * n + m * n)
    view = np.vstack([mac, m, n, k, np.ones_like(m), 0 * m, 0 * m])
    t = cpu_model.kernel_time(mac, nbytes, FLOOR_US * 1e-6, 0.6, 1.0, 0.0, PEAK, 50e9, view=view,
                              dot_call_s=CALL_US * 1e-6)
    return mac, nbytes, t, view


def test_the_form_in_the_fit_charges_the_call_to_the_dots_only():
    _, _, t, _ = _rows()
    # the 2 x 64 x 96 dot: 24,576 FLOPs at 0.6 x 0.5 TFLOP/s = 0.08192 us; its bytes 25,856 at
    # 50 GB/s = 0.51712 us (memory-bound): 0.3 + 2.0 + 0.51712 us
    assert t[6] == pytest.approx((0.3 + 2.0 + 0.51712) * 1e-6, rel=1e-9)
    # the 1 x 32 x 48 GEMV: 3,072 FLOPs; 6,464 bytes at 50 GB/s = 0.12928 us; no call
    assert t[0] == pytest.approx((0.3 + 0.12928) * 1e-6, rel=1e-9)


def test_fit_class_recovers_the_call_cost_and_leaves_it_off_without_gemvs():
    mac, nbytes, t, view = _rows()
    fit = cpu_model.fit_class(mac, nbytes, t, PEAK, 50e9, view=view, ramp_fixed=False, dot_call=True)
    assert fit["dot_call_s"] == pytest.approx(CALL_US * 1e-6, rel=0.1)   # (the simplex: 1.88 us)
    # all rows dots (no GEMV to hold the floor apart from the call): the term is not fitted
    dots = view[1] > 1
    only = cpu_model.fit_class(mac[dots], nbytes[dots], t[dots], PEAK, 50e9, view=view[:, dots],
                               ramp_fixed=False, dot_call=True)
    assert only["dot_call_s"] == 0.0
    # not asked for (every runtime but XLA's CPU calibration): not fitted
    off = cpu_model.fit_class(mac, nbytes, t, PEAK, 50e9, view=view, ramp_fixed=False)
    assert off["dot_call_s"] == 0.0
    # the rows are the form's own: with the term the fit comes far closer (the simplex: 4.7 %
    # against 39 % MAPE)
    assert fit["fit_mape"] < 0.25 * off["fit_mape"]


def _profile(tmp_path, call_us: float | None) -> str:
    from hardware_db.write import calibration_sources, write_profile
    from xla_cpu_profile import calibrated_xla_doc

    floors = {"gemm": FLOOR_US, "elementwise": 0.2, "activation": 0.2, "movement": 0.2}
    doc = calibrated_xla_doc(floors, RUN_US, program_launch_us=PROG_US)
    if call_us is not None:
        doc["calibration"]["tables"]["gemm"]["dot_call_us"] = call_us
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return write_profile(doc, tmp_path / f"dot_call_{call_us}.toml")


def _pred(fn, m: int, hw):
    import jax
    import jax.numpy as jnp

    from analyzer import analyze_jax

    return analyze_jax(fn, jax.ShapeDtypeStruct((m, 64), jnp.float32), hw=hw, runtime="xla").predictions[0]


@pytest.mark.parametrize("m, dots, call_us", [(8, 1, CALL_US), (1, 1, 0.0), (8, 2, 2 * CALL_US)])
def test_a_jax_program_pays_the_call_per_dot_that_is_not_a_gemv(tmp_path, m, dots, call_us):
    import jax.numpy as jnp

    w = jnp.ones((64, 64), jnp.float32)
    fn = (lambda x: x @ w) if dots == 1 else (lambda x: (x @ w) @ w)
    old, new = (_pred(fn, m, _profile(tmp_path, c)) for c in (None, CALL_US))
    # x[8, 64] @ w: one YNNPACK dot, 2 us more; x[1, 64] @ w: a GEMV (Eigen), unchanged; two
    # dots in one program: 2 x 2 us (the call is not a floor: program_launch_us does not replace it)
    assert new.latency_s - old.latency_s == pytest.approx(call_us * 1e-6, abs=1e-12)
