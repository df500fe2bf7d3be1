"""The one error hierarchy of opcost.

The library raises only these; the CLI maps them to exit codes in one place
(``cli/main.py``): every ``AnalyzerError`` is bad input or usage (exit 2),
except ``CheckFailed`` (exit 1: a regression gate or ``--strict`` finding).
This module imports nothing heavy so that the CLI can import it at start-up.
"""

from __future__ import annotations


class AnalyzerError(Exception):
    """Base class: a problem with the user's input that the user can fix."""

    exit_code = 2


class ModelLoadError(AnalyzerError):
    """The model file is missing, unreadable, not ONNX, truncated or invalid."""


class GraphError(AnalyzerError):
    """The graph is structurally broken (dangling input, cycle, duplicate output)."""


class ShapeError(AnalyzerError):
    """A node's shapes are unknown or inconsistent where a count needs them."""


class UnboundDimError(ShapeError):
    """A symbolic dimension that a count needs has no value (bind it with --dim)."""

    def __init__(self, dim: str, message: str | None = None):
        self.dim = dim
        super().__init__(message or f"symbolic dim '{dim}' is unbound; pass --dim {dim}=VALUE")


class InputSpecError(AnalyzerError):
    """A --input / --dim / inputs= / dims= value is malformed or names nothing."""


class HardwareError(AnalyzerError):
    """Unknown hardware id or a malformed hardware profile file."""


class BaselineError(AnalyzerError):
    """A baseline file is unreadable, from another model, or of another schema version."""


class CheckFailed(AnalyzerError):
    """A check the user asked for failed (regression beyond threshold, --strict finding)."""

    exit_code = 1
