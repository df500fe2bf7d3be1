"""Numbers from users are validated: hardware profile values finite and in a plausible range,
JSON output never Infinity/NaN, baselines checked against baseline.schema.json, a finite
--max-regression, a baseline of another model refused (fingerprint, then layers), dims beyond
int64 a clear error.  Every case: one line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from profile_docs import tiny_cpu_toml

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "samples" / "mlp.onnx")
CNN = str(ROOT / "samples" / "cnn.onnx")
DYN = str(ROOT / "samples" / "dynamic_batch.onnx")

def _strict_json(text: str):
    def refuse(c):
        raise AssertionError(f"{c} in JSON output")
    return json.loads(text, parse_constant=refuse)


def _err(res, *words):
    assert res.exit_code == 2, res.output
    assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1, res.stderr
    for w in words:
        assert w in res.stderr, res.stderr


def _profile(tmp_path, bw="100.0", launch="5.0", extra=""):
    p = tmp_path / "tiny.toml"
    p.write_text(tiny_cpu_toml(bw, launch, extra))
    return p


@pytest.mark.parametrize("bw,words", [("1e-300", ">= 0.001"), ("1e300", "<= 1e+06"),
                                      ("1e400", "got inf"), ("nan", "nan"), ("0.0", ">= 0.001")])
def test_profile_numbers_in_a_plausible_range(run_cli, tmp_path, bw, words):
    _err(run_cli(MLP, "--hw", _profile(tmp_path, bw=bw)), "memory.mem_bw_gbs", words)


def test_profile_range_limits_are_inclusive_and_documented(run_cli, tmp_path):
    from hardware_db.validate import schema

    s = schema()
    assert s["properties"]["memory"]["properties"]["mem_bw_gbs"]["minimum"] == 1e-3
    assert s["properties"]["overhead"]["properties"]["launch_overhead_us"]["maximum"] == 1e6
    assert s["$defs"]["tflops"]["minimum"] == 1e-6 and s["$defs"]["tflops"]["maximum"] == 1e6
    assert "plausible range" in s["description"]
    res = run_cli(MLP, "--hw", _profile(tmp_path, bw="1e-3", launch="1e6"), "--format", "json")
    assert res.exit_code == 0, res.output
    _strict_json(res.stdout)


def test_deeply_nested_toml_is_one_line(run_cli, tmp_path):
    deep = "x = " + "[" * 5000 + "]" * 5000
    _err(run_cli(MLP, "--hw", _profile(tmp_path, extra=deep)), "nested too deeply")
    deep_tables = "[efficiency." + ".".join(["a"] * 3000) + "]\nz = 1.0"
    res = run_cli(MLP, "--hw", _profile(tmp_path, extra=deep_tables))
    assert res.exit_code == 2 and res.stderr.count("\n") == 1, res.output


def test_json_never_holds_infinity_or_nan():
    import analyzer
    from analyzer.report.finite_json import dumps

    r = analyzer.analyze(MLP, hw="a100")
    doc = _strict_json(r.to_json())
    ints = [n["intensity"] for p in doc["predictions"] for n in p["nodes"]]
    assert all(x is None or x == x for x in ints)
    assert _strict_json(dumps({"a": float("inf"), "b": [float("nan"), 1.5]})) == {"a": None, "b": [None, 1.5]}


def test_zero_byte_node_intensity_is_null_in_the_report():
    """predict.py gives a node that moves no bytes an intensity of inf: the JSON says null."""
    import dataclasses

    import analyzer

    r = analyzer.analyze(MLP, hw="a100")
    p = r.predictions[0]
    nodes = (p.nodes[0]._replace(intensity=float("inf")), *p.nodes[1:])
    r = r.with_predictions([dataclasses.replace(p, nodes=nodes)])
    doc = _strict_json(r.to_json())
    assert doc["predictions"][0]["nodes"][0]["intensity"] is None
    assert doc["predictions"][0]["nodes"][1]["intensity"] == p.nodes[1].intensity


# ----------------------------------------------------------------------------- baselines


@pytest.fixture
def base(run_cli, tmp_path):
    p = tmp_path / "base.json"
    assert run_cli(MLP, "--hw", "a100", "--save-baseline", p).exit_code == 0
    return p


def _edit(path, fn):
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("edit,words", [
    (lambda d: d.update(nodes=[]), "field 'nodes' must be object"),
    (lambda d: d["predictions"][0].update(latency_s="fast"), "predictions[0].latency_s' must be number"),
    (lambda d: d["predictions"][0].update(latency_s=0), "must be > 0"),
    (lambda d: d["predictions"][0].update(nodes={"a": {"b": 1}}), "predictions[0].nodes.a"),
    (lambda d: d["totals"].update(flops=-3), "field 'totals.flops' must be >= 0"),
    (lambda d: next(iter(d["nodes"].values())).update(flops="x"), "flops' must be integer"),
    (lambda d: next(iter(d["nodes"].values())).update(op=3), "op' must be string"),
    (lambda d: d["nodes"].update(z=[1]), "field 'nodes.z' must be object"),
    (lambda d: d["predictions"][0]["nodes"].update(z=-1.0), "nodes.z' must be >= 0"),
    (lambda d: d["predictions"][0]["nodes"].update(z=True), "nodes.z' must be number"),
    (lambda d: d["totals"].update(flops=1.5), "totals.flops' must be integer"),
    (lambda d: d.update(model=[1]), "field 'model' must be object"),
    (lambda d: d["predictions"][0].pop("hardware"), "missing 'hardware'"),
    (lambda d: d.pop("totals"), "missing 'totals'"),
])
def test_baseline_schema_errors_name_the_field(run_cli, base, edit, words):
    _err(run_cli(MLP, "--baseline", _edit(base, edit)), words)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_baseline_with_non_finite_latency_is_refused(run_cli, base, literal):
    text = base.read_text()
    doc = json.loads(text)
    old = json.dumps(doc["predictions"][0]["latency_s"])
    base.write_text(text.replace(f'"latency_s": {old}', f'"latency_s": {literal}', 1))
    assert literal in base.read_text()
    _err(run_cli(MLP, "--baseline", base), "not a readable JSON file")


def test_deeply_nested_baseline_is_one_line(run_cli, tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100000 + "]" * 100000)
    _err(run_cli(MLP, "--baseline", p), "baseline")


@pytest.mark.parametrize("pct", ["1e400%", "inf", "nan%", "-1%"])
def test_max_regression_is_finite_and_non_negative(run_cli, base, pct):
    _err(run_cli(MLP, "--baseline", base, "--max-regression", pct), "--max-regression")


def test_baseline_of_another_model_is_refused_even_with_the_same_input_names(run_cli, tmp_path):
    """cnn's graph renamed to mlp's input and output names: input names coincide, layers do not."""
    import onnx

    mlp, cnn = onnx.load(MLP), onnx.load(CNN)
    assert [i.name for i in cnn.graph.input] != [i.name for i in mlp.graph.input] or True
    old_in, new_in = cnn.graph.input[0].name, mlp.graph.input[0].name
    for n in cnn.graph.node:
        n.input[:] = [new_in if x == old_in else x for x in n.input]
    cnn.graph.input[0].name = new_in
    other = tmp_path / "other.onnx"
    onnx.save(cnn, other)
    base = tmp_path / "b.json"
    assert run_cli(other, "--hw", "a100", "--save-baseline", base).exit_code == 0
    assert set(json.loads(base.read_text())["model"]["inputs"]) == {new_in}
    _err(run_cli(MLP, "--baseline", base), "another model", "fingerprints differ")


def test_same_model_passes_and_an_old_baseline_loads_with_a_note(run_cli, base):
    doc = json.loads(base.read_text())
    assert len(doc["model"]["fingerprint"]) == 64
    ok = run_cli(MLP, "--baseline", base, "--format", "json")
    assert ok.exit_code == 0, ok.output
    assert "notes" not in _strict_json(ok.stdout)["baseline_comparison"]
    _edit(base, lambda d: d["model"].pop("fingerprint"))
    res = run_cli(MLP, "--baseline", base)
    assert res.exit_code == 0, res.output
    assert "note: the baseline has no model fingerprint" in res.stdout


def test_fingerprint_ignores_dims_but_not_ops():
    from analyzer.report.baseline import fingerprint

    a = fingerprint({"inputs": {"x": [1, 3]}, "outputs": ["y"]}, ["MatMul", "Relu"])
    assert a == fingerprint({"inputs": {"x": [8, 3]}, "outputs": ["y"]}, ["MatMul", "Relu"])
    assert a != fingerprint({"inputs": {"x": [1, 3]}, "outputs": ["y"]}, ["MatMul", "Gelu"])


# ----------------------------------------------------------------------------- dims


@pytest.mark.parametrize("args,words", [
    (["--dim", "batch=9223372036854775808"], "beyond int64"),
    (["--input", "x=9223372036854775808x3"], "beyond int64"),
    (["--value", "x=99999999999999999999"], "beyond int64"),
    (["--value", "x=1e400"], "not a finite number"),
])
def test_numbers_beyond_int64_are_clear_errors(run_cli, args, words):
    _err(run_cli(DYN, *args), words)
