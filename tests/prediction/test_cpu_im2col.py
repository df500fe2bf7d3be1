"""A CPU convolution run as im2col + GEMM pays per element of its im2col matrix (``im2col_s``).
Closed-form numbers; no wall-clock assertions."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer.measure.fit import class_fit as cpu_model
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency.constants import load_constants
from analyzer.measure.calibrate import calibration_sources, write_profile


def test_class_fixed_s_adds_im2col_s_per_element():
    # conv1d kernels with views m x k = 996 x 80 (79,680 elements) and 0 (no view); 0.2 ns an
    # element: 15.936 us on the first, none on the second
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v)
              for k, v in load_constants("datasheet").arrays.items()}
    arrays["im2col_s"][eff.CLASS_CODE["conv1d"]] = 0.2e-9
    cls = np.array([eff.CLASS_CODE["conv1d"]] * 2)
    out = eff.class_fixed_s(np, np.array([1e5, 1e5]), cls, arrays, m=np.array([996.0, 0.0]),
                            k=np.array([80.0, 0.0]), batch=np.array([1.0, 1.0]))
    assert out[0] == pytest.approx(79680 * 0.2e-9, rel=1e-12)
    assert out[1] == 0.0
    # and through the kernel form (its floor): m 996, k 80, batch 1
    feats = {"op_class": cls[:1], "mac_flops": np.array([2.0 * 996 * 32 * 80]), "bytes": np.array([1e5]),
             "m": np.array([996.0]), "n": np.array([32.0]), "k": np.array([80.0]), "batch": np.array([1.0])}
    hw = {"matrix_peak": 1e12, "vector_peak": 1e12, "mem_bw": 1e11}
    base = dict(arrays, im2col_s=np.zeros_like(arrays["im2col_s"]))
    d = eff.kernel_time(np, feats, hw, arrays)["floor_s"][0] - eff.kernel_time(np, feats, hw, base)["floor_s"][0]
    assert d == pytest.approx(79680 * 0.2e-9, rel=1e-9)


def _rows(im2col_s, n_rows=16):
    peak, bw = 3e11, 5e10
    rng = np.random.default_rng(11)
    m = rng.choice([20, 100, 500, 2000], n_rows).astype(float)
    n = rng.choice([16, 32, 64, 128], n_rows).astype(float)
    k = rng.choice([10, 40, 96, 384, 1536], n_rows).astype(float)
    mac = 2 * m * n * k
    B = 4 * (m * k / 4 + k * n + m * n)
    view = np.stack([mac, m, n, k, np.ones(n_rows)])
    t = cpu_model.kernel_time(mac, B, 0.5e-6, 0.8, 1.0, 0.0, peak, bw, view=view, im2col_s=im2col_s)
    return mac, B, t, peak, bw, view


def test_fit_finds_the_im2col_cost_and_none_where_rows_have_none():
    mac, B, t, peak, bw, view = _rows(0.3e-9)
    fit = cpu_model.fit_class(mac, B, t, peak, bw, view=view, im2col=True)
    assert fit["im2col_s"] == pytest.approx(0.3e-9, rel=0.1)
    assert fit["fit_mape"] < 2.0
    # asked for by a class whose rows have none: not kept; not asked for: not fitted
    mac, B, t, peak, bw, view = _rows(0.0)
    assert cpu_model.fit_class(mac, B, t, peak, bw, view=view, im2col=True)["im2col_s"] == 0.0
    mac, B, t, peak, bw, view = _rows(0.3e-9)
    assert cpu_model.fit_class(mac, B, t, peak, bw, view=view)["im2col_s"] == 0.0


def _conv1d():
    # a 1-channel 1-D conv: 16,000 samples, 32 filters of 80 taps, stride 16 -> 996 outputs
    w = numpy_helper.from_array(np.ones((32, 1, 80), np.float32), "W")
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="stem", strides=[16])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 16000])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 996])], [w])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def test_a_calibrated_profile_charges_the_im2col_copy(tmp_path):
    # the stem's view: m 996 outputs, n 32 filters, k 80 taps: 79,680 im2col elements x 0.15 ns
    # = 11.952 us more on a profile whose conv1d table has im2col_ns 0.15
    from analyzer import analyze
    from analyzer.prediction.node_shapes import gemm_view
    from tests.profile_docs import calibrated_doc

    def doc(ns):
        d = calibrated_doc(threads=1)
        table = {"floor_us": 0.0, "e_c": 1.0, "e_bw": 1.0, "b_half_bytes": 0.0, "l2_gain": 0.0, "rows": 1,
                 "fit_mape": 0.0}
        if ns:
            table["im2col_ns"] = ns
        d["calibration"].update({"run_overhead_us": 0.0, "tables": {"conv1d": table}})
        d["sources"].update(calibration_sources(d["calibration"], "test"))
        return d

    nc = analyze(_conv1d()).nodes[0]
    assert nc.cost.mac_flops == 2 * 996 * 32 * 80
    assert gemm_view(nc)[:4] == (996.0, 32.0, 80.0, 1.0)
    t0, t1 = (analyze(_conv1d(), hw=write_profile(doc(ns), tmp_path / f"{ns}.toml")).predictions[0].latency_s
              for ns in (0.0, 0.15))
    assert t1 - t0 == pytest.approx(79680 * 0.15e-9, rel=1e-6)
