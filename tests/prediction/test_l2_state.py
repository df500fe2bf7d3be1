"""The L2 state as part of the time definition (``Options.l2``, ``analyzer.prediction.l2_state``).

One memory-bound op, an fp16 Add of two 1024 x 1024 tensors, on the H100 SXM (L2 50 MB, 3,350 GB/s,
132 SMs at 1.98 GHz), whose elementwise class (nvidia-hopper) has l2_hit 0.343, l2_gain 0,
e_bw 1.0, b_half 29,660 B, bpc 90.1, the DRAM and per-SM terms summed (sm_overlap 0):

    bytes B      = 3 x 1024 x 1024 x 2                                  = 6,291,456
    s(B / L2)    = 1 / (1 + (6,291,456 / 50e6)**2) = 1 / 1.0158329      = 0.984414
    warm: dram_bytes = B x (1 - 0.343 x 0.984414)                       = 4,167,121
          dram_s     = (4,167,121 + 29,660) / (3.35e12 x 1.0 x 1)       = 1.25277 us
    cold: dram_bytes = B (cache share 0, cache gain 1)
          dram_s     = (6,291,456 + 29,660) / 3.35e12                   = 1.88690 us
    per-SM (both)    = B / (132 x 90.1 x 1.98e9)                        = 0.267170 us
    cold - warm      = 1.88690 - 1.25277                                = 0.634127 us

The test reads the constants from the prediction (a refit moves the figures above, not the form).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.errors import InputSpecError
from analyzer.prediction.efficiency import kernel_time as eff

GPU = "h100-sxm"


def _add(n: int = 1024):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT16, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n, n])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT16, [n, n])
    g = helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"], name="add")], "add", [x, y], [z])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _pred(l2=None, hw=GPU, **kw):
    return analyzer.analyze(_add(), hw=hw, l2=l2, **kw).predictions[0]


def _consts(p):
    t = p.kernel_table
    c = eff.CLASS_CODE[t.op_class[0]]
    return {n: float(np.asarray(t.class_consts[n])[c]) for n in
            ("e_bw", "b_half_bytes", "l2_hit", "l2_gain", "sm_bw", "sm_overlap")}, t


def test_cold_memory_term_closed_form():
    warm, cold = _pred(), _pred("cold")
    k, t = _consts(cold)
    B = 3 * 1024 * 1024 * 2                                   # 6,291,456 bytes
    bw, units, l2 = t.mem_bw, t.units, 50e6                   # h100-sxm: 3.35e12 B/s, 132 SMs, L2 50 MB
    assert (B, bw, units) == (6291456, 3.35e12, 132.0)
    sm = B / (units * k["sm_bw"])                              # 0.267170 us
    s = 1.0 / (1.0 + (B / l2) ** 2)                           # 0.984414
    dram_warm = (B * (1 - k["l2_hit"] * s) + k["b_half_bytes"]) / (bw * k["e_bw"] * (1 + k["l2_gain"] * s))
    dram_cold = (B + k["b_half_bytes"]) / (bw * k["e_bw"])   # no cache share, no cache gain
    assert k["sm_overlap"] == 0.0                              # memory = dram + per-SM
    np.testing.assert_allclose(warm.kernel_table.memory[0], dram_warm + sm, rtol=1e-5)
    np.testing.assert_allclose(cold.kernel_table.memory[0], dram_cold + sm, rtol=1e-5)
    # the fixed cost and the compute term are the kernel's own: only the memory term moves
    assert cold.kernel_table.fixed[0] == warm.kernel_table.fixed[0]
    assert cold.kernel_table.compute[0] == warm.kernel_table.compute[0]
    # with today's nvidia-hopper elementwise constants (module docstring): 1.25277 -> 1.88690 us
    if (k["l2_hit"], k["l2_gain"], k["e_bw"], k["b_half_bytes"]) == (0.343, 0.0, 1.0, 29660.0):
        np.testing.assert_allclose(dram_cold - dram_warm, 0.634127e-6, rtol=1e-5)
    assert cold.latency_s > warm.latency_s


def test_default_is_warm_bit_for_bit():
    base, warm = _pred(), _pred("warm")
    assert base.latency_s == warm.latency_s == _pred(None).latency_s
    assert base.l2 == warm.l2 == "warm"
    assert base.time_definition == analyzer.prediction.runtimes.RUNTIMES["kernel"].time_definition


def test_cold_is_stated_in_the_definition_notes_json_and_explain():
    cold = _pred("cold")
    e = cold.explain(0)
    assert (e.cache_share, e.cache_gain, e.dram_bytes) == (0.0, 1.0, 3 * 1024 * 1024 * 2)
    assert cold.l2 == "cold" and "L2 cold" in cold.time_definition
    assert any(n.startswith("L2 cold") for n in cold.notes)
    d = json.loads(json.dumps(cold.to_dict()))
    assert d["l2"] == "cold" and "flushed" in d["time_definition"]
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze(_add(), hw=GPU, l2="cold")
    text = render_explain(rep, 0, width=400)
    assert "cache gain 1)" in text and "L2 cold: flushed before each kernel" in text
    assert "assumed: L2 cold" in text


def test_other_kinds_warn_and_keep_their_terms():
    # a TPU's on-chip memories are XLA's, a CPU's cache step its calibration's, an NPU's scratch
    # memory its runtime's: cold does not apply, and says so
    for hw in ("tpu-v5e", "epyc-9654", "ane-a17pro"):
        warm, cold = _pred(hw=hw), _pred("cold", hw=hw)
        assert cold.latency_s == warm.latency_s and cold.l2 == "warm", hw
        assert any("GPU kernels only" in w for w in cold.warnings), cold.warnings
        assert cold.time_definition == warm.time_definition
    # a GPU beside them is cold, each profile by its own kind
    both = analyzer.analyze(_add(), hw=[GPU, "epyc-9654"], l2="cold").predictions
    assert [p.l2 for p in both] == ["cold", "warm"]
    assert both[0].latency_s == _pred("cold").latency_s


def test_a_bad_value_is_a_clear_error():
    with pytest.raises(InputSpecError, match="unknown L2 state 'tepid' for l2; choose from warm, cold"):
        _pred("tepid")
    with pytest.raises(InputSpecError, match="choose from warm, cold"):
        analyzer.CostModel(GPU, l2="hot")
    with pytest.raises(InputSpecError, match="choose from warm, cold"):
        analyzer.Options(l2="flushed")


def test_search_scores_equal_analyze_cold():
    # the search's fast path (kernel entries learned from real lowerings) prices the same cold L2
    model = _add().SerializeToString()
    for l2 in (None, "cold"):
        cm = analyzer.CostModel(GPU, l2=l2)
        got = [cm.score([model, model]) for _ in range(3)]   # (learned, then kernel rows rebuilt)
        want = _pred(l2).latency_s
        np.testing.assert_allclose(np.asarray(got, np.float64).ravel(), want, rtol=1e-6)
        assert cm._rows.stats["lowered"] >= 1 and cm._rows.stats["mismatch"] == 0
    assert _pred("cold").latency_s != _pred().latency_s
    # score_dims (counts as polynomials in the dims) prices the same cold kernels
    x, y, z = (helper.make_tensor_value_info(n, TensorProto.FLOAT16, ["n", 1024]) for n in "xyz")
    sym = helper.make_model(helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"], name="add")], "g",
                                              [x, y], [z]), opset_imports=[helper.make_opsetid("", 17)])
    got = analyzer.CostModel(GPU, l2="cold").score_dims(sym, {"n": [256, 1024, 4096]})
    want = [analyzer.analyze(sym, hw=GPU, dims={"n": n}, l2="cold").predictions[0].latency_s for n in (256, 1024, 4096)]
    np.testing.assert_allclose(np.ravel(got), want, rtol=1e-6)


def _linear(n: int = 256):
    from onnx import numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, n])
    w = numpy_helper.from_array(np.zeros((n, n), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Relu", ["h"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "lin", [x], [y], initializer=[w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_sensitivity_and_training_follow_the_state():
    rep = analyzer.analyze(_add(), hw=GPU, l2="cold")
    s = analyzer.sensitivity(rep)       # raises if its latency function disagrees with the report
    assert s.profiles[0].latency_s == rep.predictions[0].latency_s
    # the backward's kernels are priced under the forward's L2 state
    warm, cold = (analyzer.analyze(_linear(), hw=GPU, l2=l2, train=True).training.steps[0] for l2 in (None, "cold"))
    assert warm.backward_kernels == cold.backward_kernels > 0
    assert cold.backward_s > warm.backward_s and cold.forward_s > warm.forward_s
