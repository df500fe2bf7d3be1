"""The search front end: a candidate -> its per-node counts, and nothing a search does not need.

A candidate is an ONNX model (``ModelProto``, bytes or a path), an opcost IR ``Graph``, a
``Report`` (already counted), or a JAX pair ``(fn, example_args)`` (``example_args`` a tuple of
arrays / ``jax.ShapeDtypeStruct``s, or one of them).  No ``Report`` is built and nothing is
rendered: the result is the ``NodeCost`` list ``lowering.lower`` eats, the model format (which
decides the default runtime) and the specs of the graph outputs (a table's next context).

Weight bytes are not paid for: a ``ModelProto`` is copied with its large initializers stripped
(marked external, as the ONNX frontend itself does for inline weights) before the frontend's
own private copy, so a candidate with megabytes of inline weights costs what its structure
costs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from analyzer.options import Options

# initializers above this many elements can't steer shapes (frontends.onnx.fold.SMALL_ELEMENTS
# is the frontend's own bound; stripping only above a larger bound keeps every folded value)
_STRIP_ELEMENTS = 4096


@dataclass(frozen=True)
class Counted:
    """One candidate's counts: ``nodes`` (``NodeCost``, graph order), ``fmt`` ("onnx",
    "jaxpr" or "ir"), ``outputs`` (name -> ``TensorSpec`` of each graph output; None for a
    ``Report``'s, which keeps their names only): ``lowering.lower``'s ``graph_outputs``."""

    nodes: list
    fmt: str
    outputs: Mapping[str, Any]
    fused: Any = None   # onnxruntime's record of its kernels, where analyze would use it
    # per node, a key equal only for nodes equal but for their names (``lowering.lower``'s
    # ``keys``; the fast path's memo entries), or None
    keys: Any = None


def _light_copy(m):
    """``m`` without the data of large initializers (a fresh proto; ``m`` is not changed)."""
    import numpy as np
    import onnx

    g = m.graph
    big = {i for i, t in enumerate(g.initializer)
           if t.data_location != onnx.TensorProto.EXTERNAL
           and int(np.prod(t.dims, dtype=np.int64)) > _STRIP_ELEMENTS}
    if not big:
        return m
    out = onnx.ModelProto(ir_version=m.ir_version, producer_name=m.producer_name,
                          domain=m.domain, model_version=m.model_version)
    out.opset_import.extend(m.opset_import)
    out.functions.extend(m.functions)
    og = out.graph
    og.name = g.name
    og.node.extend(g.node)
    og.input.extend(g.input)
    og.output.extend(g.output)
    og.value_info.extend(g.value_info)
    og.sparse_initializer.extend(g.sparse_initializer)
    for i, t in enumerate(g.initializer):
        if i not in big:
            og.initializer.append(t)
            continue
        s = og.initializer.add()
        s.name, s.data_type = t.name, t.data_type
        s.dims.extend(t.dims)
        s.data_location = onnx.TensorProto.EXTERNAL
        e = s.external_data.add()
        e.key, e.value = "location", "(weights inline in the candidate; not read by opcost)"
    return out


def count(candidate: Any, options: Options, records: list | None = None) -> Counted:
    """Per-node counts of one candidate (see the module docstring for what a candidate is).
    ``records``: filled as ``engine.cost_graph`` fills it (what ``fastpath.signatures`` learns
    from)."""
    return count_graph(candidate, options, records)[0]


def count_graph(candidate: Any, options: Options, records: list | None = None):
    """``(Counted, the ir.Graph counted)``; the graph is None for a ``Report``."""
    from analyzer.counting import rules  # noqa: F401  (fills the registry has_rule reads)
    from analyzer.counting.cost import has_rule
    from analyzer.counting.engine import cost_graph
    from analyzer.ir.graph import Graph

    if hasattr(candidate, "nodes") and hasattr(candidate, "coverage"):   # a Report
        fmt = candidate.model.get("format", "onnx") if isinstance(candidate.model, dict) else "onnx"
        model = candidate.model if isinstance(candidate.model, dict) else {}
        # (a report keeps its outputs' names, not their specs)
        return Counted(list(candidate.nodes), fmt, dict.fromkeys(model.get("outputs") or ())), None
    if isinstance(candidate, Graph):
        graph, fmt = candidate, "ir"
    elif isinstance(candidate, tuple) and len(candidate) == 2 and callable(candidate[0]):
        from analyzer.frontends.jaxpr import load as jaxpr_frontend

        fn, args = candidate
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        graph, _ = jaxpr_frontend.load(fn, args, {}, params_argnums=options.params_argnums,
                                       path=options.report_name, counted=has_rule)
        fmt = "jaxpr"
    else:
        import onnx

        from analyzer.frontends.onnx import load as onnx_frontend

        if isinstance(candidate, onnx.ModelProto):
            candidate = _light_copy(candidate)
        elif not isinstance(candidate, (bytes, bytearray, memoryview, str, os.PathLike)):
            from analyzer.errors import ModelLoadError

            raise ModelLoadError(f"cannot score a {type(candidate).__name__}: pass an ONNX model "
                                 "(ModelProto, bytes or path), an ir.Graph, a Report or a JAX "
                                 "(fn, example_args) pair")
        graph, _ = onnx_frontend.load(candidate, inputs=options.inputs, dims=options.dims,
                                      values=options.values, counted=has_rule)
        fmt = "onnx"
    nodes = cost_graph(graph, options.counting(), records)
    outputs = {o: graph.tensors.get(o) for o in graph.outputs}
    return Counted(nodes, fmt, outputs), graph
