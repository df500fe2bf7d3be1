"""CPU side of "predictions users can trust": onnxruntime's fused graph, the CPU kernel form,
its fit, the profile writer and measurement. No wall-clock assertions."""

from __future__ import annotations

import types

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer.prediction import cpu_model
from analyzer.prediction.calibrate import to_toml, write_profile

ort = pytest.importorskip("onnxruntime")


def _conv_bn_relu():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(np.ones(8, np.float32), "s"),
             numpy_helper.from_array(np.zeros(8, np.float32), "b"),
             numpy_helper.from_array(np.zeros(8, np.float32), "m"),
             numpy_helper.from_array(np.ones(8, np.float32), "v")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 16, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_fused_graph_folds_bn_and_fuses_relu_and_maps_back():
    from analyzer import analyze
    from analyzer.prediction.ort_graph import fused_graph, fusion_map

    m = _conv_bn_relu()
    f = fused_graph(m, "default", threads=1)
    kernels = [n for n in f.graph.node]
    assert len(kernels) == 1 and kernels[0].op_type in ("Conv", "FusedConv")
    fmap = fusion_map(m, f)
    assert fmap == {kernels[0].name: ["conv", "bn", "relu"]}
    rep = analyze(f)
    assert [n.status for n in rep.nodes] == ["costed"]


def test_fused_graph_off_keeps_every_node():
    from analyzer.prediction.ort_graph import fused_graph, fusion_map

    m = _conv_bn_relu()
    f = fused_graph(m, "off", threads=1)
    assert [n.op_type for n in f.graph.node] == ["Conv", "BatchNormalization", "Relu"]
    assert fusion_map(m, f) == {"conv": ["conv"], "bn": ["bn"], "relu": ["relu"]}


def test_kernel_time_closed_form():
    # compute: 2e9 / (1e12 * 0.5) = 4e-3 s; memory: (1e6 + 1e5) / (1e10 * 0.5) = 2.2e-4 s
    t = cpu_model.kernel_time(2e9, 1e6, 1e-6, 0.5, 0.5, 1e5, 1e12, 1e10)
    assert t == pytest.approx(1e-6 + 4e-3)
    # memory-bound: F=0: 1e-6 + (1e6 + 1e5) / 5e9 = 1e-6 + 2.2e-4
    t = cpu_model.kernel_time(0, 1e6, 1e-6, 0.5, 0.5, 1e5, 1e12, 1e10)
    assert t == pytest.approx(1e-6 + 2.2e-4)


def _doc(**tables):
    base = {"floor_us": 2.0, "e_c": 0.5, "e_bw": 0.8, "b_half_bytes": 0.0}
    return {"matrix_tflops": {"fp32": 1.0}, "memory": {"mem_bw_gbs": 10.0},
            "overhead": {"launch_overhead_us": 0.5},
            "calibration": {"run_overhead_us": 3.0,
                            "tables": {"elementwise": base, **tables}}}


def _node(op, mac=0, vec=0, bytes_=0, in_specs=()):
    from analyzer.counting.cost import Cost
    return types.SimpleNamespace(name=op, op=op, in_specs=in_specs, status="costed",
                                 cost=Cost(mac_flops=mac, vector_flops=vec,
                                           activation_bytes_read=bytes_))


def test_predict_cpu_closed_form():
    doc = _doc(gemm={"floor_us": 4.0, "e_c": 0.5, "e_bw": 1.0, "b_half_bytes": 1000.0})
    nodes = [_node("MatMul", mac=2_000_000, bytes_=1000), _node("Add", vec=100, bytes_=8000)]
    t = cpu_model.predict_cpu(nodes, doc)
    # MatMul: 0.5 us + 4 us + max(2e6 / (1e12*0.5) = 4 us, (1000+1000)/(1e10*1.0) = 0.2 us) = 8.5 us
    # Add: 0.5 us + 2 us + max(100/(1e12*0.5) = 2e-4 us, 8000/(1e10*0.8) = 1 us) = 3.5 us
    assert t == pytest.approx([8.5e-6, 3.5e-6])
    # latency: 3 us run overhead + 12 us
    assert cpu_model.predict_cpu_latency(nodes, doc) == pytest.approx(15e-6)
    assert cpu_model.predict_cpu(nodes, doc, include_dispatch=False) == pytest.approx([8e-6, 3e-6])


def test_fit_recovers_known_constants():
    peak, bw = 5e11, 4e10
    true = dict(floor_s=3e-6, e_c=0.6, e_bw=0.7, b_half=2e4)
    F = np.geomspace(1e4, 1e10, 25)
    B = np.geomspace(1e3, 1e8, 25)[::-1] * np.linspace(1, 3, 25)
    F = np.concatenate([F, np.zeros(8)])
    B = np.concatenate([B, np.geomspace(4e3, 2e8, 8)])
    t = cpu_model.kernel_time(F, B, true["floor_s"], true["e_c"], true["e_bw"], true["b_half"], peak, bw)
    fit = cpu_model.fit_class(F, B, t, peak, bw)
    assert fit["fit_mape"] < 0.5
    assert fit["e_c"] == pytest.approx(0.6, rel=0.02)
    assert fit["e_bw"] == pytest.approx(0.7, rel=0.02)
    assert fit["floor_s"] == pytest.approx(3e-6, rel=0.1)


def test_op_class_of_conv_variants():
    S = lambda *shape: types.SimpleNamespace(shape=shape)  # noqa: E731
    assert cpu_model.op_class("Conv", (S(1, 32, 8, 8), S(32, 1, 3, 3))) == "conv_dw"
    assert cpu_model.op_class("FusedConv", (S(1, 32, 8, 8), S(64, 32, 1, 1))) == "conv_1x1"
    assert cpu_model.op_class("Conv", (S(1, 3, 8, 8), S(16, 3, 3, 3))) == "conv"
    assert cpu_model.op_class("LayerNormalization") == "norm"
    assert cpu_model.op_class("SomethingNew") == "elementwise"


def _profile_doc():
    return {
        "schema_version": 1, "id": "calibrated-test-2t", "name": "test cpu", "vendor": "AMD",
        "kind": "cpu", "family": "x86-cpu", "default_runtime": "onnxruntime",
        "matrix_tflops": {"fp32": 0.5}, "vector_tflops": {"fp32": 0.5},
        "memory": {"mem_bw_gbs": 38.0}, "overhead": {"launch_overhead_us": 0.2},
        "sources": {"matrix_tflops.fp32": "measured", "vector_tflops.fp32": "measured",
                    "memory.mem_bw_gbs": "measured", "overhead.launch_overhead_us": "measured"},
        "calibration": {"measured_on": "2026-11-24", "runtime": "onnxruntime", "threads": 2,
                        "tables": {"gemm": {"floor_us": 1.0, "e_c": 0.9, "e_bw": 1.2,
                                            "b_half_bytes": -100.0, "rows": 29, "fit_mape": 9.5}}},
        "_rows": {"gemm": [("MatMul", 1.0, 2.0, 3.0)]},
    }


def test_to_toml_round_trips_with_tomllib():
    import tomllib

    doc = _profile_doc()
    back = tomllib.loads(to_toml(doc))
    assert "_rows" not in back
    assert back["calibration"]["tables"]["gemm"]["b_half_bytes"] == -100.0
    assert back["matrix_tflops"]["fp32"] == 0.5 and back["family"] == "x86-cpu"


@pytest.mark.xfail(reason="hardware_db schema does not yet allow family/default_runtime/calibration "
                          "(a colleague's schema change); to_toml itself round-trips (test above)",
                   strict=False)
def test_write_profile_loads_with_hardware_db(tmp_path):
    import hardware_db

    p = write_profile(_profile_doc(), tmp_path / "cal.toml")
    prof = hardware_db.load_file(p)
    assert prof.kind == "cpu"


def test_measure_tiny_model_one_entry_per_node():
    from analyzer.prediction.ort_measure import measure

    m = _conv_bn_relu()
    r = measure(m, threads=1, level="off", runs=3, min_time_s=0.0)
    assert set(r.by_fused) == {"conv", "bn", "relu"}
    assert r.latency_s > 0
    assert all(v > 0 for v in r.by_fused.values())


def test_missing_onnxruntime_is_an_analyzer_error(monkeypatch):
    import builtins

    from analyzer.errors import AnalyzerError
    from analyzer.prediction import ort_graph

    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "onnxruntime":
            raise ImportError("no")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(AnalyzerError, match="pip install"):
        ort_graph.import_ort()
