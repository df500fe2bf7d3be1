"""Megatron-LM's own step kernels (analyzer.training.megatron_step) on bench/megatron_check.py's
GPT graph: the main-grad hook's tensors and bytes in closed form, with and without
gradient-accumulation fusion and over a tensor-parallel split, the fused kernels' sites, and
what they add to the scaling step (no published time is read)."""

from __future__ import annotations

import megatron_check as mc
import pytest

import analyzer
from analyzer.scaling import tensor as T
from analyzer.training import grad_passes as GP
from analyzer.training import megatron_step as MS
from analyzer.training.backward_time import seconds_of

L, H, HEADS, S, V, B = 2, 64, 4, 16, 256, 4


def _report(**kw):
    return analyzer.analyze(mc.megatron_gpt(L, H, HEADS, S, V, B), "a100-40gb-sxm", train=True,
                            optimizer="adamw", precision="fp32", runtime="eager", **kw)


def test_hook_tensors_with_accumulation_fusion():
    # the linear weights accumulate in their GEMMs; the hook adds the rest: V h + S h (the
    # embeddings) + L 13 h (LN 2h, QKV bias 3h, out bias h, LN 2h, fc1 bias 4h, fc2 bias h) +
    # 2 h (final LN) = 16384 + 1024 + 1664 + 128 = 19200 elements in 8 L + 4 = 20 tensors
    h = MS.hook_tensors(_report().nodes)
    assert sum(map(sum, h)) == V * H + S * H + L * 13 * H + 2 * H == 19200
    assert sum(map(len, h)) == 8 * L + 4 == 20
    # fp32 main_grad.add_: 12 B per element, 1 FLOP
    k = MS.hook_kernel(0, "x", 19200, 4)
    assert (k.bytes_read, k.bytes_written, k.vector_flops) == (2 * 4 * 19200, 4 * 19200, 19200)
    assert k.bytes == 12 * 19200


def test_hook_tensors_without_fusion_cover_every_parameter():
    # every parameter (the mask's fill value is a scalar, not one): 117504, 8 L + 4 + 4 L
    r = _report()
    h = MS.hook_tensors(r.nodes, fusion=False)
    assert sum(map(sum, h)) == r.totals.params - 1 == mc.params_closed_form(L, H, S, V) == 117504
    assert sum(map(len, h)) == 12 * L + 4


def test_gpt2_large_main_grad_bytes():
    # GPT-2 Large, V = 50304: with fusion (50304 + 1024) x 1280 + 36 x 13 x 1280 + 2 x 1280 =
    # 66,301,440 elements in 292 tensors, 12 B each = 795,617,280 B; without, every parameter,
    # 774,090,240 x 12 = 9,289,082,880 B
    r = analyzer.analyze(mc.megatron_gpt(36, 1280, 20, 1024, 50304, 1))
    fused, plain = MS.hook_tensors(r.nodes), MS.hook_tensors(r.nodes, fusion=False)
    assert sum(map(sum, fused)) == 66_301_440 and sum(map(len, fused)) == 292
    assert 12 * sum(map(sum, fused)) == 795_617_280
    assert sum(map(sum, plain)) == mc.params_closed_form(36, 1280, 1024, 50304) == 774_090_240
    assert 12 * sum(map(sum, plain)) == 9_289_082_880


def test_hook_tensors_over_the_tensor_split():
    # t = 4: the word embedding and the column biases (QKV 3h, fc1 4h) / 4; the row biases
    # (out, fc2), the layer norms and the position embedding whole: per block 6h + 7h/4 = 496,
    # + V h / 4 + S h + 2 h = 2 x 496 + 4096 + 1024 + 128 = 6240
    r = _report()
    plan = T.plan(r.nodes, 4, params=r.totals.params)
    h = MS.hook_tensors(r.nodes, split=plan.split, t=4)
    assert sum(map(sum, h)) == 2 * 496 + 4096 + 1024 + 128 == 6240


def test_fused_sites_and_their_forward_change():
    r = _report(dropout=0.1, batch=B)
    sites = MS.fused_sites(r.nodes, 0.1)
    kinds = [k for k, _, _ in sites]
    # a bias-GELU per block (fc1's bias Add), a bias-dropout-add per residual branch (2 per block)
    assert kinds.count("bias_gelu") == L and kinds.count("bias_dropout_add") == 2 * L
    names = {r.nodes[j].name for _, absorbed, _ in sites for j in absorbed}
    assert "/h.0/mlp/c_fc/Add" in names and "/h.1/Add_1" in names
    assert MS.fused_sites(r.nodes, None) == [s for s in sites if s[0] == "bias_gelu"]
    pred = r.predictions[0]
    tm = MS.terms(r, pred, pred.target.profile)
    rows = {x.index: x.time_s for x in pred.nodes}
    gelu = [a[0] for k, a, _ in sites if k == "bias_gelu"]
    # the bias-GELU's change is its bias Add's forward row, removed
    assert [tm.fused[a] for a in gelu] == [-rows[a] for a in gelu]
    assert sum(tm.fused) < 0 < sum(tm.accumulate)
    # the hook's seconds: its kernels priced like the backward plan's
    ks = [MS.hook_kernel(i, "k", e, 4) for i, sz in enumerate(MS.hook_tensors(r.nodes))
          for e in sz]
    assert sum(tm.accumulate) == pytest.approx(seconds_of(ks, pred, pred.target.profile, False),
                                               rel=1e-12)


@pytest.mark.parametrize("mode", ["data", "tensor", "pipeline"])
def test_megatron_step_adds_its_terms_to_compute(mode):
    g = mc.megatron_gpt(4, H, HEADS, S, mc.padded_vocab(V, 4 if mode == "tensor" else 1), B)
    kw = dict(batch=B, intra_link="nvlink3", **mc.SETTINGS, **mc.MODE[mode])
    on = analyzer.scale(g, "a100-40gb-sxm", [4], **kw).scaling.points[-1]
    off = analyzer.scale(g, "a100-40gb-sxm", [4], megatron_step=False, **kw).scaling.points[-1]
    gp = on.grad_passes
    assert gp["accumulate"] > 0 > gp["fused"] and gp["divide"] > 0
    assert off.grad_passes["accumulate"] == off.grad_passes["divide"] == 0.0
    if mode == "data":   # accelerate's loss average: one more all-reduce (4 B over 4 ranks)
        assert on.communication_s > off.communication_s
        assert on.collective_calls == off.collective_calls + 1
    else:
        assert on.communication_s == off.communication_s
    if mode != "pipeline":   # one device's compute: the four terms added
        assert on.compute_s - off.compute_s == pytest.approx(
            gp["divide"] + gp["accumulate"] + gp["fused"] + gp["vocab_parallel"], rel=1e-9)
    else:                    # one micro-batch: the stages in series, each its own terms
        assert on.step_s - off.step_s > gp["accumulate"] + gp["fused"] + gp["divide"]


def test_divide_pass_bytes():
    # grad_data /= dp: reads and writes 4 B per fp32 gradient, 1 FLOP each
    (k,) = GP.kernels(1000, 4, GP.GradPasses(None, False, True))["divide"]
    assert (k.bytes_read, k.bytes_written, k.vector_flops) == (4000, 4000, 1000)
