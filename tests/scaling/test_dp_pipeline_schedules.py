"""DDP buckets, ZeRO / FSDP and pipeline schedules in closed forms (analyzer.scaling.schedules,
data_parallel, pipeline), end to end through analyzer.scale and the command line."""

import json

import pytest
from onnx_builders import matmul_chain

import analyzer
from analyzer.errors import InputSpecError
from analyzer.scaling import data_parallel as DP
from analyzer.scaling import schedules as S
from analyzer.scaling.collectives import Comm

MIB = 1024 * 1024


def test_buckets_reverse_order_first_bucket_and_cap():
    # sizes in backward order (MiB): 0.5 + 0.6 = 1.1 >= 1 closes the first bucket; 10 + 20 = 30
    # >= 25 closes the second (the tensor that crosses the cap stays); 5 is the last
    sizes = [0.5 * MIB, 0.6 * MIB, 10 * MIB, 20 * MIB, 5 * MIB]
    assert S.buckets(sizes, 25 * MIB, 1 * MIB) == [[0, 1], [2, 3], [4]]
    assert S.buckets(sizes, None) == [[0, 1, 2, 3, 4]]          # no cap: one bucket
    assert S.buckets(sizes, 25 * MIB) == [[0, 1, 2, 3], [4]]    # 31.1 >= 25 at the 4th


def test_one_stream_in_order_and_exposed():
    # ready 1, 2, 3; durations 1.5, 1, 1: ends 2.5, max(2.5, 2) + 1 = 3.5, 4.5
    ends = S.stream([1.0, 2.0, 3.0], [1.5, 1.0, 1.0])
    assert ends == pytest.approx([2.5, 3.5, 4.5])
    assert S.exposed_after(ends, 3.0) == pytest.approx(1.5)     # 4.5 - 3
    assert S.exposed_after(ends, 5.0) == 0.0


class _Fab:
    """A fabric whose every collective of b bytes takes b * 0.75 s (per-byte only)."""

    def collective(self, kind, nbytes, n):
        return Comm(0.75 * nbytes, 0.0)

    def allgather(self, nbytes, n):
        return Comm(0.1 * nbytes, 0.0)

    reduce_scatter = allgather


def test_ddp_overlap_on_a_chain_closed_form():
    # 4 layers of 1 s backward each, 1 parameter (1 byte) each, buckets of 2 bytes: backward
    # order 3, 2 | 1, 0; layer 3 done at 1 s, 2 at 2 s, 1 at 3 s, 0 at 4 s. Each bucket all-
    # reduces 2 B in 1.5 s. Bucket 0 ready at 2 s -> ends 3.5; bucket 1 ready at 4 -> ends 5.5:
    # exposed 5.5 - 4 = 1.5 (the last bucket only)
    lay = DP.Layers((1.0,) * 4, (1.0,) * 4, (1, 1, 1, 1))
    kw = dict(mode="ddp", bwd_s=4.0, cap=2, first_cap=None, grad_bytes=1, weight_bytes=1)
    comm, exposed, calls = DP.gradient_step(lay, _Fab(), 4, overlap=True, **kw)
    assert calls == 2 and comm.total == pytest.approx(3.0) and exposed == pytest.approx(1.5)
    # no overlap: both after backward, 4 + 1.5 + 1.5 = 7: exposed 3 = the whole communication
    comm, exposed, _ = DP.gradient_step(lay, _Fab(), 4, overlap=False, **kw)
    assert exposed == pytest.approx(3.0) == pytest.approx(comm.total)
    # zero1: + the parameter all-gather after the update, 4 B x 0.1 = 0.4 s, all exposed
    _, exposed, calls = DP.gradient_step(lay, _Fab(), 4, overlap=True, **{**kw, "mode": "zero1"})
    assert calls == 3 and exposed == pytest.approx(1.5 + 0.4)


def test_sharded_units_prefetch_closed_form():
    # forward: gather 0 ends 0.5; unit 0 runs 0.5..1.5, gather 1 0.5..1.0; unit 1 1.5..2.5
    # backward: gather 1 ends 0.5; unit 1 0.5..2.5 (gather 0 0.5..1.0), its reduce-scatter
    # 2.5..2.75; unit 0 2.5..4.5, its reduce-scatter 4.5..4.75
    fe, be = S.sharded_units([1.0, 1.0], [2.0, 2.0], [0.5, 0.5], [0.25, 0.25])
    assert fe == pytest.approx(2.5) and be == pytest.approx(4.75)


def test_partition_is_the_min_max_contiguous_split():
    assert S.partition([1.0] * 4, 2) == [2]                 # 4 equal layers, 2 stages: 2 + 2
    assert S.partition([1.0, 2.0, 3.0, 4.0], 2) == [3]      # 6 | 4 beats 3 | 7
    assert S.partition([1.0, 2.0, 3.0, 4.0], 3) == [2, 3]   # 3 | 3 | 4
    # a send of 5 s after layer 1 (tail[1]) makes the 2 | 2 split cost 7: 1 | 3 (3, tail 0)
    # and 3 | 1 (3 + 0) both cost 3; the programme finds one of them
    assert S.partition([1.0, 1.0, 1.0, 1.0], 2, [0, 5.0, 0, 0]) in ([1], [3])
    with pytest.raises(ValueError):
        S.partition([1.0, 1.0], 3)


def test_partition_matches_every_split_tried():
    # against all C(n-1, p-1) splits of small random cases, sends differing per cut
    import itertools
    import random

    rnd = random.Random(7)
    for _ in range(200):
        n = rnd.randint(1, 8)
        p = rnd.randint(1, n)
        c = [rnd.random() for _ in range(n)]
        t = [rnd.random() for _ in range(n)]

        def worst(cuts):
            b = [0, *cuts, n]
            return max(sum(c[b[s]:b[s + 1]]) + (t[b[s + 1] - 1] if s < p - 1 else 0.0)
                       for s in range(p))

        best = min(worst(x) for x in itertools.combinations(range(1, n), p - 1))
        assert worst(S.partition(c, p, t)) == pytest.approx(best, abs=1e-12)


def test_pipeline_time_and_bubble_closed_forms():
    # 2 equal stages of 1 s per micro-batch, 4 micro-batches: (4 + 2 - 1) x 1 = 5
    assert S.pipeline_time([1.0, 1.0], [0.0, 0.0], 4) == pytest.approx(5.0)
    # unequal 1 and 2 s: 1 + 2 + 3 x 2 = 9; one micro-batch: the sum, 3
    assert S.pipeline_time([1.0, 2.0], [0.0, 0.0], 4) == pytest.approx(9.0)
    assert S.pipeline_time([1.0, 2.0], [0.0, 0.0], 1) == pytest.approx(3.0)
    # a send of 0.5 s from stage 0: (1.5 + 1) + 3 x 1.5 = 7
    assert S.pipeline_time([1.0, 1.0], [0.5, 0.0], 4) == pytest.approx(7.0)
    assert S.in_flight(4, 8, "gpipe") == 8 and S.in_flight(4, 8, "1f1b") == 4
    assert S.in_flight(4, 2, "1f1b") == 2


_chain = matmul_chain


def _free_link():
    from hardware_db import links

    return links.make(1e6)   # 1 PB/s, no latency; with algorithm ring: sends ~ 0


def test_pipeline_four_equal_layers_two_stages_four_microbatches():
    # inference: 4 equal layers of t s, 2 stages of 2 layers, 4 micro-batches: the step is
    # (4 + 2 - 1) x (2t / 4) = 2.5 t plus the sends: stage 0 sends x = 64 x 256 x 4 / 4 B per
    # micro-batch at 1e15 B/s, once for the first micro-batch and 3 more times as the slowest
    # stage's (t/2 + x): 2.5 t + 4 x
    r = analyzer.scale(_chain(), "a100", [1, 2], link=_free_link(), algorithm="ring",
                       parallel="pipeline", microbatches=4, train=False)
    t = r.predictions[0].latency_s / 4
    p2 = r.scaling.points[1]
    plan = r.scaling.setup["pipeline_plans"][0]
    assert [(s["first_node"], s["last_node"]) for s in plan["stages"]] == [(0, 1), (2, 3)]
    assert plan["stages"][0]["send_bytes"] == 64 * 256 * 4     # y1: the cut's activation
    x = 64 * 256 * 4 / 4 / 1e15
    assert p2.step_s == pytest.approx(2.5 * t + 4 * x, rel=1e-9)
    assert p2.exposed_communication_s == pytest.approx(4 * x, rel=1e-6)
    assert p2.compute_s == pytest.approx(2 * t)                # the busiest stage's own work
    assert p2.bubble_s == pytest.approx(0.5 * t, rel=1e-9)       # (p-1) x 2t/4
    assert p2.bubble_share == pytest.approx(1 / 5, rel=1e-5)
    assert p2.collective_calls == 4                            # 1 boundary x 4 micro-batches


def test_pipeline_one_microbatch_is_the_serial_step_plus_sends():
    # m = 1: the stages run one after another: forward + backward + the largest stage's update
    # + 2 (p-1) sends of the whole batch's activation (each its own link time)
    r = analyzer.scale(_chain(), "a100", [1, 4], link="ib-hdr", algorithm="ring",
                       parallel="pipeline", microbatches=1, train=True, optimizer="adam",
                       clip_grad=None, zero_grad=False, megatron_step=False)   # Megatron's passes off
    st = r.training.steps[0]
    p4 = r.scaling.points[1]
    plan = r.scaling.setup["pipeline_plans"][0]["stages"]
    upd = max(s["update_s"] for s in plan)
    assert p4.step_s == pytest.approx(st.forward_s + st.backward_s + upd
                                      + p4.exposed_communication_s, rel=1e-9)
    assert p4.exposed_communication_s == pytest.approx(p4.communication_s)   # 6 sends, all exposed
    assert p4.collective_calls == 2 * 3


def test_pipeline_memory_1f1b_holds_min_p_m_microbatches():
    kw = dict(link=_free_link(), algorithm="ring", parallel="pipeline", microbatches=8,
              train=True, optimizer="adam")
    g = analyzer.scale(_chain(), "a100", [2], schedule="gpipe", **kw).scaling.points[1]
    f = analyzer.scale(_chain(), "a100", [2], schedule="1f1b", **kw).scaling.points[1]
    # same step; 1F1B keeps min(2, 8) = 2 of 8 micro-batches: a quarter of GPipe's activations
    assert f.step_s == pytest.approx(g.step_s)
    assert f.memory["activations"] == g.memory["activations"] * 2 // 8
    # the stage's params: 2 layers x 256 x 256 = 131,072; Adam fp32: 4 + 4 + 8 B each
    assert g.memory["weights"] == g.memory["gradients"] == 4 * 131072
    assert g.memory["optimizer_state"] == 8 * 131072


@pytest.mark.parametrize("mode, w, g, o", [
    # P = 4 x 256 x 256 = 262,144 fp32 params, d = 4; opcost's convention: weights 4 B, gradients
    # 4 B, Adam state 8 B (m, v; the fp32 weights are the master copy: ZeRO's 12 B is 8 B here)
    ("ddp", 4 * 262144, 4 * 262144, 8 * 262144),
    ("zero1", 4 * 262144, 4 * 262144, 8 * 262144 // 4),
    ("zero2", 4 * 262144, 4 * 262144 // 4, 8 * 262144 // 4),
    # zero3: weights / 4 plus the two largest units gathered whole; bucket_mb 0.25 MiB = one
    # layer (256 x 256 x 4 B = 0.25 MiB) per unit: 262,144 + 2 x 262,144
    ("zero3", 4 * 262144 // 4 + 2 * 262144, 4 * 262144 // 4, 8 * 262144 // 4),
])
def test_zero_memory_per_device(mode, w, g, o):
    r = analyzer.scale(_chain(), "a100", [1, 4], link=_free_link(), algorithm="ring",
                       train=True, optimizer="adam", data_parallel=mode, bucket_mb=0.25,
                       batch=None)
    p4 = r.scaling.points[1]
    assert (p4.memory["weights"], p4.memory["gradients"], p4.memory["optimizer_state"]) == (w, g, o)
    assert p4.to_dict()["memory_optimizer_state_bytes"] == o


def test_ddp_end_to_end_exposed_is_the_last_bucket_when_backward_is_slow():
    # each layer its own bucket (bucket_mb 0.25 = one layer's gradient); a link so fast that a
    # bucket's all-reduce is shorter than any layer's backward: only the first layer's bucket
    # (ready when backward ends) is exposed, one all-reduce of 262,144 B
    from hardware_db import links

    link = links.make(1e4)   # 10 TB/s; ring all-reduce of 256 KiB over 4: 2 x 3/4 x 262144 / 1e13
    r = analyzer.scale(_chain(), "a100", [1, 4], link=link, algorithm="ring", train=True,
                       data_parallel="ddp", bucket_mb=0.25, overlap=True, batch=None)
    p4 = r.scaling.points[1]
    one = 2 * 3 / 4 * 262144 / 1e13
    assert p4.collective_calls == 4
    assert p4.communication_s == pytest.approx(4 * one)
    assert p4.exposed_communication_s == pytest.approx(one)
    off = analyzer.scale(_chain(), "a100", [1, 4], link=link, algorithm="ring", train=True,
                         data_parallel="ddp", bucket_mb=0.25, overlap=False, batch=None)
    assert off.scaling.points[1].exposed_communication_s == pytest.approx(4 * one)


def test_megatron_buckets_without_overlap_is_one_all_reduce():
    r = analyzer.scale(_chain(), "a100", [1, 4], link="ib-hdr", train=True,
                       data_parallel="megatron", batch=None)
    legacy = analyzer.scale(_chain(), "a100", [1, 4], link="ib-hdr", train=True, batch=None)
    p, q = r.scaling.points[1], legacy.scaling.points[1]
    assert p.collective_calls == 1
    assert p.communication_s == pytest.approx(q.communication_s)   # the same one all-reduce


@pytest.mark.parametrize("kw, word", [
    ({"data_parallel": "zero4"}, "zero4"),
    ({"bucket_mb": 0}, "bucket_mb"),
    ({"parallel": "pipeline", "microbatches": 0}, "microbatches"),
    ({"parallel": "pipeline", "schedule": "zb"}, "zb"),
])
def test_bad_input_names_the_value(kw, word):
    with pytest.raises(InputSpecError, match=word):
        analyzer.scale(_chain(), "a100", [1, 2], link="ib-hdr", train=True, **kw)


def test_more_stages_than_layers_is_an_error():
    with pytest.raises(InputSpecError, match="5 stages but the graph has 4 layers"):
        analyzer.scale(_chain(), "a100", [5], link="ib-hdr", parallel="pipeline")


def test_cli_flags_rows_and_exit_codes(tmp_path):
    from click.testing import CliRunner

    from cli.main import main

    model = tmp_path / "chain.onnx"
    model.write_bytes(_chain().SerializeToString())
    run = CliRunner().invoke
    out = run(main, [str(model), "--hw", "a100", "--devices", "1,4", "--link", "ib-hdr",
                     "--data-parallel", "zero2", "--overlap-backward", "--format", "json"])
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    row = d["scaling"][1]
    assert {"exposed_communication_s", "bubble_share", "memory_total_bytes",
            "collective_calls"} <= set(row)
    assert d["scaling_setup"]["data_parallel"] == "zero2"
    out = run(main, [str(model), "--hw", "a100", "--devices", "1,2", "--link", "ib-hdr",
                     "--parallel", "pipeline", "--microbatches", "4", "--train"])
    assert out.exit_code == 0, out.output
    # (over ib-hdr a send costs more than a layer: the stage that sends takes one layer)
    assert "stage 0: mm0 .. mm0" in out.output and "stage 1: mm1 .. mm3" in out.output
    assert "GB/device" in out.output
    for bad, word in ((["--bucket-mb", "0"], "--bucket-mb"),
                      (["--microbatches", "0", "--parallel", "pipeline"], "0"),
                      (["--parallel", "pipeline", "--data-parallel", "zero1"], "--data-parallel"),
                      (["--data-parallel", "zero9"], "zero9")):
        res = run(main, [str(model), "--hw", "a100", "--devices", "1,2", *bad])
        assert res.exit_code == 2, (bad, res.output)
        assert word in res.output
    res = run(main, [str(model), "--hw", "a100", "--devices", "1,8", "--parallel", "pipeline"])
    assert res.exit_code == 2 and "8 stages" in res.output


def test_even_split_is_megatrons_equal_blocks():
    # 4 GPT blocks, 2 stages: blocks 0-1 with the embedding on stage 0, blocks 2-3 with the
    # final norm and LM head on stage 1 (the layer after each block's residual Add_1)
    from test_tensor_parallel import gpt_blocks

    r = analyzer.scale(gpt_blocks(4, 2, 8, 16, 4, vocab=64), "a100", [2], link="ib-hdr",
                       parallel="pipeline", microbatches=2, pipeline_split="even")
    st = r.scaling.setup["pipeline_plans"][0]["stages"]
    assert [(s["first_name"], s["last_name"]) for s in st] == [
        ("/wte/Gather", "/h.1/Add_1"), ("/h.2/ln_1/LayerNormalization", "/lm_head/MatMul")]
    assert r.scaling.setup["pipeline_split"] == "even"
    # 4 equal MatMuls: each its own block, 2 per stage
    c = analyzer.scale(_chain(), "a100", [2], link="ib-hdr", parallel="pipeline",
                       pipeline_split="even").scaling.setup["pipeline_plans"][0]["stages"]
    assert [(s["first_node"], s["last_node"]) for s in c] == [(0, 1), (2, 3)]
    with pytest.raises(InputSpecError, match="5 stages but the graph has 4 repeated blocks"):
        analyzer.scale(gpt_blocks(4, 2, 8, 16, 4, vocab=64), "a100", [5], link="ib-hdr",
                       parallel="pipeline", pipeline_split="even")
