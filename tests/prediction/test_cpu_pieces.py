"""The per-piece cost of batched CPU kernels (``piece_s``): a batched MatMul's matrices, an
Attention's batch items. Closed-form numbers; no wall-clock assertions."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer.measure.fit import class_fit as cpu_model
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.prediction.efficiency.constants import load_constants
from analyzer.measure.calibrate import calibration_sources, write_profile


def _doc(piece_us=0.0, cls="gemm"):
    """A calibrated profile whose ``cls`` table is the gemm table's, with ``piece_us`` if > 0."""
    from tests.profile_docs import gemm_table_doc

    doc = gemm_table_doc(rows={"gemm": [("MatMul", 1.0, 2.0, 3.0)]})
    doc["calibration"]["run_overhead_us"] = 3.0
    tables = doc["calibration"]["tables"]
    tables.setdefault(cls, dict(tables["gemm"]))
    if piece_us:
        tables[cls]["piece_us"] = piece_us
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return doc


def _bmm(batch=8, m=16, k=16, n=16):
    """MatMul of two activations [batch, m, k] @ [batch, k, n]: ``batch`` matrices."""
    g = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["y"], name="bmm")], "g",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [batch, m, k]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [batch, k, n])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, m, n])])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def _attention(batch=2, seq=16, hidden=64, heads=4):
    w = numpy_helper.from_array(np.ones((hidden, 3 * hidden), np.float32), "W")
    bias = numpy_helper.from_array(np.zeros(3 * hidden, np.float32), "B")
    node = helper.make_node("Attention", ["x", "W", "B"], ["y"], name="att", domain="com.microsoft",
                            num_heads=heads)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])], [w, bias])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    mo.ir_version = 8
    return mo


def test_kernel_time_adds_piece_s_per_extra_piece():
    # one untiled gemm-class kernel, 1 MFLOP at batch 1 and at batch 5: same work, the batched one
    # pays 4 pieces of 0.3 us more
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v)
              for k, v in load_constants("datasheet").arrays.items()}
    arrays["piece_s"][eff.CLASS_CODE["gemm"]] = 0.3e-6
    feats = {"op_class": np.array([eff.CLASS_CODE["gemm"]] * 2), "mac_flops": np.array([1e6, 1e6]),
             "bytes": np.array([1e3, 1e3]), "m": np.array([16.0, 16.0]), "n": np.array([16.0, 16.0]),
             "k": np.array([16.0, 16.0]), "batch": np.array([1.0, 5.0])}
    hw = {"matrix_peak": 1e12, "vector_peak": 1e12, "mem_bw": 1e11}
    t = eff.kernel_time(np, feats, hw, arrays)
    assert t["time_s"][1] - t["time_s"][0] == pytest.approx(4 * 0.3e-6, rel=1e-9)
    assert t["floor_s"][1] - t["floor_s"][0] == pytest.approx(1.2e-6, rel=1e-9)


def test_batched_matmul_on_a_calibrated_profile_pays_its_pieces(tmp_path):
    # 8 matrices of 16x16x16: 7 extra pieces at 0.25 us = 1.75 us more than without the term
    from analyzer import analyze

    base = analyze(_bmm(), hw=write_profile(_doc(), tmp_path / "a.toml")).predictions[0]
    with_p = analyze(_bmm(), hw=write_profile(_doc(0.25), tmp_path / "b.toml")).predictions[0]
    assert with_p.latency_s - base.latency_s == pytest.approx(7 * 0.25e-6, rel=1e-6)
    # a single matrix (batch 1) pays none
    one = [analyze(_bmm(batch=1), hw=write_profile(d, tmp_path / f"{i}.toml")).predictions[0].latency_s
           for i, d in enumerate((_doc(), _doc(0.25)))]
    assert one[0] == pytest.approx(one[1], rel=1e-12)


def test_attention_view_counts_its_batch_items(tmp_path):
    from analyzer import analyze
    from analyzer.prediction.node_shapes import gemm_view

    # 3 items x 4 heads (the heads from the softmax's 3 * 4 * 16 * 16 = 3,072 exps): 12 pieces
    rep = analyze(_attention(batch=3, seq=16, hidden=64, heads=4))
    assert rep.nodes[0].cost.transcendentals == 3 * 4 * 16 * 16
    m, n, k, b, batched = gemm_view(rep.nodes[0])
    assert (m, n, b, batched) == (16.0, 64.0, 12.0, False)
    assert 2 * m * n * k * b == rep.nodes[0].cost.mac_flops
    assert gemm_view(analyze(_attention(batch=3, heads=8)).nodes[0])[3] == 24.0
    # on a profile with an attention piece of 2 us: 11 extra pieces = 22 us
    base = analyze(_attention(batch=3), hw=write_profile(_doc(cls="attention"), tmp_path / "a.toml")).predictions[0]
    doc = _doc(2.0, cls="attention")
    with_p = analyze(_attention(batch=3), hw=write_profile(doc, tmp_path / "b.toml")).predictions[0]
    assert with_p.latency_s - base.latency_s == pytest.approx(22e-6, rel=1e-6)


def test_fused_matmul_view_takes_k_from_a_and_n_from_the_count():
    # FusedMatMul(transB=1): Q [1, 4, 32, 16] @ K^T, K [1, 4, 32, 16]: 4 matrices of 32x32 over
    # k = 16 (2 * 32 * 32 * 16 * 4 = 131,072 MAC flops)
    from analyzer import analyze
    from analyzer.prediction.node_shapes import gemm_view

    q = helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, 4, 32, 16])
    kk = helper.make_tensor_value_info("k", TensorProto.FLOAT, [1, 4, 32, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 32, 32])
    node = helper.make_node("FusedMatMul", ["q", "k"], ["y"], name="fmm", domain="com.microsoft",
                            transB=1, alpha=0.25)
    mo = helper.make_model(helper.make_graph([node], "g", [q, kk], [y]),
                           opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    mo.ir_version = 8
    nc = analyze(mo).nodes[0]
    assert nc.cost.mac_flops == 2 * 32 * 32 * 16 * 4
    assert gemm_view(nc)[:4] == (32.0, 32.0, 16.0, 4.0)


def _conv(op, c_in=16, c_out=32, hw=28, domain=""):
    """One 3x3 convolution, pad 1, as ``op`` (Conv, or onnxruntime's FusedConv with a Relu)."""
    w = numpy_helper.from_array(np.ones((c_out, c_in, 3, 3), np.float32), "W")
    attrs = {"activation": "Relu"} if op == "FusedConv" else {}
    node = helper.make_node(op, ["x", "W"], ["y"], name="c", domain=domain, pads=[1, 1, 1, 1], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c_in, hw, hw])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c_out, hw, hw])], [w])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    mo.ir_version = 8
    return mo


def test_fused_conv_has_the_view_of_its_conv():
    # a 16 -> 32 channel 3x3 conv at 28x28: rows = 784 pixels, columns = 32 output channels,
    # k = 16 * 9 = 144 (2 * 784 * 32 * 144 = 7,225,344 MAC flops). onnxruntime's FusedConv (the
    # calibration's Conv + Relu rows) had taken the generic last-dim view (rows 32 x 28, columns 28)
    from analyzer import analyze
    from analyzer.prediction.node_shapes import gemm_view

    for op, dom in (("Conv", ""), ("FusedConv", "com.microsoft")):
        nc = analyze(_conv(op, domain=dom)).nodes[0]
        assert nc.cost.mac_flops == 2 * 784 * 32 * 144, op
        assert gemm_view(nc) == (784.0, 32.0, 144.0, 1.0, False), op


def test_fit_finds_the_cost_per_piece():
    # rows from the form with 0.2 us a piece: 12 unbatched GEMMs and 8 batched ones; the fit
    # recovers the piece cost, and a class without batched rows gets none
    peak, bw = 3e11, 5e10
    rng = np.random.default_rng(1)
    m = rng.choice([1, 8, 32, 128], 20).astype(float)
    n = rng.choice([16, 64, 256], 20).astype(float)
    k = rng.choice([16, 64, 512], 20).astype(float)
    batch = np.where(np.arange(20) < 12, 1.0, rng.choice([2, 8, 32, 64], 20)).astype(float)
    mac = 2 * m * n * k * batch
    B = 4 * (m * k + k * n + m * n) * batch
    view = np.stack([mac, m, n, k, batch])
    t = cpu_model.kernel_time(mac, B, 0.4e-6, 0.8, 1.2, 0.0, peak, bw, view=view, piece_s=0.2e-6)
    fit = cpu_model.fit_class(mac, B, t, peak, bw, view=view)
    assert fit["piece_s"] == pytest.approx(0.2e-6, rel=0.05)
    assert fit["fit_mape"] < 1.0
    flat = cpu_model.fit_class(mac[:12], B[:12], t[:12], peak, bw, view=view[:, :12])
    assert flat["piece_s"] == 0.0


def _conv_act(act: str):
    """Conv 3 -> 8 channels over 16x16, then ``act`` (Clip(0, 6), Relu or none)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1])]
    if act == "clip":
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"], name="act"))
    elif act == "relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"], name="act"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y" if act != "none" else "c", TensorProto.FLOAT,
                                                         [1, 8, 16, 16])], inits)
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def _with_epilogue(ns):
    doc = _doc()
    doc["calibration"]["clip_epilogue_ns"] = ns
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return doc


def test_a_clip_fused_into_a_conv_pays_its_epilogue_per_output_element(tmp_path):
    # onnxruntime fuses Conv + Clip into one kernel; at 0.1 ns an element its 8 x 16 x 16 = 2,048
    # outputs add 0.2048 us. A fused Relu and an unfused conv add nothing.
    pytest.importorskip("onnxruntime")
    from analyzer import analyze

    def lat(act, ns):
        p = write_profile(_with_epilogue(ns), tmp_path / f"{act}{ns}.toml")
        pred = analyze(_conv_act(act), hw=p).predictions[0]
        return pred, pred.latency_s

    clip0, t0 = lat("clip", 0.0)
    assert len({n.kernel for n in clip0.nodes}) == 1   # one kernel: the Clip is fused
    assert lat("clip", 0.1)[1] - t0 == pytest.approx(2048 * 0.1e-9, rel=1e-6)
    assert lat("relu", 0.1)[1] == pytest.approx(lat("relu", 0.0)[1], rel=1e-12)
    assert lat("none", 0.1)[1] == pytest.approx(lat("none", 0.0)[1], rel=1e-12)


def test_epilogue_skips_kernels_that_are_not_convolutions():
    import types

    from analyzer.prediction.cpu import epilogue as cpu_epilogue

    clip = types.SimpleNamespace(op="Clip", out_specs=(types.SimpleNamespace(shape=(1, 4, 5)),))
    other = types.SimpleNamespace(op="MatMul", out_specs=(types.SimpleNamespace(shape=(1, 4, 5)),))
    cal = {"clip_epilogue_ns": 0.5}
    conv, gemm = eff.CLASS_CODE["conv_dw"], eff.CLASS_CODE["gemm"]
    got = cpu_epilogue.epilogue_s(cal, [other, clip, clip], [(0, 1), (0, 1), (2,)], np.array([conv, gemm, conv]))
    # kernel 0: a conv with a fused Clip of 20 elements; 1: not a conv; 2: a Clip on its own
    assert got.tolist() == pytest.approx([20 * 0.5e-9, 0.0, 0.0])
    assert cpu_epilogue.epilogue_s({}, [other, clip], [(0, 1)], np.array([conv])).tolist() == [0.0]


def test_epilogue_measurement_is_the_median_difference_per_element():
    from analyzer.prediction.cpu import epilogue as cpu_epilogue

    pairs = cpu_epilogue.pair_models()
    assert len(pairs) == 4 and all(e > 0 for _, _, e in pairs)
    # a timer that charges 3 ns per output element of a model with a Clip, 10 us otherwise
    elems = {id(c): e for _, c, e in pairs}
    got = cpu_epilogue.measure(lambda m: 10e-6 + 3e-9 * elems.get(id(m), 0), pairs=pairs)
    assert got == pytest.approx(3e-9)
