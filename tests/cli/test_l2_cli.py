"""``--l2 warm|cold``: the L2 state each GPU kernel starts in (``Options.l2``)."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner
from onnx import TensorProto, helper

import analyzer
from cli.main import main


def _add_file(tmp_path, n: int = 1024) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n, n])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT16, [n, n])
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"], name="add")], "add", [x, y], [z])
    path = tmp_path / "add.onnx"
    path.write_bytes(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return str(path)


def test_cold_reaches_json_and_explain(tmp_path):
    path, runner = _add_file(tmp_path), CliRunner()
    out = runner.invoke(main, [path, "--hw", "h100-sxm", "--l2", "cold", "--format", "json"])
    assert out.exit_code == 0, out.output
    p = json.loads(out.output)["predictions"][0]
    assert p["l2"] == "cold" and "L2 cold" in p["time_definition"]
    assert any(n.startswith("L2 cold") for n in p["notes"])
    want = analyzer.analyze(path, hw="h100-sxm", l2="cold").predictions[0].latency_s
    np.testing.assert_allclose(p["latency_s"], want, rtol=1e-12)
    warm = json.loads(runner.invoke(main, [path, "--hw", "h100-sxm", "--format", "json"]).output)
    assert warm["predictions"][0]["l2"] == "warm" and warm["predictions"][0]["latency_s"] < want
    ex = runner.invoke(main, [path, "--hw", "h100-sxm", "--l2", "cold", "--explain", "add"])
    assert ex.exit_code == 0 and "L2 cold: flushed before each kernel" in ex.output


def test_a_bad_value_exits_2(tmp_path):
    bad = CliRunner().invoke(main, [_add_file(tmp_path), "--hw", "h100-sxm", "--l2", "tepid"])
    assert bad.exit_code == 2 and "tepid" in bad.output


def test_a_cpu_profile_warns(tmp_path):
    out = CliRunner().invoke(main, [_add_file(tmp_path), "--hw", "epyc-9654", "--l2", "cold", "--format", "json"])
    assert out.exit_code == 0, out.output
    p = json.loads(out.output)["predictions"][0]
    assert p["l2"] == "warm" and any("GPU kernels only" in w for w in p["warnings"])
