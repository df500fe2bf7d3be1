"""The CPU calibration never measures a layer of a model the CPU accuracy bench evaluates.

Issue #10's CPU target is on models "never calibrated on": a calibration row with the same op,
input and weight shapes, strides and group as a layer of an evaluated model would be
calibration on that model. This test lists every such coincidence (none allowed)."""

from __future__ import annotations

import os
import sys

import onnx
from onnx import shape_inference

from analyzer.prediction.calibration_models import calibration_models

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = {"Conv", "FusedConv", "MatMul", "Gemm", "FusedMatMul", "Attention", "QuickGelu", "Sigmoid",
       "LayerNormalization", "SkipLayerNormalization", "MaxPool", "AveragePool",
       "GlobalAveragePool", "LSTM", "GRU", "Softmax", "Gather", "Transpose"}


def _layers(model) -> set[tuple]:
    """(op kind, shapes of the first two inputs, strides, group, kernel) of each compute node."""
    g = shape_inference.infer_shapes(model).graph
    shape = {t.name: tuple(t.dims) for t in g.initializer}
    for v in [*g.input, *g.value_info, *g.output]:
        t = v.type.tensor_type
        if t.HasField("shape"):
            shape[v.name] = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim)
    out = set()
    for n in g.node:
        if n.op_type not in OPS:
            continue
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        kind = "Conv" if n.op_type == "FusedConv" else n.op_type
        out.add((kind, tuple(shape.get(i) for i in n.input[:2]),
                 tuple(a.get("strides", [1, 1])), a.get("group", 1),
                 tuple(a.get("kernel_shape", ())), tuple(a.get("perm", ()))))
    return out


def test_no_calibration_row_is_a_layer_of_an_evaluated_model():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import accuracy_cpu

    rows = {}
    for cls, m in calibration_models().items():
        for key in _layers(m):
            rows[key] = cls
    evaluated = accuracy_cpu.models()
    assert len(evaluated) >= 15          # the bench's models are here to check against
    hits = []
    for path in evaluated:
        for key in _layers(onnx.load(path, load_external_data=False)) & rows.keys():
            hits.append(f"{rows[key]} row {key} is a layer of {os.path.basename(path)}")
    assert not hits, "\n".join(hits)
