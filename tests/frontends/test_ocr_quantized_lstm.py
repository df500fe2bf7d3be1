"""An older OCR export after ``quantize_dynamic``: the image width is a symbol, and the
sequence the ``DynamicQuantizeLSTM`` reads is a Reshape whose target the graph computes from
that width (Shape -> Gather -> Div -> Unsqueeze -> Concat).  ONNX inference cannot type the
contrib op, and its input is known only once folding gave the Reshape its target: the
surrogate shapes run again then, and every node is costed exactly.

Built with onnx.helper (no such real file is at hand): x [batch, 1, 8, width] -> Conv
[16, 1, 8, 4] stride (8, 4) -> [batch, 16, 1, width / 4] -> Squeeze -> Transpose [T, batch, 16]
-> Reshape [width / 4, batch, 16] -> DynamicQuantizeLSTM (H = 8, int8 W and R) -> Relu.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.errors import UnboundDimError

H, C = 8, 16


def ocr_model():
    def i64(v):
        return np.array(v, np.int64)

    inits = {"cw": np.ones((C, 1, 8, 4), np.float32), "ax2": i64([2]), "ax0": i64([0]),
             "i0": i64(0), "i3": i64(3), "four": i64(4), "c": i64([C]),
             "W": np.ones((1, C, 4 * H), np.int8), "R": np.ones((1, H, 4 * H), np.int8),
             "B": np.zeros((1, 8 * H), np.float32),
             "ws": np.ones(1, np.float32), "wz": np.zeros(1, np.int8),
             "rs": np.ones(1, np.float32), "rz": np.zeros(1, np.int8)}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "cw"], ["f"], name="conv", strides=[8, 4]),
        n("Squeeze", ["f", "ax2"], ["sq"], name="squeeze"),
        n("Transpose", ["sq"], ["tr"], name="transpose", perm=[2, 0, 1]),
        n("Shape", ["x"], ["s"], name="shape"),
        n("Gather", ["s", "i3"], ["wd"], name="gather_w", axis=0),
        n("Div", ["wd", "four"], ["t"], name="div"),
        n("Gather", ["s", "i0"], ["b"], name="gather_b", axis=0),
        n("Unsqueeze", ["t", "ax0"], ["t1"], name="unsq_t"),
        n("Unsqueeze", ["b", "ax0"], ["b1"], name="unsq_b"),
        n("Concat", ["t1", "b1", "c"], ["target"], name="concat", axis=0),
        n("Reshape", ["tr", "target"], ["seq"], name="reshape"),
        n("DynamicQuantizeLSTM", ["seq", "W", "R", "B", "", "", "", "", "ws", "wz", "rs", "rz"],
          ["Y", "Yh", "Yc"], name="lstm", domain="com.microsoft", hidden_size=H),
        n("Relu", ["Y"], ["out"], name="relu"),
    ]
    g = helper.make_graph(
        nodes, "ocr", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 8, "width"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("com.microsoft", 1)], ir_version=7)


def _dq(n: int) -> int:  # dynamic quantization of n floats (rules/onnxruntime/quantized.py)
    return 2 * (n - 1) + 9 + 5 * n


@pytest.mark.parametrize("batch, width", [(2, 64), (1, 100)])
def test_the_lstm_behind_a_symbolic_width_is_costed_exactly(batch, width):
    r = analyzer.analyze(ocr_model(), dims={"batch": batch, "width": width})
    assert r.coverage.uncosted == ()
    T = width // 4
    assert r.node("reshape").outputs == (f"float32[{T},{batch},{C}]",)
    lstm = r.node("lstm")
    assert lstm.outputs == (f"float32[{T},1,{batch},{H}]", f"float32[1,{batch},{H}]",
                            f"float32[1,{batch},{H}]")
    rows = T * batch  # S * D * B, one direction
    assert lstm.mac_flops == 2 * rows * C * 4 * H + 2 * rows * H * 4 * H
    # cell with bias rows*H*22; X quantized once, h before each of T steps; both products
    # dequantized (2*T*B*4H); weight zero points W C*4H + R H*4H
    assert lstm.vector_flops == (rows * H * 22 + _dq(T * batch * C) + T * _dq(batch * H)
                                 + 2 * T * batch * 4 * H + C * 4 * H + H * 4 * H)
    assert lstm.transcendentals == rows * H * 5
    assert r.node("conv").mac_flops == 2 * batch * C * T * 8 * 4
    assert r.node("relu").vector_flops == T * batch * H
    if (batch, width) == (2, 64):  # the numbers written out once
        assert (lstm.mac_flops, lstm.vector_flops) == (49152, 13943)


def test_a_bare_run_names_the_symbolic_width():
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(ocr_model())
    assert [h.value for h in e.value.hints if h.option == "dims"] == [{"batch": "VALUE", "width": "VALUE"}]
