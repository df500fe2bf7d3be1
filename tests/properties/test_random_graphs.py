"""Properties of random checker-valid graphs (``graphs.py``): they analyse with every node
costed, totals are the sum of the nodes and match the closed-form MACs, params are the weights
consumed, counts are linear in a symbolic batch, predictions are monotone in bandwidth and peak.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings

import analyzer
from analyzer.counting.cost import COUNT_FIELDS
from graphs import graphs

CI = settings.get_profile("opcost-ci")


def _analyze(spec, batch):
    return analyzer.analyze(spec.model, dims={"batch": batch})


@settings(CI)
@given(graphs())
def test_random_graphs_analyse_and_totals_are_the_sum_of_nodes(spec):
    r = _analyze(spec, 3)
    assert r.coverage.uncosted == (), spec.steps
    for f in COUNT_FIELDS:
        assert getattr(r.totals, f) == sum(getattr(n.cost, f) for n in r.nodes), f
    assert r.totals.mac_flops == 3 * spec.mac_per_row, spec.steps
    assert r.totals.params == spec.params, spec.steps


@settings(CI)
@given(graphs())
def test_counts_are_linear_in_a_symbolic_batch(spec):
    c1, c2, c5 = (_analyze(spec, b).totals for b in (1, 2, 5))
    assert c1.params == c2.params == c5.params  # weights do not grow with the batch
    assert c1.weight_bytes == c2.weight_bytes == c5.weight_bytes
    for f in ("mac_flops", "vector_flops", "transcendentals", "activation_bytes_read",
              "activation_bytes_written"):
        a, b, e = getattr(c1, f), getattr(c2, f), getattr(c5, f)
        assert e - b == 3 * (b - a), (f, a, b, e, spec.steps)  # a + k*(batch - 1)


@pytest.fixture(scope="module")
def profile():
    import hardware_db

    return hardware_db.get("a100-80gb-sxm")


@settings(CI, max_examples=10)
@given(graphs())
def test_predictions_are_monotone_in_bandwidth_and_peak(profile, spec):
    from analyzer.prediction.predict import predict

    r = _analyze(spec, 4)
    faster_mem = replace(profile, mem_bw_gbs=profile.mem_bw_gbs * 2)
    faster_math = replace(profile, matrix_tflops={k: v * 2 for k, v in profile.matrix_tflops.items()},
                          vector_tflops={k: v * 2 for k, v in profile.vector_tflops.items()})
    base, mem, math = (predict(r, [p])[0].latency_s for p in (profile, faster_mem, faster_math))
    assert base >= 0  # 0 only for a graph of views (Reshape): they move no bytes
    assert mem <= base * (1 + 1e-9) and math <= base * (1 + 1e-9), (base, mem, math, spec.steps)
    slower = replace(profile, mem_bw_gbs=profile.mem_bw_gbs / 4)
    assert predict(r, [slower])[0].latency_s >= base * (1 - 1e-9)
