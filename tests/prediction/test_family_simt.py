"""Per-family FMA-unit GEMM sets (``bench/family_simt.py``): the families whose own NeuSight rows
beat the pooled set in two-fold cross-validation carry their own ``gemm_simt``/``bgemm_simt``;
Hopper and Blackwell inherit Ampere's, GA10x (and Ada through it) copies it; the rest keep the
pooled generic set."""

from __future__ import annotations

import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff

GEMM, BGEMM = eff.CLASS_CODE["gemm_simt"], eff.CLASS_CODE["bgemm_simt"]


def _matmul(n: int):
    vi = helper.make_tensor_value_info
    f = TensorProto.FLOAT
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="x0")
    g = helper.make_graph([node], "g", [vi("a", f, [n, n]), vi("b", f, [n, n])], [vi("y", f, [n, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _set(profile_id: str):
    return fc.load_constants(fc.family_of(profile_id) if profile_id != "a100-40gb-pcie" else "nvidia-ampere")


def test_a100_gemm_simt_closed_form_from_the_ampere_set():
    # A100 PCIe 40 GB: 19.5 TFLOP/s fp32 on the FMA units, 108 SMs. A 6912^3 product on the 64x64 tile:
    # 108 x 108 = 11,664 tiles = 108 whole waves of 108 SMs (wave 1, no padding, no split-K)
    t = analyzer.analyze(_matmul(6912), hw=["a100-40gb-pcie"], runtime="kernel").predictions[0].explain(0)
    assert t.op_class == "gemm_simt"
    assert t.e_compute == 0.7612          # nvidia-ampere.json's gemm_simt (NeuSight's A100 rows)
    assert (t.pad, t.wave, t.split_k, t.narrow) == (1.0, 1.0, 1.0, 1.0)
    # compute = 2 x 6912^3 / (19.5e12 x 0.7612) = 660.45 GFLOP / 14.843 TFLOP/s = 44.495 ms
    assert t.compute_s == pytest.approx(2 * 6912 ** 3 / (19.5e12 * 0.7612), rel=1e-6)
    assert t.compute_s == pytest.approx(44.495e-3, rel=1e-4)
    # + the pooled gemm_simt floor (cycles over the 1.41 GHz clock)
    assert t.time_s == pytest.approx(t.compute_s + t.floor_s, rel=1e-7)


@pytest.mark.parametrize("profile_id, family", [("a100-40gb-pcie", "nvidia-ampere"), ("v100-pcie-32gb", "nvidia-volta"),
                                                ("t4", "nvidia-turing")])
def test_families_with_their_own_rows_take_their_own_sets(profile_id, family):
    own = fc.load_constants(family)
    assert "gemm_simt" not in own.inherited and "bgemm_simt" not in own.inherited
    gen = fc.load_constants("generic").arrays
    assert own.arrays["e_compute"][GEMM] != gen["e_compute"][GEMM]
    assert "a100" in own.describe("gemm_simt") or family != "nvidia-ampere"
    t = analyzer.analyze(_matmul(1024), hw=[profile_id], runtime="kernel").predictions[0].explain(0)
    assert t.op_class == "gemm_simt" and t.e_compute == pytest.approx(own.arrays["e_compute"][GEMM])


def test_t4_gets_the_turing_set():
    assert fc.family_of("t4") == "nvidia-turing"
    tur = fc.load_constants("nvidia-turing")
    assert tur.arrays["e_compute"][GEMM] == 0.7311 and tur.arrays["e_compute"][BGEMM] == 0.8075
    assert "t4 neusight_ops.csv.gz" in tur.describe("gemm_simt")


@pytest.mark.parametrize("profile_id", ["h100-sxm", "b200-hgx", "l4", "rtx-4090", "a40"])
def test_hopper_blackwell_ga10x_ada_take_the_ampere_sets(profile_id):
    amp = fc.load_constants("nvidia-ampere").arrays
    got = _set(profile_id)
    for cls in (GEMM, BGEMM):
        for p in ("e_compute", "tile_m", "tile_n", "k_fill", "whole_tile"):
            assert got.arrays[p][cls] == amp[p][cls]
    assert got.arrays["e_compute"][GEMM] == 0.7612 and got.arrays["e_compute"][BGEMM] == 0.9464
    text = got.describe("gemm_simt")
    assert "inherit" in text and "generic" not in text.split(":")[0]


def test_pascal_keeps_the_pooled_gemm_simt_and_has_its_own_bgemm_simt():
    pas = fc.load_constants("nvidia-pascal")
    gen = fc.load_constants("generic").arrays
    assert "gemm_simt" in pas.inherited and pas.describe("gemm_simt").startswith("generic")
    assert pas.arrays["e_compute"][GEMM] == gen["e_compute"][GEMM] == 0.717
    assert "bgemm_simt" not in pas.inherited and pas.arrays["e_compute"][BGEMM] == 1.0


def test_a_family_without_data_keeps_the_pooled_sets():
    gen = fc.load_constants("generic").arrays
    assert fc.load_constants("nvidia-unknown-family").arrays["e_compute"][GEMM] == gen["e_compute"][GEMM]
