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
    "analyze", "sweep", "scale", "analyze_jax", "Options", "CostModel", "sensitivity", "AnalyzerError", "BaselineError", "CheckFailed",
    "GraphError", "HardwareError", "InputSpecError", "ModelLoadError", "ShapeError", "UnboundDimError",
    "Hint", "InternalError",
]
from analyzer.version import VERSION

__version__ = VERSION


def __getattr__(name):
    # CostModel pulls numpy in: import it on first use (``import analyzer`` and hardware_db stay
    # free of numpy, jax and onnx)
    if name == "CostModel":
        from analyzer.search.cost_model import CostModel

        return CostModel
    if name == "sensitivity":
        from analyzer.search.whatif import sensitivity

        return sensitivity
    raise AttributeError(f"module 'analyzer' has no attribute {name!r}")
