"""The eager stream (``runtimes.stream_times``, runtime ``eager``) against closed forms, and the
per-op definition (``eager-op``) with its own per-call host table.

Stream: ``host_end_i = host_end_{i-1} + h_i``, ``dev_start_i = max(host_end_i, dev_end_{i-1})``,
``dev_end_i = dev_start_i + k_i``; wall-clock ``dev_end_n``.  Per op: ``sum (h_i + k_i)``.

The profile is tests/fixtures/hw/round-gpu.toml (datasheet constants, no class floor, 2 us per
launch, vector fp32 10 TFLOP/s, 1000 GB/s); the stream's host issue cost on a GPU: 21 us per
matmul, 12 us per other op (runtimes.EAGER_DISPATCH_US); eager-op's host time per call: 44.0 us per
MatMul (nn.Linear's figure), 25.9 us per Relu (opcost's elementwise class) (runtimes.EAGER_OP_CALL_US).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import helper
from onnx_builders import graph, weight

import analyzer
from analyzer.prediction.runtimes import RUNTIMES, stream_times

ROUND_GPU = str(Path(__file__).resolve().parents[1] / "fixtures" / "hw" / "round-gpu.toml")
H_MM, H_EW = 21e-6, 12e-6      # eager stream: issue cost per op
O_MM, O_EW = 44.0e-6, 25.9e-6   # eager-op: host time per call timed alone


def _loop(h, k):
    """The recurrence itself, one kernel at a time (the reference the prefix-max must equal)."""
    host_end = dev_end = 0.0
    ends, gaps = [], []
    for hi, ki in zip(h, k):
        host_end += hi
        gaps.append(max(0.0, host_end - dev_end))
        dev_end = max(host_end, dev_end) + ki
        ends.append(dev_end)
    return np.array(ends), np.array(gaps)


def test_host_bound_chain_is_host_sum_plus_last_kernel():
    # h = 10 > k = 2: dev_end = 12, 22, 32 = sum h (30) + last k (2); gaps 10, 10-2, 10-2
    end, gap = stream_times([10.0, 10.0, 10.0], [2.0, 2.0, 2.0])
    assert end.tolist() == [12.0, 22.0, 32.0]
    assert gap.tolist() == [10.0, 8.0, 8.0]


def test_device_bound_chain_is_first_host_plus_kernel_sum():
    # k = 5 > h = 1: dev_end = 1 + 5, 6 + 5, 11 + 5 = h_1 (1) + sum k (15) = 16; only the first
    # kernel waits for the host
    end, gap = stream_times([1.0, 1.0, 1.0], [5.0, 5.0, 5.0])
    assert end.tolist() == [6.0, 11.0, 16.0]
    assert gap.tolist() == [1.0, 0.0, 0.0]


def test_mixed_chain():
    # h = 3, 1, 8, 1; k = 2, 6, 1, 4. host_end = 3, 4, 12, 13.
    # dev: [3, 5], [max(4, 5) = 5, 11], [max(12, 11) = 12, 13], [max(13, 13) = 13, 17]: wall 17
    # gaps: 3, 0, 12 - 11 = 1, 13 - 13 = 0; exposed = gap + k = 5, 6, 2, 4 (sums to 17)
    end, gap = stream_times([3.0, 1.0, 8.0, 1.0], [2.0, 6.0, 1.0, 4.0])
    assert end.tolist() == [5.0, 11.0, 13.0, 17.0]
    assert gap.tolist() == [3.0, 0.0, 1.0, 0.0]


def test_prefix_max_equals_the_recurrence_over_profiles():
    rng = np.random.default_rng(0)
    h = rng.exponential(1.0, (3, 500))
    k = rng.exponential(1.0, (3, 500)) * np.array([[0.2], [1.0], [5.0]])  # host-, mixed, device-bound
    end, gap = stream_times(h, k)
    for p in range(3):
        ref_end, ref_gap = _loop(h[p], k[p])
        np.testing.assert_allclose(end[p], ref_end, rtol=1e-12)
        np.testing.assert_allclose(gap[p], ref_gap, rtol=1e-9, atol=1e-12)
    # exposed times telescope to the wall-clock
    np.testing.assert_allclose((gap + k).sum(axis=1), end[:, -1], rtol=1e-12)


def test_empty_stream():
    end, gap = stream_times(np.zeros((2, 0)), np.zeros((2, 0)))
    assert end.shape == gap.shape == (2, 0)


def _chain(ops: list[str], n: int = 512):
    """x [n, n] through ``ops`` in order: "mm" a MatMul with an [n, n] weight, "relu" a Relu."""
    nodes, inits, prev = [], {}, "x"
    for i, op in enumerate(ops):
        out = f"t{i}" if i < len(ops) - 1 else "y"
        if op == "mm":
            inits[f"w{i}"] = weight(n, n)
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [out], name=f"mm{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"relu{i}"))
        prev = out
    return graph(nodes, {"x": (n, n)}, ["y"], inits)


def _three(model):
    rep = analyzer.analyze(model, hw=ROUND_GPU, runtime="kernel")
    k = [r.time_s for r in rep.predictions[0].nodes]   # device time per kernel, no host
    s = analyzer.analyze(model, hw=ROUND_GPU, runtime="eager").predictions[0]
    o = analyzer.analyze(model, hw=ROUND_GPU, runtime="eager-op").predictions[0]
    return k, s, o


def test_host_bound_model():
    # Relu of [64, 64] fp32: 2 us launch + 32 KiB / 1000 GB/s = 2.033 us < 12 us dispatch
    k, s, o = _three(_chain(["relu"] * 4, n=64))
    assert max(k) < H_EW
    assert s.latency_s == pytest.approx(4 * H_EW + k[-1], rel=1e-6)          # sum h + last k
    assert o.latency_s == pytest.approx(4 * O_EW + sum(k), rel=1e-6)        # sum (h + k)
    assert sum(r.time_s for r in s.nodes) == pytest.approx(s.latency_s, rel=1e-6)
    # the first row waits 12 us for the host; the others 12 us less the kernel before them
    assert s.nodes[0].time_s == pytest.approx(H_EW + k[0], rel=1e-6)
    assert s.nodes[1].time_s == pytest.approx(H_EW - k[0] + k[1], rel=1e-6)
    assert {r.bound for r in s.nodes} == {"overhead"}   # a 10-12 us gap + 2 us launch vs 33 ns
    assert s.nodes[1].overhead_s == pytest.approx(2e-6 + H_EW - k[0], rel=1e-6)
    assert s.bound_share["overhead"] == pytest.approx(1.0)


def test_device_bound_model():
    # MatMul 512^3 fp32 on the FMA units: 2 x 512^3 / 10 TFLOP/s = 26.8 us + 2 us launch > 21 us
    k, s, o = _three(_chain(["mm"] * 3))
    assert min(k) > H_MM
    assert s.latency_s == pytest.approx(H_MM + sum(k), rel=1e-6)             # h_1 + sum k
    assert o.latency_s == pytest.approx(3 * O_MM + sum(k), rel=1e-6)
    assert sum(r.time_s for r in s.nodes) == pytest.approx(s.latency_s, rel=1e-6)
    # only the first kernel's start waited for the host; the others run back to back
    assert [r.time_s for r in s.nodes[1:]] == pytest.approx(k[1:], rel=1e-6)
    assert [r.bound for r in s.nodes[1:]] == ["compute", "compute"]


def test_mixed_model():
    # mm (h 21, k K) -> relu (12, r) -> relu (12, r) -> mm (21, K), K ~ 28.8 us, r ~ 3.05 us:
    # host_end 21, 33, 45, 66; device: mm [21, 21 + K], relus back to back until 21 + K + 2r
    # (~56.9 us, after host_end 45: no gap), the last mm waits for the host until 66:
    # wall = 66 + K = sum h + last k; its row's gap 66 - (21 + K + 2r)
    k, s, o = _three(_chain(["mm", "relu", "relu", "mm"]))
    K, r = k[0], k[1]
    assert 21e-6 + K + 2 * r > 45e-6 and 21e-6 + K + 2 * r < 66e-6
    assert s.latency_s == pytest.approx(2 * H_MM + 2 * H_EW + K, rel=1e-6)
    assert s.nodes[1].time_s == pytest.approx(r, rel=1e-6)
    assert s.nodes[3].time_s == pytest.approx(66e-6 - (21e-6 + K + 2 * r) + K, rel=1e-6)
    # its overhead, 2 us launch + the ~10 us gap, is under its 26.8 us of compute
    assert s.nodes[3].bound == "compute"
    assert s.nodes[3].overhead_s == pytest.approx(2e-6 + 66e-6 - (21e-6 + K + 2 * r), rel=1e-6)
    assert sum(r.time_s for r in s.nodes) == pytest.approx(s.latency_s, rel=1e-6)
    assert sum(r.share for r in s.nodes) == pytest.approx(1.0)
    assert o.latency_s == pytest.approx(2 * O_MM + 2 * O_EW + sum(k), rel=1e-6)


@pytest.mark.parametrize("ops,h,h_op", [(["mm"], H_MM, O_MM), (["relu"], H_EW, O_EW)])
def test_one_op_model_under_both_definitions(ops, h, h_op):
    # one kernel: the stream's h_1 + k_1 and the per-op h + k, each with its own host figure
    # (MatMul: 21 us issued in a stream, 44.0 us timed alone; Relu: 12 and 25.9 us)
    k, s, o = _three(_chain(ops))
    assert s.latency_s == pytest.approx(h + k[0], rel=1e-6)
    assert o.latency_s == pytest.approx(h_op + k[0], rel=1e-6)
    assert o.nodes[0].time_s - s.nodes[0].time_s == pytest.approx(h_op - h, rel=1e-6)


def test_each_prediction_states_its_time_definition():
    m = _chain(["mm", "relu"])
    for rt in ("eager", "eager-op"):
        p = analyzer.analyze(m, hw=ROUND_GPU, runtime=rt).predictions[0]
        assert p.time_definition == RUNTIMES[rt].time_definition
        assert json.loads(json.dumps(p.to_dict()))["time_definition"] == RUNTIMES[rt].time_definition
    assert RUNTIMES["eager"].stream and not RUNTIMES["eager-op"].stream
    assert RUNTIMES["eager"].time_definition != RUNTIMES["eager-op"].time_definition


def test_explain_shows_the_stream_terms():
    m = _chain(["mm", "relu", "relu", "mm"])
    rep = analyzer.analyze(m, hw=ROUND_GPU, runtime="eager")
    p = rep.predictions[0]
    e = p.explain(3)
    k, _, _ = _three(m)
    # the kernel's own time keeps its host dispatch; the stream's exposed time is device + gap
    assert e.stream and e.host_s == pytest.approx(H_MM, rel=1e-6)
    assert e.time_s - e.host_s == pytest.approx(k[3], rel=1e-6)
    assert e.stream_s == pytest.approx(p.nodes[3].time_s, rel=1e-6)
    from analyzer.render.explain import render_explain

    text = render_explain(rep, 3)
    assert "stream" in text and "exposed host gap" in text
    o = analyzer.analyze(m, hw=ROUND_GPU, runtime="eager-op")
    assert not o.predictions[0].explain(3).stream
    assert "exposed host gap" not in render_explain(o, 3)


def test_accuracy_bench_times_single_ops_with_the_per_op_definition():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "bench"))
    try:
        import accuracy
    finally:
        sys.path.pop(0)
    assert accuracy.RUNTIME_OF["eager"] == "eager-op"
