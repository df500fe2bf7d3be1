"""Image-stem convolutions on the FMA units (``stem_conv``): an fp32 convolution of fewer than 4
input channels on a Hopper profile is class ``conv_stem``, priced at the FMA units' fp32 peak with
the FMA-unit ``conv_simt`` set, TF32 allowed or not; a 64-channel convolution, an fp16 stem and an
A100's stem are priced as before."""

from __future__ import annotations

import json
import os

import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.prediction import stem_conv

HOPPER = os.path.join(os.path.dirname(__file__), "..", "..", "hardware_db", "efficiency", "nvidia-hopper.json")


def _conv(cin=3, cout=64, k=7, stride=2, pad=3, hw=224, n=1, elem=TensorProto.FLOAT):
    o = (hw + 2 * pad - k) // stride + 1
    vi = helper.make_tensor_value_info
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="stem", pads=[pad] * 4, strides=[stride, stride])
    g = helper.make_graph([node], "g", [vi("x", elem, [n, cin, hw, hw]), vi("w", elem, [cout, cin, k, k])],
                          [vi("y", elem, [n, cout, o, o])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _terms(model, hw="h200-sxm", **kw):
    return analyzer.analyze(model, hw=[hw], runtime="kernel", **kw).predictions[0].explain(0)


def _hopper(cls):
    with open(HOPPER, encoding="utf-8") as f:
        return json.load(f)["sets"][cls]["constants"]


def test_a_3_channel_stem_runs_on_the_fma_units_at_the_closed_form_time():
    # ResNet-50's stem at batch 1: [1, 3, 224, 224] * [64, 3, 7, 7], stride 2 -> [1, 64, 112, 112]
    e = _terms(_conv())
    assert e.op_class == "conv_stem"
    assert e.mac_flops == 2 * 64 * 112 * 112 * 3 * 7 * 7 == 236_027_904
    # the FMA units' fp32 peak (66.9 TFLOP/s, h200-sxm's vector fp32) x fp32_datapath_factor 0.852, not
    # the TF32 tensor-core peak (494.7 TFLOP/s) PyTorch's default gives the other fp32 convolutions
    peak = 66.9e12 * 0.852
    assert e.matrix_peak == pytest.approx(peak)          # 57.0 TFLOP/s
    assert e.e_compute == pytest.approx(_hopper("conv_simt")["e_compute"]) == pytest.approx(0.5243)
    # matrix = MAC x padding x waves x narrow / (peak x e_compute); the tile factors as the terms give them
    matrix = 236_027_904 * e.pad * e.algo * e.wave * e.narrow * e.clock / (peak * 0.5243)
    assert e.matrix_s == pytest.approx(matrix, rel=1e-6)
    assert e.time_s == pytest.approx(e.fixed_s + max(e.compute_s, e.memory_s), rel=1e-9)
    # at padding 1.1 and 1.35 waves: 236,027,904 x 1.485 / 29.9 TFLOP/s = about 11.7 us of compute
    assert e.compute_s == pytest.approx(11.7e-6, rel=0.02)


def test_tf32_allowed_or_not_the_stem_takes_the_same_time():
    base = _terms(_conv())
    for precision in ("fp32", "tf32"):
        e = _terms(_conv(), precision=precision)
        assert e.op_class == "conv_stem" and e.time_s == pytest.approx(base.time_s, rel=1e-12)


def test_a_64_channel_convolution_is_unchanged(monkeypatch):
    model = _conv(cin=64, cout=64, k=3, stride=1, pad=1, hw=56, n=8)
    e = _terms(model)
    assert e.op_class == "conv3_simt" and e.matrix_peak == pytest.approx(494.7e12)   # TF32 tensor cores
    monkeypatch.setattr(stem_conv, "FAMILIES", frozenset())                           # the rule off
    assert _terms(model).time_s == e.time_s


def test_an_fp16_stem_and_an_a100_stem_keep_the_tensor_cores(monkeypatch):
    e = _terms(_conv(elem=TensorProto.FLOAT16))
    assert e.op_class == "conv" and e.matrix_peak == pytest.approx(989.4e12)
    a100 = _terms(_conv(), hw="a100-80gb-sxm")
    assert a100.op_class == "conv_simt" and a100.matrix_peak == pytest.approx(156e12)
    # lowered with an H200 the A100's stem is class conv_stem, at the same time (engine_slot)
    both = analyzer.analyze(_conv(), hw=["h200-sxm", "a100-80gb-sxm"], runtime="kernel").predictions
    assert [p.explain(0).op_class for p in both] == ["conv_stem", "conv_stem"]
    assert both[1].explain(0).time_s == pytest.approx(a100.time_s, rel=1e-12)
    assert both[0].explain(0).time_s == pytest.approx(_terms(_conv()).time_s, rel=1e-12)


def test_explain_says_which_engine_and_why():
    from analyzer.render.explain_terms import stem_lines

    line = " ".join(stem_lines(_terms(_conv())))
    assert "FMA units" in line and "fewer than 4 input channels" in line and "57 TFLOP/s" in line
