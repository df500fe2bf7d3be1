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


def _hw_rows(stdout: str) -> dict[str, list[str]]:
    """``hw list``'s rows by id: the cells split at two or more spaces (a cell holds one)."""
    import re

    rows = {}
    for line in stdout.splitlines():
        cells = [c for c in re.split(r"\s{2,}|│|┃", line.strip()) if c.strip()]
        if cells:
            rows[cells[0].strip()] = [c.strip() for c in cells[1:]]
    return rows


@pytest.mark.parametrize("cols", [80, 200])
def test_hw_list_gives_figures_in_human_units(monkeypatch, cols):
    # the peaks were raw TFLOP/s figures (0.44672, 114.688, 0.0128) and the bandwidth raw GB/s
    monkeypatch.setenv("COLUMNS", str(cols))
    res = _opcost("hw", "list")
    assert res.exit_code == 0, res.output
    rows = _hw_rows(res.stdout)
    # a100-80gb-sxm: fp32 19.5 TFLOP/s (vector), tf32 156, bf16 / fp16 312 (matrix), int8 624 TOP/s,
    # 2039 GB/s, launch 1.5 us; apple-m2: fp32 0.44672 TFLOP/s = 447 GFLOP/s; hifi5: 0.0128 = 12.8 GFLOP/s
    if cols == 80:   # id, fp32, bf16, fp16, memory BW
        assert rows["a100-80gb-sxm"] == ["19.5 TFLOP/s", "312 TFLOP/s", "312 TFLOP/s", "2.04 TB/s"]
        assert rows["apple-m2"] == ["447 GFLOP/s", "—", "—", "100 GB/s"]
        assert rows["hifi5"] == ["12.8 GFLOP/s", "—", "25.6 GFLOP/s", "25.6 GB/s"]
    else:            # + kind, name, aliases, tf32, fp8, int8, launch
        assert rows["a100-80gb-sxm"][-8:] == ["19.5 TFLOP/s", "156 TFLOP/s", "312 TFLOP/s", "312 TFLOP/s",
                                              "—", "624 TOP/s", "2.04 TB/s", "1.5 µs"]
    assert rows["vision-p6"][-1] == "—"
    figures = [c for r in rows.values() for c in r if c[:1].isdigit()]
    assert figures and all(len(c.split()[0].replace(".", "")) <= 3 for c in figures), figures
    assert all(len(x) <= cols for x in res.stdout.splitlines())


def test_hw_show_gives_each_figure_in_its_unit(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    res = _opcost("hw", "show", "h100")
    assert res.exit_code == 0, res.output
    cells = {c[0]: c[1] for c in (
        [x.strip() for x in line.split("│") if x.strip()] for line in res.stdout.splitlines()) if len(c) > 1}
    assert cells["matrix_tflops.fp64"] == "66.9 TFLOP/s" and cells["matrix_tflops.int8"] == "1.98 POP/s"
    assert cells["memory.mem_bw_gbs"] == "3.35 TB/s" and cells["memory.onchip_mb"] == "50 MB"
    assert cells["memory.mem_gb"] == "80 GB" and cells["overhead.launch_overhead_us"] == "1.5 µs"
    assert cells["power.clock_ghz"] == "1.98 GHz" and cells["compute.units"] == "132"
    assert cells["memory.npu_onchip_mb"] == "—"


GPU_WORDS = {"SM", "SMs", "per-SM", "waves", "split-K", "L2"}
GPU_PHRASES = ("cache gain", "ramp b_half", "issue rate")


@pytest.mark.parametrize("hw", ["hexagon-sd8gen3", "tpu-v5e", "epyc-9654", "hifi5", "ane-m4"])
@pytest.mark.parametrize("layer", ["res.conv2", "y", "res.relu2"])
def test_explain_off_a_gpu_prints_no_gpu_term(hw, layer):
    # `--explain` on Hexagon printed 'waves 1 (split-K 1, 0 SMs)', 'per-SM = ... (off)' and
    # '(L2 0)'; on a TPU '1 SMs' and 'L2 134 MB' (its VMEM); on a CPU '96 SMs'
    import re

    res = _opcost(CNN, "--hw", hw, "--explain", layer)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert not set(re.findall(r"[\w-]+", out)) & GPU_WORDS, out
    assert not [x for x in GPU_PHRASES if x in out], out
    assert "  memory " in out and "DRAM = (bytes to DRAM" in out


@pytest.mark.parametrize("hw, units, cache", [
    ("mi300x", "(split-K 1, 304 CUs)", "(last-level cache 256 MB)"),   # 304 CUs; 256 MB Infinity Cache
    ("a100", "(split-K 1, 108 SMs)", "(L2 40 MB)"),   # the GPU lines as they were
])
def test_explain_names_the_gpus_own_units_and_cache(hw, units, cache):
    text = _explain(hw, "res.conv2")
    assert cache in text and units in text, text
    unit = units.split()[-1].rstrip(")s")
    assert "= launches x (sum(DRAM " in text and f", per-{unit} 0 ns))" in text
    assert f"per-{unit} = bytes / {unit} issue rate" in text


class _Proxy:
    """An object that answers as ``inner`` but for the attributes given."""

    def __init__(self, inner, **own):
        self._inner, self.__dict__ = inner, {**own, "_inner": inner}

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _explain(hw, layer, change=None):
    """``--explain layer`` on ``hw`` for the CNN sample, its kernel's terms changed by ``change``."""
    from analyzer import analyze
    from analyzer.render.explain import render_explain

    rep = analyze(str(CNN), hw)
    i = next(k for k, n in enumerate(rep.nodes) if n.name == layer)
    if change:
        p = rep.predictions[0]
        terms = p.explain(i)._replace(**change)
        rep = _Proxy(rep, predictions=[_Proxy(p, explain=lambda k: terms if k == i else p.explain(k))])
    return render_explain(rep, i, width=None)


@pytest.mark.parametrize("hw, cache", [("epyc-9654", "(last-level cache 384 MB)"),
                                       ("tpu-v5e", "(on-chip memory 134 MB)")])
def test_explain_names_the_cache_off_a_gpu_where_it_acts(hw, cache):
    # no shipped CPU or TPU class sets a cache share (l2_hit 0): the term is left out ...
    assert "cache share" not in _explain(hw, "res.conv2")
    # ... and where one acts it names the profile's onchip_mb as what it is, never 'L2'
    text = _explain(hw, "res.conv2", {"cache_share": 0.25, "cache_gain": 1.5})
    assert f"x cache gain 1.5); cache share 25.0% of the bytes {cache}" in text, text


def test_each_cut_table_counts_its_own_hidden_rows():
    # one line 'N more rows (--all)' summed layers, op types and modules (18 + 1 + 4 = 23 on the
    # transformer): no table said what it had left out, and --top was not offered
    res = _opcost(TRANSFORMER, "--hw", "a100")
    assert res.exit_code == 0, res.output
    out = res.stdout
    # 33 layers (15 shown), 9 op types and 12 modules (8 shown of each)
    assert "top 15 of 33 layers" in out
    assert "\n\n18 more layers (--top 33 or --all)\n\nby op type\n" in out
    assert "\n\n1 more op type (--all)\n\nby module" in out
    assert out.endswith("\n\n4 more modules (--all)\n")
    assert "more row" not in out
    every = _opcost(TRANSFORMER, "--hw", "a100", "--top", "33").stdout
    assert "more layer" not in every and "every layer by predicted time" in every


@pytest.mark.parametrize("fmt, line", [
    ("markdown", "\n28 more layers (--top 33 or --all)\n"),
    ("html", "<h2>Layers (top 5 of 33)</h2>\n<p>28 more layers (--top 33 or --all)</p>"),
])
def test_markdown_and_html_count_the_layers_top_left_out(fmt, line):
    if fmt == "html":
        pytest.importorskip("plotly")
    res = _opcost(TRANSFORMER, "--hw", "a100", "--top", "5", "--format", fmt)
    assert res.exit_code == 0, res.output
    assert line in res.stdout
    if fmt == "markdown":   # 'top 5 layers, graph order by time': neither the total nor the order
        assert "<summary>Layers (top 5 of 33, heaviest first)</summary>" in res.stdout


def test_a_sweep_says_the_unit_of_its_bytes_and_latency(monkeypatch):
    # the bytes column read '1.65 M' under 'bytes moved' (a count of what?), the CSV's latency
    # 6.34e-05 under 'a100-80gb-sxm latency'; cnn at batch 1: 1,651,984 B, batch 8: 12,864,808 B
    import csv
    import io

    monkeypatch.setenv("COLUMNS", "80")
    table = _opcost(CNN, "--batch", "1,8", "--hw", "a100").stdout
    rows = [x.split() for x in table.splitlines() if x.split()[:1] in (["1"], ["8"])]
    assert [r[-4:-2] for r in rows] == [["1.65", "MB"], ["12.9", "MB"]], table
    md = _opcost(CNN, "--batch", "1,8", "--format", "md").stdout
    assert md.rstrip().endswith("| 8 | 12.5 K | 111 M | 2.36 M | 48 | 113 M | 12.9 MB |")
    text = _opcost(CNN, "--batch", "1,8", "--hw", "a100", "--format", "csv").stdout
    got = list(csv.DictReader(io.StringIO("".join(x for x in text.splitlines(True) if x[0] != "#"))))
    assert [int(r["bytes moved (B)"]) for r in got] == [1_651_984, 12_864_808]
    assert all(0 < float(r["a100-80gb-sxm latency (s)"]) < 1e-3 for r in got)


def test_a_zero_keeps_its_unit():
    # --dim batch=0: 'totals: 235 K params, 0 (0 MAC), 941 KB moved': 0 of what?
    from analyzer.render.pieces import human

    assert human(0, "FLOP") == "0 FLOP" and human(0, "B") == "0 B" and human(0) == "0"
    res = _opcost(ROOT / "samples" / "dynamic_batch.onnx", "--dim", "batch=0")
    assert res.exit_code == 0, res.output
    assert "totals: 235 K params, 0 FLOP (0 MAC), 941 KB moved" in res.stdout


@pytest.mark.parametrize("value", ["", " , "])
def test_an_empty_hw_is_an_error_not_a_silent_count(value):
    # `--hw "$HW"` with HW unset printed the counts alone, rc 0, as if no --hw had been given
    res = _opcost(CNN, "--hw", value)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == f"error: --hw '{value}' names no profile: give an id, alias or .toml file " \
                         "(analyze hw list)\n"


def test_a_wrong_jax_argument_lists_the_parameters_as_a_signature():
    # was "'y' is not a parameter of mlp_infer('x',)": a Python tuple
    res = _opcost(f"{ROOT / 'samples' / 'jax_models.py'}:mlp_infer", "--input", "y=f32[8,784]")
    assert res.exit_code == 2
    assert res.stderr == "error: 'y' is not a parameter of mlp_infer(x)\n"


@pytest.mark.parametrize("cols", [60, 80, 120])
def test_a_sweep_never_cuts_a_figure(monkeypatch, cols):
    # four profiles at 80 columns: rich cut cells to '3.76…', '31.3…' and headers to 'bat…',
    # 'a100-80gb-…'; columns now go whole, and a line names them
    import re

    monkeypatch.setenv("COLUMNS", str(cols))
    res = _opcost(ROOT / "samples" / "dynamic_batch.onnx", "--dim", "batch=1,8,64", "--hw",
                  "a100,h100,t4,epyc-9654")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert "…" not in res.stdout and all(len(x) <= cols for x in lines), res.stdout
    head = next(x.split() for x in lines if x.startswith("batch"))
    assert head[-4:] == ["a100-80gb-sxm", "h100-sxm", "t4", "epyc-9654"]
    rows = [x.split() for x in lines if re.match(r"(1|8|64) ", x)]
    assert [r[0] for r in rows] == ["1", "8", "64"]
    assert all(re.fullmatch(r"\d+(\.\d+)?", n) and u == "µs" for r in rows for n, u in zip(r[-8::2], r[-7::2]))
    gone = {60: "transc., vector, MAC FLOPs, params, FLOPs, bytes moved", 80: "transc., vector, MAC FLOPs"}
    if cols in gone:
        assert f"(not shown at this width: {gone[cols]}; csv and json carry" in " ".join(res.stdout.split())
    else:
        assert "not shown" not in res.stdout and "vector" in head and "transc." in head


def test_a_batch_beyond_int64_is_bad_input_not_a_bug():
    # --batch 99999999999999999999 was 'internal error in analyzer.frontends.onnx.batch:
    # ValueError: Value out of range', exit 3
    res = _opcost(ROOT / "samples" / "mlp.onnx", "--batch", "99999999999999999999")
    assert res.exit_code == 2
    assert res.stderr == ("error: --batch '99999999999999999999': 99999999999999999999 is beyond int64 "
                          "(at most 9223372036854775807)\n")


@pytest.mark.parametrize("model, shape, says", [
    # cnn's conv1 weight is [16, 3, 3, 3]: 4 input channels were counted as if they were 3
    ("cnn.onnx", "x=1x4x32x32", "node 'conv1' (Conv): Conv input has 4 channels, its weight takes 3 "
                                "(1 group of 3): float32[1,4,32,32] x float32[16,3,3,3]"),
    # mlp's fc1 weight is [256, 784] (transB): 'tensor rank is unknown after shape inference'
    ("mlp.onnx", "x=1x100", "node 'fc1' (Gemm): Gemm inner dims differ: float32[1,100] x "
                            "float32[256,784] transposed (100 vs 784)"),
])
def test_an_input_the_weights_cannot_take_names_the_node_and_shapes(model, shape, says):
    res = _opcost(ROOT / "samples" / model, "--input", shape)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith(f"error: {says}; inputs ("), res.stderr


def test_html_is_not_poured_into_a_terminal(monkeypatch):
    # --format html at a terminal printed 4.9 MB of page and plotly.js; piped, it is the page
    import cli.output

    monkeypatch.setattr(cli.output, "stdout_is_terminal", lambda: True)
    res = _opcost(CNN, "--format", "html")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == ("error: --format html is one page of several MB for a browser, not for the "
                          "terminal: write it with -o report.html (or redirect stdout to a file)\n")
    monkeypatch.setattr(cli.output, "stdout_is_terminal", lambda: False)
    pytest.importorskip("plotly")
    assert _opcost(CNN, "--format", "html").stdout.startswith("<!DOCTYPE html>")


def test_the_shrink_table_counts_the_layers_it_left_out(monkeypatch):
    # the transformer on the a100: 29 layers save time with 10 % fewer FLOPs or bytes, 5 shown
    monkeypatch.setenv("COLUMNS", "80")
    res = _opcost(TRANSFORMER, "--hw", "a100", "--sensitivity")
    assert res.exit_code == 0, res.output
    assert "\n\n24 more layers (--top 29)\n\n" in res.stdout, res.stdout


def _measured(n: int):
    """A run of ``n`` kernels, kernel i measured (i + 1) us and predicted 10 % over."""
    from analyzer.report.measured import ErrorSummary, KernelRow, MeasuredComparison

    rows = tuple(KernelRow(f"k{i}", (f"n{i}",), 1.1e-6 * (i + 1), 1e-6 * (i + 1)) for i in range(n))
    return MeasuredComparison(hardware="my-cpu", runtime="onnxruntime", predicted_s=1e-4, measured_s=1e-4,
                              kernel_sum_s=1e-4, kernels=rows, nodes=(),
                              summary=ErrorSummary(n, 10.0, 100.0, 100.0, 10.0, 1.0), threads=2, runs=5)


@pytest.mark.parametrize("n, more", [(22, "12 more kernels (--top 22)"), (10, None)])
def test_the_measured_table_counts_the_kernels_it_left_out(n, more):
    from analyzer.render import measured
    from cli.output import HINTS

    text = measured.render_text(_measured(n), None, 200, HINTS)
    which = "top 10 of 22" if more else "all 10"
    assert f"— {which} kernels by measured time" in " ".join(text.split()), text
    md = "\n".join(measured.markdown_lines(_measured(n), None, HINTS))
    if more:
        assert f"\n{more}\n" in text and f"\n{more}\n" in md
    else:
        assert "more kernel" not in text and "more kernel" not in md


def test_a_wrong_params_name_says_the_flag_typed():
    # was "params_argnums: 'w' is not a positional parameter (['x'])": the library keyword and
    # a Python list
    res = _opcost(f"{ROOT / 'samples' / 'jax_models.py'}:mlp_infer", "--input", "x=f32[8,784]",
                  "--params", "w")
    assert res.exit_code == 2
    assert res.stderr == "error: --params: 'w' is not a positional parameter of mlp_infer(x)\n"


def test_a_failed_gate_says_its_times_in_their_units(tmp_path):
    # 'a100-80gb-sxm 0.06339 ms -> 0.06531 ms': microseconds written as a fraction of a millisecond
    base = tmp_path / "base.json"
    assert _opcost(CNN, "--hw", "a100", "--save-baseline", base).exit_code == 0
    res = _opcost(CNN, "--batch", "4", "--baseline", base, "--max-regression", "1")
    assert res.exit_code == 1
    assert res.stderr == ("error: predicted latency regressed beyond 1%: a100-80gb-sxm 90.4 µs -> 93.9 µs "
                          "(+3.9%) (grew most: res.conv2, res.conv3, conv4)\n")


def test_a_missing_jax_input_shows_how_to_give_it():
    # was 'missing --input for parameter 'x' of mlp_infer': which form does --input take?
    res = _opcost(f"{ROOT / 'samples' / 'jax_models.py'}:mlp_infer")
    assert res.exit_code == 2
    assert res.stderr == ("error: missing --input for parameter 'x' of mlp_infer: give its dtype and shape, "
                          "e.g. --input x=f32[8,128]\n")


@pytest.mark.parametrize("hw, said", [
    ("a100,a100-80gb-sxm", "'a100' and 'a100-80gb-sxm' are the same profile (a100-80gb-sxm)"),
    ("t4,t4", "'t4' is given twice"),
])
def test_one_profile_named_twice_is_an_error(hw, said):
    # an alias and its id gave two identical rows and columns, and a CSV whose header repeats
    # 'a100-80gb-sxm:time_s' (csv.DictReader keeps only the last)
    res = _opcost(CNN, "--hw", hw)
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr == f"error: --hw: {said}; give it once\n"
    import analyzer
    from analyzer.errors import InputSpecError

    with pytest.raises(InputSpecError, match=r"^hw: "):
        analyzer.analyze(str(CNN), hw=hw.split(","))
