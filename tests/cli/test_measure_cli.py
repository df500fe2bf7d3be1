"""`analyze MODEL --hw CPU.toml --measure`: a run with onnxruntime set beside the prediction."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from profile_docs import calibrated_doc

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "samples" / "mlp.onnx"
CNN = ROOT / "samples" / "cnn.onnx"
DYN = ROOT / "samples" / "dynamic_batch.onnx"


@pytest.fixture
def cpu_toml(tmp_path) -> Path:
    from hardware_db.write import write_profile

    path = tmp_path / "cpu.toml"
    write_profile(calibrated_doc(threads=1), path)
    return path


@pytest.mark.machine
@pytest.mark.parametrize("model", [MLP, CNN])
def test_measure_json_has_a_measured_time_for_every_costed_node(run_cli, cpu_toml, model):
    pytest.importorskip("onnxruntime")
    res = run_cli(model, "--hw", cpu_toml, "--measure", "--format", "json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    m = doc["measured"]
    pred = doc["predictions"][0]
    launched = {x["name"] for x in pred["nodes"]}
    costed = {n["name"] for n in doc["nodes"] if n["status"] == "costed" and n["name"] in launched}
    measured = {n["name"]: n for n in m["nodes"]}
    assert costed <= set(measured), costed - set(measured)
    assert all(n["measured_s"] >= 0 and n["kernel"] for n in measured.values())
    assert sum(n["measured_s"] for n in measured.values()) > 0
    assert m["threads"] == 1 and m["runtime"] == "onnxruntime" == pred["runtime"]
    assert m["latency_s"] > 0 and m["predicted_latency_s"] == pred["latency_s"]
    s = m["summary"]
    assert s["kernels"] >= 2
    for key in ("mape_pct", "within_10_pct", "within_20_pct", "bias_pct", "spearman"):
        assert isinstance(s[key], float) and math.isfinite(s[key]), (key, s)
    assert math.isfinite(m["error_pct"])
    # each compared kernel's numbers are the sums of its nodes'
    for k in m["kernels"]:
        assert sum(measured[n]["measured_s"] for n in k["nodes"]) == pytest.approx(k["measured_s"])


@pytest.mark.machine
def test_measure_table_prints_layers_and_the_error_summary(run_cli, cpu_toml):
    pytest.importorskip("onnxruntime")
    res = run_cli(CNN, "--hw", cpu_toml, "--measure", "--top", "3")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "predicted vs measured on this machine" in out
    # 'top 3 of N kernels', and under the table how many more and how to show them
    n = int(re.search(r"top 3 of (\d+) kernels", out).group(1))
    assert f"\n{n - 3} more kernels (--top {n})\n" in out
    assert "end to end: predicted" in out
    for word in ("MAPE", "within ±10%", "within ±20%", "bias", "Spearman"):
        assert word in out


@pytest.mark.machine
def test_measure_binds_symbolic_dims_from_the_report(run_cli, cpu_toml):
    pytest.importorskip("onnxruntime")
    res = run_cli(DYN, "--hw", cpu_toml, "--measure", "--dim", "batch=3", "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["measured"]["latency_s"] > 0


@pytest.mark.machine
def test_measure_csv_and_markdown_carry_it(run_cli, cpu_toml):
    pytest.importorskip("onnxruntime")
    csv_out = run_cli(MLP, "--hw", cpu_toml, "--measure", "--format", "csv").stdout
    assert any(x.startswith("# kernels=") and "mape_pct=" in x for x in csv_out.splitlines())
    header = next(x for x in csv_out.splitlines() if not x.startswith("#"))
    assert "measured_s" in header.split(",")
    md = run_cli(MLP, "--hw", cpu_toml, "--measure", "--format", "markdown").stdout
    assert "| onnxruntime kernel |" in md and "MAPE" in md


@pytest.mark.parametrize("args, words", [
    (["--measure"], "one CPU profile"),
    (["--measure", "--hw", "a100,t4"], "one CPU profile"),
    (["--measure", "--hw", "a100"], "is a gpu"),
    (["--measure", "--hw", "CPU", "--runtime", "kernel"], "runtime kernel"),
    (["--threads", "2"], "--threads applies to --measure"),
    (["--measure", "--hw", "CPU", "--dim", "batch=1,2"], "sweep"),
    (["--measure", "--hw", "CPU", "--group-depth", "1"], "--group-depth"),
])
def test_measure_usage_errors_exit_2(run_cli, cpu_toml, args, words):
    pytest.importorskip("onnxruntime")
    args = [str(cpu_toml) if a == "CPU" else a for a in args]
    res = run_cli(DYN if "--dim" in args else MLP, *args)
    assert res.exit_code == 2, res.output
    assert len(res.stderr.strip().splitlines()) == 1 and words in res.stderr


@pytest.mark.machine
def test_measure_at_a_shape_onnxruntime_cannot_run_is_a_usage_error(run_cli, cpu_toml):
    pytest.importorskip("onnxruntime")
    res = run_cli(MLP, "--input", "x=4x784", "--hw", cpu_toml, "--measure")
    assert res.exit_code == 2
    assert "declared 1x784" in res.stderr and "--input" in res.stderr


def test_measure_a_jax_program_is_a_usage_error(run_cli, cpu_toml):
    res = run_cli(f"{ROOT / 'samples' / 'jax_models.py'}:mlp_infer", "--input", "x=f32[8,784]", "--hw", cpu_toml,
                  "--measure")
    assert res.exit_code == 2 and "ONNX" in res.stderr


def test_measure_without_onnxruntime_names_the_extra(run_cli, cpu_toml, no_onnxruntime):
    res = run_cli(MLP, "--hw", cpu_toml, "--measure")
    assert res.exit_code == 2
    assert "pip install 'opcost[measure]'" in res.stderr
