"""The HTML report's charts as plotly figure dicts (no browser): unique categories with the
full name on hover, one colour per profile for its roof and its points, details kept short."""

from __future__ import annotations

import pytest

pytest.importorskip("plotly")

from onnx_builders import analyze, bert_shaped

from analyzer.render.formats import render
from analyzer.render.html import LABEL_CHARS, roofline_figure, stack_figure
from analyzer.report import rollups


@pytest.fixture(scope="module")
def deep():
    """24 BERT-shaped layers on two profiles."""
    return analyze(bert_shaped(24), hw=["a100", "t4"])


def test_forty_layers_of_a_24_layer_model_are_forty_readable_bars(deep):
    rows = rollups.top_rows(deep, 40)
    fig = stack_figure(deep, rows).to_dict()
    bars = fig["data"]
    labels = list(bars[0]["y"])
    assert len(labels) == 40 and len(set(labels)) == 40          # no two layers share a bar
    assert all(len(x) <= LABEL_CHARS for x in labels)
    assert all(b["orientation"] == "h" and list(b["y"]) == labels for b in bars)
    full = [n.name for n, _ in rows]
    assert list(bars[0]["customdata"]) == full                   # the full name on hover
    for label, name in zip(labels, full):
        assert name.endswith(label.split("…")[-1])               # the last parts kept
    assert "names under /model/encoder/" in fig["layout"]["title"]["text"]
    assert fig["layout"]["height"] >= 22 * 40                    # a row per bar, not squeezed


def test_a_profiles_roof_and_points_have_one_colour(deep):
    data = roofline_figure(deep).to_dict()["data"]
    roofs = {d["legendgroup"]: d["line"]["color"] for d in data if d["mode"] == "lines"}
    points = {d["legendgroup"]: d["marker"]["color"] for d in data if d["mode"] == "markers"}
    assert set(roofs) == {"a100-80gb-sxm", "t4"} and roofs == points
    assert len(set(roofs.values())) == 2                         # and the profiles differ


def test_html_details_are_short_with_the_full_text_collapsed():
    from pathlib import Path

    import analyzer

    bert = Path(__file__).resolve().parents[1] / "fixtures" / "torch" / "bert.onnx"
    page = render(analyzer.analyze(str(bert), ["a100", "h100", "l4", "t4"]), "html")
    head = page[page.index("<h2>Profiles"):page.index("<h2>Roofline")]
    assert head.count("<details><summary>in full</summary>") == 4
    visible = head
    while "<details>" in visible:   # what shows without a click or a hover
        a = visible.index("<details>")
        visible = visible[:a] + visible[visible.index("</details>", a) + len("</details>"):]
    visible = __import__("re").sub(r" title='[^']*'", "", visible)
    assert "from a related family or class" not in visible
    assert visible.count("vectorized gather") == 1               # the note once, numbered
