"""The public entry points (re-exported from ``analyzer``).

The library never prints and never exits: it returns a ``Report`` or raises an
``AnalyzerError`` subclass.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence


def analyze(model: Any, hw: str | Sequence[str] | None = None, *,
            inputs: Mapping[str, Any] | None = None,
            dims: Mapping[str, int] | None = None,
            precision: str | None = None, overlap: bool = True,
            loop_trips: int | None = None, causal: bool = False) -> "Report":
    """Count every node of an ONNX model exactly (and predict latency when ``hw`` is given).

    ``model``: a path, bytes or ``onnx.ModelProto`` (external weight data is never read).
    ``inputs``: ``{"x": (1, 3, 224, 224)}`` or ``{"x": "1x3x224x224"}`` sets input shapes.
    ``dims``: ``{"batch": 8}`` binds symbolic dims.
    ``hw``: a profile id/alias/.toml path (or a list of them): adds ``report.predictions``.
    ``precision``: deploy precision for predictions (fp32, tf32, bf16, fp16, fp8, int8).
    ``overlap``: per-layer ``max(compute, memory)`` (True) or seed 003's sum (False).
    ``loop_trips``: trip count of Loop/while bodies whose count is not a constant.
    ``causal``: fused attention ops are costed as causal kernels (they skip the masked half).
    """
    from .engine import Options, cost_graph
    from .frontends import onnx as onnx_frontend
    from .report import Report

    graph, info = onnx_frontend.load(model, inputs=inputs, dims=dims)
    nodes = cost_graph(graph, Options(loop_trips=loop_trips, causal=causal))
    report = Report.from_nodes(info, nodes)
    if hw is not None:
        from .predict import predict

        predict(report, hw, precision=precision, overlap=overlap)
    return report
