"""Control flow as speech and audio exports write it (silero-VAD style): an ``If`` on the
sample rate choosing between two STFT/conv paths, an LSTM fed through ``Unsqueeze`` inside a
branch, pads computed from shapes inside a body.  ONNX inference loses the ranks inside the
bodies; once the outer inputs are concrete the bodies are inferred again with the values the
frontend folds there, and every node is costed.  Closed forms are written beside each check.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper

import analyzer
from analyzer.errors import AnalyzerError

HERE = os.path.dirname(os.path.abspath(__file__))
VAD = os.path.join(HERE, "..", "fixtures", "speech", "vad_if.onnx")  # samples/speech/export_vad.py
CONCRETE = {"input": [1, 512], "h": [1, 16], "c": [1, 16]}

# 16 kHz path at [1, 512]: reflect pad 64 + 64 -> 640 samples; STFT Conv basis [258, 1, 256],
# stride 128: (640 - 256) / 128 + 1 = 4 frames, 258 * 4 * 256 MACs; encoder Conv [16, 129, 3]
# (pad 1) on [1, 129, 4]: 16 * 4 * 129 * 3 MACs; LSTM (1 step, batch 1, I = H = 16, 4 gates):
# 2 * 16 * 4 * 16 + 2 * 16 * 4 * 16; decoder Conv [1, 16, 1] on [1, 16, 1]: 16 MACs
MAC_16K = 2 * 258 * 4 * 256 + 2 * 16 * 4 * 129 * 3 + (2 * 16 * 64 + 2 * 16 * 64) + 2 * 16
# 8 kHz path: pad 32 + 32 -> 576; basis [130, 1, 128], stride 64: (576 - 128) / 64 + 1 = 8
# frames; encoder Conv [16, 65, 3] on [1, 65, 8]; LSTM and decoder as above
MAC_8K = 2 * 130 * 8 * 128 + 2 * 16 * 8 * 65 * 3 + (2 * 16 * 64 + 2 * 16 * 64) + 2 * 16


def _nodes(r, op):
    return [n for n in r.nodes if n.op == op]


def test_vad_with_a_runtime_sample_rate_costs_the_costlier_path_with_no_uncosted_node():
    r = analyzer.analyze(VAD, inputs=CONCRETE)
    assert r.coverage.uncosted == ()
    assert r.totals.mac_flops == MAC_16K == 582048
    assert "costlier branch 'then_branch'" in r.node("/If").note
    assert r.coverage.estimates == ("/If",)  # the sample rate is a run-time value: an estimate
    pad = r.node("/If//p16/stft/Pad")
    assert pad.outputs == ("float32[1,1,640]",)  # 512 + 2 * 256 // 4
    assert r.node("/If//p16/stft/Conv").mac_flops == 2 * 258 * 4 * 256
    lstm = r.node("/If//p16/lstm/LSTM")
    # LSTM vector: 16 units x (14 cell + 2 * 4 biases); transcendental: 16 x 5
    assert (lstm.mac_flops, lstm.vector_flops, lstm.transcendentals) == (4096, 16 * 22, 16 * 5)
    # the If's outputs are what both branches give ([1, 1], [1, 16], [1, 16]), not the
    # exporter's declared 'Ifout_dim_0'
    assert r.node("/If").outputs == ("float32[1,1]", "float32[1,16]", "float32[1,16]")


@pytest.mark.parametrize("sr, mac, branch", [(16000, MAC_16K, "/p16/"), (8000, MAC_8K, "/p8/")])
def test_vad_with_a_known_sample_rate_costs_the_taken_path_exactly(sr, mac, branch):
    r = analyzer.analyze(VAD, inputs=CONCRETE, values={"sr": sr})
    assert r.coverage.uncosted == () and r.coverage.estimates == ()
    assert r.totals.mac_flops == mac
    assert all(branch in n.name for n in r.nodes if n.name.startswith("/If/"))


def test_vad_at_bound_dims_scales_the_stft():
    r = analyzer.analyze(VAD, dims={"batch": 2, "samples": 1024})
    assert r.coverage.uncosted == ()
    # 1024 + 128 = 1152 samples: (1152 - 256) / 128 + 1 = 8 frames, batch 2
    assert r.node("/If//p16/stft/Conv").mac_flops == 2 * 2 * 258 * 8 * 256
    assert r.node("/If").outputs == ("float32[2,1]", "float32[2,16]", "float32[2,16]")


def test_vad_with_unbound_dims_says_which_to_bind():
    with pytest.raises(AnalyzerError, match="'batch'") as e:
        analyzer.analyze(VAD)
    assert "dims=" in str(e.value)


# ----------------------------------------------------------------------------- built by hand

def _vi(name, shape, t=TP.FLOAT):
    return h.make_tensor_value_info(name, t, shape)


def _const(name, value):
    return h.make_node("Constant", [], [name], name=f"k_{name}",
                       value=numpy_helper.from_array(np.asarray(value), f"v_{name}"))


def _torch_pads(p: str, x: str, left: int, right: int) -> list:
    """F.pad's pads as the TorchScript exporter computes them from a rank (the chain ONNX
    inference does not follow: ConstantOfShape, Concat, Reshape [-1, 2], Slice with step -1,
    Transpose, Reshape [-1]), ending in ``{p}pads``."""
    return [
        _const(f"{p}lr", np.array([left, right], np.int64)),
        h.make_node("Shape", [x], [f"{p}shape"], name=f"{p}shape_op"),
        h.make_node("Size", [f"{p}shape"], [f"{p}rank"], name=f"{p}size"),
        _const(f"{p}two", np.array(2, np.int64)),
        h.make_node("Mul", [f"{p}rank", f"{p}two"], [f"{p}r2"], name=f"{p}mul"),
        _const(f"{p}n", np.array([2], np.int64)),
        h.make_node("Sub", [f"{p}r2", f"{p}n"], [f"{p}fill"], name=f"{p}sub"),
        h.make_node("ConstantOfShape", [f"{p}fill"], [f"{p}zeros"], name=f"{p}cos",
                    value=numpy_helper.from_array(np.array([0], np.int64), "z")),
        h.make_node("Concat", [f"{p}lr", f"{p}zeros"], [f"{p}cat"], name=f"{p}cat_op", axis=0),
        _const(f"{p}m12", np.array([-1, 2], np.int64)),
        h.make_node("Reshape", [f"{p}cat", f"{p}m12"], [f"{p}pairs"], name=f"{p}rs"),
        _const(f"{p}s0", np.array([-1], np.int64)), _const(f"{p}e0", np.array([-(2**63)], np.int64)),
        _const(f"{p}a0", np.array([0], np.int64)), _const(f"{p}st", np.array([-1], np.int64)),
        h.make_node("Slice", [f"{p}pairs", f"{p}s0", f"{p}e0", f"{p}a0", f"{p}st"], [f"{p}rev"],
                    name=f"{p}slice"),
        h.make_node("Transpose", [f"{p}rev"], [f"{p}tr"], name=f"{p}tr_op", perm=[1, 0]),
        _const(f"{p}m1", np.array([-1], np.int64)),
        h.make_node("Reshape", [f"{p}tr", f"{p}m1"], [f"{p}pads"], name=f"{p}flat"),
    ]


def _model(nodes, inputs, outputs, inits=()):
    g = h.make_graph(nodes, "speech", inputs, outputs, list(inits))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8)


BASIS = numpy_helper.from_array(np.ones((18, 1, 16), np.float32), "basis")  # an STFT basis


def _stft(p: str, x: str, out: str) -> list:
    # x [B, T] -> Unsqueeze [B, 1, T] -> reflect Pad 4 + 4 -> Conv basis [18, 1, 16] stride 8
    return [_const(f"{p}ax", np.array([1], np.int64)),
            h.make_node("Unsqueeze", [x, f"{p}ax"], [f"{p}u"], name=f"{p}unsq"),
            *_torch_pads(p, f"{p}u", 4, 4),
            h.make_node("Pad", [f"{p}u", f"{p}pads"], [f"{p}padded"], name=f"{p}pad", mode="reflect"),
            h.make_node("Conv", [f"{p}padded", "basis"], [out], name=f"{p}conv", strides=[8])]


def test_scan_over_chunks_with_an_stft_in_its_body():
    # a streaming VAD: Scan over xs [5, 1, 64] (5 chunks of 64 samples); per chunk the body pads
    # 64 -> 72 and convolves: (72 - 16) / 8 + 1 = 8 frames, 18 * 8 * 16 MACs
    body = h.make_graph(
        [h.make_node("Identity", ["s_in"], ["s_out"], name="keep"), *_stft("b_", "x_t", "spec")],
        "body", [_vi("s_in", None), _vi("x_t", None)], [_vi("s_out", None), _vi("spec", None)])
    node = h.make_node("Scan", ["s0", "xs"], ["s", "specs"], name="scan", body=body, num_scan_inputs=1)
    m = _model([node], [_vi("s0", [1]), _vi("xs", [5, 1, 64])], [_vi("s", None), _vi("specs", None)],
               [BASIS])
    r = analyzer.analyze(m)
    assert r.coverage.uncosted == ()
    assert r.node("scan/b_pad").outputs == ("float32[1,1,72]",)
    assert r.node("scan/b_conv").mac_flops == 5 * 2 * 18 * 8 * 16  # 5 chunks
    assert r.node("scan").outputs[1] == "float32[5,1,18,8]"


def test_loop_body_with_an_stft_resolves():
    # Loop M = 3 over a carried [1, 64] signal, the body's spectrum stacked as a scan output
    body = h.make_graph(
        [h.make_node("Identity", ["c_in"], ["c_out"], name="keep"),
         h.make_node("Identity", ["v_in"], ["v_out"], name="carry"), *_stft("l_", "v_in", "spec")],
        "body", [_vi("i", [], TP.INT64), _vi("c_in", [], TP.BOOL), _vi("v_in", None)],
        [_vi("c_out", [], TP.BOOL), _vi("v_out", None), _vi("spec", None)])
    node = h.make_node("Loop", ["M", "", "x"], ["v", "specs"], name="loop", body=body)
    m = _model([node], [_vi("x", [1, 64])], [_vi("v", None), _vi("specs", None)],
               [BASIS, numpy_helper.from_array(np.array(3, np.int64), "M")])
    r = analyzer.analyze(m)
    assert r.coverage.uncosted == ()
    assert r.node("loop/l_conv").mac_flops == 3 * 2 * 18 * 8 * 16  # 3 trips
    assert r.node("loop").outputs == ("float32[1,64]", "float32[3,1,18,8]")


def _lstm_if(then_pads_from_input: bool = False):
    """If (runtime ``sr == 16000``): then the STFT over x [1, 64] (18 x 8 frames) ->
    ReduceMean over frames -> Unsqueeze (axes an outer-scope Constant) -> LSTM (H = 8);
    else the same with the rank-losing pads replaced (or, ``then_pads_from_input``, pads that
    are a graph input: a shape known only at run time)."""
    w = numpy_helper.from_array(np.ones((1, 32, 18), np.float32), "W")
    r = numpy_helper.from_array(np.ones((1, 32, 8), np.float32), "R")

    def branch(p):
        if then_pads_from_input and p == "t_":
            stft = [_const(f"{p}ax", np.array([1], np.int64)),
                    h.make_node("Unsqueeze", ["x", f"{p}ax"], [f"{p}u"], name=f"{p}unsq"),
                    h.make_node("Pad", [f"{p}u", "pads"], [f"{p}padded"], name=f"{p}pad", mode="reflect"),
                    h.make_node("Conv", [f"{p}padded", "basis"], [f"{p}spec"], name=f"{p}conv", strides=[8])]
        else:
            stft = _stft(p, "x", f"{p}spec")
        return h.make_graph(
            [*stft,
             h.make_node("ReduceMean", [f"{p}spec"], [f"{p}m"], name=f"{p}mean", axes=[2], keepdims=0),
             h.make_node("Unsqueeze", [f"{p}m", "zero"], [f"{p}seq"], name=f"{p}unsq_seq"),
             h.make_node("LSTM", [f"{p}seq", "W", "R"], [f"{p}y", f"{p}h"], name=f"{p}lstm",
                         hidden_size=8)],
            p, [], [_vi(f"{p}h", None)])

    nodes = [_const("zero", np.array([0], np.int64)), _const("k16", np.array(16000, np.int64)),
             h.make_node("Equal", ["sr", "k16"], ["c"], name="is16k"),
             h.make_node("If", ["c"], ["hn"], name="branch", then_branch=branch("t_"),
                         else_branch=branch("e_"))]
    ins = [_vi("x", [1, 64]), _vi("sr", [], TP.INT64)]
    if then_pads_from_input:
        ins.append(_vi("pads", [6], TP.INT64))
    return _model(nodes, ins, [_vi("hn", None)], [BASIS, w, r])


def test_lstm_through_unsqueeze_in_a_branch_is_costed():
    r = analyzer.analyze(_lstm_if())
    assert r.coverage.uncosted == ()
    # STFT 2 * 18 * 8 * 16; LSTM 1 step, batch 1, I = 18, H = 8, 4 gates: 2*18*32 + 2*8*32
    assert r.node("branch/t_lstm").mac_flops == 2 * 18 * 32 + 2 * 8 * 32
    assert r.totals.mac_flops == 2 * 18 * 8 * 16 + 2 * 18 * 32 + 2 * 8 * 32
    assert r.node("branch").outputs == ("float32[1,1,8]",)


def test_a_branch_shaped_by_a_runtime_value_says_so_rather_than_failing():
    r = analyzer.analyze(_lstm_if(then_pads_from_input=True))
    note = r.node("branch").note
    assert "condition not constant" in note
    # the then-branch's pads are a graph input: its shapes are known only at run time, so its
    # cost is unknown and the note says the comparison could not see it
    assert "then_branch" in note and "uncosted" in note
    # the else branch (resolved) is what is costed, exactly
    assert r.node("branch/e_lstm").mac_flops == 2 * 18 * 32 + 2 * 8 * 32
