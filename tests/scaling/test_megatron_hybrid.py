"""Megatron-LM's composed step (analyzer.scaling.hybrid): interleaved 1F1B, the tied embedding's
gradient all-reduce between the first and last stage, data x pipeline (x tensor) parallel; each
number against its closed form."""

import json
from fractions import Fraction

import pytest
from onnx import helper
from onnx_builders import graph, matmul_chain, weight
from test_tensor_parallel import gpt_blocks, tie_lm_head

import analyzer
from analyzer.errors import InputSpecError
from analyzer.scaling import embedding as EM
from analyzer.scaling import parallel as P
from analyzer.scaling import schedules as S
from analyzer.scaling.collectives import Comm
from hardware_db import links

BW = 100e9    # links.make(100): 100 GB/s per direction, no per-message latency


_chain = matmul_chain


def _tied(layers: int = 4, vocab: int = 64, hidden: int = 16, batch: int = 2):
    """gpt_blocks with the LM head tied to the word embedding (``tie_lm_head``)."""
    return tie_lm_head(gpt_blocks(layers, batch, 8, hidden, 4, vocab=vocab))


# ------------------------------------------------------------------ interleaved 1F1B


def test_interleaved_closed_form_p4_m8_v2():
    # 4 equal devices of 1 s per micro-batch, m = 8, no sends
    # non-interleaved: (m + p - 1) = 11 s each way, bubble p - 1 = 3 s = 3/11 of the step
    assert S.pipeline_time([1.0] * 4, [0.0] * 4, 8) == pytest.approx(11.0)
    # interleaved, v = 2: m + (p-1)/v = 8 + 3/2 = 9.5 s, bubble 1.5 s = 3/19 of the step
    assert S.pipeline_time([1.0] * 4, [0.0] * 4, 8, 2) == pytest.approx(9.5)
    assert P.bubble_fraction(4, 8, 2) == pytest.approx(3 / 19)       # (p-1)/(v m + p-1)
    assert P.bubble_fraction(4, 8) == pytest.approx(3 / 11)
    # Megatron's bubble over the ideal time: (p-1)/(v m) = 3/16 = 1.5 / 8
    assert (9.5 - 8) / 8 == pytest.approx(3 / (2 * 8))
    # the equal-stage closed form: compute 4 s over 4 devices, 8 micro-batches: stage time
    # 4 / 4 / 8 = 1/8 s; bubble 3/8 (v = 1) and 3/16 (v = 2); sends p v - 1 = 7 each way
    comp, bub, comm = P.pipeline(4.0, 4, 8, 8.0, lambda nb: Comm(nb, 0.0), v=2)
    assert (comp, bub) == (pytest.approx(1.0), pytest.approx(3 / 16))
    assert P.pipeline(4.0, 4, 8, 8.0, lambda nb: Comm(nb, 0.0))[1] == pytest.approx(3 / 8)
    assert comm.total == pytest.approx(14 * 8.0 / 8)
    # a slowest device paces m times; the others' fill and drain go at 1/v: 8 x 2 + (1+1+1)/2
    assert S.pipeline_time([1.0, 1.0, 2.0, 1.0], [0.0] * 4, 8, 2) == pytest.approx(17.5)
    # activations in flight on the first device: min(m, p + (p-1)/v) = 4 + 3/2
    assert S.in_flight(4, 8, "interleaved", 2) == Fraction(11, 2)
    assert S.in_flight(4, 4, "interleaved", 2) == 4


def test_interleaved_end_to_end_halves_the_bubble():
    # 8 equal layers, p = 4, m = 8, inference over a link so fast the sends are ~0. Each device
    # runs 2 layers either way: c = 2 t / 8 per micro-batch (t: one layer's whole-batch time)
    # 1F1B: 4 stages of 2 layers: (8 + 3) c, bubble 3 c
    # interleaved v = 2: 8 chunks of 1 layer, device s chunks s and s + 4: (8 + 3/2) c, bubble 1.5 c
    kw = dict(link=links.make(1e6), algorithm="ring", parallel="pipeline", microbatches=8,
              train=False)
    one = analyzer.scale(_chain(8), "a100", [4], **kw)
    inter = analyzer.scale(_chain(8), "a100", [4], schedule="interleaved", virtual_stages=2, **kw)
    t = one.predictions[0].latency_s / 8
    c = 2 * t / 8
    a, b = one.scaling.points[1], inter.scaling.points[1]
    assert a.bubble_s == pytest.approx(3 * c, rel=1e-6)
    assert b.bubble_s == pytest.approx(1.5 * c, rel=1e-6)
    # (the steps add the sends, 8 kB per micro-batch at 1e15 B/s: a few parts per million)
    assert a.step_s == pytest.approx(11 * c, rel=1e-5) and b.step_s == pytest.approx(9.5 * c, rel=1e-5)
    assert a.collective_calls == 3 * 8 and b.collective_calls == 7 * 8   # (p v - 1) m sends
    plan = inter.scaling.setup["pipeline_plans"][0]
    assert [(s["first_node"], s["device"]) for s in plan["stages"]] == [
        (i, i % 4) for i in range(8)]


@pytest.mark.parametrize("kw, word", [
    (dict(microbatches=6), "multiple of the pipeline stages 4"),     # m % p != 0
    (dict(virtual_stages=3), "8 repeated blocks do not divide into 4 stages x 3"),
    (dict(virtual_stages=1), "virtual_stages >= 2"),
])
def test_interleaved_refuses_what_megatron_refuses(kw, word):
    args = dict(link="ib-hdr", parallel="pipeline", schedule="interleaved", virtual_stages=2,
                microbatches=8) | kw
    with pytest.raises(InputSpecError, match=word):
        analyzer.scale(_chain(8), "a100", [4], **args)
    with pytest.raises(InputSpecError, match="interleaved"):
        analyzer.scale(_chain(8), "a100", [4], link="ib-hdr", parallel="pipeline",
                       virtual_stages=2)


# ------------------------------------------------------------------ tied embedding


def test_tie_found_through_the_transpose_and_not_without_it():
    tie = EM.find(analyzer.analyze(_tied()).nodes)
    assert tie is not None and tie.table == "wte.weight" and tie.elements == 64 * 16
    r = analyzer.analyze(_tied())
    assert r.nodes[tie.embedding].name == "/wte/Gather"
    assert r.nodes[tie.head].name == "/lm_head/MatMul"
    # the untied model: the head [16, 64] has its own initializer of the same shape
    assert EM.find(analyzer.analyze(gpt_blocks(4, 2, 8, 16, 4, vocab=64)).nodes) is None
    assert EM.find(analyzer.analyze(_chain()).nodes) is None


def test_tied_embedding_allreduce_once_with_its_bytes():
    # p = 2, m = 2, training: the first and last stage all-reduce the 64 x 16 table's gradient,
    # fp32: 4,096 B; ring over 2 devices at 100 GB/s: 2 (2-1)/2 x 4096 / 1e11 = 4.096e-8 s
    kw = dict(link=links.make(100), algorithm="ring", parallel="pipeline", microbatches=2,
              train=True, optimizer="adam", pipeline_split="even", clip_grad=None,
              zero_grad=False, megatron_step=False)
    tied = analyzer.scale(_tied(), "a100", [2], **kw).scaling
    untied = analyzer.scale(gpt_blocks(4, 2, 8, 16, 4, vocab=64), "a100", [2], **kw).scaling
    pt, pu = tied.points[1], untied.points[1]
    rec = tied.setup["pipeline_plans"][0]["tied_embedding"]
    assert rec["allreduce_bytes"] == 64 * 16 * 4 and rec["stages"] == [0, 1]
    assert pt.parts["embedding_allreduce"] == pytest.approx(2 * 1 / 2 * 4096 / BW)
    assert pt.to_dict()["part_embedding_allreduce_s"] == pt.parts["embedding_allreduce"]
    # exactly one collective more than the sends: 2 (p-1) m = 4 sends, + 1 all-reduce
    assert pt.collective_calls == 4 + 1 and pu.collective_calls == 4
    assert pu.parts["embedding_allreduce"] == 0.0
    assert untied.setup["pipeline_plans"][0]["tied_embedding"] is None
    # the last stage holds its own copy of the table: stage 0 = wte (1,024) + blocks 0-1,
    # stage 1 = blocks 2-3 + ln_f (16 + 16) + the copy (1,024): 32 more; untied, the head's
    # own 16 x 64 = 1,024 stand where the copy does
    st = tied.setup["pipeline_plans"][0]["stages"]
    assert st[1]["params"] - st[0]["params"] == (32 + 1024) - 1024
    su = untied.setup["pipeline_plans"][0]["stages"]
    assert [s["params"] for s in su] == [s["params"] for s in st]
    # the step is the sum of its parts
    assert pt.step_s == pytest.approx(sum(pt.parts.values()), rel=1e-12)
    # one stage (no pipeline): no all-reduce
    one = analyzer.scale(_tied(), "a100", [1], **kw).scaling.points[0]
    assert one.parts is None


# ------------------------------------------------------------------ data x pipeline x tensor


def test_data_x_pipeline_is_the_pipeline_of_the_local_batch_plus_the_stage_allreduce():
    # hybrid t = 1, p = 2, d = 2 on 4 devices, global batch 64: each replica is the pipeline of
    # the batch-32 model (re-analysed), then each stage all-reduces its gradients over its data
    # group; without overlap all of it is exposed after the flush, stage 0's (ending last) in
    # full: 2 layers x 256 x 256 fp32 = 524,288 B, ring over 2: 2 (1/2) 524288 / 1e11 s
    link = links.make(100)
    kw = dict(link=link, algorithm="ring", microbatches=4, train=True, optimizer="sgd")
    hyb = analyzer.scale(_chain(4, 64), "a100", [1, 4], parallel="hybrid", pipeline_size=2,
                         batch=64, **kw).scaling.points[1]
    pipe = analyzer.scale(_chain(4, 32), "a100", [2], parallel="pipeline",
                          **kw).scaling.points[1]
    ar = 2 * 1 / 2 * 524288 / BW
    assert hyb.parts["data_parallel_exposed"] == pytest.approx(ar, rel=1e-12)
    assert hyb.step_s == pytest.approx(pipe.step_s + ar, rel=1e-9)
    assert hyb.bubble_s == pytest.approx(pipe.bubble_s, rel=1e-9)
    assert hyb.collective_calls == pipe.collective_calls + 2     # one bucket per stage
    assert hyb.communication_s == pytest.approx(pipe.communication_s + 2 * ar, rel=1e-9)
    # overlapped with the last micro-batch's backward (Megatron's buckets, one layer each):
    # never more exposed than without
    ov = analyzer.scale(_chain(4, 64), "a100", [4], parallel="hybrid", pipeline_size=2,
                        batch=64, data_parallel="megatron", bucket_mb=0.25, overlap=True,
                        **kw).scaling.points[1]
    assert 0.0 <= ov.parts["data_parallel_exposed"] <= ar
    # without the global batch (kernel bodies / 2) a replica holds the same activations as
    # the re-analysed batch-32 model: the chain's activations are linear in the batch
    lin = analyzer.scale(_chain(4, 64), "a100", [4], parallel="hybrid", pipeline_size=2,
                         **kw).scaling.points[1]
    assert lin.memory["activations"] == hyb.memory["activations"] == pipe.memory["activations"]


def test_tensor_x_pipeline_x_data_parts_and_tied_bytes():
    # t = 2, p = 2, d = 2 on one 8-GPU node: the tied table is vocab-parallel, so the
    # embedding group all-reduces 64 x 16 / 2 x 4 B = 2,048 B; every part is there
    r = analyzer.scale(_tied(4, batch=4), "a100", [8], node="dgx-a100", parallel="hybrid",
                       tensor_size=2, pipeline_size=2, batch=4, microbatches=2, train=True,
                       pipeline_split="even")
    p = r.scaling.points[1]
    pl = r.scaling.setup["pipeline_plans"][0]
    assert (pl["tensor"], pl["pipeline"], pl["data"]) == (2, 2, 2)
    assert pl["tied_embedding"]["allreduce_bytes"] == 64 * 16 // 2 * 4
    assert p.parts["tensor_comm"] > 0 and p.parts["p2p"] > 0
    assert p.parts["data_parallel_exposed"] > 0 and p.parts["embedding_allreduce"] > 0
    assert p.step_s == pytest.approx(sum(p.parts.values()), rel=1e-12)
    assert p.exposed_communication_s == pytest.approx(
        p.step_s - p.compute_s - p.bubble_s, rel=1e-9)


@pytest.mark.parametrize("kw, word", [
    (dict(parallel="hybrid", pipeline_size=2, tensor_size=2), "not a multiple"),   # 6 devices
    (dict(parallel="hybrid"), "pipeline_size"),
    (dict(parallel="pipeline", tensor_size=2), "hybrid"),
    (dict(parallel="hybrid", pipeline_size=2, data_parallel="zero3"), "zero3"),
])
def test_hybrid_bad_input(kw, word):
    with pytest.raises(InputSpecError, match=word):
        analyzer.scale(_chain(4), "a100", [6 if "tensor_size" in kw and
                                           kw["parallel"] == "hybrid" else 4],
                       link="ib-hdr", train=True, **kw)


def test_hybrid_tensor_needs_the_megatron_pattern():
    # MatMul then LayerNormalization, 4 times: no column/row pair closes (a layer norm between)
    nodes, inits, x = [], {"g": weight(64), "b": weight(64)}, "x"
    for i in range(4):
        inits[f"w{i}"] = weight(64, 64)
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("LayerNormalization", [f"m{i}", "g", "b"], [f"y{i}"],
                                   name=f"ln{i}")]
        x = f"y{i}"
    model = graph(nodes, {"x": (8, 64)}, [x], inits)
    with pytest.raises(InputSpecError, match="tensor size 2"):
        analyzer.scale(model, "a100", [4], link="ib-hdr", parallel="hybrid",
                       tensor_size=2, pipeline_size=2)


def test_cli_hybrid_interleaved_rows_and_usage_errors(tmp_path):
    from click.testing import CliRunner

    from cli.main import main

    model = tmp_path / "tied.onnx"
    model.write_bytes(_tied(8).SerializeToString())
    run = CliRunner().invoke
    base = [str(model), "--hw", "a100", "--node", "dgx-a100"]
    out = run(main, base + ["--devices", "1,4", "--parallel", "hybrid", "--pipeline-size", "2",
                            "--schedule", "interleaved", "--virtual-stages", "2",
                            "--microbatches", "4", "--format", "json"])
    assert out.exit_code == 0, out.output
    row = json.loads(out.output)["scaling"][1]
    assert {f"part_{k}_s" for k in P.PARTS} <= set(row)
    assert row["step_s"] == pytest.approx(sum(row[f"part_{k}_s"] for k in P.PARTS), rel=1e-12)
    out = run(main, base + ["--devices", "1,2", "--parallel", "pipeline", "--train"])
    assert out.exit_code == 0, out.output
    assert "Step parts" in out.output and "tied embedding wte.weight" in out.output
    for bad, word in ((["--parallel", "pipeline", "--schedule", "interleaved"], "--virtual-stages"),
                      (["--parallel", "pipeline", "--virtual-stages", "2"], "--schedule"),
                      (["--parallel", "data", "--tensor-size", "2"], "--parallel hybrid"),
                      (["--parallel", "hybrid"], "--pipeline-size"),
                      (["--parallel", "pipeline", "--schedule", "interleaved",
                        "--virtual-stages", "2", "--microbatches", "6"], "multiple")):
        res = run(main, base + ["--devices", "1,4", *bad])
        assert res.exit_code == 2, (bad, res.output)
        assert word in res.output


def test_pipeline_one_microbatch_with_dropout_keeps_the_dropout_kernels():
    # the serial step of m = 1 with the step's dropout forward kernels in its forward
    r = analyzer.scale(gpt_blocks(2, 2, 16, 64, 4), "a100", [1, 2], link="ib-hdr",
                       algorithm="ring", parallel="pipeline", microbatches=1, train=True,
                       optimizer="adam", dropout=0.1, clip_grad=None, zero_grad=False,
                       megatron_step=False)
    st = r.training.steps[0]
    assert st.dropout_forward_s > 0
    p2 = r.scaling.points[1]
    upd = max(s["update_s"] for s in r.scaling.setup["pipeline_plans"][0]["stages"])
    assert p2.step_s == pytest.approx(st.forward_s + st.backward_s + upd
                                      + p2.exposed_communication_s, rel=1e-9)
