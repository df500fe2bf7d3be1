"""The kernels a transformer's attention runs in eager fp32: torch.bmm's whole tile (an attention's
``P @ V`` has a 64-wide output) and the two softmax kernels by row length (bench/transformer_ops.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff


def _one(op, ins, outs, opset=17, **attrs):
    vi = helper.make_tensor_value_info
    n = helper.make_node(op, [a for a, _ in ins], [a for a, _ in outs], name="x0", **attrs)
    g = helper.make_graph([n], "g", [vi(a, TensorProto.FLOAT, s) for a, s in ins],
                          [vi(a, TensorProto.FLOAT, s) for a, s in outs])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _arrays(whole: float, k_fill: float = 0.0) -> dict:
    c = len(eff.OP_CLASSES)
    a = {p: np.zeros(c) for p in eff.CLASS_PARAMS}
    i = eff.CLASS_CODE["bgemm_simt"]
    a["e_compute"][i], a["e_bw"][i], a["tile_m"][i], a["tile_n"][i] = 0.5, 1.0, 64.0, 128.0
    a["whole_tile"][i] = whole
    a["k_fill"][i] = k_fill
    a["trans_weight"] = 1.0
    return a


def _bgemm(m, n, k, batch, whole, units=0.0, k_fill=0.0):
    feats = {"op_class": np.array([eff.CLASS_CODE["bgemm_simt"]]), "mac_flops": np.array([2.0 * m * n * k * batch]),
             "m": np.array([m]), "n": np.array([n]), "k": np.array([k]), "batch": np.array([batch]),
             "bytes": np.array([0.0])}
    hw = {"matrix_peak": 10e12, "vector_peak": 10e12, "mem_bw": 1e12, "units": units}
    a = _arrays(whole, k_fill)
    a["wave_alpha"][eff.CLASS_CODE["bgemm_simt"]] = 1.0 if units else 0.0
    return float(eff.kernel_time(np, feats, hw, a)["compute_s"][0])


def test_whole_tile_pads_a_narrow_output_to_the_tile():
    # P @ V of 12 heads, S = 512, head 64: 512 x 64 outputs, k = 512, on a 64 x 128 tile run whole:
    # work = 2 * 512 * 128 * 512 * 12 = 805,306,368 FLOPs at 10 TFLOP/s x 0.5 -> 161.06 us
    assert _bgemm(512, 64, 512, 12, whole=1.0) == pytest.approx(2 * 512 * 128 * 512 * 12 / 5e12, rel=1e-12)
    assert _bgemm(512, 64, 512, 12, whole=1.0) == pytest.approx(161.0612736e-6, rel=1e-9)
    # off: the 64 columns pad to the 16-wide granule only (64): half the work, 80.53 us
    assert _bgemm(512, 64, 512, 12, whole=0.0) == pytest.approx(80.5306368e-6, rel=1e-9)


def test_k_fill_is_a_fixed_number_of_k_steps_per_tile():
    # Q @ K^T of 12 heads, S = 512, head 64: 512 x 512 outputs, k = 64, k_fill 16 steps, whole 64 x 128
    # tiles: work = 2 * 512 * 512 * (64 + 16) * 12 = 503,316,480 -> / 5e12 = 100.66 us (1.25 x k = 64 alone)
    assert _bgemm(512, 512, 64, 12, whole=1.0, k_fill=16.0) == pytest.approx(100.663296e-6, rel=1e-9)
    assert _bgemm(512, 512, 64, 12, whole=1.0, k_fill=16.0) == pytest.approx(
        1.25 * _bgemm(512, 512, 64, 12, whole=1.0), rel=1e-12)
    # a deep product barely: k = 4096 (no units: no split-K) -> (4096 + 16) / 4096
    assert _bgemm(512, 512, 4096, 1, whole=1.0, k_fill=16.0) == pytest.approx(
        (4096 + 16) / 4096 * _bgemm(512, 512, 4096, 1, whole=1.0), rel=1e-12)


def test_whole_tile_keeps_its_tile_on_a_small_grid():
    # 8 x 1 tiles of 64 x 128 (m = 512, n = 64, k = 64: no split-K) on 100 SMs: 8 of 100 busy, wave
    # 100/8 = 12.5; work 2 * 512 * 128 * 64 = 8,388,608 -> 8388608 / 5e12 * 12.5 = 20.97 us
    assert _bgemm(512, 64, 64, 1, whole=1.0, units=100.0) == pytest.approx(8388608 / 5e12 * 12.5, rel=1e-12)
    # off: a smaller library tile is chosen for the small grid (faster)
    assert _bgemm(512, 64, 64, 1, whole=0.0, units=100.0) < _bgemm(512, 64, 64, 1, whole=1.0, units=100.0) / 4


def test_attention_pv_on_the_fma_units_pays_the_shipped_tile():
    gen = fc.load_constants("nvidia-volta").arrays   # the V100's family set (bench/family_simt.py)
    i = eff.CLASS_CODE["bgemm_simt"]
    tm, tn = gen["tile_m"][i], gen["tile_n"][i]
    assert gen["whole_tile"][i] == 1.0
    pv = _one("MatMul", [("p", [12, 512, 512]), ("v", [12, 512, 64])], [("y", [12, 512, 64])])
    t = analyzer.analyze(pv, hw=["v100-pcie-32gb"], runtime="kernel").predictions[0].explain(0)
    assert t.op_class == "bgemm_simt"
    # the output (512 x 64) padded to whole tiles, (ceil(512/tm)*tm/512) * (ceil(64/tn)*tn/64), and
    # each tile of each split-K slice its k_fill steps: (512 + split * k_fill) / 512
    kf = gen["k_fill"][i]
    assert t.pad == pytest.approx(math.ceil(512 / tm) * tm / 512 * math.ceil(64 / tn) * tn / 64
                                  * (512 + t.split_k * kf) / 512)


@pytest.mark.parametrize("shape,axis,opset,cls", [
    ([8192, 1024], -1, 17, "softmax"),            # a row of 1024: the warp-per-row kernel
    ([8192, 1025], -1, 17, "softmax_block"),      # 1025: the block-per-row kernel
    ([64, 4096], 1, 17, "softmax_block"),
    ([4096, 64], 0, 17, "softmax"),               # not the innermost axis: no row kernel named
    ([4, 8, 256], 1, 11, "softmax_block"),        # opset 11 flattens at axis 1: rows of 8 * 256 = 2048
    ([4, 8, 256], 2, 11, "softmax"),              # rows of 256
])
def test_softmax_class_by_row_length(shape, axis, opset, cls):
    for op in ("Softmax", "LogSoftmax"):
        m = _one(op, [("a", shape)], [("y", shape)], opset=opset, axis=axis)
        assert analyzer.analyze(m, hw=["t4"], runtime="kernel").predictions[0].explain(0).op_class == cls


def test_softmax_block_takes_its_own_set_where_a_family_has_one():
    tur = fc.load_constants("nvidia-turing").arrays
    s, b = eff.CLASS_CODE["softmax"], eff.CLASS_CODE["softmax_block"]
    assert tur["bpc"][b] != tur["bpc"][s]
    # a set without softmax_block (generic.json: one softmax set) predicts both rows alike
    gen = fc.load_constants("generic").arrays
    for p in ("e_bw", "bpc", "l2_hit", "b_half_bytes"):
        assert gen[p][b] == gen[p][s]
