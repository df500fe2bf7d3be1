"""Precision says what runs (issue 32): fp32 on the FMA units, tf32 on the tensor cores, PyTorch's
defaults stated as assumptions, a warning where a device lacks a precision."""

from __future__ import annotations

import os

import pytest

import analyzer
import hardware_db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESNET18 = os.path.join(ROOT, "tests", "fixtures", "torch", "resnet18.onnx")
BERT = os.path.join(ROOT, "tests", "fixtures", "torch", "bert.onnx")


def _conv_peak(pred, report):
    i = next(k for k, n in enumerate(report.nodes) if n.op == "Conv")
    return pred.explain(i).matrix_peak


def test_fp32_convolutions_run_in_tf32_under_pytorchs_default_on_nvidia():
    # A100: TF32 156 TFLOP/s (tensor cores), fp32 19.5 TFLOP/s (FMA units); the fixture is fp32
    rep = analyzer.analyze(RESNET18, hw=["a100"], runtime="kernel")
    (p,) = rep.predictions
    assert _conv_peak(p, rep) == pytest.approx(156e12)
    assert any("fp32 convolutions run in TF32" in n and "allow_tf32 = True" in n for n in p.notes)
    gemm = next(k for k, n in enumerate(rep.nodes) if n.op == "Gemm")
    assert p.explain(gemm).matrix_peak == pytest.approx(19.5e12)   # matmul TF32 off: FMA units
    eager = analyzer.analyze(RESNET18, hw=["a100"], runtime="eager").predictions[0]
    assert any("fp32 convolutions run in TF32" in n for n in eager.notes)


def test_explicit_fp32_runs_every_product_on_the_fma_units():
    # --precision fp32 = torch.backends.cudnn.allow_tf32 = False: the conv on the 19.5 TFLOP/s FMA
    # units, in its FMA-unit class (conv_simt / conv3_simt), and a note that says so
    rep = analyzer.analyze(RESNET18, hw=["a100"], precision="fp32", runtime="kernel")
    (p,) = rep.predictions
    assert _conv_peak(p, rep) == pytest.approx(19.5e12)
    assert any("precision fp32: every fp32 product runs on the FMA units" in n for n in p.notes)
    assert not any("run in TF32" in n for n in p.notes)
    default = analyzer.analyze(RESNET18, hw=["a100"], runtime="kernel").predictions[0]
    assert p.latency_s > default.latency_s   # 19.5 vs 156 TFLOP/s on the convolutions


def test_other_runtimes_and_devices_without_tf32_keep_fp32_on_the_fma_units():
    rep = analyzer.analyze(RESNET18, hw=["a100"], precision="fp32", runtime="onnxruntime")
    (p,) = rep.predictions
    assert not any("TF32" in n for n in p.notes)
    t4 = analyzer.analyze(RESNET18, hw=["t4"], precision="fp32", runtime="kernel")
    prof = hardware_db.get("t4")   # Turing: no TF32; the FMA peak at the T4's sustained clock (70 W)
    share = (prof.sustained_clock_ghz or prof.clock_ghz) / prof.clock_ghz
    assert _conv_peak(t4.predictions[0], t4) == pytest.approx(8.1e12 * share)
    assert not any("TF32" in n for n in t4.predictions[0].notes)


def test_tf32_puts_every_product_on_the_tensor_cores():
    rep = analyzer.analyze(RESNET18, hw=["a100"], precision="tf32")
    (p,) = rep.predictions
    gemm = next(k for k, n in enumerate(rep.nodes) if n.op == "Gemm")
    assert p.explain(gemm).matrix_peak == pytest.approx(156e12) and _conv_peak(p, rep) == pytest.approx(156e12)


def test_fp32_matmuls_say_they_run_on_the_fma_units():
    (p,) = analyzer.analyze(BERT, hw=["h100"]).predictions
    assert any("fp32 matmuls run on the FMA units" in n for n in p.notes)
    assert not any("convolutions" in n for n in p.notes)


def test_bf16_on_a_t4_warns_that_the_device_lacks_it():
    (p,) = analyzer.analyze(RESNET18, hw=["t4"], precision="bf16").predictions
    assert any("no bf16" in w for w in p.warnings)
    assert len([w for w in p.warnings if "bf16" in w]) == 1
    (a,) = analyzer.analyze(RESNET18, hw=["a100"], precision="bf16").predictions
    assert not a.warnings
