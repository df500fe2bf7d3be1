"""bench/xla_cpu_heldout.py: the second XLA CPU program set traces, and opcost costs every node of
each program by a rule (no uncosted node), before any of them is timed."""

from __future__ import annotations

import analyzer
import xla_cpu_heldout as H


def test_the_programs_are_eight_and_every_node_is_costed():
    progs = H.programs()
    assert [n for n, *_ in progs] == ["gru_infer_b8", "conv1d_infer_b8", "conv1d_train_b8", "mixer_infer_b8",
                                      "mixer_train_b8", "attn_infer_b4", "dwsep_infer_b8", "resmlp_infer_b32"]
    for name, fn, shapes, pa in progs:
        rep = analyzer.analyze_jax(fn, *shapes, **({} if pa is None else {"params_argnums": pa}))
        rep.require_full_coverage()
        assert rep.totals.flops > 0, name


def test_the_mixer_counts_its_matrix_work_exactly():
    # mixer_infer_b8: token MLP 8 x 128 x (64 x 256 + 256 x 64) and channel MLP 8 x 64 x (128 x 512 + 512 x 128)
    # multiply-adds, 2 FLOPs each
    name, fn, shapes, _ = H.programs()[3]
    rep = analyzer.analyze_jax(fn, *shapes)
    assert name == "mixer_infer_b8"
    assert rep.totals.mac_flops == 2 * (8 * 128 * (64 * 256 + 256 * 64) + 8 * 64 * (128 * 512 + 512 * 128))
