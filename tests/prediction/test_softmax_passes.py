"""PyTorch's long-row CUDA softmax (``prediction.softmax_passes``): which rows run
cunn_SoftMaxForward, where its re-reads are served, and that nothing else changes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
import hardware_db
from analyzer.prediction import softmax_passes as sp
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency import kernel_time as eff
from analyzer.render.explain import render_explain

A100 = "a100-80gb-sxm"


def _softmax(shape, op="Softmax"):
    return graph([helper.make_node(op, ["a"], ["y"], axis=-1)], {"a": shape}, ["y"], opset=17)


def _cross_entropy(n: int, c: int):
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y"], reduction="mean")
    return graph([node], {"x": (n, c), "t": ((n,), onnx.TensorProto.INT64)}, ["y"], opset=13)


@pytest.mark.parametrize("length, itemsize, rereads", [
    (9216, 4, False),     # ceil(9216 / 1024) = 9 < 10: the register kernel
    (9220, 4, False),     # 36,880 B < 48 KiB - 128 B = 49,024 B, 9220 % 4 == 0: shared memory
    (9222, 4, True),      # 9222 % 4 != 0: no 16-byte vectors, cunn_SoftMaxForward
    (12252, 4, False),    # 49,008 B < 49,024 B
    (12256, 4, True),     # 49,024 B: not below the budget
    (24504, 2, False),    # fp16: 49,008 B, a multiple of 8
    (24512, 2, True),     # fp16: 49,024 B
    (128256, 4, True),    # an LM head's vocabulary
])
def test_rows_beyond_the_on_chip_kernels_are_reread(length, itemsize, rereads):
    assert sp.rereads(length, itemsize) is rereads


def test_a100_rows_in_flight():
    # nvidia-ampere (A100, sm_80): 2048 threads / 1024 = 2 blocks per SM; 40 MB / (108 x 2)
    prof = hardware_db.get(A100)
    assert sp.profile_terms(prof) == (1.0, 40e6 / (108 * 2))
    assert sp.profile_terms(hardware_db.get("tpu-v6e"))[0] == 0.0


def test_closed_form_2048_x_32768_fp32_on_a100_kernel():
    # in = out = 2048 x 32768 x 4 B = 256 MiB; count C = 512 MiB; re-reads R = 2 x 256 MiB.
    # A row of 32768 x 4 = 131,072 B <= 40e6 / 216 = 185,185 B: the rows in flight (108 SMs x 2
    # blocks x 128 KiB = 27 MiB) fit the 40 MB L2, so R is L2-served: per-SM bytes only.
    c = r = 2 * 2048 * 32768 * 4
    p = analyzer.analyze(_softmax((2048, 32768)), hw=[A100], runtime="kernel").predictions[0]
    d, kt = p.kernel_table.detail(0), p.kernel_table
    assert kt.op_class[0] == "softmax_block" and float(kt.nbytes[0]) == c
    assert d["reread_l2_bytes"] == r and d["reread_dram_bytes"] == 0.0 and d["bytes"] == c + r
    a = fc.load_constants("nvidia-ampere").arrays
    s = eff.CLASS_CODE["softmax_block"]
    e_bw, b_half, hit, bpc = (float(a[k][s]) for k in ("e_bw", "b_half_bytes", "l2_hit", "bpc"))
    step = 1.0 / (1.0 + (c / 40e6) ** 2)
    dram_s = (c * (1 - hit * step) + b_half) / (2039e9 * e_bw)      # l2_gain 0: no cache gain
    sm_s = (c + r) * (2.0 / 4.0) / (108 * bpc * 1.41e9)              # per element: 2 B an fp32 element
    assert a["sm_overlap"][s] == 0 and a["per_element"][s] == 1
    assert d["dram_s"] == pytest.approx(dram_s, rel=1e-9) and d["sm_s"] == pytest.approx(sm_s, rel=1e-9)
    assert d["memory_s"] == pytest.approx(dram_s + sm_s, rel=1e-9) and d["compute_s"] < d["memory_s"]
    assert float(kt.time[0]) == pytest.approx(d["floor_s"] + dram_s + sm_s, rel=1e-6)
    # the re-reads add R x 0.5 / (108 x 64 B x 1.41 GHz) = 27.5 us to 427 us
    assert r * 0.5 / (108 * bpc * 1.41e9) == pytest.approx(27.54e-6, rel=1e-3)


def test_cold_l2_still_serves_the_rereads():
    p = analyzer.analyze(_softmax((2048, 32768)), hw=[A100], runtime="kernel", l2="cold").predictions[0]
    d = p.kernel_table.detail(0)
    assert d["reread_l2_bytes"] == 2 * 2048 * 32768 * 4 and d["reread_dram_bytes"] == 0.0
    assert "not between its passes" in render_explain(analyzer.analyze(
        _softmax((2048, 32768)), hw=[A100], runtime="kernel", l2="cold"), 0)


def test_rows_in_flight_beyond_the_l2_reread_from_dram():
    # T4 (Turing, 1024 threads per SM: 1 block), 40 SMs, 4 MB L2: 100,000 B a row; 128 KiB rows do not fit
    rep = analyzer.analyze(_softmax((64, 32768)), hw=["t4"], runtime="kernel")
    d = rep.predictions[0].kernel_table.detail(0)
    assert d["reread_dram_bytes"] == 2 * 64 * 32768 * 4 and d["reread_l2_bytes"] == 0.0
    assert "from DRAM" in render_explain(rep, 0)


@pytest.mark.parametrize("hw, runtime", [("tpu-v6e", "xla"), (A100, "onnxruntime"), (A100, "xla")])
def test_other_runtimes_and_devices_are_unchanged(hw, runtime):
    # the same node: no re-read bytes, and each kernel time bit-identical to the model without the rule
    p = analyzer.analyze(_softmax((2048, 32768)), hw=[hw], runtime=runtime).predictions[0]
    kt = p.kernel_table
    assert not np.any(kt.feats["reread_bytes"]) or not np.any(kt.class_consts["softmax_reread"])
    d = kt.detail(0)
    assert d["reread_l2_bytes"] == 0.0 and d["reread_dram_bytes"] == 0.0
    feats = {k: np.asarray(v)[:1] for k, v in kt.feats.items() if k not in ("reread_bytes", "row_bytes")}
    consts = {k: v for k, v in kt.class_consts.items() if k not in ("softmax_reread", "softmax_l2_row")}
    hw_d = {"matrix_peak": float(kt.matrix_peak[0]), "vector_peak": float(kt.vector_peak[0]),
            "mem_bw": kt.mem_bw, "units": kt.units, "l2_bytes": kt.l2_bytes}
    assert eff.kernel_time(np, feats, hw_d, consts)["memory_s"][0] == d["memory_s"]


def test_cross_entropy_log_softmax_rereads_the_scores_under_eager():
    n, c = 8, 16384          # 64 KiB rows: beyond the shared-memory kernel
    p = analyzer.analyze(_cross_entropy(n, c), hw=[A100], runtime="eager").predictions[0]
    kt = p.kernel_table
    assert [float(b) for b in kt.nbytes] == [2 * n * c * 4]       # the scores read, log-probabilities written
    assert kt.detail(0)["reread_l2_bytes"] == 2 * n * c * 4


@pytest.mark.parametrize("c", [2048, 16384])
def test_search_scores_equal_analyze_with_rereads(c):
    assert_search_scores_equal_analyze(_cross_entropy(32, c), A100, "kernel")
    assert_search_scores_equal_analyze(_softmax((32, c)), A100, "kernel")
