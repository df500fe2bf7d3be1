"""The reports as a person sees them: the terminal view at 80 and 120 columns (through a real
pseudo-terminal too), pipes, -o by extension, the HTML report in headless Chromium, the CI
gate's markdown and its flags."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import analyzer
from analyzer.render.formats import render
from analyzer.render.explain import render_explain
from analyzer.render.terminal import shorten

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMER = ROOT / "samples" / "transformer.onnx"
MLP = ROOT / "samples" / "mlp.onnx"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def report():
    return analyzer.analyze(str(TRANSFORMER), ["a100", "h100", "t4"])


@pytest.mark.parametrize("width", [80, 120, 200])
def test_terminal_view_fits_and_answers_first(report, width):
    text = render(report, "table", width=width)
    lines = text.splitlines()
    assert all(len(x) <= width for x in lines), max(lines, key=len)
    assert any(re.match(r"a100-80gb-sxm +[0-9.]+ [µm]?s", x) for x in lines[:10])
    assert "by op type" in text and "by module (repeated blocks folded)" in text
    assert "ln{1,2} x2" in text                     # repeated blocks folded
    # 33 layers, 15 shown; 9 op types and 12 modules, 8 shown
    assert "\n\n18 more layers (top=33 or all_rows=True)\n\nby op type\n" in text
    assert "\n\n1 more op type (all_rows=True)\n" in text and text.endswith("\n\n4 more modules (all_rows=True)\n")
    # a unit stays with its number: no line ends in a bare number followed by a unit next line
    for a, b in itertools.pairwise(lines):
        assert not (re.search(r"\d$", a) and re.match(r"\s*(µs|ms|ns|s|KB|MB|GB|B|%)\b", b)), (a, b)


def test_wide_and_all(report):
    base = render(report, "table", width=None)
    wide = render(report, "table", width=None, wide=True)
    assert "act. out" in wide and "act. out" not in base   # a column header of --wide
    every = render(report, "table", width=None, all_rows=True)
    assert "every layer by predicted time" in every and " more " not in every


def test_a_long_name_is_shortened_in_the_middle_never_wrapped():
    name = "encoder/layer.11/attention/self/query/MatMul_with_a_very_long_tail"
    s = shorten(name, 24)
    assert len(s) == 24 and "…" in s and s.startswith("encoder/") and s.endswith("tail")


def test_explain_shows_each_term(report):
    i = next(k for k, n in enumerate(report.nodes) if n.name == "mlp.up.matmul")
    text = render_explain(report, i, width=100)
    for word in ("arithmetic intensity", "ridge point", "compute", "memory", "fixed",
                 "e_compute", "e_bw", "architecture constants", "weights 65,536 B"):
        assert word in text, word
    e = report.predictions[0].explain(i)
    assert e.time_s == pytest.approx(e.overhead_s + max(e.compute_s, e.memory_s), rel=1e-5)


def test_explain_names_the_function_each_transcendental_evaluates(report):
    # the sample's GELU is Erf over its [1, 16, 256] input: 1 x 16 x 256 = 4,096 erf; its
    # softmax 1 x 4 heads x 16 x 16 = 1,024 exp; each layer norm one rsqrt a row: 16
    names = {n.name: k for k, n in enumerate(report.nodes)}
    assert "transcendental 4,096 (erf 4,096)," in render_explain(report, names["gelu.erf"], width=100)
    assert "transcendental 1,024 (exp 1,024)," in render_explain(report, names["attn.softmax"], width=100)
    assert "transcendental 16 (rsqrt 16)," in render_explain(report, names["ln1"], width=100)
    assert "transcendental 0, params" in render_explain(report, names["mlp.up.matmul"], width=100)


def test_a_pipe_gets_one_whole_line_per_row(run_cli):
    res = run_cli(TRANSFORMER, "--hw", "a100", "--all")
    assert res.exit_code == 0, res.output
    rows = [x for x in res.stdout.splitlines() if x.startswith("attn.merge.transpose ")]
    assert len(rows) == 1 and "Transpose" in rows[0]


def test_a_pipe_with_columns_set_is_laid_out_at_that_width(run_cli, monkeypatch):
    """``COLUMNS=80 analyze ... | less``: the caller named the width, so two profiles' layer
    table keeps to 80 columns (unset, the same table is one wide line per row: above)."""
    monkeypatch.setenv("COLUMNS", "80")
    res = run_cli(TRANSFORMER, "--hw", "a100,h100", "--top", "8")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert all(len(x) <= 80 for x in lines), max(lines, key=len)
    assert any(x.startswith("attn.qk ") for x in lines)


@pytest.mark.machine
@pytest.mark.parametrize("cols", [80, 120])
def test_a_real_terminal_of_80_and_120_columns(cols):
    """Through a pseudo-terminal, as a person runs it: COLUMNS decides the width."""
    from pty_run import terminal

    lines = terminal(cols, TRANSFORMER, "--hw", "a100").splitlines()
    assert all(len(x) <= cols for x in lines), max(lines, key=len)
    assert any(re.match(r"a100-80gb-sxm +[0-9.]+ [µm]?s", x) for x in lines[:10])


def test_output_format_follows_the_extension(run_cli, tmp_path):
    for ext, check in ((".json", lambda t: json.loads(t)["predictions"]),
                       (".csv", lambda t: "name,op,status" in t),
                       (".md", lambda t: t.startswith("### opcost:")),
                       (".html", lambda t: t.startswith("<!DOCTYPE html>"))):
        out = tmp_path / f"r{ext}"
        res = run_cli(MLP, "--hw", "a100", "-o", out)
        assert res.exit_code == 0, res.output
        assert check(out.read_text(encoding="utf-8")), ext
    out = tmp_path / "r.html"
    assert run_cli(MLP, "--format", "csv", "-o", out).exit_code == 0   # --format wins
    assert out.read_text().startswith("name,op")


def test_repeated_hw_adds_profiles_and_top_applies_or_is_refused(run_cli):
    res = run_cli(MLP, "--hw", "a100", "--hw", "h100", "--format", "json")
    assert [p["hardware"] for p in json.loads(res.stdout)["predictions"]] == ["a100-80gb-sxm", "h100-sxm"]
    lines = run_cli(MLP, "--top", "2", "--format", "csv").stdout.splitlines()
    csv_rows = [x for x in lines if not x.startswith("#")]
    assert len(csv_rows) == 3 and csv_rows[1].startswith("fc1,")
    # samples/mlp.onnx: 6 runtime layers (fc1, relu1, fc2, relu2, fc3, y): 2 shown, 4 left out
    assert "# rows: the top 2 of 6 runtime layers, heaviest first (4 left out;" in lines[-4]
    res = run_cli(MLP, "--top", "2", "--format", "json")
    assert res.exit_code == 2 and "--top does not apply to json" in res.stderr


def test_max_regression_needs_a_baseline(run_cli):
    res = run_cli(MLP, "--max-regression", "5%")
    assert res.exit_code == 2 and "--baseline" in res.stderr


def test_a_failed_gate_keeps_its_baseline(run_cli, tmp_path):
    from onnx_builders import graph  # noqa: F401  (the builders the gate tests use)
    from report.test_baseline_gate import mlp
    import onnx

    base, wide = tmp_path / "base.onnx", tmp_path / "wide.onnx"
    onnx.save(mlp(1024), base)
    onnx.save(mlp(4096), wide)
    b = tmp_path / "b.json"
    assert run_cli(base, "--hw", "a100", "--save-baseline", b).exit_code == 0
    before = b.read_bytes()
    res = run_cli(wide, "--baseline", b, "--save-baseline", b)
    assert res.exit_code == 1 and "kept" in res.stderr
    assert b.read_bytes() == before
    ok = run_cli(base, "--baseline", b, "--save-baseline", b, "--input", "x=2x512")
    assert ok.exit_code in (0, 1)
    assert "input shapes differ from the baseline's: x 1x512 -> 2x512" in ok.stdout


def test_markdown_stays_short_for_a_large_model(report):
    from analyzer.report.counts import Report

    many = Report.from_nodes(report.model, report.nodes * 400)   # 13,600 rows
    md = render(many, "markdown")
    assert len(md) < 60_000 and "<details>" in md
    shown = md.count("\n| `")   # the layer rows, of 33 x 400 = 13,200 (one node of the 34 is folded)
    assert f"\n{13_200 - shown:,} more layers not shown (the comment stays short; the CSV" in md


def test_warnings_reach_every_format(report):
    from dataclasses import replace

    r = replace(report, warnings=("a warning <b>|x|</b>",))
    assert "# warning: a warning" in render(r, "csv")
    assert "> **warning:** a warning \\<b\\>" in render(r, "markdown")
    assert json.loads(render(r, "json"))["warnings"] == ["a warning <b>|x|</b>"]
    assert "warning: a warning" in render(r, "table")
    assert "warning: a warning &lt;b&gt;" in render(r, "html")


@pytest.mark.machine
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_html_report_in_a_headless_browser(report, tmp_path):
    """Open the page as a person would: no script error, the chart and the table drawn; a
    screenshot is kept in the test's folder."""
    page = tmp_path / "report.html"
    page.write_text(render(report, "html"), encoding="utf-8")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,2400",
             "--virtual-time-budget=5000"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    root = re.search(r"<html[^>]*>", dom).group(0)   # window.onerror writes errors here
    assert "data-js-error" not in root, root
    assert 'data-table-ready="33"' in dom                       # every runtime layer in the table
    assert dom.count('class="main-svg"') >= 4 and 'id="roofline"' in dom
    assert "<td>mlp.up.matmul</td>" in dom
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True,
                   timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000


def test_plot_writes_the_roofline_alone(run_cli, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "roof.svg"
    res = run_cli(MLP, "--hw", "a100", "--plot", out, "-o", tmp_path / "r.json")
    assert res.exit_code == 0, res.output
    svg = out.read_text()
    assert svg.lstrip().startswith("<?xml") and "matplotlib" in res.stderr
    # one effective-roof marker per plotted layer (the MLP's layers with FLOPs and bytes)
    rep = analyzer.analyze(MLP, "a100")
    pts, _ = rep.predictions[0].roofline()
    shown = [x for x in pts if x[1] > 0 and x[2] > 0 and len(x) > 3 and x[3] > 0]
    assert shown and 'id="effective-roof' in svg
    assert "effective roof per layer" in svg


def test_explain_factors_give_the_time():
    """--explain's factors multiply and add up to the kernel's time (issue 32): compute = runs x
    (MAC x padding x waves x narrow / (peak x e_compute) + vector part), memory = runs x ((DRAM
    bytes + b_half) / (bandwidth x e_bw x cache gain) + per-SM part; their max where the class sets
    sm_overlap), time = fixed + max of both."""

    sys.path.insert(0, str(TRANSFORMER.parent.parent / "tests"))
    from zoo_reference import light_model_path

    rep = analyzer.analyze(light_model_path("resnet50"), ["b200", "a100", "l4", "t4"], precision="fp32")
    names = {"n143", "n152"} | {n.name for n in rep.nodes if n.op in ("Relu", "Add", "Gemm")}
    checked = 0
    for p in rep.predictions:
        for i, n in enumerate(rep.nodes):
            if n.name not in names:
                continue
            e = p.explain(i)
            if e is None:
                continue
            matrix = (e.mac_flops * e.pad * e.wave * e.narrow * e.clock / (e.matrix_peak * e.e_compute)
                      if e.mac_flops else 0.0)
            vector = ((e.vector_flops + e.trans_weight * e.transcendental_flops) / (e.vector_peak * e.e_compute)
                      if e.vector_flops or e.transcendental_flops else 0.0)
            assert e.matrix_s == pytest.approx(matrix, rel=1e-9, abs=1e-15)
            assert e.compute_s == pytest.approx(e.runs * (matrix + vector), rel=1e-5, abs=1e-12)
            dram = (e.dram_bytes + e.b_half_bytes) / (e.mem_bw * e.e_bw * e.cache_gain)
            sm = (e.bytes / e.sm_rate) if e.sm_rate else 0.0
            assert e.dram_s == pytest.approx(dram, rel=1e-9)
            assert e.memory_s == pytest.approx(e.runs * (max(dram, sm) if e.sm_overlap else dram + sm), rel=1e-5)
            assert e.time_s == pytest.approx(e.runs * e.fixed_s + max(e.compute_s, e.memory_s), rel=1e-5)
            assert e.effective_roof > 0
            checked += 1
    assert checked >= 4 * 4
    # the roofline carries each point's effective roof, never above the attained rate's ceiling
    pts, _ = rep.predictions[0].roofline()
    assert pts and all(len(x) == 4 and x[3] >= x[2] for x in pts)


def test_explain_fixed_line_agrees_with_its_factor(report):
    """The printed `fixed T = launches x F (class floor C ...)` agrees to the printed digit where
    one launch has only its class floor: T, F and C are the float32 figures the jitted kernel used
    (float64's 2.935e-6 printed 2.93 µs beside the kernel's 2.9350001e-6, 2.94 µs, on the h100's
    attn.qk)."""
    i = next(k for k, n in enumerate(report.nodes) if n.name == "attn.qk")
    text = render_explain(report, i, width=200)
    lines = re.findall(r"fixed\s+(\S+ \S+)\s+= launches x (\S+ \S+) \(class floor (\S+ \S+),", text)
    assert len(lines) == 3                               # a100, h100, t4
    for total, per_launch, floor in lines:
        assert total == per_launch == floor, (total, per_launch, floor)
