"""Errors speak in the caller's terms, and a bug is not bad input (issue "One pipeline, stage by
stage", deliverable 3).

- The library words an option as a keyword argument (``dims={'batch': ...}``), the CLI as a flag
  (``--dim batch=VALUE``), from one ``Hint`` and one table (``analyzer.errors.OPTIONS``); no string
  literal of ``analyzer/`` names a flag itself.
- A rule that crashes is an ``InternalError`` (not an ``AnalyzerError``): the CLI exits 3 with one
  line asking for a report, ``--debug`` shows the traceback of the original exception.
"""

from __future__ import annotations

import ast
import dataclasses
import pickle
import re
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.counting import cost as cost_mod
from analyzer.errors import (OPTIONS, AnalyzerError, Hint, InputSpecError, InternalError, ShapeError,
                             UnboundDimError)
from onnx_builders import graph, one_node, weight

ROOT = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- hints

@pytest.mark.parametrize("hint, python, cli", [
    (Hint("dims", {"batch": "VALUE"}), "dims={'batch': ...}", "--dim batch=VALUE"),
    (Hint("dims", {"a": "VALUE", "b": "VALUE"}), "dims={'a': ..., 'b': ...}", "--dim a=VALUE,b=VALUE"),
    (Hint("dims", {"k": -1}), "dims={'k': -1}", "--dim k=-1"),
    (Hint("values", {"axes": "..."}), "values={'axes': ...}", "--value axes=..."),
    (Hint("values", {"a": "...", "b": "..."}), "values={'a': ..., 'b': ...}",
     "--value a=... --value b=..."),
    (Hint("values", "axes"), "values['axes']", "--value axes"),
    (Hint("inputs", {"NAME": "DIMS"}), "inputs={'NAME': ...}", "--input NAME=DIMS"),
    (Hint("dims", {"B": "VALUE", "S": "VALUE"}), "dims={'B': ..., 'S': ...}", "--dim B=VALUE,S=VALUE"),
    (Hint("loop_trips", "N"), "loop_trips=N", "--loop-trips N"),
    (Hint("hw", ["a100", "t4"]), "hw=['a100', 't4']", "--hw a100,t4"),
    (Hint("hw", "FILE"), "hw=FILE", "--hw FILE"),
    (Hint("precision"), "precision", "--precision"),
    (Hint("strict"), "Report.require_full_coverage()", "--strict"),
    (Hint("inputs", {"NAME": "DIMS"}, example={"x": "1x3x224x224"}),
     "inputs={'NAME': ...} (e.g. inputs={'x': '1x3x224x224'})",
     "--input NAME=DIMS (e.g. --input x=1x3x224x224)"),
])
def test_a_hint_is_worded_as_a_keyword_for_python_and_as_a_flag_for_the_cli(hint, python, cli):
    e = InputSpecError(f"fix: {{{hint.option}}}", hints=[hint])
    assert str(e) == e.format("python") == f"fix: {python}"
    assert e.format("cli") == f"fix: {cli}"


def test_placeholders_without_a_hint_and_braces_of_user_text_stay_as_they_are():
    e = InputSpecError("{dims=} of '{x}', {\"train\": false}, {values}", hints=[Hint("dims")])
    assert str(e) == "dims= of '{x}', {\"train\": false}, {values}"
    assert e.format("cli") == "--dim of '{x}', {\"train\": false}, {values}"
    with pytest.raises(ValueError):
        Hint("no_such_option")
    with pytest.raises(ValueError):
        e.format("shell")


def test_errors_pickle_with_their_hints_and_attributes():
    e = pickle.loads(pickle.dumps(UnboundDimError("batch")))
    assert type(e) is UnboundDimError and e.dim == "batch"
    assert e.format("cli") == "symbolic dim 'batch' is unbound; pass --dim batch=VALUE"
    s = pickle.loads(pickle.dumps(ShapeError("x", reason=ShapeError.RANK_UNKNOWN)))
    assert s.reason == ShapeError.RANK_UNKNOWN
    i = pickle.loads(pickle.dumps(InternalError("counting", KeyError("boom"), "n", "Relu")))
    assert (i.stage, i.node, i.op, str(i)) == (
        "counting", "n", "Relu", "internal error in counting for node 'n' (Relu): KeyError: 'boom'")


# ----------------------------------------------------------------------------- no flags in the library

_FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _flag_literals(source: str) -> list[tuple[int, str]]:
    """String literals of ``source`` naming a CLI flag, except docstrings (documentation, never a
    message) and the ``OPTIONS`` table (the one place that spells flags)."""
    tree = ast.parse(source)
    skip: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant):
                skip.add(id(n.body[0].value))
        targets = (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign)
                   else [])
        if any(isinstance(t, ast.Name) and t.id == "OPTIONS" for t in targets):
            skip.update(id(c) for c in ast.walk(n.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
            and _FLAG.search(n.value)]


def test_the_flag_check_finds_a_flag_in_a_message():
    planted = textwrap.dedent('''
        """Docstrings may show --dim batch=8."""
        OPTIONS = {"dims": ("dims", "--dim")}
        def f(d):
            """As may --this one."""
            raise ValueError(f"symbolic dim '{d}' is unbound; pass --dim {d}=VALUE")
        X = "a-b --c"
        Y = "x--y and 1 -- 2"
        ''')
    assert sorted(line for line, _ in _flag_literals(planted)) == [6, 7]


def test_no_string_literal_of_the_library_names_a_cli_flag():
    found = [f"{p.relative_to(ROOT)}:{line}: {text!r}"
             for p in sorted((ROOT / "analyzer").rglob("*.py"))
             for line, text in _flag_literals(p.read_text(encoding="utf-8"))]
    assert found == [], "name options with a Hint (analyzer.errors), not a flag:\n" + "\n".join(found)


def test_every_flag_of_the_table_is_an_option_of_analyze():
    from cli.main import model_cmd

    flags = {o for p in model_cmd.params for o in p.opts}
    for option, spelled in OPTIONS.items():
        assert spelled.flag.split()[0] in flags, (option, spelled.flag)


# ----------------------------------------------------------------------------- one wording each side

def _relu_model() -> onnx.ModelProto:
    return one_node("Relu", (2, 3))


def _loop_model() -> onnx.ModelProto:
    # Loop with trip count M a graph input; body: v <- v @ W
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("MatMul", ["v_in", "W"], ["v_out"], name="mm"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep")],
        "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
                 vi("v_in", TensorProto.FLOAT, [2, 4])],
        [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [2, 4])])
    loop = helper.make_node("Loop", ["M", "c0", "x"], ["y"], name="loop", body=body)
    g = helper.make_graph([loop], "g", [vi("x", TensorProto.FLOAT, [2, 4]), vi("M", TensorProto.INT64, [])],
                          [vi("y", TensorProto.FLOAT, [2, 4])],
                          [numpy_helper.from_array(weight(4, 4), "W"),
                           numpy_helper.from_array(np.array(True), "c0")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _reduce_model() -> onnx.ModelProto:
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0)]
    return graph(nodes, {"x": (3, 4, 5), "axes": ((1,), TensorProto.INT64)}, ["y"], opset=18)


def _error_line(res, code: int) -> str:
    assert res.exit_code == code, (res.exit_code, res.output)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in res.output, res.stderr
    return lines[0]


def test_an_unbound_dim_is_a_keyword_in_python_and_a_flag_on_the_cli(save, run_cli):
    m = one_node("MatMul", ("batch", 5), weight(5, 6))
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(m)
    assert str(e.value).endswith("symbolic dim 'batch' is unbound; pass dims={'batch': ...}")
    assert "--" not in str(e.value)
    line = _error_line(run_cli(save(m)), 2)
    assert line.endswith("symbolic dim 'batch' is unbound; pass --dim batch=VALUE")


def test_onnx_loop_and_jax_while_ask_for_loop_trips_the_same_way(save, run_cli, tmp_path):
    with pytest.raises(ShapeError) as onnx_err:
        analyzer.analyze(_loop_model())
    jax = pytest.importorskip("jax")
    from jax import lax

    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: c @ c, x)

    with pytest.raises(ShapeError) as jax_err:
        analyzer.analyze_jax(f, jax.ShapeDtypeStruct((8, 8), "float32"),
                             jax.ShapeDtypeStruct((), "int32"))
    for e in (onnx_err.value, jax_err.value):
        assert "pass loop_trips=N to cost its body N times" in str(e), str(e)
        assert "pass --loop-trips N to cost its body N times" in e.format("cli")
        assert "--" not in str(e) and "library:" not in e.format("cli")

    prog = tmp_path / "prog.py"
    prog.write_text("from jax import lax\n\ndef f(x, n):\n"
                    "    return lax.fori_loop(0, n, lambda i, c: c @ c, x)\n")
    for args in ([save(_loop_model())], [f"{prog}:f", "--input", "x=f32[8,8]", "--input", "n=i32[]"]):
        line = _error_line(run_cli(*args), 2)
        assert "pass --loop-trips N to cost its body N times" in line and "loop_trips=" not in line
        # and the option it names fixes it
        assert run_cli(*args, "--loop-trips", "3").exit_code == 0


def test_a_data_dependent_shape_asks_for_values_in_each_wording(save, run_cli):
    with pytest.raises(ShapeError) as e:
        analyzer.analyze(_reduce_model())
    assert "give the value with values={'axes': ...}" in str(e.value)
    line = _error_line(run_cli(save(_reduce_model())), 2)
    assert "give the value with --value axes=..." in line and "values=" not in line


# ----------------------------------------------------------------------------- a bug is not bad input

@pytest.fixture
def broken_relu(monkeypatch):
    """The Relu rule raises KeyError('boom') (restored after the test)."""
    key = ("", "Relu")
    rule = cost_mod.RULES[key]

    def boom(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setitem(cost_mod.RULES, key, dataclasses.replace(rule, fn=boom))
    return boom


def test_a_crashing_rule_is_an_internal_error_in_the_library(broken_relu, monkeypatch):
    with pytest.raises(InternalError) as e:
        analyzer.analyze(_relu_model())
    err = e.value
    assert not isinstance(err, AnalyzerError)
    assert (err.node, err.op) == ("n", "Relu")
    assert err.stage == f"rule {broken_relu.__module__}.{broken_relu.__qualname__}"
    assert isinstance(err.__cause__, KeyError) and err.__cause__ is err.error
    monkeypatch.undo()  # the rule restored, the same model counts
    assert analyzer.analyze(_relu_model()).node("n").cost.vector_flops == 2 * 3  # a max per element


def test_a_crashing_rule_exits_3_with_one_line_asking_for_a_report(broken_relu, save, run_cli):
    path = save(_relu_model())
    line = _error_line(run_cli(path), 3)
    assert line.startswith("internal error in rule ")
    assert "for node 'n' (Relu): KeyError: 'boom'; please report it; --debug for the traceback" in line
    res = run_cli(path, "--debug")
    assert res.exit_code == 3
    assert "Traceback" in res.stderr and "KeyError: 'boom'" in res.stderr
    assert "raise KeyError(\"boom\")" in res.stderr  # the original exception's frame
    assert res.stderr.rstrip().splitlines()[-1].startswith("internal error in rule ")


def test_a_bug_outside_any_node_names_the_module_it_came_from(monkeypatch, save, run_cli):
    import analyzer.counting.engine as engine

    def broken(*a, **k):
        raise RuntimeError("no\nluck")

    monkeypatch.setattr(engine, "cost_graph", broken)
    line = _error_line(run_cli(save(_relu_model())), 3)
    assert line == ("internal error in analyzer.api: RuntimeError: no luck; please report it; "
                    "--debug for the traceback")


def test_exit_code_3_is_documented(run_cli):
    help_text = " ".join(run_cli("--help").stdout.split())
    assert "2 bad input or usage, 3 internal error" in help_text
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "2 bad input or usage, 3 internal error" in readme
