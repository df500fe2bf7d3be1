"""compare_measured: predicted vs measured per onnxruntime kernel, against closed forms on a
hand-made Report/Measured pair (no onnxruntime needed)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from analyzer.measure.onnxruntime import Measured
from analyzer.prediction.predict import NodePrediction, Prediction
from analyzer.report.measured import compare_measured, spearman


def _report(times: dict[str, float], latency_s: float, extra_nodes=()):
    """A report-shaped value: nodes named as ``times`` (graph order), one prediction giving
    each node its time (a node of ``extra_nodes`` launches no kernel)."""
    names = list(times) + list(extra_nodes)
    nodes = tuple(SimpleNamespace(name=n, level="", origin=None) for n in names)
    rows = tuple(NodePrediction(n, t, 0.0, 0.0, 0.0, "compute", 1.0, 0.0, i, n)
                 for i, (n, t) in enumerate(times.items()))
    pred = Prediction(hardware="cpu-x", hardware_name="a cpu", precision="fp32", overlap=True,
                      latency_s=latency_s, bound_share={"compute": 1.0}, nodes=rows, runtime="onnxruntime")
    return SimpleNamespace(nodes=nodes, predictions=(pred,))


def _measured(by_fused, groups, latency_s, unmatched=None):
    return Measured(latency_s=latency_s, node_s=dict(by_fused), node_op={}, by_fused=dict(by_fused),
                    groups=groups, unmatched=dict(unmatched or {}), threads=2, level="default",
                    runs=20)


def test_summary_equals_the_closed_form():
    # predicted 1, 2, 3, 4 s; measured 1, 2.6, 2.4, 4.6 s (one node per kernel)
    r = _report({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}, latency_s=10.0)
    m = _measured({"a": 1.0, "b": 2.6, "c": 2.4, "d": 4.6},
                  {k: [k] for k in "abcd"}, latency_s=12.5)
    c = compare_measured(r, m)
    e = [0.0, 100 * (2 - 2.6) / 2.6, 100 * (3 - 2.4) / 2.4, 100 * (4 - 4.6) / 4.6]
    # = 0, -23.08, +25, -13.04 %
    s = c.summary
    assert s.kernels == 4
    assert s.mape_pct == pytest.approx(sum(map(abs, e)) / 4)           # 15.28 %
    assert s.within_10_pct == 25.0      # only a (0 %)
    assert s.within_20_pct == 50.0      # a and d (-13 %)
    assert s.bias_pct == pytest.approx(sum(e) / 4)
    # measured ranks 0, 2, 1, 3 vs predicted 0, 1, 2, 3: d = 0, 1, 1, 0 -> 1 - 6*2/(4*(16-1)) = 0.8
    assert s.spearman == pytest.approx(0.8)
    assert c.error_pct == pytest.approx(100 * (10.0 - 12.5) / 12.5)   # -20 % end to end
    assert [k.kernel for k in c.top(2)] == ["d", "b"]


def test_fused_kernel_is_one_unit_and_its_time_is_shared_by_predicted_time():
    # onnxruntime ran e and f as one kernel "ef" (8 s); opcost predicted e 1 s, f 3 s
    r = _report({"e": 1.0, "f": 3.0, "g": 2.0}, latency_s=6.0, extra_nodes=("folded",))
    m = _measured({"ef": 8.0, "g": 0.0, "ReorderInput": 0.5}, {"ef": ["e", "f"], "g": ["g"],
                                                              "ReorderInput": []},
                  latency_s=9.0, unmatched={"odd_kernel": 0.25})
    c = compare_measured(r, m)
    (k,) = c.kernels[:1]
    assert (k.kernel, k.nodes, k.predicted_s, k.measured_s) == ("ef", ("e", "f"), 4.0, 8.0)
    assert k.error_pct == pytest.approx(-50.0)
    shares = {n.name: n.measured_s for n in c.nodes}
    assert shares["e"] == pytest.approx(2.0) and shares["f"] == pytest.approx(6.0)   # 8 * 1/4, 8 * 3/4
    assert c.summary.kernels == 1          # g was not measured (0 s): not in the summary
    assert c.unmeasured == ("g",)
    assert dict(c.unjoined) == {"ReorderInput": 0.5, "odd_kernel": 0.25}
    assert c.kernel_sum_s == pytest.approx(8.75)
    assert c.summary.spearman is None      # one kernel: undefined, not a number
    d = json.loads(json.dumps(c.to_dict()))  # valid JSON: no NaN
    assert d["nodes"][0] == {"name": "e", "kernel": "ef", "predicted_s": 1.0, "measured_s": 2.0}
    assert d["summary"]["mape_pct"] == pytest.approx(50.0)


def test_spearman_ties_and_degenerate_cases():
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(math.sqrt(3) / 2)  # average ranks .5 .5 2
    assert spearman([1, 1], [1, 2]) is None and spearman([1], [1]) is None


def test_more_than_one_prediction_is_refused():
    from analyzer.errors import InputSpecError

    r = _report({"a": 1.0}, 1.0)
    r.predictions = r.predictions * 2
    with pytest.raises(InputSpecError, match="one prediction"):
        compare_measured(r, _measured({"a": 1.0}, {"a": ["a"]}, 1.0))
