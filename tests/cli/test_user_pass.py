"""A demanding user's second pass: usage errors in the words typed, format aliases, human units in
`hw list`, each profile's own vocabulary in --explain, exact hidden-row counts, units in headers."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
CNN = ROOT / "samples" / "cnn.onnx"
TRANSFORMER = ROOT / "samples" / "transformer.onnx"


def _opcost(*args):
    """``opcost ARGS`` in-process, the program named as the installed script names it."""
    from cli.main import main

    return CliRunner().invoke(main, [str(a) for a in args], prog_name="opcost")


@pytest.mark.parametrize("args, missing", [
    ((CNN, "--format", "xyz"), "Invalid value for '--format'"),
    (("--hw", "a100"), "Missing argument 'MODEL'"),
    ((CNN, "--top", "0"), "Invalid value for '--top'"),
])
def test_usage_errors_name_the_command_typed(args, missing):
    # `opcost x.onnx --format xyz` said `Usage: opcost model [OPTIONS] MODEL` and
    # `Try 'opcost model --help'`: a command the user never typed
    res = _opcost(*args)
    assert res.exit_code == 2
    assert "Usage: opcost [OPTIONS] MODEL" in res.stderr
    assert "Try 'opcost --help' for help." in res.stderr
    assert "opcost model" not in res.stderr and missing in res.stderr


def test_the_model_command_typed_in_full_keeps_its_name():
    res = _opcost("model", CNN, "--format", "xyz")
    assert res.exit_code == 2 and "Usage: opcost model [OPTIONS] MODEL" in res.stderr


def test_format_md_is_markdown():
    md = _opcost(CNN, "--format", "md")
    full = _opcost(CNN, "--format", "markdown")
    assert md.exit_code == 0, md.output
    assert md.stdout == full.stdout and md.stdout.startswith("### opcost: `")
    assert _opcost(CNN, "--format", "JSON").stdout.startswith("{")


def test_an_unknown_format_lists_the_valid_ones():
    res = _opcost(CNN, "--format", "yaml")
    assert res.exit_code == 2
    assert ("'yaml' is not one of 'table', 'json', 'csv', 'markdown', 'html', 'md'"
            in res.stderr), res.stderr
