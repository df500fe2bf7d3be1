"""bench/hopper_conv_tc.py: the H200 TF32 / fp16 convolution rows, the fit that reproduces the
committed Hopper tensor-core convolution sets, and one row's prediction in closed form."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hopper_conv_tc as h  # noqa: E402

EFF = os.path.join(ROOT, "hardware_db", "efficiency")


@pytest.fixture(scope="module")
def rows():
    return h.load()


def _sets(family: str) -> dict:
    with open(os.path.join(EFF, f"{family}.json"), encoding="utf-8") as f:
        return json.load(f)["sets"]


def test_rows_by_class_and_the_conversions_left_out(rows):
    # 106 TF32 and 106 fp16 rows less the two stems at batch 1 and 32 in each: 204
    assert len(rows) == 204
    assert rows.cls.value_counts().to_dict() == {"conv_1x1": 136, "conv_dw": 40, "conv": 28}
    # TF32 3x3 256 -> 256 on 14x14 at batch 32: nchwToNhwc 3.8885 + 4.3845, main 28.096, nhwcToNchw 3.808 us
    r = rows[(rows.dtype == "fp32") & (rows.B == 32) & (rows.cin == 256) & (rows.ksize == 3) & (rows.hw == 14)].iloc[0]
    assert r.t == pytest.approx(28.096e-6)
    assert r.matrix_peak == pytest.approx(494.7e12) and r.mac == 2 * 32 * 14 * 14 * 256 * 256 * 9


def test_the_fit_reproduces_the_committed_sets_and_their_copies(rows):
    hop, amp = _sets("nvidia-hopper"), _sets("nvidia-ampere")
    res = h.evaluate(rows)
    for cls, r in res.items():
        assert r["ship"]
        assert h.constants(r["set"]) == pytest.approx(hop[cls]["constants"], rel=1e-3)
        assert amp[cls]["constants"] == hop[cls]["constants"] and amp[cls]["provenance"]["kind"] == "inherit"
    # the rule's scores (two-fold by layer) against the set each class would otherwise take
    assert res["conv"]["cv"][0] == pytest.approx(24.3, abs=0.05) and res["conv"]["base"][0] == pytest.approx(44.3, abs=0.05)
    assert res["conv"]["set"]["b_half_bytes"] == h.gemm_set()["b_half_bytes"]   # held (the second decision)
    assert res["conv_1x1"]["cv"][0] == pytest.approx(25.1, abs=0.05)
    assert res["conv_dw"]["cv"][0] == pytest.approx(19.0, abs=0.05)


def test_one_row_in_closed_form():
    # fp16 1x1 64 -> 64 on 56x56 at batch 32 (conv_1x1; a 1x1 stride-1 convolution: no conversion launch)
    import analyzer

    c = _sets("nvidia-hopper")["conv_1x1"]["constants"]
    p = analyzer.analyze(h.conv_model(32, 64, 64, 1, 56, 1, 0, 1, "fp16"), hw="h200-sxm",
                         runtime="eager-kernel").predictions[0]
    kt = next(t for t in (p.explain(i) for i in range(len(p.nodes))) if t is not None)
    mac = 2 * 32 * 56 * 56 * 64 * 64                       # 822,083,584 FLOP
    nbytes = 2 * (2 * 32 * 64 * 56 * 56 + 64 * 64)         # input + output + filter, fp16: 25,698,304
    wave = 12 * 132 / 1568                                 # 1568 64x64 tiles over 132 SMs: 12 waves
    compute = mac * wave / (989.4e12 * c["e_compute"])     # 1.713 us
    memory = (nbytes + c["b_half_bytes"]) / (4.8e12 * c["e_bw"])   # 7.371 us
    assert (kt.op_class, kt.mac_flops, kt.bytes) == ("conv_1x1", mac, nbytes)
    assert kt.time_s == pytest.approx(c["floor_s"] + max(compute, memory), rel=1e-6)
    assert kt.time_s == pytest.approx(10.074e-6, rel=1e-3)
