"""bench/xla_cpu_heldout3.py: the third XLA CPU program set traces, and opcost costs every node of
each program by a rule (no uncosted node), before any of them is timed."""

from __future__ import annotations

import analyzer
import xla_cpu_heldout3 as H


def _by_name():
    return {name: (fn, shapes, pa) for name, fn, shapes, pa in H.programs()}


def test_the_programs_are_twelve_and_every_node_is_costed():
    progs = H.programs()
    assert [n for n, *_ in progs] == [
        "tcn_infer_b4", "tcn_train_b4", "convnext_infer_b4", "convnext_train_b4", "invres_infer_b8",
        "decoder_infer_b2", "decoder_train_b2", "autoenc_infer_b64", "autoenc_train_b64", "unet_infer_b2",
        "gcn_infer_n256", "patchify_infer_b8"]
    for name, fn, shapes, pa in progs:
        rep = analyzer.analyze_jax(fn, *shapes, **({} if pa is None else {"params_argnums": pa}))
        rep.require_full_coverage()
        assert rep.totals.flops > 0, name


def test_the_matrix_work_is_counted_exactly():
    fn, shapes, _ = _by_name()["tcn_infer_b4"]
    # three causal convolutions: batch 4 x length 128 x 48 out x 48 in x 3 taps multiply-adds
    # (dilation changes which inputs, not how many), and the head 4 x 48 x 10; 2 FLOPs each
    assert analyzer.analyze_jax(fn, *shapes).totals.mac_flops == 2 * (3 * 4 * 128 * 48 * 48 * 3 + 4 * 48 * 10)
    fn, shapes, _ = _by_name()["gcn_infer_n256"]
    # X W1 256x64x128, A (XW1) 256x256x128, H W2 256x128x16, A (HW2) 256x256x16
    assert analyzer.analyze_jax(fn, *shapes).totals.mac_flops == 2 * 256 * (64 * 128 + 256 * 128 + 128 * 16 + 256 * 16)
    fn, shapes, _ = _by_name()["patchify_infer_b8"]
    # 8 x 256 patches x 96 out x (3 x 4 x 4) in
    assert analyzer.analyze_jax(fn, *shapes).totals.mac_flops == 2 * 8 * 256 * 96 * 48
