"""Bad input: each is one line naming the problem, through the library (the right
``AnalyzerError`` subclass) and through the CLI (exit 2, one ``error:`` line on stderr,
no traceback). DESIGN.md Principles 8 and 12; "Interfaces users rely on"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper

import analyzer
from analyzer import (CheckFailed, GraphError, InputSpecError, ModelLoadError, ShapeError,
                      UnboundDimError)
from onnx_builders import graph, ints, one_node, weight

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "samples" / "mlp.onnx"


def assert_cli_error(res, code: int, *needles: str) -> str:
    """The CLI result failed with ``code``, one ``error:`` line on stderr naming ``needles``."""
    assert res.exit_code == code, (res.exit_code, res.output)
    assert isinstance(res.exception, SystemExit), repr(res.exception)  # no uncaught exception
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in res.output
    for s in needles:
        assert s in lines[0], (s, lines[0])
    return lines[0]


def _one_line(exc: BaseException, *needles: str) -> None:
    msg = str(exc)
    assert "\n" not in msg, msg
    for s in needles:
        assert s in msg, (s, msg)


# ----------------------------------------------------------------------------- bad files

def _missing(tmp: Path) -> str:
    return str(tmp / "nope.onnx")


def _directory(tmp: Path) -> str:
    (tmp / "adir").mkdir()
    return str(tmp / "adir")


def _empty(tmp: Path) -> str:
    (tmp / "empty.onnx").write_bytes(b"")
    return str(tmp / "empty.onnx")


def _text(tmp: Path) -> str:
    (tmp / "notes.onnx").write_text("this is a text file,\nnot an ONNX model\n")
    return str(tmp / "notes.onnx")


def _random(tmp: Path) -> str:
    (tmp / "random.onnx").write_bytes(np.random.default_rng(1234).bytes(4096))
    return str(tmp / "random.onnx")


def _truncated(tmp: Path) -> str:
    data = MLP.read_bytes()
    (tmp / "truncated.onnx").write_bytes(data[: len(data) // 2])
    return str(tmp / "truncated.onnx")


BAD_FILES = {
    "missing": (_missing, ["nope.onnx", "no such file"]),
    "directory": (_directory, ["adir", "directory"]),
    "empty": (_empty, ["empty.onnx", "empty"]),
    "text": (_text, ["notes.onnx", "not an ONNX model"]),
    "random_bytes": (_random, ["random.onnx", "not an ONNX model"]),
    "truncated": (_truncated, ["truncated.onnx", "not an ONNX model"]),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_file_library(case, tmp_path):
    make, needles = BAD_FILES[case]
    path = make(tmp_path)
    with pytest.raises(ModelLoadError) as e:
        analyzer.analyze(path)
    _one_line(e.value, *needles)


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_file_cli(case, tmp_path, run_cli):
    make, needles = BAD_FILES[case]
    res = run_cli(make(tmp_path))
    assert_cli_error(res, 2, *needles)
    assert res.stdout == ""


def test_bad_bytes_and_types_library():
    with pytest.raises(ModelLoadError, match="empty"):
        analyzer.analyze(b"")
    with pytest.raises(ModelLoadError, match="not an ONNX model"):
        analyzer.analyze(b"\x00\x01garbage")
    with pytest.raises(ModelLoadError, match="int"):
        analyzer.analyze(42)


# ----------------------------------------------------------------------------- broken graphs

def _dangling() -> onnx.ModelProto:
    return graph([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")], {"x": (2, 3)}, ["y"])


def _cycle() -> onnx.ModelProto:
    # r1 reads r3's output: r1 -> r2 -> r3 -> r1 (onnx.checker would reject it; we bypass it)
    n = helper.make_node
    return graph([n("Relu", ["back"], ["a"], name="r1"),
                  n("Add", ["a", "x"], ["b"], name="r2"),
                  n("Relu", ["b"], ["back"], name="r3"),
                  n("Relu", ["b"], ["y"], name="out")], {"x": (2, 3)}, ["y"])


def _negative_dim() -> onnx.ModelProto:
    return one_node("Relu", (2, -3))


def _dynamic() -> onnx.ModelProto:
    return one_node("MatMul", ("batch", 5), weight(5, 6))


def _hardcoded_reshape() -> onnx.ModelProto:
    # x [batch,6] reshaped to a fixed [1,6]: runs only at batch 1
    return one_node("Reshape", ("batch", 6), ints(1, 6))


# name: (model, library kwargs, CLI args, exception class, needles in the message); a needle
# (python, cli) is worded differently for a Python caller (str(e)) and on the command line
GRAPH_CASES = {
    "dangling_input": (_dangling, {}, [], GraphError, ["'adder'", "'ghost'", "Add"]),
    "cycle": (_cycle, {}, [], GraphError, ["cycle", "'r1'", "'r2'", "'r3'"]),
    "negative_dim": (_negative_dim, {}, [], ShapeError, ["'x0'", "-3"]),
    "unbound_dim": (_dynamic, {}, [], UnboundDimError, ["'batch'", "'n'", "MatMul",
                                                    ("dims={'batch': ...}", "--dim batch=VALUE")]),
    "input_unknown_name": (_dynamic, {"inputs": {"nope": "1x5"}}, ["--input", "nope=1x5"],
                           InputSpecError, ["'nope'", "x0"]),
    "input_wrong_rank": (_dynamic, {"inputs": {"x0": "1x5x3"}}, ["--input", "x0=1x5x3"],
                         InputSpecError, ["'x0'", "rank 2", "3 dims"]),
    "input_malformed_shape": (_dynamic, {"inputs": {"x0": "1xx5"}}, ["--input", "x0=1xx5"],
                              InputSpecError, ["1xx5"]),
    "input_negative_dim": (_dynamic, {"inputs": {"x0": "2x-5"}}, ["--input", "x0=2x-5"],
                           InputSpecError, ["-5"]),
    "dim_unknown_name": (_dynamic, {"dims": {"seq": 3}}, ["--dim", "seq=3"],
                         InputSpecError, ["'seq'", "batch"]),
    # 2*6 = 12 elements cannot become [1,6] = 6 elements
    "reshape_element_count": (_hardcoded_reshape, {"dims": {"batch": 2}}, ["--dim", "batch=2"],
                              ShapeError, ["'n'", "Reshape", "12"]),
}


@pytest.mark.parametrize("case", GRAPH_CASES)
def test_graph_error_library(case):
    make, kw, _, cls, needles = GRAPH_CASES[case]
    with pytest.raises(cls) as e:
        analyzer.analyze(make(), **kw)
    _one_line(e.value, *(n[0] if isinstance(n, tuple) else n for n in needles))
    assert e.value.exit_code == 2


@pytest.mark.parametrize("case", GRAPH_CASES)
def test_graph_error_cli(case, save, run_cli):
    make, _, args, _, needles = GRAPH_CASES[case]
    res = run_cli(save(make()), *args)
    assert_cli_error(res, 2, *(n[1] if isinstance(n, tuple) else n for n in needles))


def test_unbound_dim_error_carries_the_dim():
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(_dynamic())
    assert e.value.dim == "batch"
    # binding it makes the same model analyse: 2*m*n*k = 2*3*6*5 = 180
    assert analyzer.analyze(_dynamic(), dims={"batch": 3}).totals.mac_flops == 180


@pytest.mark.parametrize("dims", [{"batch": -1}, {"batch": "8"}, {"batch": 2.5}, {"batch": True}])
def test_dims_values_must_be_non_negative_ints(dims):
    with pytest.raises(InputSpecError) as e:
        analyzer.analyze(_dynamic(), dims=dims)
    _one_line(e.value, "batch")


# ----------------------------------------------------------------------------- CLI strings

@pytest.mark.parametrize("args, needle", [
    (["--input", "x0"], "NAME=DIMS"),
    (["--input", "=1x5"], "NAME=DIMS"),
    (["--input", "x0="], "NAME=DIMS"),
    (["--dim", "batch"], "NAME=VALUE"),
    (["--dim", "batch="], "NAME=VALUE"),
    (["--dim", "batch=eight"], "not an integer"),
    (["--dim", "batch=-1"], "negative"),
])
def test_malformed_option_strings(args, needle, save, run_cli):
    res = run_cli(save(_dynamic()), *args)
    assert_cli_error(res, 2, needle)


def test_output_into_missing_folder(save, run_cli, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "report.json"
    res = run_cli(str(MLP), "--format", "json", "--output", target)
    assert_cli_error(res, 2, "does not exist")
    assert not target.parent.exists()


def test_usage_error_exits_2(run_cli):
    res = run_cli(str(MLP), "--format", "xml")
    assert res.exit_code == 2
    assert "Traceback" not in res.output


# ----------------------------------------------------------------------------- --strict

def _uncosted_model() -> onnx.ModelProto:
    n = helper.make_node
    return graph([n("Foo", ["x"], ["t"], name="foo", domain="my.domain"), n("Relu", ["t"], ["y"], name="relu")],
                 {"x": (2, 3)}, ["y"],
                 value_info=[helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, [2, 3])],
                 domains={"my.domain": 1})


def test_strict_with_uncosted_node_exits_1(save, run_cli):
    path = save(_uncosted_model())
    res = run_cli(path, "--strict", "--format", "json")
    assert_cli_error(res, 1, "--strict", "foo", "my.domain::Foo")
    assert '"uncosted"' in res.stdout  # the report is still written before the check fails
    # without --strict the same model is fine (the gap is reported, not fatal)
    assert run_cli(path, "--format", "json").exit_code == 0


def test_strict_passes_when_fully_costed(run_cli):
    res = run_cli(str(MLP), "--strict")
    assert res.exit_code == 0, res.output
    assert res.stderr == ""


def test_require_full_coverage_library():
    with pytest.raises(CheckFailed) as e:
        analyzer.analyze(_uncosted_model()).require_full_coverage()
    _one_line(e.value, "foo")


# ----------------------------------------------------------------------------- a real process

@pytest.mark.parametrize("args, code, needle", [
    (["does-not-exist.onnx"], 2, "no such file"),
    ([str(MLP), "--dim", "batch=8"], 2, "'batch'"),
])
@pytest.mark.machine
def test_real_process_one_line_no_traceback(args, code, needle):
    p = subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert p.returncode == code, p.stderr
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], p.stderr
    assert "Traceback" not in p.stderr


# ----------------------------------------------------------------------------- external data

def test_missing_external_data_still_analyses(tmp_path):
    # W [5,6] and b [6] stored in w.data, which is then deleted: the graph alone is enough
    m = graph([helper.make_node("MatMul", ["x", "W"], ["h"], name="mm"),
               helper.make_node("Add", ["h", "b"], ["y"], name="add")],
              {"x": (4, 5)}, ["y"], {"W": weight(5, 6), "b": weight(6)})
    path = tmp_path / "ext.onnx"
    onnx.save(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
              location="w.data", size_threshold=0)
    assert (tmp_path / "w.data").exists()
    os.remove(tmp_path / "w.data")
    r = analyzer.analyze(str(path))
    assert r.totals.params == 5 * 6 + 6  # 36
    assert r.totals.mac_flops == 2 * 4 * 6 * 5  # 2*m*n*k = 240
    assert r.totals.weight_bytes == 36 * 4  # 144
