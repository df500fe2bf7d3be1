"""bench/hopper_gemm_l2.py: the evaluator of the Hopper gemm set's cache constants on the H200 rows
(equal to analyze; the warm and cold forms by hand on one batched GEMM) and what-ran labels."""

from __future__ import annotations

import pytest

pytest.importorskip("scipy")

import hopper_gemm_l2 as hg


def _qk_row():
    """bmm qk fp16, M = N = 512, K = 64, B = 32 (an attention's Q @ K^T, 32 heads of 512 tokens)."""
    rows = [r for r in hg.read_rows() if (r["op"], r["variant"], r["dtype"], r["M"], r["K"], r["B"])
            == ("bmm", "qk", "fp16", "512", "64", "32")]
    assert len(rows) == 1
    return rows[0]


def test_a_batched_gemm_warm_and_flushed_by_hand():
    r = _qk_row()
    # measured (bench/data/hopper_mem/h200_ops_2026-12-04.csv): L2 warm 6.880 us, flushed 8.112 us
    assert (float(r["kernel_sum_us"]), float(r["kernel_sum_l2cold_us"])) == (6.880, 8.112)
    warm, cold = hg._row(r, "warm", 6.880e-6), hg._row(r, "cold", 8.112e-6)
    # bytes: 32 x (512 x 64 + 64 x 512 + 512 x 512) x 2 B = 32 x 327,680 x 2 = 20,971,520 B
    assert warm.feats["bytes"] == 20_971_520
    # h200-sxm profile: 4.8 TB/s, L2 50 MB (the profile's figure; the board reports 60 MiB); cold: L2 0
    assert (warm.hw["mem_bw"], warm.hw["l2_bytes"], cold.hw["l2_bytes"]) == (4.8e12, 50e6, 0.0)
    # Hopper gemm set: e_bw 0.7423, b_half 32,710 B, floor 2.935 us; DRAM term cold:
    # (20,971,520 + 32,710) / (4.8e12 x 0.7423) = 21,004,230 / 3.56304e12 = 5.89502 us; + floor = 8.83002 us
    bw, bc = hg.stack([warm]), hg.stack([cold])
    assert hg.predict(bc, {})[0] == pytest.approx(8.83002e-6, rel=1e-5)
    assert cold.predicted_s == pytest.approx(8.83002e-6, rel=1e-5)
    # the warm row takes the Hopper bgemm set since (bench/hopper_bgemm.py, by hand in
    # tests/prediction/test_warm_start.py): its cache share and warm start, 5.83502 us
    assert warm.predicted_s == pytest.approx(hg.predict(bw, {})[0], rel=1e-5)
    assert warm.predicted_s == pytest.approx(5.83502e-6, rel=1e-5)
    # with l2_gain 0.6901 (rule 1's fit on the gemm set, not shipped) the flushed prediction stays
    # 8.83002 us (measured 8.112): the cold form has no cache step
    g = {"l2_gain": 0.6901, "l2_hit": 0.0}
    assert hg.predict(bc, g)[0] == pytest.approx(8.83002e-6, rel=1e-5)


def test_the_evaluator_is_analyze_on_the_gemm_rows_of_one_shape_family():
    rows = [r for r in hg.read_rows() if r["op"] == "gemm" and (r["N"], r["K"]) == ("4096", "4096")]
    data = [hg._row(r, l2, 1.0) for r in rows for l2 in ("warm", "cold")]
    assert len(data) == 2 * 22   # 11 M x 2 dtypes, each L2-warm and flushed
    hg.check(data, hg.stack(data))   # raises where a row differs from analyze by over 1e-4


def test_what_ran():
    assert hg.kind(["nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT",
                    "void cublasLt::splitKreduce_kernel<32, 16, int, float>"]) == "split-K + reduction kernel"
    assert hg.kind(["Memset (Device)", "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT"]) \
        == "memset + cooperative kernel"
    assert hg.kind(["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"]) == "one cooperative kernel"
    assert hg.kind(["nvjet_sm90_hsh_8x64_64x16_2x1_v_bz_TNN"]) == "one kernel"
    assert hg.family({"op": "bmm", "variant": "pv", "N": "64", "K": "512"}) == "pv"
    assert hg.family({"op": "gemm", "variant": "", "N": "11008", "K": "4096"}) == "11008,4096"
