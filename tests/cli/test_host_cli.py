"""``--host NAME``: whose per-op host figures ``--runtime eager`` charges (``Options.host``)."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner
from onnx import TensorProto, helper

import analyzer
from cli.main import main


def _relu_file(tmp_path, n: int = 64) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu", [x], [y])
    path = tmp_path / "relu.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return str(path)


def _latency(runner, path, *extra) -> float:
    out = runner.invoke(main, [path, "--hw", "h200-sxm", "--runtime", "eager", "--format", "json", *extra])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["predictions"][0]["latency_s"]


def test_the_host_reaches_the_prediction(tmp_path):
    # one Relu: h + k; the default host's 12 us against torch2.11-h200's 10 us
    path, runner = _relu_file(tmp_path), CliRunner()
    default, h200 = _latency(runner, path), _latency(runner, path, "--host", "torch2.11-h200")
    np.testing.assert_allclose(default - h200, 2e-6, rtol=1e-6)
    want = analyzer.analyze(path, hw="h200-sxm", runtime="eager", host="torch2.11-h200").predictions[0]
    np.testing.assert_allclose(h200, want.latency_s, rtol=1e-12)


def test_an_unknown_host_names_the_hosts(tmp_path):
    bad = CliRunner().invoke(main, [_relu_file(tmp_path), "--hw", "h200-sxm", "--runtime", "eager",
                                    "--host", "a-laptop"])
    assert bad.exit_code != 0 and "torch2.11-h200" in bad.output


def test_a_jax_program_refuses_the_host_as_a_usage_error():
    # exit 2 (bad usage) naming the flag, not an internal error
    from pathlib import Path

    prog = Path(__file__).resolve().parents[2] / "samples" / "jax_models.py"
    bad = CliRunner().invoke(main, [f"{prog}:transformer_infer", "--input", "x=f32[1,16,64]", "--hw", "h200-sxm",
                                    "--host", "torch2.11-h200"])
    assert bad.exit_code == 2, bad.output
    assert "--host torch2.11-h200 does not apply to a JAX program" in bad.output
