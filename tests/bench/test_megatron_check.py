"""bench/megatron_check.py: the Megatron GPT graph's counts against their closed forms, the
padded vocabulary, the published rows as recorded, and the tensor plan it relies on (no time)."""

from __future__ import annotations

import megatron_check as mc

import analyzer


def test_padded_vocab_is_megatrons():
    # 50257 up to a multiple of 128 (50304 = 393 x 128) and of 512 (50688 = 99 x 512)
    assert mc.padded_vocab(50257, 1) == 50304
    assert mc.padded_vocab(50257, 4) == 50688
    assert mc.padded_vocab(512, 4) == 512


def test_parameters_match_the_closed_form():
    # V h + S h + L (12 h^2 + 13 h) + 2 h, + 1 for the mask's fill value:
    # 256*64 + 16*64 + 2*(12*4096 + 832) + 128 + 1 = 16384 + 1024 + 99968 + 128 + 1
    g = mc.megatron_gpt(2, 64, 4, 16, 256, 4)
    assert mc.params_closed_form(2, 64, 16, 256) == 117504
    assert analyzer.analyze(g).totals.params == 117505


def test_the_tensor_plan_finds_each_attention_and_mlp():
    g = mc.megatron_gpt(2, 64, 4, 16, 256, 4)
    r = analyzer.scale(g, "a100-40gb-sxm", [4], batch=4, intra_link="nvlink3", **mc.SETTINGS,
                       **mc.MODE["tensor"])
    plan = r.scaling.setup["tensor_plans"][0]
    assert plan["recognised"] and plan["pairs"] == 4
    assert "/lm_head/MatMul" in plan["column_parallel"]
    # forward: 2 row GEMMs per block + the vocab-parallel embedding, each [4, 16, 64] fp32 =
    # 16384 B, + the vocab-parallel cross entropy's 3 (max, target logit, sum of exp), each one
    # fp32 word per row, 4 x 16 rows = 256 B; backward: 2 column sets per block + the LM head's
    # input
    assert plan["collectives"]["all_reduce_forward"] == {"count": 8,
                                                         "bytes": 5 * 16384 + 3 * 256}
    assert plan["collectives"]["all_reduce_backward"] == {"count": 5, "bytes": 5 * 16384}


def test_the_published_rows_as_recorded():
    rows = mc.load()
    assert len(rows) == 11
    assert sorted({r["parallel"] for r in rows}) == ["data", "pipeline", "tensor"]
    for r in rows:   # the table's figure is the label's e2e_latency to 0.1 ms
        assert round(r["measured_ms"], 1) == r["table_ms"]
        assert r["model"] in mc.MODELS and r["gpu"] in mc.PROFILE
