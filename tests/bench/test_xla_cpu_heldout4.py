"""bench/xla_cpu_heldout4.py: the fourth XLA CPU program set traces, and opcost costs every node of
each program by a rule (no uncosted node), before any of them is timed."""

from __future__ import annotations

import analyzer
import xla_cpu_heldout4 as H


def test_the_programs_are_ten_and_every_node_is_costed():
    progs = H.programs()
    assert [n for n, *_ in progs] == [
        "effnet_infer_b4", "effnet_train_b4", "lstm_infer_b16", "lstm_train_b16", "wide_mlp_infer_b128",
        "wide_mlp_train_b128", "vit_block_infer_b4", "vit_block_train_b4", "resblock_infer_b8", "resblock_train_b8"]
    for name, fn, shapes, pa in progs:
        rep = analyzer.analyze_jax(fn, *shapes, **({} if pa is None else {"params_argnums": pa}))
        rep.require_full_coverage()
        assert rep.totals.flops > 0, name


def test_the_matrix_work_is_counted_exactly():
    progs = {name: (fn, shapes) for name, fn, shapes, _ in H.programs()}
    fn, shapes = progs["wide_mlp_infer_b128"]
    # 128 x (1024 x 1024 + 1024 x 1024 + 1024 x 100) multiply-adds, 2 FLOPs each
    assert analyzer.analyze_jax(fn, *shapes).totals.mac_flops == 2 * 128 * (2 * 1024 * 1024 + 1024 * 100)
    fn, shapes = progs["resblock_infer_b8"]
    # two 3x3 convolutions: 8 x 20 x 20 positions x 24 out x (24 x 9) in
    assert analyzer.analyze_jax(fn, *shapes).totals.mac_flops == 2 * 2 * 8 * 400 * 24 * 216
