"""What a user meets first, on a BERT export with four profiles: every latency in the first 12
lines, no line wider than the terminal, every shown layer name unique and accepted by
``--explain``; the name-fitting rule on its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzer.render.names import fit, shared_prefix
from pty_run import terminal
from analyzer.report.rollups import name_matches

ROOT = Path(__file__).resolve().parents[2]
BERT = ROOT / "tests" / "fixtures" / "torch" / "bert.onnx"   # a 2-layer BERT export (torch.onnx)
HW = "a100,h100,l4,t4"
PROFILES = ("a100-80gb-sxm", "h100-sxm", "l4", "t4")


def layer_names(text: str) -> list[str]:
    """The first cell of each row of the 'top N of M layers' table."""
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("top "))
    rows = []
    for x in lines[start + 1:]:
        if not x.strip():
            break
        if x.startswith(("(names under", "layer ")):
            continue
        rows.append(x.split()[0])
    return rows


@pytest.fixture(scope="module", params=[80, 120])
def bert_view(request):
    return request.param, terminal(request.param, BERT, "--hw", HW)


@pytest.mark.machine
def test_bert_view_answers_first_and_fits(bert_view):
    cols, text = bert_view
    lines = text.splitlines()
    assert all(len(x) <= cols for x in lines), max(lines, key=len)
    head = lines[:12]
    for hw in PROFILES:   # one line per profile with its latency, in the first 12 lines
        assert any(re.match(rf"{re.escape(hw)} +[0-9.]+ [µm]?s ", x) for x in head), (hw, head)
    assert "gathers are predicted as PyTorch's vectorized gather" in text
    assert text.count("vectorized gather") == 1            # a note once, not once per profile
    assert "from a related family or class" not in text    # the provenance paragraph: --verbose


@pytest.mark.machine
def test_bert_shown_names_are_unique_and_keep_their_last_part(bert_view):
    _, text = bert_view
    names = layer_names(text)
    assert len(names) == 15 and len(set(names)) == 15, names
    # the shown layers' shared prefix (/model/ or deeper, by which layers rank first) said once
    assert re.search(r"\(names under /model/[^ ]* shown without it\)", text), text
    import analyzer

    full = [n.name for n in analyzer.analyze(str(BERT)).nodes]
    for s in names:
        hits = [x for x in full if name_matches(s, x)]
        assert len(hits) == 1, (s, hits)                   # --explain takes it without doubt
        assert hits[0].rsplit("/", 1)[-1] == s.rsplit("/", 1)[-1]   # the op's part kept whole


def test_verbose_is_todays_full_text(run_cli):
    res = run_cli(BERT, "--hw", HW, "--verbose")
    assert res.exit_code == 0, res.output
    # a100, h100, l4, t4 (the T4's nvidia-turing constants: bench/fit_neusight.py)
    assert res.stdout.count("from a related family or class") == 4
    assert res.stdout.count("index_select kernel of earlier releases") == 4
    assert run_cli(BERT, "--hw", "a100", "--verbose", "--format", "json").exit_code == 2


@pytest.mark.machine
def test_explain_takes_a_shown_name(run_cli):
    text = terminal(60, BERT, "--hw", "a100")   # narrow enough that some shown names are cut
    short = next(s for s in layer_names(text) if "…" in s)
    res = run_cli(BERT, "--hw", "a100", "--explain", short)
    assert res.exit_code == 0, res.output
    line = res.stdout.splitlines()[0]
    assert line.startswith("layer /model/") and line.split()[1].endswith(short.split("…")[-1])
    assert "index_select kernel of earlier releases" in res.stdout   # the notes in full
    # the ASCII spelling of the ellipsis works too
    assert run_cli(BERT, "--hw", "a100", "--explain", short.replace("…", "...")).exit_code == 0


def test_an_ambiguous_shown_name_lists_the_candidates(run_cli):
    res = run_cli(BERT, "--hw", "a100", "--explain", "…/attention/self/Softmax")
    assert res.exit_code == 2
    assert "matches 2 layers" in res.stderr
    assert "/model/encoder/layer.0/attention/self/Softmax" in res.stderr
    assert "/model/encoder/layer.1/attention/self/Softmax" in res.stderr


def test_fit_keeps_last_parts_and_tells_rows_apart():
    names = ["encoder/layer.0/attention/self/query/MatMul",
             "encoder/layer.1/attention/self/query/MatMul",
             "encoder/layer.0/attention/output/dense/MatMul"]
    shown = fit(names, 24)
    assert len(set(shown)) == 3 and all(len(s) <= 24 for s in shown), shown
    assert all(s.endswith("/MatMul") for s in shown)
    assert "layer.0" in shown[0] and "layer.1" in shown[1]
    for s, n in zip(shown, names):
        assert name_matches(s, n) and sum(name_matches(s, m) for m in names) == 1
    # a row not shown is not matched by a shown one either
    one = fit(names[:1], 20, context=names[1:])
    assert sum(name_matches(one[0], m) for m in names) == 1, one
    assert fit(names, None) == names and fit(names, 80) == names
    assert shared_prefix(["/model/a/X", "/model/b/Y"]) == "/model/"
    assert shared_prefix(["/a/X", "/b/Y"]) == ""          # a lone "/" is no prefix
    assert shared_prefix(["/model/X"]) == ""


def test_a_prefix_is_kept_where_without_it_a_shown_name_would_name_another_row():
    """An encoder's and a decoder's blocks end alike: the shown rows (all the decoder's) keep
    the component that tells them from the encoder's rows not shown."""
    from analyzer.render.names import droppable_prefix

    shown = ["/model/decoder/layer.0/attention/MatMul", "/model/decoder/layer.1/attention/MatMul"]
    others = ["/model/encoder/layer.0/attention/MatMul"]
    assert droppable_prefix(shown, []) == "/model/decoder/"
    assert droppable_prefix(shown, others) == "/model/"
    assert droppable_prefix(shown, ["/model/decoder/layer.0/attention/Add"]) == "/model/decoder/"


@pytest.mark.parametrize("width", [40, 60, 100])
def test_every_line_fits_a_narrow_terminal_too(width):
    """The profile table, titles and layer table give up columns rather than overflow
    (40 columns is the narrowest the CLI draws for)."""
    import analyzer
    from analyzer.render.formats import render

    for model, hw in ((BERT, list(PROFILES)), (ROOT / "samples" / "cnn.onnx", ["a100", "tpu-v5e"]),
                      (ROOT / "samples" / "transformer.onnx", ["a100"])):
        lines = render(analyzer.analyze(str(model), hw), "table", width=width).splitlines()
        assert all(len(x) <= width for x in lines), (model.name, max(lines, key=len))
        assert any(re.match(r"a100-80gb-sxm +[0-9.]+ [µm]?s", x) for x in lines[:12])
