"""Test inputs for the serial k loop (``efficiency.tiles.kloop_bound``), shared by
tests/prediction/test_kloop.py and tests/search/test_kloop_rows.py: efficiency files whose Hopper
FMA-unit convolution sets carry a k loop (no shipped file does), and a batch-1 fp32 1x1 convolution."""

import json
import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper

from analyzer.prediction.efficiency import constants as fc


def write_kloop_files(d: str, cycles: float = 45.0) -> None:
    """The efficiency files into ``d`` with the Hopper FMA-unit convolution sets given a k loop."""
    for name in os.listdir(fc.EFFICIENCY_DIR):
        shutil.copy(os.path.join(fc.EFFICIENCY_DIR, name), d)
    path = os.path.join(d, "nvidia-hopper.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    for cls in ("conv_simt", "conv3_simt"):
        doc["sets"][cls]["constants"]["kloop_cycles"] = cycles
    fc.validate(doc, path)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


def conv_1x1(cin: int = 1024, cout: int = 256, hw: int = 14) -> bytes:
    """ResNet-50's layer-4 1x1 projection at batch 1 (k = cin = 1024), fp32."""
    w = numpy_helper.from_array(np.zeros((cout, cin, 1, 1), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv")], "g",
                          [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, cin, hw, hw])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()
