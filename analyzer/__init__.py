"""opcost: exact per-node counts and roofline latency predictions for ONNX and JAX graphs.

Heavy dependencies (onnx, jax) are imported only when an entry point is called.
"""

from analyzer.api import analyze, analyze_jax
from analyzer.options import Options
from analyzer.sweep import sweep
from analyzer.scaling.curve import scale
from analyzer.errors import (AnalyzerError, BaselineError, CheckFailed, GraphError, HardwareError, Hint,
                     InputSpecError, InternalError, ModelLoadError, ShapeError, UnboundDimError)

__all__ = [
    "analyze", "sweep", "analyze_jax", "Options", "AnalyzerError", "BaselineError", "CheckFailed",
    "GraphError", "HardwareError", "InputSpecError", "ModelLoadError", "ShapeError", "UnboundDimError",
    "Hint", "InternalError",
]
from analyzer.version import VERSION

__version__ = VERSION
