"""The accelerator runtimes (analyzer/prediction/accelerators): Core ML on the Apple Neural Engine
(``coreml``) and the Coral Edge TPU runtime (``edgetpu``).  Closed forms for each mechanism
(fusion, the CPU fallback's switches and boundary bytes, the Edge TPU's once-only partition and
its on-chip parameter cache), and the recorded ANE fit.

tests/fixtures/accel/coreml_ane_rows.csv: the coremltools-guide rows bench/fit_ane.py fits and
scores (Float16 and W8A8 configs, duplicates once), copied from
../shared/measurements/accelerators/coreml_ane.csv.  Stated tolerances (recorded by
``PYTHONPATH=$PWD python bench/fit_ane.py``, bench/results/fit_ane.md): the fitted A16 rows'
MAPE (recorded 12.5 %) may not exceed 15 %; the held-out MobileViTv2 rows (never fitted; the A17
Pro's with the A16's constants) MAPE (recorded 30.5 %) at most 35 % and each row within 60 %
(recorded worst +56.0 %, A17 Pro fp16).
"""

from __future__ import annotations

import csv
import dataclasses
import os

import pytest
from onnx import TensorProto, helper, numpy_helper

import hardware_db
from analyzer.prediction import runtimes
from analyzer.prediction.accelerators import coreml, edgetpu
from analyzer.prediction.predict import predict
from analyzer.prediction.targets import Target

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")


def _analyze(nodes, inputs, outputs, inits=()):
    import analyzer

    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())


def _vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def _init(name, shape):
    import numpy as np

    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _latency(report, prof, runtime, precision=None):
    (p,) = predict(report, [Target(prof, runtime, "requested")], precision=precision)
    return p


def test_ane_profiles_default_to_coreml_and_edge_tpu_to_edgetpu():
    for pid in ("ane-a16", "ane-a17pro", "ane-m4"):
        assert hardware_db.get(pid).default_runtime == "coreml"
    assert hardware_db.get("edge-tpu").default_runtime == "edgetpu"
    assert runtimes.get("coreml").time_definition == coreml.TIME_DEFINITION


def test_coreml_fuses_conv_bn_activation_and_elementwise_chains():
    # Conv -> BatchNormalization -> Relu -> Mul(const) -> Add(const): one Core ML kernel; the
    # kernel runtime launches one per node that does work (5)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "k"], ["p"], name="mul"),
             helper.make_node("Add", ["p", "k"], ["y"], name="add")]
    inits = [_init("w", [8, 8, 3, 3]), _init("s", [8]), _init("b", [8]), _init("m", [8]), _init("v", [8]),
             _init("k", [1])]
    rep = _analyze(nodes, [_vi("x", TensorProto.FLOAT, [1, 8, 16, 16])], [_vi("y", TensorProto.FLOAT, [1, 8, 16, 16])],
                   inits)
    prof = hardware_db.get("ane-a16")
    assert _latency(rep, prof, runtimes.get("coreml")).kernels == 1
    assert _latency(rep, prof, runtimes.get("kernel")).kernels == 5


def test_coreml_fallback_pays_two_switches_and_the_boundary_bytes():
    # Relu -> Gather(indices from the input: the ANE does not run it) -> Relu: the Gather is one CPU
    # segment between two ANE kernels: 2 switches + (y 1x1024 fp16 2048 B + idx 256 int64 2048 B in,
    # 1x256 fp16 512 B out) / 51.2e9 B/s (fp16: Core ML's precision for an fp32 graph); it moves no
    # FLOPs, so its peak does not matter
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r1"),
             helper.make_node("Gather", ["y", "idx"], ["z"], name="g", axis=1),
             helper.make_node("Relu", ["z"], ["out"], name="r2")]
    rep = _analyze(nodes, [_vi("x", TensorProto.FLOAT, [1, 1024]), _vi("idx", TensorProto.INT64, [256])],
                   [_vi("out", TensorProto.FLOAT, [1, 256])])
    prof = hardware_db.get("ane-a16")
    rt = runtimes.get("coreml")
    with_ = _latency(rep, prof, rt)
    without = _latency(rep, prof, dataclasses.replace(rt, placement=None))
    expect = 2 * coreml.SWITCH_S + (2048 + 2048 + 512) / 51.2e9
    assert with_.node("g").time_s - without.node("g").time_s == pytest.approx(expect, rel=1e-6)
    assert with_.node("r1").time_s == pytest.approx(without.node("r1").time_s)
    assert any("1 segment" in n for n in with_.notes)


def _mlp(n_in, n_hidden, middle="Relu"):
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
             helper.make_node(middle, ["h"], ["a"], name="mid"),
             helper.make_node("MatMul", ["a", "w2"], ["y"], name="mm2")]
    inits = [_init("w1", [n_in, n_hidden]), _init("w2", [n_hidden, n_in])]
    return _analyze(nodes, [_vi("x", TensorProto.FLOAT, [1, n_in])], [_vi("y", TensorProto.FLOAT, [1, n_in])], inits)


def test_edgetpu_streams_the_parameters_beyond_the_on_chip_cache():
    # int8 weights: w1 4096x1024 = 4 MiB, w2 1024x4096 = 4 MiB, 8 MiB in all; with a 6 MiB cache,
    # 2 MiB stream over the 0.5 GB/s link every inference: 2 * 2**20 / 0.5e9 s more than with a
    # cache that holds everything
    rep = _mlp(4096, 1024)
    prof = dataclasses.replace(hardware_db.get("edge-tpu"), onchip_mb=6.0)
    roomy = dataclasses.replace(prof, onchip_mb=1e6)
    rt = runtimes.get("edgetpu")
    t, t0 = _latency(rep, prof, rt, "int8"), _latency(rep, roomy, rt, "int8")
    assert t.latency_s - t0.latency_s == pytest.approx(2 * 2**20 / 0.5e9, rel=1e-6)
    assert any("2.00 MiB of parameters exceed" in n for n in t.notes)


def test_edgetpu_runs_everything_after_the_first_unmapped_op_on_the_cpu():
    # Erf is not in Coral's table: mm1 on the TPU; Erf and mm2 (mappable) on the CPU
    rep = _mlp(256, 256, middle="Erf")
    p = _latency(rep, hardware_db.get("edge-tpu"), runtimes.get("edgetpu"), "int8")
    assert any(n.startswith("Edge TPU: 1 of 3 kernels on the TPU") for n in p.notes)
    # not quantized (fp32 asked for): the compiler maps nothing (MatMul + Relu fold: 2 kernels)
    p32 = _latency(_mlp(256, 256), hardware_db.get("edge-tpu"), runtimes.get("edgetpu"), "fp32")
    assert any(n.startswith("Edge TPU: 0 of 2 kernels") for n in p32.notes)
    assert any("only int8-quantized" in n for n in p32.notes)


def test_runtime_precision_defaults():
    # no precision asked: Core ML computes an fp32 graph in fp16, the Edge TPU the int8 model
    rep = _mlp(256, 256)
    ane = _latency(rep, hardware_db.get("ane-a16"), runtimes.get("coreml"))
    assert ane.precision == "fp16" and any("predicted in fp16" in n for n in ane.notes)
    assert _latency(rep, hardware_db.get("ane-a16"), runtimes.get("coreml"), "fp16").latency_s == \
        pytest.approx(ane.latency_s)
    tpu = _latency(rep, hardware_db.get("edge-tpu"), runtimes.get("edgetpu"))
    assert tpu.precision == "int8" and any(n.startswith("Edge TPU: 2 of 2 kernels") for n in tpu.notes)
    # other runtimes keep each tensor's dtype
    assert _latency(rep, hardware_db.get("ane-a16"), runtimes.get("kernel")).precision == "fp32"


def test_edgetpu_products_of_two_activations_are_not_mapped():
    nd = type("N", (), {"op": "MatMul", "domain": "", "constant_inputs": frozenset()})()
    assert not edgetpu.on_tpu(nd, "int8")
    nd.constant_inputs = frozenset({1})
    assert edgetpu.on_tpu(nd, "int8") and not edgetpu.on_tpu(nd, "fp16")


# ----------------------------------------------------------------------------- recorded fit

GRAPHS = {"MobileNetv2-1.0": "torch/mobilenet_v2.onnx", "MobileNetv3-small": "accel/mobilenet_v3_small.onnx",
          "ResNet50": "accel/resnet50.onnx", "MobileViTv2-1.0": "accel/mobilevitv2_100.onnx"}
CHIP = {"A16": "ane-a16", "A17 Pro": "ane-a17pro"}


@pytest.fixture(scope="module")
def ane_rows():
    import analyzer

    with open(os.path.join(FIX, "accel", "coreml_ane_rows.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    reports = {m: analyzer.analyze(os.path.join(FIX, g)) for m, g in GRAPHS.items()}
    for r in rows:
        (p,) = predict(reports[r["model"]], [CHIP[r["chip"]]], precision=r["compute_precision"])
        r["ape"] = abs(p.latency_s * 1e3 / float(r["latency_ms"]) - 1) * 100
    return rows


def test_ane_fit_within_recorded(ane_rows):
    assert len(ane_rows) == 9
    fitted = [r for r in ane_rows if r["model"] != "MobileViTv2-1.0"]
    held = [r for r in ane_rows if r["model"] == "MobileViTv2-1.0"]
    assert len(fitted) == 5 and all(r["chip"] == "A16" for r in fitted)
    assert sum(r["ape"] for r in fitted) / len(fitted) <= 15.0
    assert sum(r["ape"] for r in held) / len(held) <= 35.0
    assert max(r["ape"] for r in held) <= 60.0


def test_ane_constants_name_their_rows():
    import json

    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

    with open(os.path.join(EFFICIENCY_DIR, "apple-ane.json"), encoding="utf-8") as f:
        prov = json.load(f)["sets"]["conv"]["provenance"]
    assert prov["kind"] == "fit" and prov["measurement_file"] == "coreml_ane.csv"
    assert "MobileViTv2-1.0" in prov["filter"].split("held out")[1]
