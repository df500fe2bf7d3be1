"""PyTorch's row kernels (``prediction.row_kernels``): LayerNorm, RMS norm and softmax walk each row
serially in one block or warp; ``row_s = waves x (c0 + steps x c_step) / clock`` joins the memory
time where a family file states ``row_kernels`` (none ships them: bench/hopper_rows.py)."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import onnx
import pytest
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer
from analyzer.prediction import row_kernels as rk
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency.op_classes import CLASS_CODE

H200 = "h200-sxm"   # 132 SMs, 1.98 GHz, sm_90: 2048 resident threads per SM
CLOCK, SMS = 1.98e9, 132
# the H200 fit's layer norm constants (bench/results/hopper_rows.md, the norm group; shipped in nvidia-hopper.json)
LN = {"c0_cycles": 1825.8, "step_cycles": 957.2, "overlap": 0.0}


def _layernorm(m: int, n: int, op: str = "LayerNormalization"):
    ins = ["x", "g", "b"] if op == "LayerNormalization" else ["x", "g"]
    node = helper.make_node(op, ins, ["y"], axis=-1, epsilon=1e-5)
    specs = {"x": ((m, n), onnx.TensorProto.FLOAT16), "g": ((n,), onnx.TensorProto.FLOAT16),
             "b": ((n,), onnx.TensorProto.FLOAT16)}
    return graph([node], {k: specs[k] for k in ins}, ["y"], opset=23 if op == "RMSNormalization" else 17)


@pytest.mark.parametrize("op, n, itemsize, kind", [
    ("LayerNormalization", 8192, 2, "layer_norm"),
    ("LayerNormalization", 770, 2, ""),           # not a multiple of the 4-element vector
    ("RMSNormalization", 4096, 4, "rms_norm"),
    ("Softmax", 2048, 2, "softmax_warp"),         # host_softmax since PR 144679: <= 2048 and <= 8192 bytes
    ("Softmax", 2048, 8, "softmax_block"),        # fp64: 16 KiB of row
    ("LogSoftmax", 4096, 2, "softmax_block"),
    ("Softmax", 9216, 4, "softmax_block"),        # ceil(9216 / 1024) = 9 registers a thread: cunn_SoftMaxForwardReg
    ("Softmax", 9217, 4, ""),                     # 10: the shared-memory or multi-pass kernel, no row term
    ("LogSoftmax", 128256, 4, ""),                # a vocabulary row (cross-entropy): multi-pass
    ("Gelu", 4096, 2, ""),
])
def test_kind_of(op, n, itemsize, kind):
    assert rk.kind_of(op, n, itemsize) == kind


@pytest.mark.parametrize("kind, n, launch", [
    ("layer_norm", 8192, (16, 128, 1)),           # 128 threads x 4 elements a step
    ("rms_norm", 768, (2, 128, 1)),
    ("softmax_warp", 2048, (64, 128, 4)),         # a lane walks 2048 / 32; 4 warps (rows) a block
    ("softmax_block", 4096, (4, 1024, 1)),
    ("softmax_block", 1500, (2, 1024, 1)),        # min(N rounded up to a warp, 1024) threads
    ("softmax_block", 300, (1, 320, 1)),
])
def test_launch(kind, n, launch):
    assert rk.launch(kind, n) == launch


def _row(kind: str, m: float, n: float, c0: float, step: float) -> dict:
    c0_s, step_s = np.zeros(len(rk.KINDS)), np.zeros(len(rk.KINDS))
    c0_s[rk.KIND_CODE[kind]], step_s[rk.KIND_CODE[kind]] = c0 / CLOCK, step / CLOCK
    return rk.row_s(np, np.array([rk.KIND_CODE[kind]]), np.array([m]), np.array([n]), SMS, 2048.0, c0_s, step_s)


def test_h200_layer_norm_m1_n8192_closed_form():
    # one row: 1 wave; ceil(8192 / 512) = 16 steps; (1825.8 + 16 x 957.2) cycles = 17,141 cycles / 1.98 GHz
    d = _row("layer_norm", 1, 8192, LN["c0_cycles"], LN["step_cycles"])
    assert d["row_waves"][0] == 1 and d["row_steps"][0] == 16
    assert d["row_s"][0] == pytest.approx((1825.8 + 16 * 957.2) / 1.98e9, rel=1e-12)
    assert d["row_s"][0] == pytest.approx(8.6571e-6, rel=1e-4)


@pytest.mark.parametrize("kind, m, n, waves", [
    ("layer_norm", 2112, 768, 1),      # 132 SMs x (2048 // 128 = 16 blocks of one row) = 2112 rows at once
    ("layer_norm", 2113, 768, 2),
    ("softmax_warp", 8448, 768, 1),    # 132 x 16 blocks x 4 rows = 8448
    ("softmax_warp", 8449, 768, 2),
    ("softmax_block", 264, 8192, 1),   # 132 x (2048 // 1024 = 2) = 264
    ("softmax_block", 265, 8192, 2),
])
def test_waves(kind, m, n, waves):
    assert _row(kind, m, n, 100.0, 100.0)["row_waves"][0] == waves


def test_the_shipped_row_constants_where_a_family_states_them():
    # nvidia-hopper states all four kinds (the H200 fit); nvidia-blackwell Hopper's softmax kinds only,
    # so a B200 LayerNorm (like an A100's: Ampere states none) has the kernel known but no term
    for hw, on in ((H200, True), ("a100-80gb-sxm", False), ("b200-hgx", False)):
        rep = analyzer.analyze(_layernorm(1, 8192), hw=[hw], runtime="kernel")
        kt = rep.predictions[0].kernel_table
        assert float(kt.feats["row_kind"][0]) == rk.KIND_CODE["layer_norm"]   # the kernel is known ...
        want = (1825.8 + 16 * 957.2) / 1.98e9 if on else 0.0                 # ... its term where stated
        assert kt.detail(0)["row_s"] == pytest.approx(want, rel=1e-6)
    assert set(fc.row_constants("nvidia-hopper")) == {"layer_norm", "rms_norm", "softmax_warp", "softmax_block"}
    assert set(fc.row_constants("nvidia-blackwell")) == {"softmax_warp", "softmax_block"}
    assert fc.row_constants("nvidia-ampere") == {}


@pytest.mark.parametrize("runtime", ["onnxruntime", "xla"])
def test_other_runtimes_have_no_row_kernel(runtime):
    rep = analyzer.analyze(_layernorm(1, 8192), hw=[H200], runtime=runtime)
    assert float(rep.predictions[0].kernel_table.feats["row_kind"][0]) == 0.0


@pytest.fixture
def hopper_rows(monkeypatch):
    """The H200 fit's layer norm and RMS norm row constants, as if nvidia-hopper.json stated them."""
    table = {"layer_norm": LN, "rms_norm": {"c0_cycles": 168.5, "step_cycles": 647.7, "overlap": 1.0}}
    monkeypatch.setattr(fc, "row_constants", lambda family, directory=None: table if family == "nvidia-hopper" else {})
    return table


def test_explain_shows_the_rows_and_its_terms_give_the_time(hopper_rows):
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze(_layernorm(1, 8192), hw=[H200], runtime="kernel")
    e = rep.predictions[0].explain(0)
    assert e.row_s == pytest.approx((1825.8 + 16 * 957.2) / 1.98e9, rel=1e-6)
    assert e.row_s == pytest.approx(e.row_waves * (e.row_c0_s + e.row_steps * e.row_step_s), rel=1e-9)
    inner = max(e.dram_s, e.sm_s) if e.sm_overlap else e.dram_s + e.sm_s
    assert e.memory_s == pytest.approx(e.runs * (inner + e.row_s), rel=1e-6)        # overlap 0: added
    assert e.time_s == pytest.approx(e.runs * (e.fixed_s + max(e.compute_s, e.memory_s)), rel=1e-6)
    text = render_explain(rep, 0)
    assert "+ rows 8.66 µs" in text and "rows = waves 1" in text and "steps 16" in text


def test_an_overlapped_kind_takes_the_max(hopper_rows):
    rep = analyzer.analyze(_layernorm(1, 8192, "RMSNormalization"), hw=[H200], runtime="kernel")
    e = rep.predictions[0].explain(0)
    assert e.row_overlap == 1.0 and e.row_s == pytest.approx((168.5 + 16 * 647.7) / 1.98e9, rel=1e-6)
    inner = max(e.dram_s, e.sm_s) if e.sm_overlap else e.dram_s + e.sm_s
    assert e.memory_s == pytest.approx(e.runs * max(inner, e.row_s), rel=1e-6)


def test_search_scores_equal_analyze_with_rows(hopper_rows):
    assert_search_scores_equal_analyze(_layernorm(64, 4096), H200, "kernel")


def _write_hopper_rows(d: str) -> dict:
    """Copy the committed efficiency files into ``d`` and give its Hopper file a ``norm_row`` set
    of its own floor (1 us at 1.98 GHz, ``floor_own``: Ampere's norm set otherwise) and the layer
    norm row constants ``LN``; returns the Hopper document written."""
    for name in os.listdir(fc.EFFICIENCY_DIR):
        shutil.copy(os.path.join(fc.EFFICIENCY_DIR, name), d)
    path = os.path.join(d, "nvidia-hopper.json")
    with open(path) as f:
        doc = json.load(f)
    with open(os.path.join(d, "nvidia-ampere.json")) as f:
        norm = json.load(f)["sets"]["norm"]
    norm["constants"].update(floor_s=1e-6, floor_clock_hz=1.98e9, floor_own=1.0)
    doc["sets"]["norm_row"] = norm
    doc["row_kernels"] = {"layer_norm": {"constants": LN, "provenance": {"kind": "prior", "source": "a test"}}}
    with open(path, "w") as f:
        json.dump(doc, f)
    return doc


def test_row_constants_and_floor_own_from_a_family_file(tmp_path):
    d = str(tmp_path)
    before = fc.floor_cycles(fc.EFFICIENCY_DIR)
    fc.validate(_write_hopper_rows(d), "test")
    assert fc.row_constants("nvidia-hopper", d) == {"layer_norm": LN}
    assert fc.row_constants("nvidia-hopper-pytorch2.3", d) == {"layer_norm": LN}   # (inherits nvidia-hopper)
    assert fc.row_constants("nvidia-ampere", d) == {}
    # a floor_own set stays out of the pooled floor (the others' floors unchanged)
    np.testing.assert_array_equal(fc.floor_cycles(d), before)


@pytest.fixture
def hopper_row_file(tmp_path, monkeypatch):
    """The efficiency files with a Hopper ``norm_row`` set of its own floor (1 us at 1.98 GHz,
    ``floor_own``) and the H200 fit's layer norm row constants, as ``bench/hopper_rows.py --write
    norm`` writes them (read from there: ``fc.EFFICIENCY_DIR``); returns the committed directory."""
    committed, d = fc.EFFICIENCY_DIR, str(tmp_path)
    _write_hopper_rows(d)
    monkeypatch.setattr(fc, "EFFICIENCY_DIR", d)
    return committed


def _batchnorm(n: int = 8, c: int = 64, hw: int = 56):
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-5)
    vec = ((c,), onnx.TensorProto.FLOAT16)
    return graph([node], {"x": ((n, c, hw, hw), onnx.TensorProto.FLOAT16), "s": vec, "b": vec, "m": vec, "v": vec},
                 ["y"])


def _kernel(model, hw=H200):
    rep = analyzer.analyze(model, hw=[hw], runtime="kernel")
    return rep.predictions[0], rep.predictions[0].explain(0)


def test_batchnorm_gets_no_row_term_nor_the_row_set(hopper_row_file):
    # ResNet-50's BatchNormalization (and its pooling) is class norm, whose PyTorch kernel is not
    # vectorized_layer_norm_kernel: no row kind, no row term, and the class's set (Ampere's,
    # inherited; the pooled floor), not the Hopper norm_row set's own 1 us floor
    pred, e = _kernel(_batchnorm())
    assert float(pred.kernel_table.feats["row_kind"][0]) == 0.0
    assert e.op_class == "norm" and e.row_s == 0.0
    assert e.floor_s == pytest.approx(fc.floor_cycles()[CLASS_CODE["norm"]] / CLOCK, rel=1e-6)
    assert e.floor_s != pytest.approx(1e-6, rel=1e-3)
    # ... and the same time as with the committed files (no row set, no row constants)
    pool = graph([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2])],
                 {"x": ((8, 64, 112, 112), onnx.TensorProto.FLOAT16)}, ["y"])   # (pooling -> reduce -> norm)
    pooled = _kernel(pool)[0].latency_s
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fc, "EFFICIENCY_DIR", hopper_row_file)
        assert _kernel(_batchnorm())[0].latency_s == pred.latency_s
        assert _kernel(pool)[0].latency_s == pooled


def test_the_layer_norm_takes_the_row_class_its_own_floor_and_the_term(hopper_row_file):
    e = _kernel(_layernorm(1, 8192))[1]
    assert e.op_class == "norm_row" and e.floor_s == pytest.approx(1e-6, rel=1e-6)   # (own: not pooled)
    assert e.row_s == pytest.approx((1825.8 + 16 * 957.2) / 1.98e9, rel=1e-6)
    # a LayerNorm whose row is not a multiple of the 4-element vector runs another kernel: class norm
    e = _kernel(_layernorm(1, 770))[1]
    assert e.op_class == "norm" and e.row_s == 0.0


def test_a_device_without_row_constants_keeps_the_class(hopper_row_file):
    # in one lowering with the H200 the A100's layer norm takes the row class, whose set it
    # lacks: its norm set (CLASS_FALLBACK) and the pooled floor, the time it has alone
    both = analyzer.analyze(_layernorm(64, 4096), hw=[H200, "a100-80gb-sxm"], runtime="kernel").predictions
    alone = analyzer.analyze(_layernorm(64, 4096), hw=["a100-80gb-sxm"], runtime="kernel").predictions[0]
    assert both[0].explain(0).op_class == "norm_row" and both[1].explain(0).row_s == 0.0
    assert both[1].latency_s == pytest.approx(alone.latency_s, rel=1e-12)


def test_search_scores_equal_analyze_with_the_row_set(hopper_row_file):
    assert_search_scores_equal_analyze(_layernorm(64, 4096), H200, "kernel")
    assert_search_scores_equal_analyze(_batchnorm(), H200, "kernel")


def test_a_norms_backward_kernel_is_not_the_forward_row_kernel():
    # training.backward_time prices a LayerNorm's dX kernel as a node of op LayerNormalization whose
    # inputs are (x, dy), both (8, 128, 768): its second input is no scale, so no row kernel (before,
    # it read as one row of 786,432 elements: 1,536 steps x 957 cycles = 0.74 ms a kernel on the H200)
    from types import SimpleNamespace

    from analyzer.ir.graph import TensorSpec

    x = TensorSpec((8, 128, 768), "float16")
    fwd = SimpleNamespace(domain="", op="LayerNormalization", kernel="", in_specs=(x, TensorSpec((768,), "float16")))
    bwd = SimpleNamespace(domain="", op="LayerNormalization", kernel="", in_specs=(x, x))
    assert rk.node_row(fwd) == (float(rk.KIND_CODE["layer_norm"]), 1024.0, 768.0)
    assert rk.node_row(bwd) == (0.0, 0.0, 0.0)
