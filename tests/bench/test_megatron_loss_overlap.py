"""Megatron-LM's loss (analyzer.training.megatron_loss) and the async column all-reduce overlap
(analyzer.scaling.tensor_overlap) on bench/megatron_check.py's GPT graph: kernel counts and bytes
in closed form for a tiny config, and where they enter the scaling step (no published time is
read)."""

from __future__ import annotations

import megatron_check as mc

import analyzer
from analyzer.scaling import tensor as T
from analyzer.scaling import tensor_overlap as TO
from analyzer.scaling.data_parallel import profile_of
from analyzer.training import megatron_loss as ML
from analyzer.training import megatron_step as MS
from analyzer.training.backward_time import each_seconds

L, H, HEADS, S, V, B = 4, 64, 4, 16, 256, 4


def _report(batch=B):
    return analyzer.analyze(mc.megatron_gpt(L, H, HEADS, S, V, batch), "a100-40gb-sxm",
                            train=True, optimizer="adamw", precision="fp32", runtime="eager",
                            dropout=0.1)


def test_loss_site_rows_and_vocabulary():
    # the one SoftmaxCrossEntropyLoss: rows = B S = 64, V = 256
    r = _report()
    (i, rows, vocab), = ML.sites(r.nodes)
    assert r.nodes[i].op == "SoftmaxCrossEntropyLoss" and (rows, vocab) == (B * S, V) == (64, 256)


def test_kernel_counts_and_shard_bytes():
    # r = 64 rows, t = 4: w = 256 / 4 = 64 columns, n = r w = 4096 elements
    r, w, n = 64, 64, 64 * 64
    f, b = ML.kernels(0, "loss", r, w, 4)
    assert len(f) == 5 + 14 + 12 == 31 and len(b) == 5 + 6 + 1 == 12
    assert sum(ML.KERNELS.values()) == 31 + 12
    shard_f = [k for k in f if k.name.split("/")[1] in ("max", "sub_max", "exp", "sum_exp", "div_sum")]
    # forward over the shard: max 4n + 12r, sub 8n + 4r, exp 8n, sum 4n + 4r, div 8n + 4r
    # = 32 n + 24 r = 131072 + 1536 = 132608 B
    assert sum(k.bytes for k in shard_f) == 32 * n + 24 * r == 132_608
    # backward over the shard: grad_input.mul_(grad_output): 8 n + 4 r = 33024 B
    mul = [k for k in b if k.name.endswith("mul_grad_output")]
    assert len(mul) == 1 and mul[0].bytes == 8 * n + 4 * r == 33_024
    # exp: one transcendental per element
    assert sum(k.transcendentals for k in f) == n + r   # exp n + log r


def test_boolean_index_writes_every_row_over_t_ranks_none_at_one():
    # t > 1: the masked-target index_put_ writes 8 r, the predicted-logit one 4 r; t = 1: 0
    r, w = 64, 256
    f4, _ = ML.kernels(0, "loss", r, w, 4)
    f1, _ = ML.kernels(0, "loss", r, w, 1)
    put4 = {k.name.split("/")[1]: k.bytes_written for k in f4 if "index_put" in k.name}
    put1 = {k.name.split("/")[1]: k.bytes_written for k in f1 if "index_put" in k.name}
    assert put4 == {"index_put_target": 8 * r, "index_put_pick": 4 * r} == {
        "index_put_target": 512, "index_put_pick": 256}
    assert put1 == {"index_put_target": 0, "index_put_pick": 0}


def test_graph_backward_at_the_shard():
    # the graph's cross_entropy backward at [64, 64]: zero fill (writes 4 x 4096), scatter,
    # the log_softmax backward (reads 2 x 4 x 4096, writes 4 x 4096): 3 kernels
    r = _report()
    (i, rows, _), = ML.sites(r.nodes)
    from analyzer.training.step import gradient_plan

    g = ML.graph_backward(r.nodes[i], i, gradient_plan(r.nodes)[i].needs, rows, 64)
    assert len(g) == 3
    assert g[0].bytes_written == 4 * 4096 and g[2].bytes == 3 * 4 * 4096 == 49_152


def test_loss_terms_enter_the_step_terms():
    # Megatron's loss minus the graph's, forward and backward, at the loss node only; the
    # terms' forward / backward add them to the fused change and the main-grad adds
    r = _report()
    pred = r.predictions[0]
    tm = MS.terms(r, pred, profile_of(pred))
    (i, _, _), = ML.sites(r.nodes)
    assert [j for j, x in enumerate(tm.vocab_forward) if x] == [i]
    assert [j for j, x in enumerate(tm.vocab_backward) if x] == [i]
    assert tm.forward()[i] == tm.fused[i] + tm.vocab_forward[i]
    assert tm.backward()[i] == tm.accumulate[i] + tm.vocab_backward[i]
    # 43 Megatron kernels against the graph's few: more seconds each way
    assert tm.vocab_forward[i] > 0 and tm.vocab_backward[i] > 0


def test_micro_batches_repeat_the_loss_kernels():
    # m micro-batches: the kernels at r / m rows, m times: the launch-bound row kernels m times
    r = _report()
    pred = r.predictions[0]
    prof = profile_of(pred)
    one = MS.terms(r, pred, prof, m=1)
    two = MS.terms(r, pred, prof, m=2)
    (i, _, _), = ML.sites(r.nodes)
    assert two.vocab_forward[i] > one.vocab_forward[i]


def test_wgrad_kernels_of_a_column_set_at_the_shard():
    # t = 4, QKV weight [64, 192] -> [64, 48] per device: dW = X^T dY, M = B S = 64 rows:
    # 2 M K N/t = 2 x 64 x 64 x 48 = 393216 MAC FLOPs; the LM head [64, 256] -> [64, 64]:
    # 2 x 64 x 64 x 64 = 524288
    r = _report()
    plan = T.plan(r.nodes, 4, train=True, params=r.totals.params)
    qkv = plan.columns[0]
    ks = TO.wgrad_kernels(r.nodes, plan, qkv)
    assert len(ks) == 1 and ks[0].kind == "dW" and ks[0].mac_flops == 2 * 64 * 64 * 48 == 393_216
    head = TO.wgrad_kernels(r.nodes, plan, plan.columns[-1])
    assert head[0].mac_flops == 2 * 64 * 64 * 64 == 524_288


def test_overlap_covers_each_backward_allreduce_once():
    # one entry per backward all-reduce: 2 per block (QKV, fc1) + the LM head = 2 L + 1 = 9;
    # none under sequence parallelism (no async all-reduce there)
    r = _report()
    pred = r.predictions[0]
    plan = T.plan(r.nodes, 4, train=True, params=r.totals.params)
    wg = TO.wgrad_seconds(r.nodes, plan, pred, profile_of(pred))
    assert len(wg) == 2 * L + 1 == 9 and all(s > 0 for s in wg.values())
    sp = T.plan(r.nodes, 4, train=True, params=r.totals.params, sequence_parallel=True)
    assert TO.wgrad_seconds(r.nodes, sp, pred, profile_of(pred)) == {}
    assert TO.hidden(2.0, 1.5) == 1.5 and TO.hidden(1.0, 3.0) == 1.0 and TO.hidden(1.0, -1) == 0.0


def test_tensor_point_exposes_the_comm_less_the_hidden_part():
    # the tensor point: exposed = the whole communication - the hidden part, which the plan
    # summary lists per profile
    g = mc.megatron_gpt(L, H, HEADS, S, V, B)
    res = analyzer.scale(g, "a100-40gb-sxm", [4], batch=B, intra_link="nvlink3", **mc.SETTINGS,
                         **mc.MODE["tensor"])
    p = [x for x in res.scaling.points if x.devices == 4][0]
    hid = res.scaling.setup["tensor_plans"][0]["backward_allreduce_hidden_s"]["a100-40gb-sxm"]
    assert hid > 0
    assert abs(p.communication_s - hid - p.exposed_communication_s) < 1e-12
    assert p.grad_passes["vocab_parallel"] > 0


def test_loss_kernels_price_as_stated():
    # the shard's five forward kernels are the costly ones at a GPT-2-like shard (priced by the
    # kernel model; only their order is asserted: exp and the two r w writes above the reads)
    r = _report()
    pred = r.predictions[0]
    f, _ = ML.kernels(0, "loss", 4096, 12672, 4)
    s = dict(zip([k.name.split("/")[1] for k in f], each_seconds(f, pred, profile_of(pred))))
    assert s["sub_max"] > s["max"] and s["div_sum"] > s["sum_exp"]


def test_embedding_masking_kernels():
    # r = B S = 64 indices, h = 64: 9 forward kernels, the row fill writing 4 r h = 16384 B;
    # 3 backward, the clone reading and writing 4 r h each, the fill writing 4 r h
    f, b = ML.embedding_kernels(0, "wte", 64, 64)
    assert len(f) == 9 and len(b) == 3
    assert f[-1].bytes_written == 4 * 64 * 64 == 16_384
    assert b[0].bytes == 2 * 16_384 and b[2].bytes_written == 16_384
    # only under tensor parallel, at the Gather whose table the plan splits
    r = _report()
    pred = r.predictions[0]
    plan = T.plan(r.nodes, 4, train=True, params=r.totals.params)
    ef, eb = ML.embedding_deltas(r, pred, profile_of(pred), plan.split, 4)
    (i,) = ef
    assert r.nodes[i].name == "/wte/Gather" and ef[i] > 0 and eb[i] > 0
    assert ML.embedding_deltas(r, pred, profile_of(pred), plan.split, 1) == ({}, {})


def test_data_parallel_loss_average_is_one_more_collective():
    # accelerate's average_losses_across_data_parallel_group: one all-reduce of 4 B over d = 4,
    # only on Megatron's step
    g = mc.megatron_gpt(L, H, HEADS, S, V, B)
    kw = dict(batch=B, intra_link="nvlink3", **mc.SETTINGS, **mc.MODE["data"])
    on = analyzer.scale(g, "a100-40gb-sxm", [4], **kw)
    off = analyzer.scale(g, "a100-40gb-sxm", [4], megatron_step=False, **kw)
    p_on, p_off = (next(x for x in r.scaling.points if x.devices == 4) for r in (on, off))
    assert p_on.collective_calls == p_off.collective_calls + 1
