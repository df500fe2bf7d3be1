"""End-to-end CLI: help, the four output formats, --top, --output, --dim, and the two
console-script names (DESIGN.md "Interfaces users rely on", Principles 8-10)."""

from __future__ import annotations
import re

import csv
import io
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from analyzer.counting.cost import COUNT_FIELDS

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
MLP = SAMPLES / "mlp.onnx"

NODE_KEYS = ("name", "op", "params", "mac_flops", "vector_flops", "transcendentals", "flops",
             "weight_bytes", "activation_bytes_read", "activation_bytes_written")
TOTAL_KEYS = ("params", "mac_flops", "vector_flops", "transcendentals", "flops",
              "weight_bytes", "activation_bytes_read", "activation_bytes_written")


def _json(run_cli, *args) -> dict:
    res = run_cli(*args, "--format", "json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


# ----------------------------------------------------------------------------- help, imports

@pytest.mark.machine
def test_help_does_not_import_jax_or_onnx():
    code = (
        "import sys\n"
        "from cli.main import main\n"
        "rv = main(['--help'], standalone_mode=False)\n"
        "heavy = [m for m in ('jax', 'onnx') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "HEAVY []" in p.stdout, p.stdout[-500:]
    assert "MODEL" in p.stdout and "--dim" in p.stdout and "--format" in p.stdout


def test_help_exits_0(run_cli):
    res = run_cli("--help")
    assert res.exit_code == 0
    assert "--strict" in res.stdout and "Exit codes" in res.stdout


def test_opcost_and_analyze_are_the_same_program():
    eps = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")
           if ep.name in ("analyze", "opcost")}
    assert eps.get("analyze") == eps.get("opcost") == "cli.main:main", eps


@pytest.mark.machine
def test_python_m_cli_main_matches_in_process(run_cli):
    p = subprocess.run([sys.executable, "-m", "cli.main", str(MLP), "--format", "json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == _json(run_cli, MLP)


# ----------------------------------------------------------------------------- table

def _table_rows(text: str) -> list[list[str]]:
    """Rows of the layer table of the terminal view: the lines after its header ('layer ...')
    up to the blank line, split on runs of two spaces."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("layer "))
    out = []
    for x in lines[start + 1:]:
        if not x.strip():
            break
        out.append(re.split(r"\s{2,}", x.strip()))
    return out


def test_table_has_totals_and_coverage(run_cli):
    res = run_cli(MLP)
    assert res.exit_code == 0, res.output
    out = res.stdout
    names = [r[0] for r in _table_rows(out)]
    # every layer (6 < 15), heaviest by FLOPs first
    assert names[:3] == ["fc1", "fc2", "fc3"] and sorted(names) == sorted(
        ["fc1", "relu1", "fc2", "relu2", "fc3", "y"])
    assert "totals: 235 K params," in out  # EXPECTED["mlp"]["params"]
    assert "coverage: 6 of 6 nodes costed by rule, 0 constant-folded, 0 uncosted" in out
    assert "every layer by FLOPs" in out and "by op type" in out and "by module" in out
    assert res.stderr == ""


def test_table_top_3(run_cli):
    res = run_cli(MLP, "--top", "3")
    assert res.exit_code == 0, res.output
    rows = _table_rows(res.stdout)
    # the three Gemms are the heaviest by FLOPs: 401664, 65664, 2570
    assert [r[0] for r in rows] == ["fc1", "fc2", "fc3"]
    assert "top 3 of 6 layers" in res.stdout and "\n\n3 more layers (--top 6 or --all)\n" in res.stdout


def test_table_flags_uncosted_ops(run_cli, save):
    from onnx import TensorProto, helper

    from onnx_builders import graph

    m = graph([helper.make_node("Foo", ["x"], ["y"], name="foo", domain="my.domain")],
              {"x": (2, 3)}, {"y": ((2, 3), TensorProto.FLOAT)}, domains={"my.domain": 1})
    res = run_cli(save(m))
    assert res.exit_code == 0, res.output
    assert "Foo ?" in res.stdout
    assert "1 UNCOSTED (my.domain::Foo x1)" in res.stdout


# ----------------------------------------------------------------------------- json

@pytest.mark.parametrize("sample", ["mlp", "cnn", "transformer"])
def test_json_schema_and_sums(sample, run_cli):
    d = _json(run_cli, SAMPLES / f"{sample}.onnx")
    assert d["schema_version"] == 1
    assert {"model", "totals", "coverage", "nodes"} <= d.keys()
    assert d["model"]["format"] == "onnx" and d["model"]["path"].endswith(f"{sample}.onnx")
    assert isinstance(d["model"]["inputs"], dict) and isinstance(d["model"]["dims"], dict)
    assert set(TOTAL_KEYS) <= d["totals"].keys()
    assert {"nodes", "costed", "uncosted"} <= d["coverage"].keys()
    assert d["coverage"]["nodes"] == len(d["nodes"])
    for n in d["nodes"]:
        assert set(NODE_KEYS) <= n.keys(), n
        assert all(type(n[k]) is int for k in NODE_KEYS[2:]), n
        assert n["flops"] == n["mac_flops"] + n["vector_flops"] + n["transcendentals"], n["name"]
    for k in TOTAL_KEYS:
        assert d["totals"][k] == sum(n[k] for n in d["nodes"]), k
    assert "predictions" not in d  # only with --hw


def test_json_totals_match_closed_form(run_cli):
    t = _json(run_cli, SAMPLES / "cnn.onnx")["totals"]
    assert t["params"] == 12538  # samples/make_samples.py EXPECTED["cnn"]
    assert t["mac_flops"] == 13861504


# ----------------------------------------------------------------------------- csv, markdown

def test_csv_integers_equal_json(run_cli):
    res = run_cli(SAMPLES / "transformer.onnx", "--format", "csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    nodes = _json(run_cli, SAMPLES / "transformer.onnx")["nodes"]
    assert [r["name"] for r in rows] == [n["name"] for n in nodes]
    for r, n in zip(rows, nodes):
        assert r["op"] == n["op"]
        for k in (*COUNT_FIELDS, "flops"):
            assert int(r[k]) == n[k], (n["name"], k)


def test_markdown_has_a_table(run_cli):
    res = run_cli(MLP, "--format", "markdown")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith("| layer |")]
    assert len(header) == 1
    i = header[0]
    assert lines[i + 1].startswith("|---|")
    body = [line for line in lines[i + 2:] if line.startswith("|")]
    assert len(body) == 6  # one row per node of the MLP
    assert body[0].startswith("| `fc1` | Gemm |")
    assert "Coverage: 6 of 6 nodes costed by rule" in res.stdout


# ----------------------------------------------------------------------------- --output

@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "table"])
def test_output_file(fmt, run_cli, tmp_path):
    target = tmp_path / f"report.{fmt}"
    res = run_cli(MLP, "--format", fmt, "--output", target)
    assert res.exit_code == 0, res.output
    assert res.stdout == ""
    text = target.read_text(encoding="utf-8")
    if fmt == "table":
        assert "coverage: 6 of 6" in text
    else:
        assert text == run_cli(MLP, "--format", fmt).stdout
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temp file left behind


# ----------------------------------------------------------------------------- --dim

def test_dim_batch_scales_mac_flops(run_cli):
    b1 = _json(run_cli, SAMPLES / "dynamic_batch.onnx", "--dim", "batch=1")
    b8 = _json(run_cli, SAMPLES / "dynamic_batch.onnx", "--dim", "batch=8")
    assert b1["totals"]["mac_flops"] == 469504  # EXPECTED["dynamic_batch"]: 2*(784*256+256*128+128*10)
    assert b8["totals"]["mac_flops"] == 8 * 469504 == 3756032
    assert b8["totals"]["params"] == b1["totals"]["params"] == 235146  # weights do not scale
    assert b8["model"]["dims"] == {"batch": 8}
    assert b8["model"]["inputs"]["x"] == [8, 784]


@pytest.mark.parametrize("args, expected", [
    (("batch=8",), {"batch": [8]}),
    (("seq=128,512,2048",), {"seq": [128, 512, 2048]}),
    (("batch=1,seq=16",), {"batch": [1], "seq": [16]}),          # several dims in one option
    (("batch=1,2,seq=16", "heads=4"), {"batch": [1, 2], "seq": [16], "heads": [4]}),
    (("seq+total=16,64", "batch=1"), {"seq+total": [16, 64], "batch": [1]}),  # moved together
])
def test_dim_option_forms(args, expected):
    from cli.parsing import parse_dims

    assert parse_dims(args) == expected


@pytest.mark.parametrize("arg, message", [
    ("batch", "expected NAME=VALUE"), ("=4", "expected NAME=VALUE"), ("batch=x", "'x' is not an integer"),
    ("batch=-1", "cannot be negative"), ("batch=1,batch=2", "'batch' is given twice"),
    ("4,batch=2", "expected NAME=VALUE"), ("seq+=4", "expected NAME=VALUE"),
    ("seq+seq=4", "'seq' is given twice"), ("seq=1,seq+total=4", "'seq' is given twice"),
])
def test_dim_option_errors_say_what_is_wrong(arg, message):
    from analyzer.errors import InputSpecError
    from cli.parsing import parse_dims

    with pytest.raises(InputSpecError, match=message):
        parse_dims((arg,))


def test_input_sets_the_shape(run_cli):
    d = _json(run_cli, SAMPLES / "dynamic_batch.onnx", "--input", "x=4x784")
    assert d["totals"]["mac_flops"] == 4 * 469504  # = 1878016
    assert d["model"]["inputs"]["x"] == [4, 784]


class _Tty(__import__("io").StringIO):
    def isatty(self):
        return True


def test_the_progress_line_fits_and_is_erased():
    """Every frame is one line narrower than the terminal (however long the model's path), and
    the last thing written erases it."""
    from cli.guard import ProgressBar, Spinner

    for make in (lambda s: Spinner("analysing " + "x/" * 80 + "bert.onnx", stream=s, width=80),
                 lambda s: ProgressBar("calibrating", stream=s, width=80)):
        s = _Tty()
        with make(s) as bar:
            if isinstance(bar, ProgressBar):
                bar(0.5, "timing the gemm rows " * 10)
            else:
                bar.update("rendering " + "y" * 200)
        text = s.getvalue()
        frames = [f for f in text.split("\r") if f]
        assert frames and all(len(f.replace("\x1b[K", "")) <= 79 for f in frames), frames
        assert "\n" not in text and text.endswith("\r\x1b[K")
    quiet = __import__("io").StringIO()   # not a terminal: nothing drawn
    with Spinner("analysing", stream=quiet):
        pass
    assert quiet.getvalue() == ""
