"""--runtime on the model command, and the prediction headline every human format shows
(runtime, time definition, provenance, assumptions; a line when profiles differ)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "samples" / "cnn.onnx"


def test_static_runtime_choices_match_the_library():
    from analyzer.prediction.runtimes import RUNTIMES
    from cli.main import RUNTIMES as CHOICES

    assert tuple(RUNTIMES) == CHOICES


def test_help_explains_each_runtime_with_its_time_definition(run_cli):
    from analyzer.prediction.runtimes import RUNTIMES

    out = " ".join(run_cli("--help").stdout.split())   # (each wrapped to the help's width)
    for name, rt in RUNTIMES.items():
        assert f"{name}: {' '.join(rt.time_definition.split())}" in out


@pytest.mark.parametrize("runtime", ["kernel", "eager", "eager-op", "onnxruntime", "xla", "coreml", "edgetpu", "qnn",
                                     "qnn-dlc", "qnn-tflite"])
def test_runtime_reaches_the_prediction(run_cli, runtime):
    from analyzer.prediction.runtimes import RUNTIMES

    res = run_cli(CNN, "--hw", "a100", "--runtime", runtime, "--format", "json")
    assert res.exit_code == 0, res.output
    p = json.loads(res.stdout)["predictions"][0]
    assert p["runtime"] == runtime
    assert p["time_definition"] == RUNTIMES[runtime].time_definition


def test_deployment_runtimes_differ_by_the_fitted_offset(run_cli):
    """--runtime qnn-dlc / qnn-tflite on a Hexagon profile at W8A8: the qnn latency + / - half the
    family's qnn_deploy_int8_s (the per-inference difference between AI Hub's two deployments)."""
    import hardware_db
    from analyzer.prediction.efficiency.constants import load_constants

    d = float(load_constants(hardware_db.get("hexagon-sd8gen2").family).arrays["qnn_deploy_int8_s"])
    lat = {}
    for rt in ("qnn", "qnn-dlc", "qnn-tflite"):
        res = run_cli(CNN, "--hw", "hexagon-sd8gen2", "--runtime", rt, "--precision", "int8", "--format", "json")
        assert res.exit_code == 0, res.output
        lat[rt] = json.loads(res.stdout)["predictions"][0]["latency_s"]
    assert lat["qnn-dlc"] - lat["qnn"] == pytest.approx(d / 2, rel=1e-6)
    assert lat["qnn"] - lat["qnn-tflite"] == pytest.approx(d / 2, rel=1e-6)


def test_unknown_runtime_is_a_usage_error(run_cli):
    res = run_cli(CNN, "--hw", "a100", "--runtime", "tensorrt")
    assert res.exit_code == 2


def test_table_headline_shows_runtime_time_definition_provenance_and_notes(run_cli):
    import analyzer

    from analyzer.render.headline import provenance_word, short_note

    # (fp16: at fp32 the a100 notes PyTorch's TF32 convolution default, an assumption of its own)
    preds = analyzer.analyze(str(CNN), ["a100", "tpu-v5e"], precision="fp16").predictions
    short = run_cli(CNN, "--hw", "a100,tpu-v5e", "--precision", "fp16", "--output", "-")   # a line per profile
    assert short.exit_code == 0, short.output
    for p in preds:
        row = next(x for x in short.stdout.splitlines() if x.startswith(p.hardware + " "))
        assert f" {p.runtime} " in row and provenance_word(p) in row
        for n in p.notes:
            if not n.startswith("runtime "):
                assert short_note(n).replace(p.hardware, "the profile") in short.stdout \
                    or short_note(n) in short.stdout
    assert "not like for like" in short.stdout
    res = run_cli(CNN, "--hw", "a100,tpu-v5e", "--precision", "fp16", "--output", "-", "--verbose")   # in full
    assert res.exit_code == 0, res.output
    flat = " ".join(res.stdout.split())   # the table folds long lines
    for p in preds:
        assert " ".join(p.time_definition.split()) in flat
        assert p.provenance in flat
        for n in p.notes:
            if not n.startswith("runtime "):
                assert " ".join(f"assumed: {n}".split()) in flat
    # the tpu is charged an assumed launch figure, the a100 its profile's own: said in one line
    assert "not like for like" in flat and "tpu-v5e charged assumed figures" in flat


def test_one_profile_has_no_like_for_like_line(run_cli):
    res = run_cli(CNN, "--hw", "a100")
    assert res.exit_code == 0
    assert "not like for like" not in res.stdout
    assert "runtime kernel (default for a gpu):" in run_cli(CNN, "--hw", "a100", "--verbose").stdout


def test_csv_and_markdown_carry_the_headline():
    import csv
    import io

    import analyzer
    from analyzer.render.formats import render

    # (a datasheet profile beside a family-constants one: not like for like)
    r = analyzer.analyze(str(CNN), ["a100", "epyc-9654"], runtime="eager")
    text = render(r, "csv")
    head = [x for x in text.splitlines() if x.startswith("#")]
    assert any("runtime=eager" in x for x in head)
    assert any("assumed: eager dispatch" in x for x in head)
    rows = list(csv.DictReader(io.StringIO("\n".join(x for x in text.splitlines()
                                                     if not x.startswith("#")))))
    assert rows and "a100-80gb-sxm:time_s" in rows[0]
    md = render(r, "markdown")
    assert "runtime eager: " + r.predictions[0].time_definition in md
    assert "**not like for like" in md


def test_csv_without_hardware_has_no_comment_lines():
    import analyzer
    from analyzer.render.formats import render

    assert not render(analyzer.analyze(str(CNN)), "csv").startswith("#")


def test_grouped_views_carry_the_headline(run_cli):
    res = run_cli(CNN, "--hw", "a100", "--group-depth", "1")
    assert res.exit_code == 0, res.output
    assert "runtime kernel (default for a gpu):" in res.stdout


def test_edge_tpu_explain_names_its_memory_the_on_chip_sram(run_cli):
    # the edgetpu runtime streams activations from the 8 MB SRAM (no DRAM on the chip): --explain
    # names that memory; a GPU's stays DRAM
    out = run_cli(CNN, "--hw", "edge-tpu", "--explain", "conv1").stdout
    assert "launches x (on-chip SRAM " in out and "    on-chip SRAM = (bytes to on-chip SRAM " in out
    assert "DRAM" not in out.split("memory", 1)[1].split("fixed", 1)[0]
    assert "    DRAM = (bytes to DRAM " in run_cli(CNN, "--hw", "a100", "--explain", "conv1").stdout
