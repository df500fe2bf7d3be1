"""Predictions on the NPU / TPU profiles: the held-out public Hexagon measurements, the
generation order of related chips, and the provenance every DSP/NPU/TPU profile carries.

tests/fixtures/accel/hexagon_heldout.csv: the Qualcomm AI Hub v0.35.0 NPU rows (Galaxy S23 =
hexagon-sd8gen2, Galaxy S24 = hexagon-sd8gen3; fp16 and int8 = W8A8; TFLite+QNN delegate and
QNN runtimes) of the models bench/fit_accelerators.py never fits on (its HELD_OUT), copied from
../shared/measurements/accelerators/aihub_hexagon.csv. The graphs are the graph-only exports in
tests/fixtures/accel. No timing is measured here: the measured times are data. Each row is
predicted at its deployment's runtime (AI Hub's qnn_dlc: ``qnn-dlc``; tflite: ``qnn-tflite``).

Stated tolerances (recorded by ``PYTHONPATH=$PWD python bench/fit_accelerators.py``, see
bench/results/fit_accelerators.md and docs/accuracy.md; the qnn-runtime fit on 30 models with the
activations kept on chip up to the VTCM budget per kernel (the rest streamed), fp16 depthwise on
HVX, a depthwise kernel's compute at a fitted rate per output element (the 8 Gen 3's by the fitted
matrix-rate ratio), one per-kernel cost for both devices, one fp16 / W8A8 ratio of the
per-inference cost and one W8A8 per-inference offset between the two deployments; every graph at
the input AI Hub's profile job took, its model's get_input_spec): the held-out MAPE per device and
precision (recorded 19.7 / 36.9 % on the 8 Gen 2 fp16 / W8A8, 21.8 / 39.3 % on the 8 Gen 3; per
device 25.4 / 27.6 %) may
not exceed the issue's per-device 40 % (a cell recorded above it would be listed in
``RECORDED_ABOVE_LIMIT`` and held to its recorded figure within 1 point; none is); the predicted
8 Gen 3 / 8 Gen 2 latency ratio of each of the 18 held-out row pairs (one per model, precision and
deployment) within the issue's 15 % of the measured one (recorded 18 of 18, worst 13.2 %:
shufflenet_v2 QNN DLC W8A8, predicted 0.783 against 0.692).
"""

from __future__ import annotations

import csv
import os

import pytest

import hardware_db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "fixtures")
HELDOUT = os.path.join(FIX, "accel", "hexagon_heldout.csv")
GRAPHS = {"resnet101": "accel/resnet101.onnx", "inception_v3": "accel/inception_v3.onnx",
          "mobilenet_v3_large": "accel/mobilenet_v3_large.onnx",
          "efficientnet_v2_s": "accel/efficientnet_v2_s.onnx",
          "shufflenet_v2": "accel/shufflenet_v2_x0_5.onnx", "swin_small": "accel/swin_s.onnx"}
MAPE_LIMIT = {"fp16": 40.0, "int8": 40.0}
# (device, precision) cells whose recorded held-out MAPE exceeds the limit: the recorded figure
RECORDED_ABOVE_LIMIT: dict[tuple[str, str], float] = {}
RATIO_LIMIT, RATIO_TARGET, RATIO_TARGET_MIN = 0.15, 0.15, 18

_REPORTS: dict = {}


# AI Hub's deployment runtime -> opcost's runtime that predicts it
DEPLOYMENT = {"qnn_dlc": "qnn-dlc", "tflite": "qnn-tflite"}


def _latency_ms(path: str, pid: str, precision: str, runtime: str | None = None) -> float:
    import analyzer
    from analyzer.prediction.predict import predict

    if path not in _REPORTS:
        _REPORTS[path] = analyzer.analyze(path)
    (pred,) = predict(_REPORTS[path], [pid], precision=precision, runtime=runtime)
    return pred.latency_s * 1e3


@pytest.fixture(scope="module")
def heldout():
    with open(HELDOUT, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["pred_ms"] = _latency_ms(os.path.join(FIX, GRAPHS[r["model_id"]]), r["opcost_profile"], r["precision"],
                                   DEPLOYMENT[r["runtime"]])
        r["ms"] = float(r["inference_time_ms"])
    return rows


def test_every_heldout_row_predicts(heldout):
    assert len(heldout) == 36
    assert {r["model_id"] for r in heldout} == set(GRAPHS)
    assert all(r["pred_ms"] > 0 for r in heldout)


@pytest.mark.parametrize("pid", ["hexagon-sd8gen2", "hexagon-sd8gen3"])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_heldout_mape_within_recorded(heldout, pid, precision):
    sub = [r for r in heldout if r["opcost_profile"] == pid and r["precision"] == precision]
    assert sub
    mape = 100 * sum(abs(r["pred_ms"] / r["ms"] - 1) for r in sub) / len(sub)
    if (pid, precision) in RECORDED_ABOVE_LIMIT:
        assert mape == pytest.approx(RECORDED_ABOVE_LIMIT[(pid, precision)], abs=1.0), f"{pid} {precision}: {mape:.1f}%"
        return
    assert mape <= MAPE_LIMIT[precision], f"{pid} {precision}: held-out MAPE {mape:.1f}%"


def test_gen3_over_gen2_ratio_matches_measured(heldout):
    by = {(r["model_id"], r["precision"], r["runtime"], r["opcost_profile"]): r for r in heldout}
    checked = within = 0
    for (m, prec, rt, pid), r in by.items():
        if pid != "hexagon-sd8gen3" or (m, prec, rt, "hexagon-sd8gen2") not in by:
            continue
        old = by[(m, prec, rt, "hexagon-sd8gen2")]
        measured = r["ms"] / old["ms"]
        predicted = r["pred_ms"] / old["pred_ms"]
        assert abs(predicted / measured - 1) <= RATIO_LIMIT, (m, prec, rt, measured, predicted)
        within += abs(predicted / measured - 1) <= RATIO_TARGET
        checked += 1
    assert checked == 18
    assert within >= RATIO_TARGET_MIN


# ----------------------------------------------------------------------------- generations

# (older, newer) pairs where the newer chip is at least as good on every figure both state, and
# the precisions both state (a TPU's 16-bit float is bf16; TPU7x states no int8 rate)
GENERATIONS = [("hexagon-sd8gen2", "hexagon-sd8gen3", ("fp16", "int8")),
               ("ane-a16", "ane-a17pro", ("fp16", "int8")),
               ("tpu-v5e", "tpu-v6e", ("bf16", "int8")),
               ("tpu-v4", "tpu-v5p", ("bf16", "int8")),
               ("tpu-v6e", "tpu7x", ("bf16",))]
# whole models: issue 34's ResNet-50 and MobileNetV2 (torchvision, 224) and three more
MODELS = ["accel/resnet50.onnx", "torch/mobilenet_v2.onnx", "torch/resnet18.onnx", "torch/vit.onnx",
          "torch/bert.onnx"]


@pytest.mark.parametrize("old,new,precisions", GENERATIONS)
def test_newer_chip_better_on_every_figure(old, new, precisions):
    a, b = hardware_db.get(old), hardware_db.get(new)
    for prec in precisions:
        assert b.peak_flops("matrix", prec) >= a.peak_flops("matrix", prec)
    assert b.mem_bw_gbs >= a.mem_bw_gbs


@pytest.mark.parametrize("old,new,precisions", GENERATIONS)
@pytest.mark.parametrize("model", MODELS)
def test_newer_chip_never_slower(old, new, precisions, model):
    for prec in precisions:
        path = os.path.join(FIX, model)
        t_old, t_new = _latency_ms(path, old, prec), _latency_ms(path, new, prec)
        assert t_new <= t_old, (model, prec, t_old, t_new)


# ----------------------------------------------------------------------------- provenance


def test_accelerator_profiles_say_how_far_to_trust_them():
    """Every DSP/NPU/TPU profile's notes say whether it was checked against a measurement and,
    if not, the error to expect."""
    for p in _accelerator_profiles():
        text = p.notes or ""
        assert "Checked against measurements" in text or "Not checked against any measurement" in text, p.id
        if "Not checked against any measurement" in text:
            assert "expect" in text.lower(), p.id


def _accelerator_profiles():
    return [p for p in hardware_db.list_profiles() if p.kind in ("npu", "dsp", "tpu")]


def test_accelerator_figures_say_sourced_or_fitted():
    """Every figure of a DSP/NPU/TPU profile says which it is: fitted (the source starts with
    "fitted" and names the bench script that fitted it) or sourced (the source links its
    origin); and every such profile names its default runtime."""
    profiles = _accelerator_profiles()
    assert len(profiles) == 23
    for p in profiles:
        assert p.default_runtime, p.id
        for field, text in p.sources.items():
            if text.startswith("fitted"):
                assert "bench/" in text and "fitted on" in text, (p.id, field)
            else:
                assert "http" in text or "reference entry" in text, (p.id, field)


def test_fitted_hexagon_data_names_its_rows():
    import json

    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

    for pid, fam in (("hexagon-sd8gen2", "qualcomm-hexagon-v73"), ("hexagon-sd8gen3", "qualcomm-hexagon-v75")):
        assert hardware_db.get(pid).family == fam
        with open(os.path.join(EFFICIENCY_DIR, f"{fam}.json"), encoding="utf-8") as f:
            doc = json.load(f)
        prov = doc["sets"]["conv"]["provenance"]
        assert prov["kind"] == "fit" and prov["measurement_file"] == "aihub_hexagon.csv"
        for m in GRAPHS:
            assert m in prov["filter"].split("held out")[1]    # held-out models named, not fitted
        # the fp16 figure is the fitted fraction of the int8 one
        prof = hardware_db.get(pid)
        assert prof.matrix_tflops["fp16"] == pytest.approx(prov["r_fp16"] * prof.matrix_tflops["int8"], abs=0.01)
        assert prof.sources["matrix_tflops.fp16"].startswith("fitted")
