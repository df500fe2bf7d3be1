"""Two CPU kernel costs the MAC count does not see: a strided convolution's im2col is a gather
(``im2col_stride_s`` per element, on top of ``im2col_s``), and an RNN's recurrent products are a
chain of small matrix-vector products (``serial_s`` per recurrent FLOP). Closed-form numbers;
no wall-clock assertions."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer import analyze
from analyzer.measure.fit import class_fit as cpu_model
from analyzer.measure.calibrate import calibration_sources, write_profile
from analyzer.prediction.node_shapes import gemm_view, serial_flops, strided_conv


def _conv(x_shape, w_shape, y_shape, **attrs):
    w = numpy_helper.from_array(np.ones(w_shape, np.float32), "W")
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y_shape))], [w])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def _rnn(op, t, i, h, dirs):
    gates = {"LSTM": 4, "GRU": 3}[op]
    w = numpy_helper.from_array(np.ones((dirs, gates * h, i), np.float32), "W")
    r = numpy_helper.from_array(np.ones((dirs, gates * h, h), np.float32), "R")
    node = helper.make_node(op, ["x", "W", "R"], ["y"], name="rnn", hidden_size=h,
                            direction="bidirectional" if dirs == 2 else "forward")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, 1, i])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [t, dirs, 1, h])], [w, r])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


@pytest.mark.parametrize("x, w, y, attrs, strided", [
    # M5's stem: 16,000 samples, 80 taps, stride 16 -> 996 outputs
    ((1, 1, 16000), (32, 1, 80), (1, 32, 996), {"strides": [16]}, 1.0),
    # the same 80 taps at stride 1, unpadded: 1,075 -> 996 (shorter, but not half)
    ((1, 1, 1075), (32, 1, 80), (1, 32, 996), {}, 0.0),
    # a 3x3 stride-2 2-D conv, padded: 57 -> 29 (2 x 29 <= 57 + 1)
    ((1, 64, 57, 57), (64, 64, 3, 3), (1, 64, 29, 29), {"strides": [2, 2], "pads": [1, 1, 1, 1]}, 1.0),
    # 'same' padding at stride 1
    ((1, 64, 56, 56), (64, 64, 3, 3), (1, 64, 56, 56), {"pads": [1, 1, 1, 1]}, 0.0),
    # a ResNet downsample: 1x1, stride 2 in both dims
    ((1, 64, 56, 56), (128, 64, 1, 1), (1, 128, 28, 28), {"strides": [2, 2]}, 1.0),
    # stride 2 in one dim only (a CRNN's pool-like conv)
    ((1, 32, 16, 64), (32, 32, 3, 3), (1, 32, 8, 64), {"strides": [2, 1], "pads": [1, 1, 1, 1]}, 1.0),
])
def test_a_conv_is_strided_where_an_output_dim_is_at_most_half_its_input(x, w, y, attrs, strided):
    assert strided_conv(analyze(_conv(x, w, y, **attrs)).nodes[0]) == strided


def test_serial_flops_are_the_recurrent_products():
    # LSTM, T 32, I 256, H 128, both directions: mac = 2 * 32 * 2 * 4*128 * (256 + 128)
    # = 25,165,824; the recurrent part 2 * 32 * 2 * 512 * 128 = 8,388,608 (H / (I + H) = 1/3)
    n = analyze(_rnn("LSTM", 32, 256, 128, 2)).nodes[0]
    assert n.cost.mac_flops == 2 * 32 * 2 * 512 * (256 + 128) == 25_165_824
    assert serial_flops(n) == 2 * 32 * 2 * 512 * 128 == 8_388_608
    # GRU, T 8, I 64, H 64, forward: 2 * 8 * 192 * 64 = 196,608
    assert serial_flops(analyze(_rnn("GRU", 8, 64, 64, 1)).nodes[0]) == 196_608
    # any other node: none
    conv = _conv((1, 1, 1075), (32, 1, 80), (1, 32, 996))
    assert serial_flops(analyze(conv).nodes[0]) == 0.0


def _profile(tmp_path, cls, **extra):
    from tests.profile_docs import calibrated_doc

    d = calibrated_doc(threads=1)
    table = {"floor_us": 0.0, "e_c": 1.0, "e_bw": 1.0, "b_half_bytes": 0.0, "l2_gain": 0.0, "rows": 1,
             "fit_mape": 0.0, **extra}
    d["calibration"].update({"run_overhead_us": 0.0, "tables": {cls: table}})
    d["sources"].update(calibration_sources(d["calibration"], "test"))
    name = "_".join(f"{k}{v}" for k, v in sorted(extra.items())) or "base"
    return write_profile(d, tmp_path / f"{cls}_{name}.toml")


def test_a_calibrated_profile_charges_a_strided_im2col_its_extra_cost_only(tmp_path):
    # the stride-16 stem: m 996 x k 80 = 79,680 im2col elements; 0.1 ns each plus 0.2 ns more
    # when strided: 0.3 x 79,680 = 23.904 us on it, 0.1 x 79,680 = 7.968 us on the stride-1 conv
    strided = _conv((1, 1, 16000), (32, 1, 80), (1, 32, 996), strides=[16])
    plain = _conv((1, 1, 1075), (32, 1, 80), (1, 32, 996))
    assert gemm_view(analyze(strided).nodes[0])[:4] == gemm_view(analyze(plain).nodes[0])[:4] == (996.0, 32.0, 80.0, 1.0)
    base = _profile(tmp_path, "conv1d")
    both = _profile(tmp_path, "conv1d", im2col_ns=0.1, im2col_stride_ns=0.2)

    def lat(m, p):
        return analyze(m, hw=p).predictions[0].latency_s

    assert lat(strided, both) - lat(strided, base) == pytest.approx(79680 * 0.3e-9, rel=1e-6)
    assert lat(plain, both) - lat(plain, base) == pytest.approx(79680 * 0.1e-9, rel=1e-6)


def test_a_calibrated_profile_charges_an_rnn_per_recurrent_flop(tmp_path):
    # 8,388,608 recurrent FLOPs x 0.015 ns = 125.82912 us
    m = _rnn("LSTM", 32, 256, 128, 2)
    t0 = analyze(m, hw=_profile(tmp_path, "rnn")).predictions[0].latency_s
    t1 = analyze(m, hw=_profile(tmp_path, "rnn", serial_ns=0.015)).predictions[0].latency_s
    assert t1 - t0 == pytest.approx(8_388_608 * 0.015e-9, rel=1e-6)


def test_fit_finds_the_strided_im2col_cost_beside_the_plain_one():
    peak, bw = 3e11, 5e10
    rng = np.random.default_rng(5)
    n_rows = 16
    m = rng.choice([100, 500, 2000], n_rows).astype(float)
    n = rng.choice([16, 32, 64], n_rows).astype(float)
    k = rng.choice([10, 40, 96, 384], n_rows).astype(float)
    strided = (np.arange(n_rows) % 2).astype(float)
    mac = 2 * m * n * k
    B = 4 * (m * k / 4 + k * n + m * n)
    view = np.stack([mac, m, n, k, np.ones(n_rows), strided, np.zeros(n_rows)])
    t = cpu_model.kernel_time(mac, B, 0.5e-6, 0.8, 1.0, 0.0, peak, bw, view=view, im2col_s=0.1e-9,
                              im2col_stride_s=0.2e-9)
    fit = cpu_model.fit_class(mac, B, t, peak, bw, view=view, im2col=True)
    assert fit["im2col_s"] == pytest.approx(0.1e-9, rel=0.15)
    assert fit["im2col_stride_s"] == pytest.approx(0.2e-9, rel=0.15)
    # rows none of which is strided: no strided cost
    view[5] = 0.0
    t = cpu_model.kernel_time(mac, B, 0.5e-6, 0.8, 1.0, 0.0, peak, bw, view=view, im2col_s=0.1e-9)
    assert cpu_model.fit_class(mac, B, t, peak, bw, view=view, im2col=True)["im2col_stride_s"] == 0.0


def test_fit_finds_the_serial_cost_and_none_where_rows_have_none():
    peak, bw = 3e11, 5e10
    # 12 recurrent layers: T, I, H as in calibration_models' rnn rows; G = 4
    shapes = [(8, 64, 64), (32, 128, 128), (64, 256, 256), (16, 512, 256), (96, 32, 128), (24, 256, 128)] * 2
    mac = np.array([2.0 * t * 4 * h * (i + h) for t, i, h in shapes])
    serial = np.array([2.0 * t * 4 * h * h for t, i, h in shapes])
    B = np.array([4.0 * 4 * h * (i + h) for t, i, h in shapes])
    z = np.zeros(len(shapes))
    view = np.stack([mac, z, z, z, z, z, serial])
    t = cpu_model.kernel_time(mac, B, 2e-6, 0.8, 1.0, 0.0, peak, bw, view=view, serial_s=0.015e-9)
    t = t * (1 + 0.01 * np.sin(np.arange(len(t))))   # (not an exact form: a little noise)
    fit = cpu_model.fit_class(mac, B, t, peak, bw, view=view)
    assert fit["serial_s"] == pytest.approx(0.015e-9, rel=0.15)
    t = cpu_model.kernel_time(mac, B, 2e-6, 0.8, 1.0, 0.0, peak, bw, view=view)
    assert cpu_model.fit_class(mac, B, t, peak, bw, view=view)["serial_s"] == 0.0


def test_a_recurrent_layer_is_one_piece_per_step_and_direction(tmp_path):
    # LSTM T 32, I 256, H 128, both directions: 64 pieces of 1 row x [384] x [512]
    # (2 x 1 x 512 x 384 x 64 = 25,165,824 = its mac count); a profile's rnn piece_us 0.4:
    # 63 extra pieces x 0.4 us = 25.2 us
    m = _rnn("LSTM", 32, 256, 128, 2)
    n = analyze(m).nodes[0]
    assert gemm_view(n)[:4] == (1.0, 512.0, 384.0, 64.0)
    assert 2 * 1 * 512 * 384 * 64 == n.cost.mac_flops
    t0 = analyze(m, hw=_profile(tmp_path, "rnn")).predictions[0].latency_s
    t1 = analyze(m, hw=_profile(tmp_path, "rnn", piece_us=0.4)).predictions[0].latency_s
    assert t1 - t0 == pytest.approx(63 * 0.4e-6, rel=1e-6)
