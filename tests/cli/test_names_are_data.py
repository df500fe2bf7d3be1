"""Names are data: node, tensor, file and profile names never act as rich markup, terminal
control sequences, markdown or spreadsheet formulas, in any format or error line; names that are
not valid UTF-8 are read (shown with backslash escapes), never a crash.  JSON keeps names exact."""

from __future__ import annotations

import csv
import io
import json
import re

import onnx
import pytest
from onnx import TensorProto, helper

from analyzer.render import safe

# what a terminal would act on: C0/C1 controls, DEL, bidi overrides/isolates, separators
RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                         "\u202a-\u202e\u2066-\u2069\ufeff]")

NASTY = [
    "block[/attn]",              # closing tag without opener: rich raised MarkupError
    "heads[b]/relu",             # an opening tag: rich printed 'heads/relu'
    "\x1b]0;pwned\x07title",     # OSC: sets the terminal title, BEL ends it
    "\x1b[31mred\x1b[0m",        # CSI colour
    "cr\rover",                  # carriage return overwrites the line
    "two\nlines",
    "bidi\u202eevil",            # right-to-left override
    "c1\x9b31m",                 # a C1 CSI
    "pipe|cell",
    "tick``s`",
    "<img src=x onerror=alert(1)>",
    "=HYPERLINK(\"http://x\")",
    "+1", "-1", "@SUM(A1)",
]


def _chain_model(names: list[str]) -> onnx.ModelProto:
    """A chain of Relu nodes, node i named names[i] and its output tensor named names[i] too."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    nodes, prev = [], "x"
    for i, name in enumerate(names):
        out = f"{name}:out{i}"
        nodes.append(helper.make_node("Relu", [prev], [out], name=name))
        prev = out
    y = helper.make_tensor_value_info(prev, TensorProto.FLOAT, [2, 3])
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def nasty(save):
    return save(_chain_model(NASTY), "nasty.onnx")


def _no_raw_control(text: str) -> None:
    bad = RAW_CONTROL.findall(text)
    assert not bad, f"raw control characters in output: {bad!r}"


# ----------------------------------------------------------------------------- the helper


def test_text_shows_controls_visibly_and_is_idempotent():
    assert safe.text("a\x1bb") == "a\\x1bb"
    assert safe.text("\u202e") == "\\u202e"
    assert safe.text("x\ny\rz\t") == "x\\x0ay\\x0dz\\x09"
    assert safe.text("\udcff") == "\\udcff"          # a lone surrogate (undecodable argv byte)
    assert safe.text("plain/name_0 µs") == "plain/name_0 µs"
    s = safe.text("".join(NASTY))
    assert safe.text(s) == s
    _no_raw_control(s)


def test_md_code_fence_is_longer_than_any_backtick_run():
    assert safe.md_code("a``b") == "```a``b```"
    assert safe.md_code("`x`") == "`` `x` ``"
    assert safe.md_code("a|b", table=True) == "`a\\|b`"
    assert safe.md_text("<b>*x*</b>|") == "\\<b\\>\\*x\\*\\</b\\>\\|"


def test_csv_cell_neutralizes_formulas_only():
    assert [safe.csv_cell(s) for s in ("=1+1", "+1", "-1", "@x", "a=1", "")] == \
        ["'=1+1", "'+1", "'-1", "'@x", "a=1", ""]


# ----------------------------------------------------------------------------- every format


def test_table_shows_names_as_text(run_cli, nasty):
    res = run_cli(nasty, "--hw", "a100")
    assert res.exit_code == 0, res.output
    out = res.stdout
    _no_raw_control(out)
    assert "block[/attn]" in out and "heads[b]/relu" in out
    assert "\\x1b]0;pwned\\x07title" in out and "bidi\\u202eevil" in out and "two\\x0alines" in out


def test_table_with_color_keeps_names_as_text(nasty):
    import analyzer
    from analyzer.render.formats import render

    text = render(analyzer.analyze(nasty), "table", color=True)
    names = re.sub("\x1b\\[[0-9;]*m", "", text)   # rich's own styles are the only escapes
    _no_raw_control(names)
    assert "block[/attn]" in names and "heads[b]/relu" in names


def test_group_depth_and_top_show_names_as_text(run_cli, nasty):
    for fmt in ("table", "markdown", "csv"):
        res = run_cli(nasty, "--group-depth", "1", "--format", fmt)
        assert res.exit_code == 0, res.output
        _no_raw_control(res.stdout)
    res = run_cli(nasty, "--top", "3")
    assert res.exit_code == 0, res.output
    _no_raw_control(res.stdout)


def test_markdown_cells_cannot_break_out(run_cli, nasty):
    res = run_cli(nasty, "--format", "markdown")
    assert res.exit_code == 0, res.output
    out = res.stdout
    _no_raw_control(out)
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    layer_rows = rows[rows.index(next(r for r in rows if r.startswith("| layer"))) + 1:]
    assert len(layer_rows) == len(NASTY)
    for row in layer_rows:   # every row has exactly the header's cells: no pipe escaped a cell
        assert len(re.split(r"(?<!\\)\|", row)) == 8, row
    assert out.count("<img") == 1 and "| `<img src=x onerror=alert(1)>` |" in out   # code span
    assert "| ``` tick``s` ``` |" in out     # a fence longer than the longest backtick run


def test_csv_neutralizes_formulas_and_keeps_exact_integers(run_cli, nasty):
    res = run_cli(nasty, "--format", "csv")
    assert res.exit_code == 0, res.output
    _no_raw_control(res.stdout)
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    names = [r["name"] for r in rows]
    assert "'=HYPERLINK(\"http://x\")" in names and "'+1" in names and "'-1" in names
    assert "'@SUM(A1)" in names and "block[/attn]" in names
    assert not any(n[:1] in "=+-@" for n in names)
    assert all(r["vector_flops"] == "6" for r in rows)     # number columns untouched


def test_csv_carries_names_with_newline_quote_and_comma_exactly(run_cli, save):
    # RFC 4180 quoting carries these characters; csv.reader gives the names back as they are
    names = ["two\nlines", 'say "hi", then\n"bye"', "a,b", "tab\there", "=1+1,\n"]
    res = run_cli(save(_chain_model(names), "exact.onnx"), "--format", "csv")
    assert res.exit_code == 0, res.output
    _no_raw_control(res.stdout.replace("\t", ""))   # a tab is data here, like the newline
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert rows[0][:2] == ["name", "op"]
    assert [r[0] for r in rows[1:]] == names[:4] + ["'=1+1,\n"]   # the formula guard stays
    outs = [r[rows[0].index("outputs")] for r in rows[1:]]
    assert outs[0] == "float32[2,3]" and len(rows) == 1 + len(names)


def test_csv_cell_keeps_data_characters_and_escapes_terminal_controls():
    assert safe.csv_cell('a\nb\t"c,d') == 'a\nb\t"c,d'
    assert safe.csv_cell("x\x1b[2J\ry\u202e") == "x\\x1b[2J\\x0dy\\u202e"


def test_json_keeps_names_exact(run_cli, nasty):
    res = run_cli(nasty, "--format", "json")
    assert res.exit_code == 0, res.output
    _no_raw_control(res.stdout)            # JSON escapes control characters itself
    assert [n["name"] for n in json.loads(res.stdout)["nodes"]] == NASTY


def test_model_path_with_markup_is_shown_as_is(run_cli, save):
    path = save(_chain_model(["r"]), "m[bold]x.onnx")
    res = run_cli(path)
    assert res.exit_code == 0, res.output
    assert "m[bold]x.onnx" in res.stdout


def test_error_line_shows_names_as_text(run_cli, nasty):
    res = run_cli(nasty, "--input", "\x1b[2J\u202e=1x2")    # names no input: lists the model's
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ")
    _no_raw_control(res.stderr)
    assert "\\x1b[2J\\u202e" in res.stderr


def test_missing_model_path_with_controls_is_one_line(run_cli, tmp_path):
    res = run_cli(str(tmp_path / "no\x1b]0;x\x07pe\n.onnx"))
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1
    _no_raw_control(res.stderr)


# ----------------------------------------------------------------------------- invalid UTF-8


def _with_bad_bytes(model: onnx.ModelProto, marker: str) -> bytes:
    data = model.SerializeToString()
    assert data.count(marker.encode()) >= 1
    return data.replace(marker.encode(), b"\xff\xfe" + marker.encode()[2:])


def test_names_that_are_not_utf8_are_read(run_cli, tmp_path):
    # node name, tensor (edge) name and graph input name, all with bytes that are not UTF-8
    x = helper.make_tensor_value_info("INPUTX", TensorProto.FLOAT, ["NBATCH", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["NBATCH", 3])
    nodes = [helper.make_node("Relu", ["INPUTX"], ["TENSORT"], name="NODEXX"),
             helper.make_node("Sigmoid", ["TENSORT"], ["y"], name="s")]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)], producer_name="PRODUCER")
    data = m.SerializeToString()
    for marker in (b"NODEXX", b"TENSORT", b"INPUTX", b"NBATCH", b"PRODUCER"):
        data = data.replace(marker, b"\xff" + marker[1:])
    path = tmp_path / "bad-utf8.onnx"
    path.write_bytes(data)
    for fmt in ("table", "csv", "markdown"):
        res = run_cli(path, "--dim", "\\xffBATCH=4", "--format", fmt)
        assert res.exit_code == 0, res.output
        assert "\\xffODEXX" in res.stdout
        _no_raw_control(res.stdout)
    doc = json.loads(run_cli(path, "--dim", "\\xffBATCH=4", "--format", "json").stdout)
    assert [n["name"] for n in doc["nodes"]] == ["\\xffODEXX", "s"]
    assert doc["nodes"][1]["vector_flops"] > 0 and doc["model"]["dims"] == {"\\xffBATCH": 4}


def test_bytes_and_modelproto_with_bad_utf8_analyse():
    import analyzer

    data = _with_bad_bytes(_chain_model(["NODEXX"]), "NODEXX")
    assert analyzer.analyze(data).nodes[0].name == "\\xff\\xfeDEXX"
    proto = onnx.ModelProto()
    proto.ParseFromString(data)
    assert analyzer.analyze(proto).nodes[0].name == "\\xff\\xfeDEXX"


# ----------------------------------------------------------------------------- hw list / show


PROFILE = """\
schema_version = 1
id = "evil"
name = "Evil [/bold] \\u001b]0;pwned\\u0007 \\u202e GPU"
vendor = "[red]v[/red]"
kind = "gpu"
notes = "line1\\nline2 \\u001b[2J"

[memory]
mem_bw_gbs = 1000.0

[efficiency]
"[/x]\\u001b" = 0.5

[sources]
"memory.mem_bw_gbs" = "datasheet [link=http://x]click[/link] \\u009b31m"
"efficiency.[/x]\\u001b" = "fit"
"""


def test_hw_show_shows_profile_text_as_text(run_cli, tmp_path):
    path = tmp_path / "evil.toml"
    path.write_text(PROFILE, encoding="utf-8")
    res = run_cli("hw", "show", path)
    assert res.exit_code == 0, res.output
    _no_raw_control(res.stdout)
    assert "Evil [/bold] \\x1b]0;pwned\\x07 \\u202e GPU" in res.stdout
    assert "[red]v[/red]" in res.stdout and "[link=http://x]click[/link] \\x9b31m" in res.stdout
    assert "[/x]\\x1b" in res.stdout and "line1\\x0aline2" in res.stdout
    doc = json.loads(run_cli("hw", "show", path, "--format", "json").stdout)
    assert doc["name"] == "Evil [/bold] \x1b]0;pwned\x07 \u202e GPU"


def test_hw_list_cells_are_text():
    from cli.hwview import render_list
    from hardware_db.loader import load_file
    import hardware_db

    class Evil:   # a profile-like row whose text fields are hostile
        def __init__(self, p):
            self.__dict__.update({k: getattr(p, k) for k in ("kind", "matrix_tflops", "vector_tflops",
                                                             "mem_bw_gbs", "launch_overhead_us")})
            self.id, self.name, self.aliases = "a[/b]", "n\x1b[2Jame", ["x[bold]"]

    out = render_list([Evil(hardware_db.list_profiles()[0])], "table")
    _no_raw_control(out)
    assert "a[/b]" in out and "n\\x1b[2Jame" in out and "x[bold]" in out
    assert load_file  # the shipped profiles still render
    _no_raw_control(render_list(hardware_db.list_profiles(), "table"))


def test_html_names_cannot_become_markup(run_cli, nasty, tmp_path):
    pytest.importorskip("plotly")
    out = tmp_path / "r.html"
    res = run_cli(nasty, "--hw", "a100", "-o", out)
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "<img src=x" not in page                # escaped everywhere: text, hover, table data
    body = page[page.index("<body>"):]
    assert body.count("</script>") == body.count("<script")   # no name closes a script
    _no_raw_control(body)
