"""Megatron-LM's passes over the gradients (analyzer.training.grad_passes): the bytes of each
pass in closed form, Megatron's defaults on its paths, plain data parallel unchanged, the norm's
all-reduce over the model-parallel ranks, and the CLI rows."""

import json

import pytest
from onnx_builders import matmul_chain
from test_tensor_parallel import gpt_blocks

import analyzer
from analyzer.errors import InputSpecError
from analyzer.training import grad_passes as GP
from analyzer.training.backward_time import seconds_of
from hardware_db import links

P = 1000          # gradient elements
TRAIN = dict(train=True, optimizer="adam")


def test_bytes_of_each_pass():
    k = GP.kernels(P, 4, GP.GradPasses(1.0, True))
    (zero,), (norm,), (scale,) = k["zero"], k["norm"], k["scale"]
    # fp32: zero writes 4P bytes; the norm reads 4P (2 FLOPs each: square, add); the scale
    # reads 4P and writes 4P (1 FLOP each)
    assert (zero.bytes_read, zero.bytes_written) == (0, 4 * P)
    assert (norm.bytes_read, norm.bytes_written, norm.vector_flops) == (4 * P, 0, 2 * P)
    assert (scale.bytes_read, scale.bytes_written, scale.vector_flops) == (4 * P, 4 * P, P)
    # fp16 gradients: half the bytes
    assert GP.kernels(P, 2, GP.GradPasses(1.0, True))["scale"][0].bytes == 2 * 2 * P
    assert GP.kernels(P, 4, GP.GradPasses(None, True)).keys() == {"zero"}
    assert GP.kernels(P, 4, GP.GradPasses(1.0, False)).keys() == {"norm", "scale"}
    assert GP.kernels(0, 4, GP.GradPasses(1.0, True)) == {}


def test_multi_tensor_launches():
    # apex: chunks of 65,536 elements, 320 per launch = 20,971,520 elements per kernel
    per = 65536 * 320
    assert [GP.launches(n) for n in (1, per, per + 1, 774_000_000)] == [1, 1, 2, 37]
    ks = GP.kernels(2 * per + 5, 4, GP.GradPasses(1.0, False))["norm"]
    assert len(ks) == 3 and sum(k.bytes_read for k in ks) == 4 * (2 * per + 5)


@pytest.mark.parametrize("parallel, dp, clip, zero", [
    ("data", "allreduce", None, False), ("data", "ddp", None, False),
    ("data", "zero1", None, False), ("data", "megatron", 1.0, True),
    ("tensor", "allreduce", 1.0, True), ("pipeline", "allreduce", 1.0, True),
    ("hybrid", "ddp", 1.0, True)])
def test_megatron_defaults_on_its_paths(parallel, dp, clip, zero):
    assert GP.resolve(parallel, dp) == GP.GradPasses(clip, zero, zero)


def test_explicit_choices_and_bad_input():
    assert GP.resolve("data", "allreduce", 0.5, True) == GP.GradPasses(0.5, True)
    assert GP.resolve("pipeline", "allreduce", None, False, False) == GP.OFF
    assert GP.resolve("pipeline", "allreduce", 0) == GP.GradPasses(None, True, True)
    assert GP.resolve("data", "ddp", megatron_step=True) == GP.GradPasses(None, False, True)
    for bad in (dict(clip_grad=-1), dict(clip_grad="x"), dict(zero_grad=1),
                dict(megatron_step="yes")):
        with pytest.raises(InputSpecError):
            GP.resolve("data", "megatron", **{"clip_grad": "auto", **bad})


def test_plain_data_parallel_is_unchanged():
    kw = dict(link="ib-hdr", parallel="data", **TRAIN)
    base = analyzer.scale(matmul_chain(), "a100", [1, 4], **kw).scaling
    off = analyzer.scale(matmul_chain(), "a100", [1, 4], clip_grad=None, zero_grad=False,
                         **kw).scaling
    assert [p.to_dict() for p in base.points] == [p.to_dict() for p in off.points]
    assert all(p.grad_passes is None for p in base.points)
    assert base.setup["grad_passes"] == {"clip_grad": None, "zero_grad": False}
    ddp = analyzer.scale(matmul_chain(), "a100", [4], data_parallel="ddp", **kw).scaling
    assert all(p.grad_passes is None for p in ddp.points)


def test_megatron_data_parallel_adds_the_three_passes_over_every_gradient():
    kw = dict(link="ib-hdr", parallel="data", data_parallel="megatron", megatron_step=False,
              **TRAIN)
    on = analyzer.scale(matmul_chain(), "a100", [1, 4], **kw)
    off = analyzer.scale(matmul_chain(), "a100", [1, 4], clip_grad=None, zero_grad=False, **kw)
    pred = on.predictions[0]
    params = on.totals.params
    assert params == 4 * 256 * 256
    ks = GP.kernels(params, 4, GP.GradPasses(1.0, True))
    want = {k: seconds_of(v, pred, pred.target.profile, False) for k, v in ks.items()}
    for a, b in zip(on.scaling.points, off.scaling.points):
        gp = a.grad_passes
        assert {k: gp[k] for k in want} == pytest.approx(want, rel=1e-12)
        assert gp["norm_allreduce"] == 0.0          # model-parallel group of one rank
        assert a.compute_s - b.compute_s == pytest.approx(sum(want.values()), rel=1e-9)
        assert a.communication_s == b.communication_s
    # each pass costs at least its bytes over the datasheet memory bandwidth
    bw = pred.target.profile.mem_bw_gbs * 1e9
    assert want["zero"] >= 4 * params / bw and want["norm"] >= 4 * params / bw
    assert want["scale"] >= 8 * params / bw
    # the one-device baseline carries them too: its speed-up stays 1
    assert on.scaling.points[0].speedup == pytest.approx(1.0)


def test_pipeline_norm_allreduce_over_the_stages_and_passes_per_stage():
    # p = 2 stages on a 100 GB/s ring without latency: the norm's 4 B all-reduced over 2
    # ranks, 2 (2-1)/2 x 4 / 1e11 = 4e-11 s; each stage's passes over its own parameters
    kw = dict(link=links.make(100), algorithm="ring", parallel="pipeline", microbatches=2,
              pipeline_split="even", megatron_step=False, **TRAIN)
    on = analyzer.scale(matmul_chain(), "a100", [2], **kw)
    off = analyzer.scale(matmul_chain(), "a100", [2], clip_grad=None, zero_grad=False, **kw)
    p, q = on.scaling.points[1], off.scaling.points[1]
    assert p.parts["grad_norm_allreduce"] == pytest.approx(4e-11, rel=1e-12)
    assert p.grad_passes["norm_allreduce"] == p.parts["grad_norm_allreduce"]
    assert p.step_s == pytest.approx(sum(p.parts.values()), rel=1e-12)
    assert p.collective_calls == q.collective_calls + 1
    stages = on.scaling.setup["pipeline_plans"][0]["stages"]
    assert [s["params"] for s in stages] == [2 * 256 * 256] * 2
    pred = on.predictions[0]
    one = sum(seconds_of(v, pred, pred.target.profile, False)
              for v in GP.kernels(2 * 256 * 256, 4, GP.GradPasses(1.0, True)).values())
    busiest = sum(p.grad_passes[k] for k in ("zero", "norm", "scale"))
    assert busiest == pytest.approx(one, rel=1e-12)
    assert p.compute_s - q.compute_s == pytest.approx(one, rel=1e-9)


def test_tensor_parallel_passes_over_one_device_share_and_norm_over_its_ranks():
    kw = dict(link=links.make(100), algorithm="ring", parallel="tensor", megatron_step=False,
              **TRAIN)
    model = gpt_blocks(2, 2, 8, 16, 4)
    on = analyzer.scale(model, "a100", [2], **kw)
    off = analyzer.scale(model, "a100", [2], clip_grad=None, zero_grad=False, **kw)
    p, q = on.scaling.points[1], off.scaling.points[1]
    share = on.scaling.setup["tensor_plans"][0]["params_per_device"]
    pred = on.predictions[0]
    one = sum(seconds_of(v, pred, pred.target.profile, False)
              for v in GP.kernels(share, 4, GP.GradPasses(1.0, True)).values())
    assert p.compute_s - q.compute_s == pytest.approx(one, rel=1e-9)
    assert p.communication_s - q.communication_s == pytest.approx(4e-11, rel=1e-9)


def test_cli_rows_and_json(tmp_path):
    from click.testing import CliRunner

    from cli.main import main

    path = tmp_path / "chain.onnx"
    path.write_bytes(matmul_chain().SerializeToString())
    args = [str(path), "--hw", "a100", "--devices", "1,2", "--train", "--optimizer", "adam",
            "--parallel", "pipeline", "--microbatches", "2", "--link", "ib-hdr"]
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 0, out.output
    assert "Gradient passes (buffer zeroed, clipped at norm 1, Megatron's step kernels;" in out.output
    assert "grad-norm all-reduce ms" in out.output
    assert "main-grad add ms" in out.output and "fused kernels ms" in out.output
    off = CliRunner().invoke(main, args + ["--clip-grad", "0", "--no-zero-grad",
                                           "--no-megatron-step"])
    assert off.exit_code == 0 and "Gradient passes" not in off.output
    js = CliRunner().invoke(main, args + ["--clip-grad", "0.5", "--format", "json"])
    d = json.loads(js.output)
    assert d["scaling_setup"]["grad_passes"] == {"clip_grad": 0.5, "zero_grad": True,
                                                 "megatron_step": True}
    assert d["scaling"][1]["grad_norm_s"] > 0
