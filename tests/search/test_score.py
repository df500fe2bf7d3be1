"""CostModel.score / score_dims / table.score equal analyze()'s latency (1e-6 relative)."""

import numpy as np
import pytest

import analyzer
from analyzer.search import batched_kernels as batch

from conftest import HW, reference

import search_space as ss


def _candidates(n=5, nodes=40):
    rng = np.random.default_rng(7)
    return [ss.random_transformer(rng, nodes) for _ in range(n)]


@pytest.mark.parametrize("runtime,precision", [(None, None), ("xla", "bf16"), ("eager-op", None),
                                               ("onnxruntime", "fp16")])
def test_score_equals_analyze(runtime, precision):
    cm = analyzer.CostModel(HW, runtime=runtime, precision=precision)
    cands = _candidates()
    as_bytes = [m.SerializeToString() for m in cands]
    lat = cm.score(cands)
    assert lat.shape == (len(cands), 2)
    np.testing.assert_array_equal(cm.score(as_bytes), lat)   # ModelProto and bytes agree
    for m, row in zip(cands, lat):
        np.testing.assert_allclose(row, reference(m, runtime=runtime, precision=precision),
                                   rtol=1e-6)


def test_score_paths_jax_and_detail(cm, tmp_path):
    import jax

    m = _candidates(1)[0]
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString())

    def f(x, w):
        return jax.nn.relu(x @ w).sum()

    spec = (jax.ShapeDtypeStruct((64, 128), "float32"), jax.ShapeDtypeStruct((128, 256), "float32"))
    lat, det = cm.score([str(p), (f, spec)], detail=True)
    np.testing.assert_allclose(lat[0], reference(m), rtol=1e-6)
    r = analyzer.analyze_jax(f, *spec, hw=HW)
    np.testing.assert_allclose(lat[1], [x.latency_s for x in r.predictions], rtol=1e-6)
    # the per-node breakdown sums to the latency less its per-call term (in no row) and joins
    # analyze's rows by index
    call = np.array([x.run_overhead_s for x in r.predictions])
    np.testing.assert_allclose(det[1].node_time_s.sum(axis=1) + call, lat[1], rtol=1e-5)
    for i in range(len(r.nodes)):
        row = r.predictions[0].for_node(i)
        assert det[1].node_time_s[0, i] == pytest.approx(row.time_s if row else 0.0, rel=1e-5)
    assert [n.name for n in det[0].nodes] == [n.name for n in analyzer.analyze(m).nodes]


def test_sizes_share_compiled_kernels(cm):
    cm.score(_candidates(3, 40))
    before = batch.TRACES["batch"]
    rng = np.random.default_rng(99)
    cm.score([ss.random_transformer(rng, 45) for _ in range(4)])   # same K bucket, batch bucket
    assert batch.TRACES["batch"] == before


def test_score_dims_equals_analyze(cm):
    from analyzer.search.dims import polynomial

    m = ss.symbolic_transformer()
    grid = {"batch": [1, 3], "seq": [8, 16, 48, 64, 100], "width": [32, 64, 96, 256, 320]}
    lat, assign = cm.score_dims(m, grid, return_assignments=True)
    assert lat.shape == (2 * 5 * 5, 2)
    names = tuple(grid)
    assert polynomial.fit(cm, m, names, assign).exact      # the polynomial path, verified
    for i in (0, 7, 18, 31, 49):
        point = dict(zip(names, map(int, assign[i])))
        np.testing.assert_allclose(lat[i], reference(m, dims=point), rtol=1e-6)
    zipped = cm.score_dims(m, {"batch": [1, 3], "seq": [8, 64], "width": [32, 320]}, product=False)
    np.testing.assert_allclose(zipped[1], reference(m, dims={"batch": 3, "seq": 64, "width": 320}),
                               rtol=1e-6)


def test_score_dims_falls_back_when_not_polynomial(cm):
    # a strided conv: output size floor((h - 1) / 2) + 1 is not a polynomial in h
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, "h", "h"])
    w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [8, 8, 3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2],
                                            kernel_shape=[3, 3], name="conv"),
                           helper.make_node("Relu", ["c"], ["y"], name="relu")],
                          "g", [x, w], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    hs = [9, 10, 11, 12, 13, 14, 15, 16, 17]
    lat = cm.score_dims(m, {"h": hs})
    for h, row in zip(hs, lat):
        np.testing.assert_allclose(row, reference(m, dims={"h": h}), rtol=1e-6)


@pytest.mark.parametrize("runtime", ["kernel", "eager-op"])
def test_table_equals_analyze_of_composed(runtime, tmp_path):
    from analyzer.search.table import LatencyTable, compose

    cm = analyzer.CostModel(HW, runtime=runtime)
    table = cm.table(ss.CNN_SPACE, ss.CNN_INPUT)
    rng = np.random.default_rng(3)
    choices = np.stack([rng.integers(len(s), size=6) for s in ss.CNN_SPACE], axis=1)
    lat = table.score(choices)
    for ch, row in zip(choices, lat):
        model = compose(ss.CNN_SPACE, ch, ss.CNN_INPUT)
        np.testing.assert_allclose(row, reference(model, runtime=runtime), rtol=1e-6)
        assert table.count(ch)[0] == analyzer.analyze(model).totals.flops
    for name in ("t.npz", "t.json"):
        table.save(str(tmp_path / name))
        again = LatencyTable.load(str(tmp_path / name))
        np.testing.assert_array_equal(again.score(choices), lat)


def _gathers(dtype, seq="seq"):
    """An embedding lookup (``seq`` ids into a 50,000 x 512 table of ``dtype``) and a Relu."""
    from onnx import TensorProto, helper, numpy_helper

    elem = {"fp32": (np.float32, TensorProto.FLOAT), "fp16": (np.float16, TensorProto.FLOAT16)}[dtype]
    emb = numpy_helper.from_array(np.zeros((50000, 512), elem[0]), "E")
    g = helper.make_graph([helper.make_node("Gather", ["E", "ids"], ["h"], name="embed"),
                           helper.make_node("Relu", ["h"], ["y"], name="act")], "g",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, [8, seq])],
                          [helper.make_tensor_value_info("y", elem[1], None)], [emb])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_score_reads_the_dtype_of_a_per_element_gather(dtype):
    # PyTorch's 2024 gather (the "-pytorch2.3" family variant's set, per_element = 1) issues per
    # element: its per-SM term scales by 2 bytes / the dtype's bytes, so an fp32 table's 512-wide
    # rows cost half their bytes' worth there. The search paths once dropped the dtype:
    # CostModel.score put this fp32 model 60 % above analyze() on an A100
    import dataclasses

    import hardware_db

    hw = [dataclasses.replace(hardware_db.get("a100"), family="nvidia-ampere-pytorch2.3"), "tpu-v5e"]
    cm = analyzer.CostModel(hw)
    fixed = _gathers(dtype, 512)
    np.testing.assert_allclose(cm.score([fixed])[0], reference(fixed, hw=hw), rtol=1e-6)
    m = _gathers(dtype)
    grid = [64, 128, 256, 512, 1024]
    for s, row in zip(grid, cm.score_dims(m, {"seq": grid})):
        np.testing.assert_allclose(row, reference(m, hw=hw, dims={"seq": s}), rtol=1e-6)
