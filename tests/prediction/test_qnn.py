"""The ``qnn`` runtime (analyzer/prediction/accelerators/qnn.py): QNN's fusion on the Hexagon NPU
(kernels counted by hand for small graphs), the Concat that runs no kernel, and the family's
per-inference fixed cost added once per prediction."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import hardware_db
from analyzer.prediction import runtimes
from analyzer.prediction.accelerators import qnn
from analyzer.prediction.efficiency.constants import load_constants
from analyzer.prediction.efficiency.op_classes import OP_CLASSES
from analyzer.prediction.predict import predict
from analyzer.prediction.targets import Target

F = TensorProto.FLOAT


def _analyze(nodes, inits=(), out_shape=(1, 8, 8, 8)):
    import analyzer

    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [1, 8, 8, 8])],
                          [helper.make_tensor_value_info("y", F, list(out_shape))], initializer=list(inits))
    return analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def _w(name, shape):
    return numpy_helper.from_array(np.full(shape, 0.1, dtype=np.float32), name)


def _conv(x, y, w):
    return helper.make_node("Conv", [x, w], [y], pads=[1, 1, 1, 1])


def _bn(x, y, p):
    return helper.make_node("BatchNormalization", [x, f"{p}s", f"{p}b", f"{p}m", f"{p}v"], [y])


def _bn_inits(p):
    return [_w(f"{p}{k}", [8]) for k in "sbmv"]


def _kernels(report, runtime="qnn", pid="hexagon-sd8gen3"):
    (p,) = predict(report, [Target(hardware_db.get(pid), runtimes.get(runtime), "requested")], precision="fp16")
    return p


def test_hexagon_profiles_default_to_qnn():
    for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3"):
        assert hardware_db.get(pid).default_runtime == "qnn"
    assert runtimes.get("qnn").time_definition == qnn.TIME_DEFINITION


def test_residual_block_is_two_kernels():
    """conv1 -> BN -> Relu -> conv2 -> BN -> Add(x) -> Relu: QNN runs conv1+BN+Relu and
    conv2+BN+Add+Relu (2 kernels); the kernel runtime runs the 7 nodes as 7."""
    nodes = [_conv("x", "c1", "w1"), _bn("c1", "b1", "n1"), helper.make_node("Relu", ["b1"], ["r1"]),
             _conv("r1", "c2", "w2"), _bn("c2", "b2", "n2"), helper.make_node("Add", ["b2", "x"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    rep = _analyze(nodes, [_w("w1", [8, 8, 3, 3]), _w("w2", [8, 8, 3, 3])] + _bn_inits("n1") + _bn_inits("n2"))
    assert len(_kernels(rep).kernel_table.op_class) == 2
    assert len(_kernels(rep, "kernel").kernel_table.op_class) == 7


def test_silu_joins_its_convolution():
    """conv -> Sigmoid, Mul(conv, Sigmoid): one kernel (x * sigmoid(x) is the conv's epilogue)."""
    nodes = [_conv("x", "c", "w"), helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["y"])]
    rep = _analyze(nodes, [_w("w", [8, 8, 3, 3])])
    assert len(_kernels(rep).kernel_table.op_class) == 1


def test_concat_runs_no_kernel():
    """conv_a, conv_b -> Concat: two kernels (the convolutions write into the concat's buffer);
    the concat's bytes (read 2 x 1x8x8x8, write 1x16x8x8 at fp16 = 2 x 1024 + 2048 B) are
    nowhere in the prediction."""
    nodes = [_conv("x", "a", "wa"), _conv("x", "b", "wb"), helper.make_node("Concat", ["a", "b"], ["y"], axis=1)]
    rep = _analyze(nodes, [_w("wa", [8, 8, 3, 3]), _w("wb", [8, 8, 3, 3])], out_shape=(1, 16, 8, 8))
    q, k = _kernels(rep), _kernels(rep, "kernel")
    assert len(q.kernel_table.op_class) == 2 and len(k.kernel_table.op_class) == 3
    assert float(np.sum(k.kernel_table.nbytes)) - float(np.sum(q.kernel_table.nbytes)) == 2 * 1024 + 2048


def test_concat_of_a_graph_input_copies_it():
    """Concat(x, conv(x)): no kernel writes the graph input x into the concat's buffer, so the
    concat runs a kernel of its own (2 kernels, its bytes read 2 x 1024 + write 2048 B at fp16);
    a Concat of graph inputs only is one kernel, never a prediction of no kernel at all."""
    nodes = [_conv("x", "a", "wa"), helper.make_node("Concat", ["x", "a"], ["y"], axis=1)]
    q = _kernels(_analyze(nodes, [_w("wa", [8, 8, 3, 3])], out_shape=(1, 16, 8, 8)))
    assert len(q.kernel_table.op_class) == 2
    assert float(q.kernel_table.nbytes[1]) == 2 * 1024 + 2048
    only = _kernels(_analyze([helper.make_node("Concat", ["x", "x"], ["y"], axis=1)], out_shape=(1, 16, 8, 8)))
    assert len(only.kernel_table.op_class) == 1 and only.nodes[0].time_s > 0


@pytest.mark.parametrize("precision,key", [("fp16", "run_fixed_s"), ("int8", "run_fixed_int8_s")])
def test_fixed_cost_added_once_per_inference(precision, key):
    """latency = the kernels' sum + the family's run_fixed_s (fp16) / run_fixed_int8_s (int8),
    once; the kernel runtime adds none."""
    rep = _analyze([_conv("x", "y", "w")], [_w("w", [8, 8, 3, 3])])
    prof = hardware_db.get("hexagon-sd8gen2")
    fixed = load_constants(prof.family).arrays[key]
    assert 1e-6 <= fixed <= 1e-3   # a fitted figure between 1 us and 1 ms
    (p,) = predict(rep, [Target(prof, runtimes.get("qnn"), "requested")], precision=precision)
    assert p.run_overhead_s == pytest.approx(fixed)
    assert p.latency_s == pytest.approx(float(np.sum(p.kernel_table.time)) + fixed)
    (k,) = predict(rep, [Target(prof, runtimes.get("kernel"), "requested")], precision=precision)
    assert k.run_overhead_s == 0.0


def test_family_without_fixed_cost_adds_none():
    rep = _analyze([_conv("x", "y", "w")], [_w("w", [8, 8, 3, 3])])
    prof = dataclasses.replace(hardware_db.get("hexagon-sd8gen2"), family="datasheet")
    (p,) = predict(rep, [Target(prof, runtimes.get("qnn"), "requested")], precision="fp16")
    assert p.run_overhead_s == 0.0


def test_shipped_hexagon_efficiencies_are_fractions():
    """Every fitted efficiency and DRAM fraction is in (0, 1] (no e_bw standing in for fusion)."""
    for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3"):
        arrays = load_constants(hardware_db.get(pid).family).arrays
        for name in ("e_compute", "e_bw"):
            assert np.all(arrays[name] > 0) and np.all(arrays[name] <= 1.0), (pid, name)


def test_depthwise_output_rate_sets_the_peaks_in_closed_form():
    """qnn.dw_output_rate with a family's qnn_dw_output_rate R = 2e9 outputs/s (conv_dw e_compute
    0.5, trans_weight 1, qnn_w8a16_share 0.46): a depthwise kernel of 512 outputs, 9216 MAC FLOPs,
    512 vector FLOPs and 512 transcendentals runs at R = 2e9 / s at int8 (compute 512 / 2e9 =
    256 ns), 0.5 x R = 1e9 at fp16 (512 ns), 0.46 x R = 9.2e8 at w8a16 (556.5 ns); its peaks are
    rate x (9216 + 512 + 512) / (512 x 0.5) = rate x 40, so (mac + vec + trans) / (peak x e) gives
    that time; a matrix kernel and an fp32 depthwise kernel keep their peaks."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    dw, mat = CLASS_CODE["conv_dw"], CLASS_CODE["conv"]
    e = np.ones(len(OP_CLASSES))
    e[dw] = 0.5
    arrays = {"qnn_dw_output_rate": 2e9, "e_compute": e, "trans_weight": 1.0, "qnn_w8a16_share": 0.46}
    rows = [(9216.0, 512.0, 512.0)] * 4 + [(1e6, 0.0, 0.0)]
    outs = np.array([512.0] * 4 + [0.0])
    for dtype, rate in (("int8", 2e9), ("fp16", 1e9), ("w8a16", 9.2e8), ("fp32", 0.0)):
        mp, vp = np.full(5, 7.0), np.full(5, 7.0)
        got = qnn.dw_output_rate(None, arrays, (mp, vp), [dw] * 4 + [mat], [dtype] * 5, dw, (rows, outs))
        assert got[:4] == pytest.approx([rate] * 4) and got[4] == 0.0
        if rate:
            assert mp[:4] == pytest.approx([rate * 40.0] * 4) and vp[0] == mp[0]
            assert (9216 + 512 + 512) / (mp[0] * 0.5) == pytest.approx(512 / rate)
        else:
            assert np.all(mp == 7.0)
        assert mp[4] == vp[4] == 7.0
    assert qnn.dw_output_rate(None, {**arrays, "qnn_dw_output_rate": 0.0}, (mp, vp), [dw] * 5, ["int8"] * 5, dw,
                              (rows, outs)).sum() == 0.0


def test_depthwise_outputs_of_a_kernel():
    """qnn.dw_outputs: a depthwise Conv x [1,8,8,8] -> y [1,8,8,8] (w [8,1,3,3], group 8) writes
    1 x 8 x 8 x 8 = 512 output elements; a 5x5 window writes the same 512."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    for k in (3, 5):
        rep = _analyze([helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4, group=8)], [_w("w", [8, 1, k, k])])
        assert list(qnn.dw_outputs(rep.nodes, ((0,),), [CLASS_CODE["conv_dw"]], CLASS_CODE["conv_dw"])) == [512.0]


def test_shipped_hexagon_depthwise_output_rate():
    """The shipped form's depthwise term (bench/hexagon_transfer.py's dwe-wm): each family states
    qnn_dw_output_rate, W8A8 outputs/s, the 8 Gen 2's fitted (9.7747e9) and the 8 Gen 3's that x
    the fitted matrix-rate ratio e_mat[1] P_int8[1] / (e_mat[0] P_int8[0]) = 0.6796 x 45 /
    (0.9792 x 22.73) = 1.3741 (1.3431e10); conv_dw's e_compute is the matrix class's (conv's).
    A 3x3 depthwise Conv (x [1,8,8,8], w [8,1,3,3], group 8; 512 outputs) on the 8 Gen 3 computes
    in 512 / 1.3431e10 = 38.12 ns at int8 and 512 / (0.5 x 1.3431e10) = 76.24 ns at fp16; a 5x5
    window the same (a rate per output element); --explain prints the division."""
    from analyzer.render.explain import render_explain

    fams = [load_constants(hardware_db.get(pid).family).arrays for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3")]
    rate = [float(a["qnn_dw_output_rate"]) for a in fams]
    e = [float(a["e_compute"][OP_CLASSES.index("conv")]) for a in fams]
    assert rate[0] == pytest.approx(9.7747e9, rel=1e-4) and rate[1] == pytest.approx(1.3431e10, rel=1e-4)
    assert rate[1] / rate[0] == pytest.approx(e[1] * 45.0 / (e[0] * 22.73), rel=1e-9)
    assert rate[1] / rate[0] == pytest.approx(1.3741, rel=1e-4)
    for a, ec in zip(fams, e):
        assert a["e_compute"][OP_CLASSES.index("conv_dw")] == ec
    prof = hardware_db.get("hexagon-sd8gen3")
    for k in (3, 5):
        rep = _analyze([helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4, group=8)], [_w("w", [8, 1, k, k])])
        for precision, want in (("int8", 38.12e-9), ("fp16", 76.24e-9)):
            (p,) = predict(rep, [Target(prof, runtimes.get("qnn"), "requested")], precision=precision)
            x = p.explain(0)
            assert x.op_class == "conv_dw" and x.dw_outputs == 512
            assert x.compute_s == pytest.approx(want, rel=1e-4)
            assert x.dw_rate == pytest.approx(rate[1] * (1.0 if precision == "int8" else 0.5), rel=1e-9)
    text = render_explain(rep.with_predictions((p,)), 0, width=400)
    assert "depthwise: matrix + vector = output elements 512 / rate 6.72 G/s = 76.2 ns per launch" in text


def test_shipped_hexagon_fixed_costs_follow_the_form():
    """The shipped form (bench/fit_accelerators.py FORM, bench/results/hexagon_variants.md): one
    per-kernel cost, every class's floor_s, the same on both Hexagon families, one fp16 / W8A8
    ratio of the per-inference cost (run_fixed_s / run_fixed_int8_s) on both, and one W8A8 offset
    between the deployments (qnn_deploy_int8_s), none for fp16.  Recorded by the fit: floor_s
    1.6756e-6 s; ratio t0_q 2.469 (8 Gen 2: 445.9 / 180.6 us = 2.469; 8 Gen 3: 270.4 / 109.5 us =
    2.469); d_int8 128.1 us.  A one-conv graph's kernel time on the qnn runtime is that floor + its body."""
    fams = [load_constants(hardware_db.get(pid).family).arrays for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3")]
    for a in fams:
        assert np.all(a["floor_s"] == pytest.approx(1.6756e-6, rel=1e-4))
        assert a["run_fixed_s"] / a["run_fixed_int8_s"] == pytest.approx(2.469, rel=1e-3)
        assert a["qnn_deploy_int8_s"] == pytest.approx(128.1e-6, rel=1e-3)
        assert a["qnn_deploy_s"] == 0.0
    assert fams[0]["run_fixed_int8_s"] == pytest.approx(180.6e-6, rel=1e-3)
    assert fams[1]["run_fixed_int8_s"] == pytest.approx(109.5e-6, rel=1e-3)
    rep = _analyze([_conv("x", "y", "w")], [_w("w", [8, 8, 3, 3])])
    (p,) = predict(rep, [Target(hardware_db.get("hexagon-sd8gen3"), runtimes.get("qnn"), "requested")],
                   precision="int8")
    kt = p.kernel_table
    assert len(kt.time) == 1 and float(kt.overhead[0]) == pytest.approx(1.6756e-6, rel=1e-4)
    assert float(kt.time[0]) == pytest.approx(1.6756e-6 + max(float(kt.compute[0]), float(kt.memory[0])), rel=1e-4)


def _two_convs():
    """x [1,8,8,8] -> conv a (w 8x8x3x3) -> [1,8,8,8] -> conv b (w 32x8x3x3) -> y [1,32,8,8]."""
    nodes = [_conv("x", "a", "wa"), _conv("a", "y", "wb")]
    return _analyze(nodes, [_w("wa", [8, 8, 3, 3]), _w("wb", [32, 8, 3, 3])], out_shape=(1, 32, 8, 8))


def _onchip_predict(rep, budget_mb, runtime="qnn"):
    prof = dataclasses.replace(hardware_db.get("hexagon-sd8gen3"), family="datasheet", npu_onchip_mb=budget_mb)
    (p,) = predict(rep, [Target(prof, runtimes.get(runtime), "requested")], precision="int8")
    return p


def test_activations_within_the_onchip_budget_skip_dram():
    """At int8 (1 byte an element), budget 0.002 MB = 2000 B, datasheet constants (e_bw = 1,
    e_compute = 1), 8 Gen 3: P = 45e12 OP/s, BW = 76.8e9 B/s.

    conv a: weights 8*8*3*3 = 576 B; activations: reads x 8*8*8 = 512 B + writes a 512 B = 1024 B
            <= 2000 B: kept on chip; DRAM bytes = 576 (the weights);
            memory = 576 / 76.8e9 = 7.5 ns; compute = 2*8*8*8*8*9 = 73728 OP / 45e12 = 1.638 ns
    conv b: weights 32*8*3*3 = 2304 B; activations: reads a 512 B + writes y 32*8*8 = 2048 B =
            2560 B > 2000 B: kept = min(2560, 2000) = 2000 B on chip, the rest 2560 - 2000 = 560 B
            streamed; DRAM bytes = 2304 + 560 = 2864;
            memory = 2864 / 76.8e9 = 37.29 ns; compute = 2*32*8*8*8*9 = 294912 / 45e12 = 6.554 ns
    each kernel's time = fixed + max(compute, memory): 7.5 ns and 37.29 ns past its fixed cost."""
    p = _onchip_predict(_two_convs(), 0.002)
    t = p.kernel_table
    assert list(t.nbytes) == [576 + 1024, 2304 + 2560]
    kept, wbytes, budget, cost = t.onchip
    assert list(wbytes) == [576, 2304] and list(kept) == [1024, 2000] and budget == 2000.0
    assert cost == 0.0   # the datasheet set: an on-chip byte is free
    assert t.memory[0] == pytest.approx(576 / 76.8e9, rel=1e-5)          # 7.5 ns
    assert t.memory[1] == pytest.approx(2864 / 76.8e9, rel=1e-5)         # 37.29 ns
    assert t.compute[0] == pytest.approx(73728 / 45e12, rel=1e-5)        # 1.638 ns
    body = np.asarray(t.time) - np.asarray(t.overhead)
    assert body == pytest.approx([576 / 76.8e9, 2864 / 76.8e9], rel=1e-5)
    a = p.explain(0)
    assert a.onchip and (a.weight_bytes, a.onchip_bytes, a.dram_bytes, a.onchip_budget) == (576, 1024, 576, 2000.0)
    b = p.explain(1)
    assert (b.weight_bytes, b.onchip_bytes, b.dram_bytes) == (2304, 2000, 2864)
    assert any("1 of 2 kernels keep their activations" in n and "1 larger ones keep 0.002 MB each on chip and "
               "stream the rest (0.00056 MB of their 0.00256 MB)" in n for n in p.notes)


def test_budget_above_both_kernels_keeps_both_and_no_budget_keeps_none():
    """Budget 0.003 MB = 3000 B >= 2560 B: conv b's activations stay on chip too (DRAM = its
    2304 weight bytes: 30 ns); no budget (None): every byte from DRAM (1600 B: 20.83 ns; 4864 B)."""
    t = _onchip_predict(_two_convs(), 0.003).kernel_table
    assert list(t.onchip[0]) == [1024, 2560]
    assert t.memory[1] == pytest.approx(2304 / 76.8e9, rel=1e-5)
    t = _onchip_predict(_two_convs(), None).kernel_table
    assert list(t.onchip[0]) == [0, 0]
    assert list(t.memory) == pytest.approx([1600 / 76.8e9, 4864 / 76.8e9], rel=1e-5)


def test_explain_prints_the_split():
    """--explain of conv a (the 0.002 MB budget above): its 576 DRAM bytes, the 1024 kept on chip
    at onchip_cost 0 (datasheet), and why; conv b's activations over the budget."""
    from analyzer.render.explain import render_explain

    rep = _two_convs()
    rep = rep.with_predictions((_onchip_predict(rep, 0.002),))
    text = render_explain(rep, 0, width=400)
    # off a GPU a ramp of 0 B does not act: left out (tests/cli/test_user_pass.py)
    assert "DRAM = (bytes to DRAM 576 B + kept on chip 1.02 KB x onchip_cost 0) / (bandwidth 76.8 GB/s" in text
    assert "bytes to DRAM 576 B = bytes 1.6 KB - kept on chip 1.02 KB; weights 576 B (always from DRAM)" in text
    assert "activations 1.02 KB <= the NPU's on-chip 2 KB (npu_onchip_mb): kept on chip" in text
    text = render_explain(rep, 1, 400)
    assert "bytes to DRAM 2.86 KB = bytes 4.86 KB - kept on chip 2 KB" in text
    assert ("activations 2.56 KB > the NPU's on-chip 2 KB (npu_onchip_mb): that much kept on chip, the rest 560 B "
            "and the weights from DRAM") in text


def test_other_runtimes_charge_every_byte():
    """The kernel runtime on the same profile (budget 3000 B) keeps nothing on chip: conv a's
    memory is all its 1600 bytes, and its table carries no on-chip split."""
    t = _onchip_predict(_two_convs(), 0.003, runtime="kernel").kernel_table
    assert t.onchip is None
    assert t.memory[0] == pytest.approx(1600 / 76.8e9, rel=1e-5)


def test_shipped_hexagon_profiles_state_their_vtcm():
    for pid in ("hexagon-sd8gen2", "hexagon-sd8gen3"):
        prof = hardware_db.get(pid)
        assert prof.npu_onchip_mb == 8.0 and "vtcm_size_in_mb=8" in prof.sources["memory.npu_onchip_mb"]


def test_search_batches_keep_the_onchip_rule():
    """The search's batched kernel times (analyzer/search/batched_kernels) of a qnn lowering are
    the prediction's: conv a's 576 DRAM bytes at the 0.002 MB budget, not its 1600."""
    from analyzer.prediction.kernels import run
    from analyzer.prediction.lowering import lower
    from analyzer.search import batched_kernels

    prof = dataclasses.replace(hardware_db.get("hexagon-sd8gen3"), family="datasheet", npu_onchip_mb=0.002)
    low = lower(_two_convs().nodes, [prof], "int8", runtimes.get("qnn"))
    (batched,) = batched_kernels.kernel_times([low])
    np.testing.assert_allclose(batched, run(low)[3], rtol=1e-6)
    assert batched[0, 0] - low.fixed[0, 0] == pytest.approx(576 / 76.8e9, rel=1e-5)


def test_shipped_onchip_cost_prices_the_kept_bytes():
    """The shipped 8 Gen 3 (budget 8 MB; both convs' activations fit): conv a's memory time is
    (576 weight bytes + onchip_cost x 1024 kept bytes) / (76.8e9 B/s x its class's e_bw), with
    onchip_cost and e_bw read from hardware_db/efficiency/qualcomm-hexagon-v75.json (fitted:
    0.01273 and 0.8005 for the convolution class: (576 + 13.03) / 61.48e9 = 9.581 ns)."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    prof = hardware_db.get("hexagon-sd8gen3")
    arrays = load_constants(prof.family).arrays
    cost = float(arrays["onchip_cost"])
    assert 0.0 < cost <= 1.0
    (p,) = predict(_two_convs(), [Target(prof, runtimes.get("qnn"), "requested")], precision="int8")
    a = p.explain(0)
    e_bw = float(arrays["e_bw"][CLASS_CODE[a.op_class]])
    assert (a.weight_bytes, a.onchip_bytes, a.dram_bytes, a.onchip_cost) == (576, 1024, 576, pytest.approx(cost))
    assert a.memory_s == pytest.approx((576 + cost * 1024) / (76.8e9 * e_bw), rel=1e-5)


def test_shipped_constants_price_a_kernel_over_the_budget():
    """The shipped 8 Gen 3 constants (hardware_db/efficiency/qualcomm-hexagon-v75.json) with the
    budget set to 0.002 MB = 2000 B: conv b's activations, 2560 B, exceed it: it keeps
    min(2560, 2000) = 2000 B on chip at onchip_cost c each, and streams the other 560 B and its
    2304 weight bytes: memory = (2864 + c x 2000) / (76.8e9 B/s x e_bw) (fitted c = 0.01273,
    e_bw = 0.8005 for the convolution class: (2864 + 25.45) / 61.48e9 = 47.00 ns)."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    prof = dataclasses.replace(hardware_db.get("hexagon-sd8gen3"), npu_onchip_mb=0.002)
    arrays = load_constants(prof.family).arrays
    cost = float(arrays["onchip_cost"])
    (p,) = predict(_two_convs(), [Target(prof, runtimes.get("qnn"), "requested")], precision="int8")
    b = p.explain(1)
    e_bw = float(arrays["e_bw"][CLASS_CODE[b.op_class]])
    assert (b.weight_bytes, b.onchip_bytes, b.dram_bytes) == (2304, 2000, 2864)
    assert b.memory_s == pytest.approx((2864 + cost * 2000) / (76.8e9 * e_bw), rel=1e-5)
    assert b.memory_s == pytest.approx(47.00e-9, rel=2e-3)


def _transpose(rows, cols):
    import analyzer

    g = helper.make_graph([helper.make_node("Transpose", ["x"], ["y"], perm=[1, 0])], "t",
                          [helper.make_tensor_value_info("x", F, [rows, cols])],
                          [helper.make_tensor_value_info("y", F, [cols, rows])])
    return analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def _movement_notes(p):
    return [n for n in p.notes if "data-movement kernel" in n]


def test_large_transpose_says_its_movement_time_is_extrapolated():
    """A 4096 x 4096 fp32 Transpose on the 8 Gen 3 (shipped constants): bytes 2 x 4096^2 x 4 =
    134,217,728, kept 8e6 on chip, 126,217,728 B to DRAM at the movement class's e_bw:
    memory = (126,217,728 + c x 8e6) / (76.8e9 x e_bw) (c = 0.01352, e_bw = 0.003923: 0.419 s);
    126,217,728 B > qnn.FITTED_MOVE_DRAM_B = 8,777,216 B, so the prediction says the time
    extrapolates the fitted rate. At fp16, 2048 x 2048 sends 2 x 2048^2 x 2 - 8e6 = 8,777,216 B:
    the fit's largest, no note; 2048 x 2049: 8,785,408 B, the note."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    prof = hardware_db.get("hexagon-sd8gen3")
    arrays = load_constants(prof.family).arrays
    cost, e_bw = float(arrays["onchip_cost"]), float(arrays["e_bw"][CLASS_CODE["movement"]])
    (p,) = predict(_transpose(4096, 4096), [Target(prof, runtimes.get("qnn"), "requested")], precision="fp32")
    a = p.explain(0)
    assert (a.onchip_bytes, a.dram_bytes) == (8_000_000, 126_217_728)
    assert a.memory_s == pytest.approx((126_217_728 + cost * 8e6) / (76.8e9 * e_bw), rel=1e-5)
    assert any("1 data-movement kernel sends up to 126 MB per launch to DRAM" in n and "8.78 MB" in n
               for n in _movement_notes(p))
    assert _movement_notes(_kernels(_transpose(2048, 2048))) == []
    assert len(_movement_notes(_kernels(_transpose(2048, 2049)))) == 1
    # the datasheet set (e_bw = 1): a DRAM rate, nothing extrapolated
    flat = dataclasses.replace(prof, family="datasheet")
    (p,) = predict(_transpose(4096, 4096), [Target(flat, runtimes.get("qnn"), "requested")], precision="fp32")
    assert _movement_notes(p) == []


def test_fp16_depthwise_runs_at_half_the_int8_rate():
    """A depthwise conv (x [1,8,8,8], w [8,1,3,3], group 8): 8*8*8*9 = 4608 MACs = 9216 FLOPs. On a
    datasheet 8 Gen 3 at fp16 the qnn runtime computes it on HVX at 0.5 x 45e12 = 22.5e12 FLOP/s:
    compute = 9216 / 22.5e12 = 0.4096 ns; at int8 at 45e12; the kernel runtime at fp16 takes the
    profile's fp16 matrix figure."""
    rep = _analyze([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], group=8)], [_w("w", [8, 1, 3, 3])])
    prof = dataclasses.replace(hardware_db.get("hexagon-sd8gen3"), family="datasheet")

    def table(runtime, precision):
        (p,) = predict(rep, [Target(prof, runtimes.get(runtime), "requested")], precision=precision)
        return p.kernel_table

    t = table("qnn", "fp16")
    assert t.op_class == ("conv_dw",) and t.mac[0] == 9216
    assert t.matrix_peak[0] == t.vector_peak[0] == 0.5 * 45e12 == qnn.HVX_FP16_SHARE * prof.peak_flops("matrix", "int8")
    assert t.compute[0] == pytest.approx(9216 / 22.5e12, rel=1e-5)
    assert table("qnn", "int8").matrix_peak[0] == 45e12
    assert table("kernel", "fp16").matrix_peak[0] == prof.peak_flops("matrix", "fp16")


@pytest.mark.parametrize("runtime,int8_s", [("qnn", 50e-6), ("qnn-dlc", 50e-6 + 40e-6 / 2),
                                            ("qnn-tflite", 50e-6 - 40e-6 / 2), ("kernel", 0.0)])
def test_deployment_offset_closed_form(runtime, int8_s):
    """run_fixed_s with run_fixed_int8_s = 50 us and a W8A8 deployment offset d = 40 us:
    qnn 50 us (the mean), qnn-dlc 50 + 20 = 70 us, qnn-tflite 50 - 20 = 30 us, kernel 0; an fp16
    graph with no qnn_deploy_s keeps run_fixed_s = 100 us on every qnn runtime."""
    arrays = {"run_fixed_s": 100e-6, "run_fixed_int8_s": 50e-6, "qnn_deploy_int8_s": 40e-6}
    assert qnn.run_fixed_s(runtime, arrays, "int8") == pytest.approx(int8_s, abs=1e-12)
    assert qnn.run_fixed_s(runtime, arrays, "fp16") == pytest.approx(0.0 if runtime == "kernel" else 100e-6)


def test_deployment_runtimes_share_the_qnn_plan():
    """qnn-dlc and qnn-tflite run qnn's fusion (the residual block's 2 kernels) and its kernels'
    times; only the per-inference cost differs, by the family's qnn_deploy_int8_s (8 Gen 2 W8A8)."""
    nodes = [_conv("x", "c1", "w1"), _bn("c1", "b1", "n1"), helper.make_node("Relu", ["b1"], ["r1"]),
             _conv("r1", "c2", "w2"), _bn("c2", "b2", "n2"), helper.make_node("Add", ["b2", "x"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    rep = _analyze(nodes, [_w("w1", [8, 8, 3, 3]), _w("w2", [8, 8, 3, 3])] + _bn_inits("n1") + _bn_inits("n2"))
    prof = hardware_db.get("hexagon-sd8gen2")
    d = float(load_constants(prof.family).arrays["qnn_deploy_int8_s"])
    out = {rt: predict(rep, [Target(prof, runtimes.get(rt), "requested")], precision="int8")[0]
           for rt in ("qnn", "qnn-dlc", "qnn-tflite")}
    assert {len(p.kernel_table.op_class) for p in out.values()} == {2}
    assert float(np.sum(out["qnn-dlc"].kernel_table.time)) == pytest.approx(float(np.sum(out["qnn"].kernel_table.time)))
    assert out["qnn-dlc"].latency_s - out["qnn"].latency_s == pytest.approx(d / 2, rel=1e-9)
    assert out["qnn"].latency_s - out["qnn-tflite"].latency_s == pytest.approx(d / 2, rel=1e-9)
    assert any("qnn-dlc" in n and "deployed as a QNN DLC" in n for n in out["qnn-dlc"].notes)


# ----------------------------------------------------------------------------- default precision


def _latency(rep, precision, runtime="qnn"):
    (p,) = predict(rep, [Target(hardware_db.get("hexagon-sd8gen3"), runtimes.get(runtime), "requested")],
                   precision=precision)
    return p


@pytest.mark.parametrize("runtime", ["qnn", "qnn-dlc", "qnn-tflite"])
def test_fp32_graph_predicted_in_fp16_unless_named(runtime):
    """An fp32 graph without a caller's precision runs as QNN's HTP runs float graphs, in fp16:
    the same latency as --precision fp16, with a note; --precision fp32 is kept (2x the bytes)."""
    rep = _two_convs()
    auto, fp16, fp32 = (_latency(rep, prec, runtime) for prec in (None, "fp16", "fp32"))
    assert auto.latency_s == fp16.latency_s
    assert any("fp32 tensors predicted in fp16" in n for n in auto.notes)
    assert fp32.latency_s > fp16.latency_s


def test_quantized_graph_predicted_at_int8():
    """A graph that quantizes its activations (QuantizeLinear) is predicted at W8A8 (int8)."""
    q = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]), _conv("d", "y", "wa")]
    inits = [numpy_helper.from_array(np.array(0.1, dtype=np.float32), "s"),
             numpy_helper.from_array(np.array(0, dtype=np.uint8), "z"), _w("wa", [8, 8, 3, 3])]
    rep = _analyze(q, inits)
    auto, int8 = _latency(rep, None), _latency(rep, "int8")
    assert auto.latency_s == int8.latency_s
    assert any("quantizes its activations" in n for n in auto.notes)
