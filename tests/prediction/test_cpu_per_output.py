"""A calibrated class's cost per output element (``out_s``, a calibration table's ``out_ns``): XLA's
CPU depthwise convolution costs about 19 ns an output plus 0.9 ns an output and tap on the
calibration VM, which ``max(compute, memory)`` alone did not fit. Charged once per output element
(``m x n x max(batch, 1)`` of the kernel's view) inside the fixed term, shown by ``--explain``;
fitted only where asked (``fit_class(..., per_output=True)``). Closed-form numbers; no wall-clock
assertions."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.measure.fit import class_fit as cpu_model

PEAK, BW = 0.2e12, 100e9     # FLOP/s, B/s of the synthetic machine
OUT_NS, E_C = 19.0, 0.01     # per output; the taps at 0.01 x 0.2 TFLOP/s = 2 GFLOP/s: 1 ns a tap


def _rows():
    """Nine depthwise rows (batch, channels, side, taps, stride) timed by the form at floor 0,
    e_c 0.01, e_bw 0.02 and 19 ns an output: (flops, bytes, seconds, view)."""
    spec = [(1, 32, 28, 9, 1), (1, 96, 14, 9, 1), (2, 48, 20, 25, 1), (8, 32, 24, 9, 1), (4, 64, 16, 9, 1),
            (8, 16, 32, 25, 1), (2, 128, 14, 9, 1), (4, 48, 14, 9, 2), (2, 32, 20, 49, 1)]
    b, c, hw, taps, s = (np.array(v, np.float64) for v in zip(*spec))
    m = b * hw * hw            # output positions (the view's m: batch x spatial), n = channels, k = taps
    mac = 2 * m * c * taps
    nbytes = 4 * (m * c * s * s + m * c + c * taps)
    view = np.vstack([mac, m, c, taps, np.ones_like(m), (s > 1).astype(float), 0 * m])
    t = cpu_model.kernel_time(mac, nbytes, 0.0, E_C, 0.02, 0.0, PEAK, BW, view=view, out_s=OUT_NS * 1e-9)
    return mac, nbytes, t, view


def test_the_form_charges_each_output_element():
    _, _, t, _ = _rows()
    # 1 x 32 x 28 x 28, 3x3: 25,088 outputs x (19 ns + 9 taps x 2 FLOPs / 2 GFLOP/s = 9 ns)
    # = 25,088 x 28 ns = 702.464 us (memory: 4 x (25,088 x 2 + 288) B / 2 GB/s = 100.9 us, under it)
    assert t[0] == pytest.approx(25088 * 28e-9, rel=1e-9)
    # 2 x 32 x 20 x 20, 7x7: 25,600 outputs x (19 + 49 ns) = 1,740.8 us
    assert t[8] == pytest.approx(25600 * 68e-9, rel=1e-9)


def test_fit_class_recovers_the_cost_per_output_only_when_asked():
    mac, nbytes, t, view = _rows()
    fit = cpu_model.fit_class(mac, nbytes, t, PEAK, BW, view=view, ramp_fixed=False, per_output=True)
    assert fit["out_s"] == pytest.approx(OUT_NS * 1e-9, rel=0.05)
    assert fit["e_c"] == pytest.approx(E_C, rel=0.05)
    assert fit["fit_mape"] < 2.0
    off = cpu_model.fit_class(mac, nbytes, t, PEAK, BW, view=view, ramp_fixed=False)
    assert off["out_s"] == 0.0 and off["fit_mape"] > 5 * fit["fit_mape"]


def _profile(tmp_path, out_ns: float | None) -> str:
    from hardware_db.write import calibration_sources, write_profile
    from xla_cpu_profile import calibrated_xla_doc

    doc = calibrated_xla_doc({"conv_dw": 0.5, "movement": 0.2, "elementwise": 0.2}, 4.0, program_launch_us=0.1)
    if out_ns is not None:
        doc["calibration"]["tables"]["conv_dw"]["out_ns"] = out_ns
        doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return write_profile(doc, tmp_path / f"out_{out_ns}.toml")


def test_a_depthwise_convolution_pays_its_outputs_and_explain_shows_them(tmp_path):
    import jax
    import jax.numpy as jnp

    import analyzer
    from analyzer.render.explain import render_explain

    w = jnp.ones((3, 3, 1, 32), jnp.float32)

    def dw(x):
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                            feature_group_count=32)
    x = jax.ShapeDtypeStruct((2, 16, 16, 32), jnp.float32)
    old, new = (analyzer.analyze_jax(dw, x, hw=_profile(tmp_path, o), runtime="xla") for o in (None, OUT_NS))
    # 2 x 16 x 16 x 32 = 16,384 output elements x 19 ns = 311.296 us more, inside the fixed term
    # (the kernel times are float32: to 1e-6)
    assert new.predictions[0].latency_s - old.predictions[0].latency_s == pytest.approx(16384 * 19e-9, rel=1e-6)
    text = render_explain(new, 0)
    assert "of which per output" in text and "output elements 16.4 K x 19 ns" in text
