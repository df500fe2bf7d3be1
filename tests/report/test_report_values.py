"""A Report is a frozen value: the prediction and baseline steps return new values and leave the
report they were given as it was; predictions join nodes by index.

Model: ``x[1,512] -> fc1 (512x1024 MatMul) -> view (Reshape, launches nothing) -> act (Relu)``,
so ``report.nodes`` has 3 rows and each prediction 2 (fc1 at index 0, act at index 2).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import helper

import analyzer
from analyzer.prediction.predict import predict
from analyzer.report import baseline as bl
from onnx_builders import graph, weight


def _model():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc1"),
             helper.make_node("Reshape", ["h", "shape"], ["v"], name="view"),
             helper.make_node("Relu", ["v"], ["y"], name="act")]
    return graph(nodes, {"x": (1, 512)}, ["y"],
                 {"w": weight(512, 1024), "shape": np.array([1024], np.int64)})


def test_predicting_twice_leaves_the_first_result_and_the_report_unchanged():
    r = analyzer.analyze(_model())
    before = (r.predictions, r.warnings, r.comparison, r.nodes, r.totals)
    first = predict(r, "a100")
    snapshot = dataclasses.astuple(first[0])
    second = predict(r, ["t4", "a100"])
    assert (r.predictions, r.warnings, r.comparison, r.nodes, r.totals) == before == ((), (), None,
                                                                                       r.nodes, r.totals)
    assert dataclasses.astuple(first[0]) == snapshot and len(first) == 1 and len(second) == 2
    with_first = r.with_predictions(first)
    with_second = with_first.with_predictions(second)      # replaces, on a new Report
    assert [p.hardware for p in with_first.predictions] == ["a100-80gb-sxm"]
    assert [p.hardware for p in with_second.predictions] == ["t4", "a100-80gb-sxm"]
    assert r.predictions == () and with_first.nodes is r.nodes


def test_three_hundred_predictions_do_not_accumulate():
    r = analyzer.analyze(_model(), hw="a100")
    for _ in range(300):
        predict(r, "a100")
    assert len(r.predictions) == 1


def test_assigning_to_a_report_or_prediction_field_raises():
    r = analyzer.analyze(_model(), hw="a100")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.predictions = ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.comparison = None
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.predictions[0].latency_s = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.coverage.nodes = 0
    assert isinstance(r.nodes, tuple) and isinstance(r.predictions, tuple)
    assert isinstance(r.warnings, tuple) and isinstance(r.predictions[0].nodes, tuple)


def test_the_public_calls_still_work():
    r = analyzer.analyze(_model(), hw="a100")
    assert r.predictions[0].latency_s > 0
    assert [x.name for x in r.predictions[0].top(5)] == ["fc1", "act"]   # fc1 moves 2 MB
    assert r.node("act").op == "Relu" and r.predictions[0].node("act").name == "act"


def test_prediction_rows_carry_their_node_index_and_rows_join_by_it():
    r = analyzer.analyze(_model(), hw=["a100", "t4"])
    assert [x.index for x in r.predictions[0].nodes] == [0, 2]   # the view launches nothing
    a100, t4 = r.predictions
    assert a100.for_node(1) is None and a100.for_node(2).name == "act"
    rows = list(r.rows())
    assert [(n.name, [x.name if x else None for x in xs]) for n, xs in rows] == [
        ("fc1", ["fc1", "fc1"]), ("view", [None, None]), ("act", ["act", "act"])]
    assert rows[2][1] == (a100.nodes[1], t4.nodes[1])
    assert "index" not in a100.nodes[0].to_dict()    # JSON keeps names only


def test_comparison_is_a_value_the_report_carries_only_as_a_new_report(tmp_path):
    r = analyzer.analyze(_model(), hw="a100")
    doc = bl.to_baseline(r)
    c = bl.compare(r, doc, 5.0, path="b.json")
    assert r.comparison is None and "baseline_comparison" not in r.to_dict()
    rc = r.with_comparison(c)
    assert rc.comparison is c and rc.to_dict()["baseline_comparison"] == c.to_dict()
    assert r.comparison is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.threshold_pct = 1.0
    assert rc.with_predictions(predict(r, "t4")).comparison is None   # it described old ones


def test_a_report_and_a_prediction_have_a_short_repr():
    """A notebook shows the repr: a line, not the whole value (it was 125 KB for BERT)."""
    from pathlib import Path

    bert = Path(__file__).resolve().parents[1] / "fixtures" / "torch" / "bert.onnx"
    r = analyzer.analyze(str(bert), ["a100", "t4"])
    text = repr(r)
    assert len(text) < 300 and "\n" not in text, text
    assert "168 nodes" in text and f"params={r.totals.params:,}" in text
    assert "a100-80gb-sxm" in text and "t4" in text
    p = repr(r.predictions[0])
    assert len(p) < 200 and "a100-80gb-sxm" in p and f"{r.predictions[0].latency_s:.4g}" in p
