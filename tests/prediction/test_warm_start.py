"""A class floor less what a warm L2 start saves (``l2_floor``, ``efficiency.warm_share``): the
Hopper ``bgemm`` set's (bench/hopper_bgemm.py), by hand, warm and flushed, and shown by --explain."""

from __future__ import annotations

import numpy as np
import pytest

import analyzer
import hardware_db
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.render.explain import render_explain
from onnx import TensorProto, helper


def _consts(l2_floor: float) -> dict:
    n = len(eff.OP_CLASSES)
    c = {p: np.zeros(n) for p in eff.CLASS_PARAMS}
    c.update(e_compute=np.full(n, 0.5), e_bw=np.full(n, 1.0), floor_s=np.full(n, 2e-6),
             l2_floor=np.full(n, l2_floor), trans_weight=1.0)
    return c


def test_the_floor_by_hand_warm_and_cold():
    feats = {"op_class": np.array([eff.CLASS_CODE["bgemm"]]), "mac_flops": np.array([0.0]),
             "bytes": np.array([25e6])}
    hw = {"matrix_peak": 1e15, "vector_peak": 1e14, "mem_bw": 1e12, "units": 0.0, "l2_bytes": 50e6}
    # s = 1 / (1 + (25e6 / 50e6)^2) = 1 / 1.25 = 0.8; warm share 0.25 x 0.8 = 0.2;
    # floor 2 us x (1 - 0.2) = 1.6 us
    t = eff.kernel_time(np, feats, hw, _consts(0.25), detail=True)
    assert t["warm_start"][0] == pytest.approx(0.2)
    assert t["floor_s"][0] == pytest.approx(1.6e-6)
    # flushed (the lowering gives a cold GPU kernel l2_bytes 0): s = 0, the floor as stated
    cold = eff.kernel_time(np, feats, dict(hw, l2_bytes=0.0), _consts(0.25))
    assert cold["floor_s"][0] == pytest.approx(2e-6)
    # a set without the constant (0): no warm start
    assert eff.kernel_time(np, feats, hw, _consts(0.0))["floor_s"][0] == pytest.approx(2e-6)


def _matmul(a: list, b: list, y: list):
    """One fp16 MatMul ``y = a @ b`` with every tensor a graph input."""
    vi = helper.make_tensor_value_info
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], "mm",
                          [vi("a", TensorProto.FLOAT16, a), vi("b", TensorProto.FLOAT16, b)],
                          [vi("y", TensorProto.FLOAT16, y)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _bmm(b: int, m: int, n: int, k: int):
    return _matmul([b, m, k], [b, k, n], [b, m, n])


def test_an_attention_product_on_the_h200_warm_and_flushed():
    # Q @ K^T of 32 heads of 512 tokens, head 64, fp16 (the H200 rows' qk 512x512x64 B32):
    # bytes 32 x (512 x 64 + 64 x 512 + 512 x 512) x 2 = 20,971,520 B; h200-sxm: L2 50 MB,
    # s = 1 / (1 + 0.4194304^2) = 0.850397; pooled GEMM floor 5,811.3 cycles / 1.98 GHz = 2.935 us
    hw = hardware_db.get("h200-sxm")
    warm, cold = (analyzer.analyze(_bmm(32, 512, 512, 64), hw=[hw], runtime="kernel", l2=s).predictions[0]
                  for s in ("warm", "cold"))
    ew, ec = warm.explain(0), cold.explain(0)
    # warm start 0.2476 x 0.850397 = 0.210558; floor 2.935 x (1 - 0.210558) = 2.31701 us
    assert (ew.l2_floor, ew.warm_start) == (pytest.approx(0.2476), pytest.approx(0.210558, rel=1e-5))
    assert ew.fixed_s == pytest.approx(ew.floor_s * (1 - ew.warm_start), rel=1e-6)
    assert ew.fixed_s == pytest.approx(2.31701e-6, rel=1e-5)
    # DRAM: 20,971,520 x (1 - 0.4749 x 0.850397) + 32,710 = 12,534,826 B / (4.8e12 x 0.7423)
    # = 3.51801 us; kernel 2.31701 + 3.51801 = 5.83502 us (measured 6.880 us)
    assert ew.dram_s == pytest.approx(3.51801e-6, rel=1e-5)
    assert warm.latency_s == pytest.approx(5.83502e-6, rel=1e-5)
    # flushed: the floor and every byte as before the set: 2.935 + 21,004,230 / 3.56304e12
    # = 2.935 + 5.89503 = 8.83003 us (measured 8.112 us)
    assert ec.warm_start == 0.0 and ec.fixed_s == pytest.approx(2.935e-6, rel=1e-4)
    assert cold.latency_s == pytest.approx(8.83003e-6, rel=1e-5)
    text = render_explain(analyzer.analyze(_bmm(32, 512, 512, 64), hw="h200-sxm", runtime="kernel"), 0)
    assert "x (1 - warm start 0.2106 = l2_floor 0.2476 x cache step 0.8504" in text


def test_a_plain_gemm_keeps_its_floor():
    # the Hopper gemm set has no l2_floor: a weight GEMM's floor is the pooled one, warm or not
    m = _matmul([128, 1024], [1024, 1024], [128, 1024])
    e = analyzer.analyze(m, hw="h200-sxm", runtime="kernel").predictions[0].explain(0)
    assert e.op_class == "gemm" and e.warm_start == 0.0
    assert e.fixed_s == pytest.approx(2.935e-6, rel=1e-4)
