"""The FP32 datapath factor (``[compute] fp32_datapath_factor``): a GPU whose SM partitions issue
half their listed FP32 lanes on a datapath shared with INT32 (NVIDIA GA10x, AD10x), or 32 FP32 lanes
under one warp scheduler (GH100: its own factor), runs a matrix product on its FMA units at that
share of its listed fp32 vector peak; vector work, tensor-core products and the other designs keep
their figures; --explain says so."""

from __future__ import annotations

import dataclasses

import pytest
from onnx import TensorProto, helper

import analyzer
import hardware_db
from analyzer.prediction import engines
from analyzer.render.explain import render_explain


def _one(op, ins, outs, elem=TensorProto.FLOAT):
    vi = helper.make_tensor_value_info
    n = helper.make_node(op, [a for a, _ in ins], [a for a, _ in outs], name="x0")
    g = helper.make_graph([n], "g", [vi(a, elem, s) for a, s in ins], [vi(a, elem, s) for a, s in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _matmul(elem=TensorProto.FLOAT):
    return _one("MatMul", [("a", [512, 1024]), ("b", [1024, 768])], [("y", [512, 768])], elem=elem)


def _terms(model, hw):
    return analyzer.analyze(model, hw=[hw], runtime="kernel").predictions[0].explain(0)


def test_an_fma_matrix_product_runs_at_the_factor_of_the_listed_peak():
    g = hardware_db.get("rtx-4090").fp32_datapath_factor
    assert g == pytest.approx(0.706)
    # RTX 4090: 82.6 TF listed fp32 (128 SMs x 128 lanes x 2 x 2.52 GHz) x 0.706 = 58.32 TF
    assert _terms(_matmul(), "rtx-4090").matrix_peak == pytest.approx(82.6e12 * 0.706)
    # its tensor cores' fp16 figure (165.2 TF) is not an FMA-unit peak: as listed
    assert _terms(_matmul(TensorProto.FLOAT16), "rtx-4090").matrix_peak == pytest.approx(165.2e12)
    # vector work keeps the listed fp32 peak
    add = _one("Add", [("a", [1024, 1024]), ("b", [1024, 1024])], [("y", [1024, 1024])])
    assert _terms(add, "rtx-4090").vector_peak == pytest.approx(82.6e12)


def test_the_factor_and_a_sustained_clock_multiply():
    l4 = hardware_db.get("l4")
    # 30.3 TF x (1.166 / 2.04 GHz) x 0.706 = 12.227 TF on the FMA units; 121 TF x 1.166 / 2.04 = 69.16 TF fp16
    assert _terms(_matmul(), "l4").matrix_peak == pytest.approx(30.3e12 * 1.166 / 2.04 * 0.706)
    assert _terms(_matmul(TensorProto.FLOAT16), "l4").matrix_peak == pytest.approx(121e12 * 1.166 / 2.04)
    assert l4.fp32_datapath_factor == pytest.approx(0.706) and l4.sustained_clock_ghz == pytest.approx(1.166)


def test_a_compute_bound_sgemm_takes_one_over_the_factor_longer():
    big = _one("MatMul", [("a", [8192, 8192]), ("b", [8192, 8192])], [("y", [8192, 8192])])
    a40 = hardware_db.get("a40")
    bare = dataclasses.replace(a40, fp32_datapath_factor=None)

    def t(prof):
        return analyzer.analyze(big, hw=[prof], runtime="kernel").predictions[0].latency_s

    assert t(a40) / t(bare) == pytest.approx(1 / 0.706, rel=0.01)


def test_hopper_takes_its_own_factor():
    g = hardware_db.get("h100-sxm").fp32_datapath_factor
    assert g == pytest.approx(0.852) and hardware_db.get("h200-sxm").fp32_datapath_factor == g
    # H100 SXM: 66.9 TF listed fp32 x 0.852 = 57.0 TF on the FMA units; its fp16 tensor cores (989.4 TF) as listed
    assert _terms(_matmul(), "h100-sxm").matrix_peak == pytest.approx(66.9e12 * 0.852)
    assert _terms(_matmul(TensorProto.FLOAT16), "h100-sxm").matrix_peak == pytest.approx(989.4e12)


def test_other_designs_keep_one():
    # the SMs the FMA-unit constants were fitted on (V100, A100), the T4, and designs without data (Blackwell): 1
    for pid in ("v100-sxm2-32gb", "a100-40gb-pcie", "t4", "b200-hgx", "rtx-5090"):
        prof = hardware_db.get(pid)
        assert prof.fp32_datapath_factor is None and engines.datapath_factor(prof) == 1.0
    assert _terms(_matmul(), "a100-40gb-pcie").matrix_peak == pytest.approx(19.5e12)


def test_explain_shows_the_factor():
    rep = analyzer.analyze(_matmul(), hw=["rtx-4090"], runtime="kernel")
    text = render_explain(rep, 0)
    assert "reach 0.706 of its listed fp32 vector peak" in text and "fp32_datapath_factor" in text
    # an fp16 product (tensor cores) says nothing of it
    rep16 = analyzer.analyze(_matmul(TensorProto.FLOAT16), hw=["rtx-4090"], runtime="kernel")
    assert "fp32_datapath_factor" not in render_explain(rep16, 0)


def test_a_capped_cards_tf32_convolutions_run_at_its_sustained_clock():
    # PyTorch's default puts fp32 convolutions on the tensor cores in TF32: the L4's 60 TF x 1.166 / 2.04 GHz
    conv = _one("Conv", [("x", [8, 64, 56, 56]), ("w", [64, 64, 3, 3])], [("y", [8, 64, 54, 54])])
    assert _terms(conv, "l4").matrix_peak == pytest.approx(60e12 * 1.166 / 2.04)
    assert _terms(conv, "a100-40gb-pcie").matrix_peak == pytest.approx(156e12)
