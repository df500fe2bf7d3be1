"""Data parallel for a JAX program (``analyzer.scale(fn, ..., args=..., params_argnums=...)``
and ``analyze PROGRAM.py:fn --devices``), in closed forms: the all-reduce carries 4 bytes per
fp32 parameter, each device runs the step at the per-device batch B/N."""

import csv
import io
import json

import pytest

import analyzer
from analyzer.errors import InputSpecError
from hardware_db import links

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from tests.scaling import jax_mlp2 as M  # noqa: E402

B = 32
TARGET = "tests/scaling/jax_mlp2.py:step"
PARAM_FLAGS = ["--params", "w1", "--params", "b1", "--params", "w2", "--params", "b2"]


def _inputs(batch: int) -> list[str]:
    shapes = {**M.SHAPES, "x": (batch, M.D_IN), "y": (batch, M.D_OUT)}
    return [a for k, v in shapes.items() for a in ("--input", f"{k}=f32[{','.join(map(str, v))}]")]


def _scale(devices=(1, 2, 8), **kw):
    return analyzer.scale(M.step, "a100", list(devices), args=M.specs(B),
                          params_argnums=[0, 1, 2, 3], **kw)


def test_allreduce_bytes_and_per_device_batch_closed_form():
    r = _scale(link="ib-hdr", algorithm="ring")
    d = r.to_dict()
    setup = d["scaling_setup"]
    # 64*128 + 128 + 128*10 + 10 = 9610 fp32 parameters; 4 bytes each = 38440 bytes
    assert M.PARAMS == 9610
    assert setup["gradient_elements"] == 9610 and setup["gradient_bytes"] == 4 * 9610 == 38440
    assert setup["batch"] == 32 and setup["per_device_batch"] == [32, 16, 4]   # B/N
    assert setup["devices"] == [1, 2, 8] and setup["program"] == "jax"
    link = links.get("ib-hdr")
    bw, alpha = link.bytes_per_s, link.latency_s
    for p in r.scaling.points:
        n = p.devices
        # ring all-reduce: 2(n-1)/n * 38440 / bw + 2(n-1) * alpha (zero at n = 1)
        assert p.communication_s == pytest.approx(2 * (n - 1) / n * 38440 / bw + 2 * (n - 1) * alpha,
                                                  rel=1e-12)
        # each device runs the whole step on B/N samples
        own = analyzer.analyze_jax(M.step, *M.specs(B // n), hw="a100", params_argnums=[0, 1, 2, 3])
        assert p.compute_s == pytest.approx(own.predictions[0].latency_s, rel=1e-12)
        # forward 2b(64*128 + 128*10); backward dW of both, dX of the second only:
        # 2b(64*128 + 2*128*10); together 2b * 20224 = 40448 b (b = 32, 16, 4)
        assert own.totals.mac_flops == 40448 * (B // n)
        assert p.step_s == pytest.approx(p.compute_s + p.communication_s)
    assert [p.speedup for p in r.scaling.points][0] == 1.0


def test_precision_and_global_batch():
    r = _scale(devices=(1, 2), precision="bf16")
    assert r.to_dict()["scaling_setup"]["gradient_bytes"] == 2 * 9610   # 2 bytes per bf16 gradient
    r = analyzer.scale(M.step, "a100", [1, 2], args=M.specs(B), batch=64,
                       params_argnums=["w1", "b1", "w2", "b2"])
    assert r.to_dict()["scaling_setup"]["per_device_batch"] == [64, 32]
    assert r.model["inputs"]["x"] == [64, 64] and r.model["inputs"]["w1"] == [64, 128]
    r = _scale(devices=(1, 2), optimizer="adam")   # the step's own SGD update runs: said so
    assert any("optimizer 'adam' not applied" in n for n in r.scaling.notes)


def test_params_as_a_pytree():
    import samples.jax_models as jm

    s = jax.ShapeDtypeStruct
    r = analyzer.scale(jm.mlp_train_step, "a100", [1, 4], params_argnums=0,
                       args=(jm.mlp_params(), s((64, 784), jnp.float32), s((64,), jnp.int32)))
    setup = r.to_dict()["scaling_setup"]
    # 784*256 + 256 + 256*128 + 128 + 128*10 + 10 = 235146 fp32 leaves of the params dict
    assert setup["gradient_elements"] == 235146 and setup["gradient_bytes"] == 4 * 235146
    assert setup["per_device_batch"] == [64, 16]   # x and labels both split


def test_overlap_hides_buckets_behind_the_programs_own_backward():
    hidden = _scale(link="ib-hdr", overlap=True, buckets=4).scaling.points
    for p in hidden[1:]:
        own = analyzer.analyze_jax(M.step, *M.specs(B // p.devices), hw="a100",
                                   params_argnums=[0, 1, 2, 3])
        pred = own.predictions[0]
        # the backward pass: the nodes jax.grad names transpose(jvp(...))
        bwd = sum(r.time_s for r in pred.nodes if "transpose(" in own.nodes[r.index].name)
        assert 0 < bwd < pred.latency_s
        # bucket k ready at k/4 of backward, sent one after another; exposed = what runs past it
        per, finish = p.communication_s / 4, 0.0
        for k in range(1, 5):
            finish = max(finish, bwd * k / 4) + per
        assert p.exposed_communication_s == pytest.approx(max(0.0, finish - bwd), rel=1e-9)


def test_a_forward_program_gets_the_modelled_backward_with_train():
    r = analyzer.scale(M.forward, "a100", [1, 2], args=M.specs(B)[:5],
                       params_argnums=[0, 1, 2, 3], link="ib-hdr")
    setup = r.to_dict()["scaling_setup"]
    assert setup["backward"] == "modelled" and setup["gradient_bytes"] == 38440
    assert r.training is not None
    assert any("no backward of its own" in n for n in r.scaling.notes)
    # the training model's batch is dim 0 of x (32), not of w1 (64), the first argument
    assert r.training.batch == 32
    assert r.training.steps[0].memory.batch == 32


@pytest.mark.parametrize("kw, words", [
    (dict(params_argnums=None), "params_argnums"),
    (dict(parallel="tensor"), "ONNX graphs only"),
    (dict(parallel="pipeline"), "not modelled for a JAX program"),
    (dict(devices=(1, 3)), "does not split evenly over 3"),
    # DDP / ZeRO modes read a modelled backward's per-layer gradients (scale forwards them)
    (dict(data_parallel="zero1"), "equal buckets only"),
])
def test_unsupported_requests_are_input_errors(kw, words):
    kw = dict(kw)
    devices = kw.pop("devices", (1, 2))
    args = dict(args=M.specs(B), params_argnums=kw.pop("params_argnums", [0, 1, 2, 3]))
    with pytest.raises(InputSpecError, match=words):
        analyzer.scale(M.step, "a100", list(devices), **args, **kw)


def test_a_program_over_a_mesh_runs_on_its_mesh_only():
    s = jax.ShapeDtypeStruct
    args = (s((64, 128), jnp.float32), s((32, 64), jnp.float32))
    with pytest.raises(InputSpecError, match=r"mesh of 8 devices .* got 1, 2"):
        analyzer.scale(M.sharded, "a100", [1, 2], args=args, params_argnums=0)
    # its own count: one step, no data-parallel sweep (tests/scaling/test_jax_mesh.py)
    r = analyzer.scale(M.sharded, "a100", [8], args=args, params_argnums=0)
    assert [p.devices for p in r.scaling.points] == [8] and r.scaling.parallel == "mesh"


def test_a_traced_jaxpr_is_refused_and_linear_rescale_keeps_overheads():
    closed = jax.make_jaxpr(M.step)(*M.specs(B))
    with pytest.raises(InputSpecError, match="pass the function"):
        analyzer.scale(closed, "a100", [1, 2], params_argnums=[0, 1, 2, 3])
    r = _scale(devices=(1, 2), rescale="linear")
    pred = r.predictions[0]
    over = sum(x.overhead_s for x in pred.nodes)
    one, two = r.scaling.points
    # overheads held, the rest halved: o + (s - o) / 2
    assert two.compute_s == pytest.approx(over + (one.compute_s - over) / 2)
    assert r.to_dict()["scaling_setup"]["rescale"] == "linear"


def _cli(*args):
    from click.testing import CliRunner

    from cli.main import main

    return CliRunner().invoke(main, [*args])


def test_cli_devices_for_a_jax_program_json_and_csv():
    base = [TARGET, *_inputs(B), *PARAM_FLAGS, "--hw", "a100", "--devices", "1,2,8",
            "--link", "ib-hdr"]
    out = _cli(*base, "--format", "json")
    assert out.exit_code == 0, out.output
    d = json.loads(out.output)
    assert [p["devices"] for p in d["scaling"]] == [1, 2, 8]
    assert d["scaling_setup"]["gradient_bytes"] == 38440
    assert d["scaling_setup"]["per_device_batch"] == [32, 16, 4]
    assert "a100-80gb-sxm" in d["crossover_devices"]
    out = _cli(*base, "--format", "csv")
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader(io.StringIO("\n".join(
        line for line in out.output.splitlines() if not line.startswith("#")))))
    assert [int(r["devices"]) for r in rows] == [1, 2, 8]
    for row, p in zip(rows, d["scaling"]):
        assert float(row["communication_s"]) == pytest.approx(p["communication_s"])


@pytest.mark.parametrize("extra, words", [
    ([], "--params"),                                   # no parameters named
    (PARAM_FLAGS + ["--parallel", "tensor"], "ONNX graphs only"),
    (PARAM_FLAGS + ["--devices", "1,3"], "does not split evenly"),
])
def test_cli_unsupported_jax_requests_exit_2(extra, words):
    devices = [] if "--devices" in extra else ["--devices", "1,2"]
    out = _cli(TARGET, *_inputs(B), "--hw", "a100", *devices, *extra)
    assert out.exit_code == 2, out.output
    assert words in out.output


def test_cli_program_over_a_mesh_exits_2_at_another_device_count():
    out = _cli("tests/scaling/jax_mlp2.py:sharded", "--input", "w1=f32[64,128]",
               "--input", "x=f32[32,64]", "--params", "w1", "--hw", "a100", "--devices", "1,2")
    assert out.exit_code == 2, out.output
    assert "runs over a mesh of 8 devices" in out.output and "got 1, 2" in out.output
