"""Shared fixtures: run the CLI in-process and save built models to a temporary folder.

Model builders live in ``tests/onnx_builders.py``.
"""

from __future__ import annotations

import os

import onnx
import pytest


@pytest.fixture(autouse=True)
def _no_inherited_columns(monkeypatch):
    """A shell's exported ``COLUMNS`` would lay piped tables out at its width (cli.output
    honours it); tests that want a width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture
def run_cli():
    """``run_cli(*args)`` -> click Result of ``analyze ARGS`` (stdout and stderr kept apart)."""
    from click.testing import CliRunner

    from cli.main import main

    def run(*args):
        return CliRunner().invoke(main, [str(a) for a in args])

    return run


@pytest.fixture
def save(tmp_path):
    """``save(model, "m.onnx")`` writes a ModelProto under tmp_path and returns its path."""

    def write(model: onnx.ModelProto, name: str = "m.onnx") -> str:
        path = os.path.join(tmp_path, name)
        onnx.save(model, path)
        return path

    return write


@pytest.fixture
def no_onnxruntime(monkeypatch):
    """``import onnxruntime`` fails inside the test (an install without the measure extra)."""
    import builtins

    real = builtins.__import__

    def refuse(name, *a, **k):
        if name == "onnxruntime":
            raise ImportError("no onnxruntime")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", refuse)


@pytest.fixture(scope="session")
def calibration_model_set():
    """``calibration_models()`` (analyzer.measure.cpu.models), built once for the session: it
    builds and shape-infers 19 models with their weights (seconds each time); it is
    deterministic, and the tests that take it only read the models."""
    from analyzer.measure.cpu.models import calibration_models

    return calibration_models()
