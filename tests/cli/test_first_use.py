"""What a first-time user meets at an 80-column terminal and with bad or odd input: numbers
that read as numbers, lines that fit, warnings that reach every view, names shown as data and
accepted back as shown."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzer.render.headline import human_time
from analyzer.render.pieces import human

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMER = ROOT / "samples" / "transformer.onnx"


@pytest.mark.parametrize("value, shown", [
    (999.7e-9, "1 µs"), (999.96e-6, "1 ms"), (0.99996, "1 s"), (999.4e-9, "999 ns"),
    (1e-6, "1 µs"), (4.6e-6, "4.6 µs"), (-1.48e-6, "-1.48 µs"), (1234.5, "1,234 s"),
    (999.4, "999 s"),
])
def test_time_rounding_up_takes_the_next_unit(value, shown):
    # 999.7 ns rounds to 3 digits as 1000 ns: said as 1 µs, never '1e+03 ns'
    assert human_time(value) == shown


@pytest.mark.parametrize("value, unit, shown", [
    (999_999, "", "1 M"), (999_500, "B", "1 MB"), (999_499, "B", "999 KB"),
    (1_000, "", "1 K"), (999, "", "999"), (123_456_789, "FLOP", "123 MFLOP"),
])
def test_count_rounding_up_takes_the_next_prefix(value, unit, shown):
    assert human(value, unit) == shown


def test_each_note_once_on_a_cpu_profile(run_cli):
    # the onnxruntime dispatch note was charged once per fixed-cost call and listed twice in
    # every format (--explain's 'assumed:' lines, --verbose, JSON, CSV, markdown)
    import analyzer

    r = analyzer.analyze(str(TRANSFORMER), hw="epyc-9654")
    notes = r.predictions[0].notes
    assert len(notes) == len(set(notes)), notes
    res = run_cli(TRANSFORMER, "--hw", "epyc-9654", "--explain", "attn.softmax")
    assert res.exit_code == 0, res.output
    assumed = [x for x in res.output.splitlines() if x.startswith("  assumed:")]
    assert len(assumed) == len(set(assumed)) and assumed, res.output


CNN = ROOT / "samples" / "cnn.onnx"
VIT = ROOT / "tests" / "fixtures" / "torch" / "vit.onnx"


def _fits(run_cli, monkeypatch, *args, width=80):
    monkeypatch.setenv("COLUMNS", str(width))
    res = run_cli(*args)
    assert res.exit_code == 0, res.output
    long = [x for x in res.stdout.splitlines() if len(x) > width]
    assert not long, long
    return res.stdout


def test_sensitivity_fits_80_columns(run_cli, monkeypatch):
    out = _fits(run_cli, monkeypatch, TRANSFORMER, "--hw", "a100", "--sensitivity")
    assert "what to shrink on a100-80gb-sxm" in out


def test_a_saving_below_a_tenth_of_a_percent_is_not_shown_as_none():
    from analyzer.render.whatif import _saved

    # 47.7 ns of 96.2 µs is 0.05 %: '0.0%' read as no saving at all
    assert _saved(47.7e-9, 96.2e-6) == "-47.7 ns (<0.1%)"
    assert _saved(307e-9, 96.2e-6) == "-307 ns (0.3%)"
    assert _saved(0.0, 96.2e-6) == "—"


@pytest.mark.parametrize("args, whole", [
    ((VIT, "--group-depth", "4", "--hw", "a100,h100"), ["9.92 µs", "total"]),
    ((ROOT / "samples" / "jax_models.py:transformer_infer", "--input", "x=f32[1,16,64]",
      "--group-depth", "2"), ["attn/softmax", "transc.", "total"]),
])
def test_group_depth_fits_80_columns_with_cells_whole(run_cli, monkeypatch, args, whole):
    # rich folded the cells: 'attn/soft' + 'max', '4.31' + 'µs', 'transc' + '.'
    out = _fits(run_cli, monkeypatch, *args)
    for w in whole:
        assert w in out, out
    assert "coverage:" in out


def test_group_depth_piped_keeps_each_module_on_one_line(run_cli):
    res = run_cli(VIT, "--group-depth", "4", "--hw", "a100,h100,t4")
    assert res.exit_code == 0, res.output
    name = "model/embeddings/patch_embeddings/projection"
    row = [x for x in res.stdout.splitlines() if x.startswith(name + " ")]
    assert len(row) == 1 and row[0].split()[1] == "1", res.stdout   # name, then its 1 node


def test_group_depth_says_which_profile_a_narrow_terminal_left_out(run_cli, monkeypatch):
    out = _fits(run_cli, monkeypatch, VIT, "--group-depth", "4", "--hw", "a100,h100")
    assert "a100-80gb-sxm time" in out and "(h100-sxm time: --wide or a wider terminal)" in out
    monkeypatch.setenv("COLUMNS", "80")
    wide = run_cli(VIT, "--group-depth", "4", "--hw", "a100,h100", "--wide").stdout
    assert "h100-sxm time" in wide.splitlines()[1]


BERT = ROOT / "tests" / "fixtures" / "torch" / "bert_dynamic.onnx"
T4_BF16 = "t4 has no bf16 throughput figure"


@pytest.mark.parametrize("fmt, warned", [
    ("table", "warning: " + T4_BF16), ("markdown", "> **warning:** " + T4_BF16),
    ("csv", "# warning: " + T4_BF16),
])
def test_a_sweep_keeps_the_warnings_precision_and_model(run_cli, fmt, warned):
    # bf16 on a T4 warns in the single-shape views; a --dim sweep dropped the warning, the
    # precision and the model's name in every format
    res = run_cli(BERT, "--dim", "batch=1,seq=16,32", "--hw", "t4", "--precision", "bf16",
                  "--format", fmt)
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    assert warned in text, res.stdout
    assert text.count(T4_BF16) == 1, res.stdout      # once, not once per point
    assert "bf16" in text.replace(T4_BF16, "") and "bert_dynamic.onnx" in text


def test_a_sweeps_json_carries_its_warnings_and_precision(run_cli):
    import json

    res = run_cli(BERT, "--dim", "batch=1,seq=16,32", "--hw", "t4", "--precision", "bf16",
                  "--format", "json")
    doc = json.loads(res.stdout)
    assert [w for w in doc["warnings"] if T4_BF16 in w] and doc["precision"] == {"t4": "bf16"}


def _two_relus(save, first: str, second: str):
    """A saved ONNX model x -> Relu (named ``first``) -> Relu (named ``second``) -> y, f32[2, 3]."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes = [helper.make_node("Relu", ["x"], ["a"], name=first),
             helper.make_node("Relu", ["a"], ["y"], name=second)]
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    return save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17)]))


def test_explain_takes_a_name_with_controls_as_the_views_show_it(run_cli, save):
    path = _two_relus(save, "two\nlines", "red\x1b[31m")
    shown = run_cli(path, "--hw", "a100").stdout
    assert "two\\x0alines" in shown and "red\\x1b[31m" in shown
    # the table shows 'two\x0alines'; typed back, it named no layer ('did you mean
    # two\x0alines?')
    for typed in ("two\\x0alines", "red\\x1b[31m", "lines"):
        res = run_cli(path, "--hw", "a100", "--explain", typed)
        assert res.exit_code == 0, (typed, res.output)
        assert res.stdout.startswith(f"layer {typed if typed != 'lines' else 'two'}"), res.stdout


@pytest.mark.parametrize("extra", [
    ("--train",),
    ("--devices", "1,2,4,8", "--link", "ib-ndr"),
    ("--devices", "2", "--parallel", "pipeline", "--train"),
])
def test_training_and_scaling_rows_fit_80_columns(run_cli, monkeypatch, extra):
    # the step and scaling tables were 97 and 125 columns wide, the 'Scaling (...)' line 420
    out = _fits(run_cli, monkeypatch, CNN, "--hw", "a100", "--batch", "32", *extra)
    assert "step ms" in out


def test_scaling_rows_piped_keep_one_line_per_row(run_cli):
    res = run_cli(CNN, "--hw", "a100", "--batch", "32", "--devices", "1,2")
    rows = [x for x in res.stdout.splitlines() if x.startswith("a100-80gb-sxm ")]
    assert any(len(x.split()) >= 12 for x in rows), res.stdout   # every column in one row


def test_pipeline_stage_names_are_markdown_text(run_cli, save):
    path = _two_relus(save, "<img src=x onerror=alert(1)>", "*bold*")
    res = run_cli(path, "--hw", "a100", "--devices", "2", "--parallel", "pipeline",
                  "--format", "markdown")
    assert res.exit_code == 0, res.output
    tail = res.stdout[res.stdout.index("micro-batches"):]
    # escaped as markdown text: '\<img' renders as text, '\*bold\*' with its stars
    assert not re.search(r"(?<!\\)<img|(?<!\\)\*bold", tail), tail
    assert "- stage 0: \\<img" in tail, tail


@pytest.mark.parametrize("args", [("--help",), ("hw", "--help"), ("hw", "list", "--help"),
                                  ("hw", "show", "--help"), ("hw", "calibrate", "--help")])
def test_help_reads_at_80_columns(run_cli, monkeypatch, args):
    # the --runtime descriptions were one line each, up to 420 characters; 'seed 003's model'
    # and 'seed 002's binary tree' named design notes a user has never seen
    out = _fits(run_cli, monkeypatch, *args)
    assert "seed 00" not in out


def test_calibrate_offers_only_the_runtimes_it_measures(run_cli):
    out = run_cli("hw", "calibrate", "--help").stdout
    assert "[onnxruntime|xla]" in out and "kernel" not in out
    res = run_cli("hw", "calibrate", "--out", "x.toml", "--runtime", "kernel")
    assert res.exit_code == 2 and "'kernel' is not one of 'onnxruntime', 'xla'" in res.output


def test_an_uneven_data_parallel_split_says_what_to_give(run_cli):
    res = run_cli(CNN, "--hw", "a100", "--batch", "32", "--devices", "1,3")
    assert res.exit_code == 2
    line = " ".join(res.stderr.split())
    assert "global batch 32 does not split evenly over 3 devices" in line
    assert "seed 00" not in line and "device counts that divide 32" in line, line


def test_one_more_row_is_singular(run_cli, save):
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    names = ["stem", "embed", "attn", "norm", "mlp", "gate", "proj", "pool", "head"]   # 9 modules, 8 shown
    nodes = [helper.make_node("Relu", [a], [b], name=n)
             for n, a, b in zip(names, ["x", *names[:-1]], names)]
    y = helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [2, 3])
    path = save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                                  opset_imports=[helper.make_opsetid("", 17)]))
    out = run_cli(path).stdout
    assert "1 more module (--all)" in out and "1 more modules" not in out, out
