"""The public entry points (re-exported from ``analyzer``).

The library never prints and never exits: it returns a ``Report`` or raises an
``AnalyzerError`` subclass.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from analyzer.report.counts import Report


def analyze(model: Any, hw: str | Sequence[str] | None = None, *,
            inputs: Mapping[str, Any] | None = None,
            dims: Mapping[str, int] | None = None,
            precision: str | None = None, overlap: bool = True,
            loop_trips: int | None = None, causal: bool = False,
            values: Mapping[str, Any] | None = None) -> "Report":
    """Count every node of an ONNX model exactly (and predict latency when ``hw`` is given).

    ``model``: a path, bytes or ``onnx.ModelProto`` (external weight data is never read).
    ``inputs``: ``{"x": (1, 3, 224, 224)}`` or ``{"x": "1x3x224x224"}`` sets input shapes.
    ``dims``: ``{"batch": 8}`` binds symbolic dims.
    ``values``: ``{"axes": [1]}`` makes graph inputs constants, for inputs whose value decides
    shapes (reduce axes, a window length, a Loop's trip count).
    ``hw``: a profile id/alias/.toml path (or a list of them): adds ``report.predictions``.
    ``precision``: deploy precision for predictions (fp32, tf32, bf16, fp16, fp8, int8).
    ``overlap``: per-layer ``max(compute, memory)`` (True) or seed 003's sum (False).
    ``loop_trips``: trip count of Loop/while bodies whose count is not a constant.
    ``causal``: fused attention ops are costed as causal kernels (they skip the masked half).
    """
    from analyzer.counting.cost import has_rule
    from analyzer.counting.engine import Options
    from analyzer.frontends.onnx import load as onnx_frontend

    with _gc_paused():
        graph, info = onnx_frontend.load(model, inputs=inputs, dims=dims, values=values,
                                         counted=has_rule)
        return _report(graph, info, Options(loop_trips=loop_trips, causal=causal), hw, precision,
                       overlap)


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while a graph is analysed.

    The analysis allocates hundreds of thousands of small acyclic objects, each allocation
    burst triggering collections that rescan everything alive (measured: ~0.6 s of a 50k-node
    analysis). Reference counting still frees memory; the collector is restored afterwards.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # What the analysis allocated is either garbage already freed by reference
            # counting or the long-lived result: file it with the old objects (freeze, then
            # unfreeze into the oldest generation) instead of letting the first allocation
            # after gc.enable() scan it as one huge young generation (measured ~0.09 s per
            # 50k-node graph). Cyclic garbage among it is still found by the next full
            # collection.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _report(graph, info: dict, options, hw, precision: str | None, overlap: bool) -> "Report":
    """The tail every frontend shares: cost the graph, build the Report, predict on ``hw``."""
    from analyzer.counting.engine import cost_graph
    from analyzer.report.counts import Report

    nodes = cost_graph(graph, options)
    report = Report.from_nodes(info, nodes)
    if hw is not None:
        from analyzer.prediction.predict import predict

        predict(report, hw, precision=precision, overlap=overlap)
    return report


def analyze_jax(fn: Any, *example_args: Any, hw: str | Sequence[str] | None = None,
                precision: str | None = None, loop_trips: int | None = None,
                params_argnums: Any = None, overlap: bool = True, causal: bool = False,
                report_name: str | None = None, **example_kwargs: Any) -> "Report":
    """Count every equation of a JAX program exactly (and predict latency when ``hw`` is given).

    ``fn`` is traced with ``jax.make_jaxpr(fn)(*example_args, **example_kwargs)``; the args are
    arrays, pytrees of arrays or ``jax.ShapeDtypeStruct``s (no data is needed); args and kwargs
    holding no array (``train=False``) are passed through as static values.  ``fn`` may also be
    a ``ClosedJaxpr``.  ``jax.grad(loss)`` and whole train steps are programs like any other.

    ``params_argnums``: positions (or parameter names) of the args that are weights: their
    elements are ``params`` and their bytes weight bytes (default: none; closed-over constant
    arrays always are). Literals are immediates (neither params nor bytes).
    ``loop_trips``: trip count of ``while`` loops whose count is not static.
    ``hw``, ``precision``, ``overlap``: as for ``analyze``.  ``report_name``: the report's model
    path (default: the function's name).
    """
    from analyzer.counting.cost import has_rule
    from analyzer.counting.engine import Options
    from analyzer.frontends.jaxpr import load as jaxpr_frontend

    with _gc_paused():
        graph, info = jaxpr_frontend.load(fn, example_args, example_kwargs,
                                          params_argnums=params_argnums, path=report_name,
                                          counted=has_rule)
        return _report(graph, info, Options(loop_trips=loop_trips, causal=causal), hw, precision,
                       overlap)
