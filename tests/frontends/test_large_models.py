"""Models far above protobuf's 2 GB limit (issue 4): weights in external data are never
read, so only the graph structure travels through shape inference.

The weights below are declared EXTERNAL in files that do not exist: if any step read
weight bytes (onnx.load with external data, a checker, a numpy conversion), the
analysis would fail instead of counting.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.errors import ShapeError

K, N = 65_536, 16_384        # one weight: 2**30 elements, 4 GiB of float32
T = 8                        # tokens


def _external(name: str, dims: list[int], dtype=TensorProto.FLOAT) -> TensorProto:
    t = TensorProto(name=name, data_type=dtype, dims=dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", f"{name}.bin"), ("offset", "0"),
                 ("length", str(int(np.prod(dims)) * (4 if dtype == TensorProto.FLOAT else 2)))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _big_model(in_dim: str | int = T) -> onnx.ModelProto:
    # y = relu(x @ W1) @ W2 with W1 [K, N] and W2 [N, K]: 2 x 4 GiB = 8 GiB of declared weights
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"], name="up"),
         helper.make_node("Relu", ["h"], ["a"], name="act"),
         helper.make_node("MatMul", ["a", "W2"], ["y"], name="down")],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [in_dim, K])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [_external("W1", [K, N]), _external("W2", [N, K])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_an_8_gib_model_analyses_from_its_path_without_the_data(tmp_path):
    path = tmp_path / "big.onnx"
    onnx.save(_big_model(), path)           # the graph only: a few hundred bytes
    assert path.stat().st_size < 10_000
    assert not (tmp_path / "W1.bin").exists()
    r = analyzer.analyze(path)
    assert r.totals.params == 2 * K * N == 2_147_483_648          # 2**31 elements
    assert r.totals.weight_bytes == 4 * 2 * K * N == 8_589_934_592  # 8 GiB read once
    # 2 x T x K x N per MatMul, two of them: 2 * 2 * 8 * 2**30 = 34,359,738,368
    assert r.totals.mac_flops == 2 * 2 * T * K * N == 34_359_738_368
    assert r.node("act").cost.vector_flops == T * N
    assert r.coverage.uncosted == ()


def test_symbolic_dims_bind_on_a_large_model(tmp_path):
    path = tmp_path / "big_dyn.onnx"
    onnx.save(_big_model("tokens"), path)
    r = analyzer.analyze(path, dims={"tokens": 3})
    assert r.totals.mac_flops == 2 * 2 * 3 * K * N
    with pytest.raises(ShapeError, match="tokens"):
        analyzer.analyze(path)  # the count needs the dim: an error naming it, not a guess


def test_inline_weights_do_not_travel_through_shape_inference(tmp_path, monkeypatch):
    # A file holding its weights inline (most .onnx files under 2 GB): inference gets the
    # graph without them (the big initializers marked external), so a 47 MB ResNet-18 is not
    # copied into C++ and back; the counts are those of the same model with external weights.
    import onnx.shape_inference as si

    w1 = np.random.default_rng(0).random((256, 128), dtype=np.float32)   # 32,768 elements
    w2 = np.random.default_rng(1).random((128, 10), dtype=np.float32)    # 1,280: kept (small)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"], name="up"),
         helper.make_node("Relu", ["h"], ["a"], name="act"),
         helper.make_node("MatMul", ["a", "W2"], ["y"], name="down")],
        "inline", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [onnx.numpy_helper.from_array(w1, "W1"), onnx.numpy_helper.from_array(w2, "W2")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "inline.onnx"
    onnx.save(model, path)
    assert path.stat().st_size > 4 * 32_768

    seen = []
    real = si.infer_shapes
    monkeypatch.setattr(si, "infer_shapes", lambda m, *a, **k: seen.append(
        len(m) if isinstance(m, bytes) else m.ByteSize()) or real(m, *a, **k))
    for source in (path, model):
        r = analyzer.analyze(source)
        assert r.totals.params == 32_768 + 1_280
        assert r.totals.mac_flops == 2 * 4 * (256 * 128 + 128 * 10) == 272_384
        assert r.totals.weight_bytes == 4 * (32_768 + 1_280)
    assert seen and max(seen) < 4 * 1_280 + 2_000  # W1's 131 KB never reached inference
    assert len(model.graph.initializer[0].raw_data) == 4 * 32_768  # the caller's proto is untouched
