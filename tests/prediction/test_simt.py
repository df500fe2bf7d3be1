"""FMA-unit (SIMT) matrix kernels (issue 32 item 3): an fp32 product on a GPU without an fp32
matrix-engine figure takes the pooled SIMT classes (gemm_simt, bgemm_simt, conv_simt, conv3_simt);
a 3x3 stride-1 convolution runs fewer multiplies (Winograd/FFT); a power-capped card's FMA peak is
taken at its sustained clock (its tensor-core peaks too)."""

from __future__ import annotations

import dataclasses

import pytest
from onnx import TensorProto, helper

import analyzer
import hardware_db
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff


def _one(op, ins, outs, opset=17, elem=TensorProto.FLOAT, **attrs):
    vi = helper.make_tensor_value_info
    n = helper.make_node(op, [a for a, _ in ins], [a for a, _ in outs], name="x0", **attrs)
    g = helper.make_graph([n], "g", [vi(a, elem, s) for a, s in ins], [vi(a, elem, s) for a, s in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _matmul(elem=TensorProto.FLOAT):
    return _one("MatMul", [("a", [512, 1024]), ("b", [1024, 768])], [("y", [512, 768])], elem=elem)


def _conv(k=3, stride=1):
    o = (56 + 2 - k) // stride + 1
    return _one("Conv", [("x", [8, 64, 56, 56]), ("w", [64, 64, k, k])], [("y", [8, 64, o, o])],
                pads=[1, 1, 1, 1], strides=[stride, stride])


def _terms(model, hw, **kw):
    rep = analyzer.analyze(model, hw=[hw], **kw)
    return rep.predictions[0].explain(0)


def test_fp32_products_on_the_fma_units_take_the_simt_classes():
    assert _terms(_matmul(), "v100-pcie-32gb", runtime="kernel").op_class == "gemm_simt"
    bmm = _one("MatMul", [("a", [4, 64, 128]), ("b", [4, 128, 64])], [("y", [4, 64, 64])])
    assert _terms(bmm, "v100-pcie-32gb", runtime="eager-op").op_class == "bgemm_simt"
    # fp16 runs on the tensor cores: the tensor-core class
    assert _terms(_matmul(TensorProto.FLOAT16), "v100-pcie-32gb", runtime="kernel").op_class == "gemm"
    # precision tf32 puts the product on the tensor cores (A100): not SIMT
    assert _terms(_matmul(), "a100-40gb-pcie", runtime="kernel", precision="tf32").op_class == "gemm"
    # onnxruntime's kernels are not PyTorch's: the classes stay
    assert _terms(_matmul(), "v100-pcie-32gb", runtime="onnxruntime").op_class == "gemm"


def test_the_simt_constants_are_the_pooled_generic_sets_or_the_familys_own():
    gen = fc.load_constants("generic").arrays
    i = eff.CLASS_CODE["gemm_simt"]
    # Pascal keeps the pooled gemm_simt (its own fit did not beat it: bench/family_simt.py)
    t = _terms(_matmul(), "p100-pcie-16gb", runtime="kernel")
    assert t.e_compute == pytest.approx(gen["e_compute"][i])
    # the A100 takes the Ampere family's own gemm_simt, not the family's tensor-core gemm set
    amp = fc.load_constants("nvidia-ampere").arrays
    a = _terms(_matmul(), "a100-40gb-pcie", runtime="kernel")
    assert a.op_class == "gemm_simt" and a.e_compute == pytest.approx(amp["e_compute"][i])
    assert a.e_compute != pytest.approx(amp["e_compute"][eff.CLASS_CODE["gemm"]])


def test_tf32_convolutions_keep_the_tensor_core_constants():
    # PyTorch's default on an A100 (eager/kernel): fp32 convolutions run in TF32 on the tensor cores, so
    # the conv3_simt slot holds the family's conv constants (engine_sets), at the TF32 peak
    t = _terms(_conv(), "a100-40gb-pcie", runtime="kernel")
    conv = fc.load_constants("nvidia-ampere").arrays
    j = eff.CLASS_CODE["conv"]
    assert t.matrix_peak == pytest.approx(156e12)
    assert t.e_compute == pytest.approx(conv["e_compute"][j]) and t.algo == 1.0


def test_winograd_share_on_a_3x3_stride_1_conv_not_on_a_strided_one():
    share = fc.load_constants("generic").arrays["mult_share"][eff.CLASS_CODE["conv3_simt"]]
    assert 0.25 <= share <= 16 / 36 + 0.1   # between F(4x4,3x3) and about F(2x2,3x3)
    w = _terms(_conv(), "v100-pcie-32gb", runtime="kernel")
    s = _terms(_conv(stride=2), "v100-pcie-32gb", runtime="kernel")
    assert w.op_class == "conv3_simt" and w.algo == pytest.approx(share)
    assert s.op_class == "conv_simt" and s.algo == 1.0
    # closed form: matrix = MAC x padding x algo x waves x narrow / (peak x e_compute)
    assert w.matrix_s == pytest.approx(w.mac_flops * w.pad * w.algo * w.wave * w.narrow
                                       / (w.matrix_peak * w.e_compute), rel=1e-9)
    one = _terms(_conv(k=1), "v100-pcie-32gb", runtime="kernel")
    assert one.op_class == "conv_simt" and one.algo == 1.0


def test_explain_says_the_multiply_share():
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze(_conv(), hw=["v100-pcie-32gb"], runtime="kernel")
    assert "of direct (Winograd/FFT)" in render_explain(rep, 0)


def test_a_sustained_clock_scales_the_fma_and_tensor_core_peaks():
    t4 = hardware_db.get("t4")
    assert t4.sustained_clock_ghz and t4.sustained_clock_ghz < t4.clock_ghz
    assert "fitted" in t4.sources["power.sustained_clock_ghz"]
    share = t4.sustained_clock_ghz / t4.clock_ghz
    assert _terms(_matmul(), "t4", runtime="kernel").matrix_peak == pytest.approx(8.1e12 * share)
    # one clock for the whole SM: the tensor cores' fp16 figure (65 TF) at the same share
    assert _terms(_matmul(TensorProto.FLOAT16), "t4", runtime="kernel").matrix_peak == pytest.approx(65e12 * share)
    # without the figure: the boost clock's peak
    bare = dataclasses.replace(t4, sustained_clock_ghz=None)
    assert _terms(_matmul(), bare, runtime="kernel").matrix_peak == pytest.approx(8.1e12)


def test_a_datasheet_set_keeps_its_own_constants_for_the_simt_classes():
    ds = fc.load_constants("datasheet").arrays
    for simt, base in (("gemm_simt", "gemm"), ("bgemm_simt", "bgemm"), ("conv3_simt", "conv")):
        i, j = eff.CLASS_CODE[simt], eff.CLASS_CODE[base]
        assert ds["e_compute"][i] == ds["e_compute"][j] and ds["mult_share"][i] == 0.0
