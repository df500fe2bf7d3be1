"""The ``qnn`` runtime's placement (analyzer/prediction/accelerators/qnn_fallback.py ``place``): which kernels
fall back to the phone's CPU, what a CPU segment costs (closed forms beside the arithmetic), the
note that says so (op names escaped: names are data), ``--explain``'s factors, and a graph with no
fallback op predicted exactly as without the placement."""

from __future__ import annotations

import dataclasses
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import hardware_db
from analyzer.prediction import runtimes
from analyzer.prediction.accelerators import qnn_fallback
from analyzer.prediction.predict import predict
from analyzer.prediction.targets import Target

F = TensorProto.FLOAT
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ODD = "Evil\x1b[2J\u202e"   # an op type with a terminal escape and a right-to-left override


def _graph(middle: list, extra_opsets=(), x_type=F):
    """x (1 x 8 x 16 x 16) -> Conv -> ``middle`` (reads a, writes b) -> Conv -> y, 3x3 weights."""
    import analyzer

    w = numpy_helper.from_array(np.full((8, 8, 3, 3), 0.1, np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], name="c1", pads=[1, 1, 1, 1]), *middle,
             helper.make_node("Conv", ["b", "w"], ["y"], name="c2", pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", x_type, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", F, [1, 8, 16, 16])], initializer=[w],
                          value_info=[helper.make_tensor_value_info("b", F, [1, 8, 16, 16])])
    opsets = [helper.make_opsetid("", 17), *(helper.make_opsetid(d, 1) for d in extra_opsets)]
    return analyzer.analyze(helper.make_model(g, opset_imports=opsets).SerializeToString())


def _predict(report, runtime="qnn", pid="hexagon-sd8gen2", precision="fp16"):
    (p,) = predict(report, [Target(hardware_db.get(pid), runtime if not isinstance(runtime, str)
                                   else runtimes.get(runtime), "requested")], precision=precision)
    return p


def _family_scalar(family: str, key: str) -> float:
    with open(os.path.join(ROOT, "hardware_db", "efficiency", f"{family}.json"), encoding="utf-8") as f:
        return float(json.load(f)["scalars"][key])


def _node(report, name):
    return next(i for i, n in enumerate(report.nodes) if n.name == name)


def test_one_unsupported_op_between_two_convs_is_one_segment_with_two_switches():
    # Erf alone (no GELU around it: QNN has no Erf) between two convolutions: 1 of 3 kernels on the
    # 8 Gen 2's Cortex-X3, 1 segment, 2 switches (HTP -> CPU, CPU -> HTP).
    # compute: Erf's 1 x 8 x 16 x 16 = 2,048 transcendentals x trans_weight 1 / (3.2e9 Hz x 32 FLOP/cycle
    #   = 102.4e9 FLOP/s) = 2.0e-8 s
    # hand-over (in its fixed seconds): 2 switches x run_fixed_s / 2 + boundary bytes / 67.2e9 B/s; the
    #   bytes: its input a + its output b at fp16, 2 x 2,048 x 2 B = 8,192 B
    rep = _graph([helper.make_node("Erf", ["a"], ["b"], name="erf")])
    rt = runtimes.get("qnn")
    p = _predict(rep, rt)
    base = _predict(rep, dataclasses.replace(rt, placement=None))
    i = _node(rep, "erf")
    e, e0 = p.explain(i), base.explain(i)
    assert e.compute_s == pytest.approx(2048 / (3.2e9 * 32), rel=1e-9)
    run_fixed = _family_scalar("qualcomm-hexagon-v73", "run_fixed_s")
    assert e.fixed_s - e0.fixed_s == pytest.approx(2 * run_fixed / 2 + 8192 / 67.2e9, rel=1e-6)
    assert e.placed.switches == 2 and e.placed.moved_bytes == 8192 and e.placed.rate == 102.4e9
    assert e.onchip_bytes == 0.0            # nothing of a CPU kernel kept in the NPU's VTCM
    # the convolutions are untouched
    for name in ("c1", "c2"):
        assert p.explain(_node(rep, name)).time_s == base.explain(_node(rep, name)).time_s
    assert len(p.kernel_table.placed) == 1


def test_note_says_kernels_segments_and_ops():
    rep = _graph([helper.make_node("Erf", ["a"], ["b"], name="erf")])
    (note,) = [n for n in _predict(rep).notes if "fall back" in n]
    assert note.startswith("qnn: 1 of 3 kernels fall back to the CPU (Cortex-X3 prime core) in 1 segment(s) "
                           "(ops the HTP does not run: 'Erf'); each at 102.4 GFLOP/s")
    assert "2 switch(es)" in note and "0.00819 MB of boundary tensors" in note


def test_custom_op_falls_back_and_its_name_is_escaped():
    rep = _graph([helper.make_node(ODD, ["a"], ["b"], name="odd", domain="my.ops")], extra_opsets=("my.ops",))
    (note,) = [n for n in _predict(rep).notes if "fall back" in n]
    assert "(ops the HTP does not run: 'Evil\\x1b[2J\\u202e')" in note
    assert "\x1b" not in note and "\u202e" not in note
    assert _predict(rep).explain(_node(rep, "odd")).placed.why == "custom op: 'Evil\\x1b[2J\\u202e'"


def test_explain_shows_the_placement_factors():
    from analyzer.render.explain import render_explain

    rep = _graph([helper.make_node("Erf", ["a"], ["b"], name="erf")])
    rep = dataclasses.replace(rep, predictions=(_predict(rep),))
    text = render_explain(rep, _node(rep, "erf"))
    assert "placed on the CPU (Cortex-X3 prime core) (Erf alone: 'Erf'): matrix + vector = work 2.05 K / rate " \
           "102 GFLOP/s = 20 ns per launch" in text
    assert "of which hand-over" in text and "= 2 switch(es) x" in text and "boundary tensors 8.19 KB" in text


def test_gelu_erf_stays_on_the_htp_and_a_graph_without_fallback_is_unchanged():
    # x / sqrt(2) -> Erf -> + 1 -> * x -> * 0.5: the fusion's GELU kernel, run as QNN's Gelu
    k = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("s2", 1.4142135), ("one", 1.0),
                                                                          ("half", 0.5))]
    gelu = [helper.make_node("Div", ["a", "s2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["f"]), helper.make_node("Mul", ["a", "f"], ["g"]),
            helper.make_node("Mul", ["g", "half"], ["b"])]
    import analyzer

    w = numpy_helper.from_array(np.full((8, 8, 3, 3), 0.1, np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["a"], pads=[1, 1, 1, 1]), *gelu,
             helper.make_node("Conv", ["b", "w"], ["y"], pads=[1, 1, 1, 1])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", F, [1, 8, 16, 16])], initializer=[w, *k])
    rep = analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    for runtime in ("qnn", "qnn-dlc", "qnn-tflite"):
        for precision in ("fp16", "int8"):
            rt = runtimes.get(runtime)
            p = _predict(rep, rt, precision=precision)
            q = _predict(rep, dataclasses.replace(rt, placement=None), precision=precision)
            assert not p.kernel_table.placed
            assert p.latency_s == q.latency_s and p.notes == q.notes   # bit-identical


def test_segments_at_the_ends_pay_one_switch_and_two_fallbacks_make_two_segments():
    # Erf, Conv, Erf, Conv, Erf on the chain: 3 segments of 1 kernel; the first and last pay 1 switch
    # each (they start / end the model), the middle one 2: 4 switches in all
    import analyzer

    w = numpy_helper.from_array(np.full((8, 8, 3, 3), 0.1, np.float32), "w")
    nodes = [helper.make_node("Erf", ["x"], ["a"]), helper.make_node("Conv", ["a", "w"], ["b"], pads=[1, 1, 1, 1]),
             helper.make_node("Erf", ["b"], ["c"]), helper.make_node("Conv", ["c", "w"], ["d"], pads=[1, 1, 1, 1]),
             helper.make_node("Erf", ["d"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 8, 16, 16])],
                          [helper.make_tensor_value_info("y", F, [1, 8, 16, 16])], initializer=[w])
    rep = analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    p = _predict(rep, pid="hexagon-sd8gen3")
    placed = p.kernel_table.placed
    assert sorted(pl.switches for pl in placed.values()) == [1, 1, 2]
    assert {pl.rate for pl in placed.values()} == {3.3e9 * 32}          # the 8 Gen 3's Cortex-X4: 105.6e9
    (note,) = [n for n in p.notes if "fall back" in n]
    assert "3 of 5 kernels fall back to the CPU (Cortex-X4 prime core) in 3 segment(s)" in note
    assert "4 switch(es)" in note


def _fnode(op, domain=""):
    return SimpleNamespace(op=op, domain=domain)


def _spec(dtype):
    return SimpleNamespace(in_specs=(SimpleNamespace(dtype=dtype),))


def test_fallback_rules_as_data():
    assert qnn_fallback.fallback_rule(_fnode("Conv"), None, True) is None
    assert qnn_fallback.fallback_rule(_fnode("Conv", "my.ops"), None, True) == "custom op"
    assert qnn_fallback.fallback_rule(_fnode("Hardmax"), None, True) == "no QNN op"
    assert qnn_fallback.fallback_rule(_fnode("Erf"), None, True) == "Erf alone"
    assert qnn_fallback.fallback_rule(_fnode("Erf"), None, False) is None
    assert qnn_fallback.fallback_rule(_fnode("IsNaN"), _spec("float16"), True) is None
    assert qnn_fallback.fallback_rule(_fnode("IsNaN"), _spec("float64"), True) == "IsNaN not float"
    # every rule names its case and a source
    assert all(case and src.count("http") >= 1 for case, src in qnn_fallback.FALLBACK_RULES.values())
    assert len(qnn_fallback.QNN_OPS) == 104


def test_switch_cost_is_half_the_graph_execute_cost_of_the_precision():
    arrays = {"run_fixed_s": 4e-4, "run_fixed_int8_s": 2e-4}
    kern = SimpleNamespace(arrays=arrays, precision="int8")
    assert qnn_fallback.switch_s(kern) == 1e-4
    kern.precision = "fp16"
    assert qnn_fallback.switch_s(kern) == 2e-4
    assert qnn_fallback.cpu_flops(dataclasses.replace(hardware_db.get("hexagon-sd8gen2"), id="my-phone")) == \
        (102.4e9, "CPU (Cortex-X3 prime core, my-phone states none: the 8 Gen 2's)")
