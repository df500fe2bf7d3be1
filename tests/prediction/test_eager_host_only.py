"""Host-only ops of the eager runtimes: a view eager PyTorch runs as an aten op that launches no
kernel (``FusionPlan.host_only``) costs host time h_v = HOST_ONLY_RATIO x the elementwise
dispatch (runtimes.py) and no device time.

Stream closed forms (runtimes.stream_times): a host-bound chain (every kernel's h >= k) takes
``sum h + k_last``, so each view adds exactly h_v; a device-bound one takes ``h_1 + sum k``,
so a view issued while the device is still busy adds nothing.  Per op (``eager-op``): ``sum (h
+ k)`` plus h_v per view.

The profile is tests/fixtures/hw/round-gpu.toml (datasheet constants, no class floor, 2 us per
launch, vector fp32 10 TFLOP/s, 1000 GB/s); the eager stream's dispatch on a GPU: 21 us per
matmul, 12 us per other op, so h_v = 0.81 x 12 us = 9.72 us; eager-op's host time per call of a
small elementwise op 25.9 us (runtimes.EAGER_OP_CALL_US), so its h_v = 0.81 x 25.9 us = 20.979 us.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from onnx import helper
from onnx_builders import graph, weight

import analyzer
from analyzer.prediction.runtimes import EAGER_DISPATCH_DEFAULT_US, EAGER_OP_CALL_US, HOST_ONLY_RATIO

ROOT = Path(__file__).resolve().parents[1]
ROUND_GPU = str(ROOT / "fixtures" / "hw" / "round-gpu.toml")
BERT = str(ROOT / "fixtures" / "torch" / "bert.onnx")
H_V = HOST_ONLY_RATIO * EAGER_DISPATCH_DEFAULT_US * 1e-6    # 0.81 x 12 us = 9.72 us
H_V_OP = HOST_ONLY_RATIO * EAGER_OP_CALL_US["elementwise"] * 1e-6    # 0.81 x 25.9 us = 20.979 us


def _shape(*dims):
    return np.array(dims, dtype=np.int64)


def _host_bound(views: bool):
    """x [64, 64] -> MatMul(W) -> [Reshape to [64, 8, 8] -> Transpose (1, 0, 2)] -> Add(C) -> y.
    The Add reads the same bytes either way (its input strided or not), so its device time is
    the same; MatMul: 2 x 64^3 = 524 kFLOP / 10 TFLOP/s = 52 ns + 2 us launch < 21 us dispatch."""
    n = 64
    if views:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["t0"], name="mm"),
                 helper.make_node("Reshape", ["t0", "s"], ["t1"], name="view"),
                 helper.make_node("Transpose", ["t1"], ["t2"], name="transpose", perm=[1, 0, 2]),
                 helper.make_node("Add", ["t2", "c"], ["y"], name="add")]
        inits = {"w": weight(n, n), "s": _shape(64, 8, 8), "c": weight(8, 64, 8)}
    else:
        nodes = [helper.make_node("MatMul", ["x", "w"], ["t0"], name="mm"),
                 helper.make_node("Add", ["t0", "c"], ["y"], name="add")]
        inits = {"w": weight(n, n), "c": weight(n, n)}
    return graph(nodes, {"x": (n, n)}, ["y"], inits)


def _device_bound(views: bool):
    """x [1024, 1024] -> MatMul -> [Reshape to [512, 2048] -> Reshape back] -> MatMul -> y.
    Each MatMul: 2 x 1024^3 / 10 TFLOP/s = 215 us on the device >> 21 us + 2 x 9.72 us host."""
    n = 1024
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["t0"], name="mm0")]
    inits = {"w0": weight(n, n), "w1": weight(n, n)}
    prev = "t0"
    if views:
        nodes += [helper.make_node("Reshape", ["t0", "s0"], ["t1"], name="view0"),
                  helper.make_node("Reshape", ["t1", "s1"], ["t2"], name="view1")]
        inits.update(s0=_shape(512, 2048), s1=_shape(n, n))
        prev = "t2"
    nodes.append(helper.make_node("MatMul", [prev, "w1"], ["y"], name="mm1"))
    return graph(nodes, {"x": (n, n)}, ["y"], inits)


def _pred(model, runtime):
    return analyzer.analyze(model, hw=ROUND_GPU, runtime=runtime).predictions[0]


def test_views_add_their_host_time_to_a_host_bound_chain():
    with_v, without = _pred(_host_bound(True), "eager"), _pred(_host_bound(False), "eager")
    assert with_v.host_ops == 2 and without.host_ops == 0
    assert with_v.launches == without.launches == 2          # kernels only: mm, add
    # without: h_mm + h_add + k_add = 21 + 12 us + k_add; with: + 2 x 9.72 us = 19.44 us
    assert with_v.latency_s - without.latency_s == pytest.approx(2 * H_V, rel=1e-9)
    rows = {r.name: r for r in with_v.nodes}
    # the Reshape waits for no kernel it could hide behind: mm ended at 21 us + 2.05 us, the
    # Reshape's host ends at 30.72 us -> its row 30.72 - 23.05 = 7.67 us = h_v - k_mm; the
    # Transpose's whole 9.72 us; the Add waits its own 12 us
    k_mm = rows["mm"].time_s - 21e-6
    assert rows["view"].time_s == pytest.approx(H_V - k_mm, rel=1e-9)
    assert rows["transpose"].time_s == pytest.approx(H_V, rel=1e-9)
    assert rows["view"].kernel == rows["transpose"].kernel == ""
    assert {rows["view"].bound, rows["transpose"].bound} == {"overhead"}
    assert sum(r.time_s for r in with_v.nodes) == pytest.approx(with_v.latency_s, rel=1e-12)
    assert sum(r.share for r in with_v.nodes) == pytest.approx(1.0)


def test_views_add_nothing_to_a_device_bound_chain():
    with_v, without = _pred(_device_bound(True), "eager"), _pred(_device_bound(False), "eager")
    assert with_v.host_ops == 2
    # h_mm + sum k both ways: the views' host time (21 + 9.72 + 9.72 + 21 us of issue) ends
    # long before the first MatMul's 215 us
    assert with_v.latency_s == pytest.approx(without.latency_s, rel=1e-12)
    assert [r.time_s for r in with_v.nodes if r.kernel == ""] == [0.0, 0.0]


@pytest.mark.parametrize("model", [_host_bound, _device_bound])
def test_eager_op_adds_each_views_host_time(model):
    # the per-op sum: sum (h + k) + h_v per view, host- or device-bound alike
    with_v, without = _pred(model(True), "eager-op"), _pred(model(False), "eager-op")
    assert H_V_OP == pytest.approx(20.979e-6, rel=1e-12)
    assert with_v.latency_s - without.latency_s == pytest.approx(2 * H_V_OP, rel=1e-6)
    assert [r.time_s for r in with_v.nodes if r.kernel == ""] == pytest.approx([H_V_OP, H_V_OP], rel=1e-12)


def test_kernel_runtime_has_no_host_only_ops():
    p = _pred(_host_bound(True), "kernel")
    assert p.host_ops == 0 and all(r.kernel for r in p.nodes)
    # one kernel per node that does work: the Transpose moves bytes (a kernel), the Reshape
    # moves none (no row)
    assert [r.name for r in p.nodes] == ["mm", "transpose", "add"]
    assert sum(r.time_s for r in p.nodes) == pytest.approx(p.latency_s, rel=1e-12)
    # bert under the kernel runtime as before host-only ops existed (with today's constants: the
    # attention's fp32 bmm on the FMA units on its whole tile with k_fill, bgemm_simt, the H100 inheriting
    # the Ampere family's own FMA-unit sets, bench/family_simt.py, at the Hopper FP32 factor 0.852 of its
    # listed peak, bench/fit_sustained_gemm.py; its fp32 LayerNorm, softmax and GELU on the per-element sets;
    # the elementwise and norm floors of the refit files; its adds and GELUs on the Hopper elementwise
    # and activation sets fitted on the H200's torch 2.11 rows, bench/data/hopper_mem; its embedding
    # gathers with the id load before the row load, prediction.gather_latency; its LayerNorms and
    # softmaxes on Hopper's row sets with the row term, bench/hopper_rows.py, and their cold start where
    # a working set is not in the L2, bench/hopper_cold_start.py): 149.24801973847934 us
    assert analyzer.analyze(BERT, hw="h100", runtime="kernel").predictions[0].latency_s == \
        pytest.approx(149.24801973847934e-6, rel=1e-12)


def test_bert_host_only_ops():
    rep = analyzer.analyze(BERT, hw="h100", runtime="eager")
    p = rep.predictions[0]
    host = [rep.nodes[r.index] for r in p.nodes if r.kernel == ""]
    # per layer (2): the Q, K, V projections' view to [1, 32, 2, 64] and transpose(1, 2) (6), the
    # context's permute back (1); its reshape to [1, 32, 128] is copied (a kernel, not here).
    # The mask: Flatten, two Reshapes, a Cast to its own dtype (bool -> bool) and an Expand of
    # the bool mask (5); the pooler's x[:, 0] (a Gather of a scalar: select, 1).  2 x 7 + 5 + 1.
    # Not counted: the 20 folded Identity nodes and the folded shape arithmetic (Shape...).
    assert p.host_ops == len(host) == 20
    assert Counter(n.op for n in host) == {"Reshape": 8, "Transpose": 8, "Flatten": 1,
                                           "Cast": 1, "Expand": 1, "Gather": 1}
    # kernels, host-only ops not among them: 44 of the graph's own nodes + the folded nodes eager
    # recomputes (eager_folded): GatherElements, 2 embedding lookups, ConstantOfShape,
    # GreaterOrEqual, And (6) + 2 integer index Constants x (arange + add) (4) = 54
    assert p.launches == 54
    assert json.loads(json.dumps(p.to_dict()))["host_ops"] == 20
    assert any("20 host-only ops" in n for n in p.notes)


def test_explain_shows_a_views_host_time():
    from analyzer.render.explain import render_explain

    for rt, shown, h_v, d in (("eager", "exposed on the eager stream", H_V, 12e-6),
                              ("eager-op", "added to the per-op sum", H_V_OP, 25.9e-6)):
        rep = analyzer.analyze(_host_bound(True), hw=ROUND_GPU, runtime=rt)
        i = next(r.index for r in rep.predictions[0].nodes if r.name == "transpose")
        h = rep.predictions[0].host_step(i)
        assert h.host_s == pytest.approx(h_v, rel=1e-12) and h.runs == 1.0
        assert h.dispatch_s == pytest.approx(d, rel=1e-12) and h.stream == (rt == "eager")
        text = render_explain(rep, i)
        assert "host-only op" in text and shown in text and "ratio 0.81" in text
        assert rep.predictions[0].explain(i) is None      # no kernel terms
    k = analyzer.analyze(_host_bound(True), hw=ROUND_GPU, runtime="kernel")
    assert k.predictions[0].host_step(2) is None


def test_shape_arithmetic_and_identity_are_not_host_only():
    # The frontend folds shape arithmetic whenever shapes are known, so the plan is given the
    # nodes directly: Shape(x) -> Gather(, 1) -> Unsqueeze (sizes eager holds as Python ints:
    # x.size(1)), Identity(x) (an exporter's alias), Reshape(x) to [4, 4] (x.view: an aten op).
    # The Unsqueeze of a size is a view by its strides, but no aten op; the Identity none either.
    from types import SimpleNamespace

    from analyzer.counting.engine import COSTED
    from analyzer.ir.graph import TensorSpec
    from analyzer.prediction import eager_plan
    from analyzer.prediction.fusion import FusionNode

    def node(op, ins, outs, launches, consts=()):
        nd = SimpleNamespace(op=op, domain="", status=COSTED, kernel=None,
                             in_specs=tuple(TensorSpec(s, d) for s, d in ins),
                             out_specs=tuple(TensorSpec(s, d) for s, d in outs))
        return nd, launches, frozenset(consts)

    x, s, i = ((2, 8), "float32"), ((2,), "int64"), ((), "int64")
    spec = [(node("Shape", [x], [s], True), ["x"], ["s"]),
            (node("Gather", [s, i], [i], True, consts=(1,)), ["s", "one"], ["n"]),
            (node("Unsqueeze", [i, ((1,), "int64")], [((1,), "int64")], False, consts=(1,)),
             ["n", "ax"], ["n1"]),
            (node("Identity", [x], [x], True), ["x"], ["x2"]),   # (as if it moved bytes)
            (node("Reshape", [x, s], [((4, 4), "float32")], False, consts=(1,)), ["x", "shp"], ["y"])]
    nodes = [nd for (nd, _, _), _, _ in spec]
    fnodes = [FusionNode(nd.op, "", "view", "", tuple(ins), tuple(outs),
                         tuple(8 for _ in ins), tuple(8 for _ in outs), launches, consts, nd.op)
              for (nd, launches, consts), ins, outs in spec]
    plan = eager_plan.plan(nodes, fnodes, [0.0] * len(nodes))
    # the Gather of a scalar index and the Unsqueeze are views of a size: shape arithmetic
    assert plan.host_only == (4,)        # the Reshape of x only
