"""The analyzer's totals on the light_*.onnx models of the onnx wheel against independent references.

References come from ``tests/zoo_reference.py``: weight elements by walking TensorProtos, ResNet-50
MAC FLOPs from the architecture (cross-checked there against the file's Conv/Gemm shapes).
"""

from __future__ import annotations

import importlib.util
import os

import onnx
import pytest

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


zoo = _load_module("opcost_tests_zoo_reference", os.path.join(_HERE, "zoo_reference.py"))

LIGHT_MODELS = zoo.light_model_paths()


def test_light_models_are_present():
    # nine models in onnx 1.16..1.23; guard against a wheel that silently ships none
    assert len(LIGHT_MODELS) >= 9, LIGHT_MODELS


@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: os.path.basename(p)[len("light_"):-len(".onnx")])
def test_params_equal_float_weight_elements(path):
    import analyzer

    expected = zoo.float_weight_elements(onnx.load(path))
    report = analyzer.analyze(path)
    assert report.totals.params == expected


def test_resnet50_mac_flops_closed_form():
    import analyzer

    report = analyzer.analyze(zoo.light_model_path("resnet50"))
    # 2 * 4,089,184,256 MACs (ResNet-50 v1.5 at 1x3x224x224, incl. the 2048->1000 FC)
    assert report.totals.mac_flops == zoo.resnet50_mac_flops() == 8_178_368_512


def test_resnet50_params_closed_form():
    import analyzer

    report = analyzer.analyze(zoo.light_model_path("resnet50"))
    # 25,557,032 (conv + fc + BN scale/bias) + 2 * 26,560 (BN running mean/var)
    assert report.totals.params == zoo.resnet50_params() == 25_610_152


def test_analyze_accepts_modelproto_with_same_totals():
    import analyzer

    path = zoo.light_model_path("resnet50")
    by_path = analyzer.analyze(path).totals
    by_proto = analyzer.analyze(onnx.load(path)).totals
    assert (by_proto.params, by_proto.mac_flops) == (by_path.params, by_path.mac_flops)
