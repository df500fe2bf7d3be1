"""onnxruntime's CPU layout transform as it runs: the graph at the default level with its NCHWc
layout (``layout_graph``) and the residual Adds it folds into blocked convolutions
(``layout_sums``). Read by ``ort_record`` (the fusion record, the reorders) and ``ort_measure``
(the per-kernel join)."""

from __future__ import annotations

from typing import Any

from analyzer.prediction.onnxruntime.graph import graph_edges, saved_graph, session_options

# activations a blocked convolution takes after its Sum input (MLAS's activation kinds)
_SUM_ACTIVATIONS = frozenset({"Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "HardSigmoid"})


def layout_sums(fused: Any, layout: Any) -> dict[str, str]:
    """``{fused-graph kernel: convolution kernel that runs it}`` for the residual Adds (and the
    activation after each) that onnxruntime's NCHWc transform folds into a blocked convolution.

    The layout transform (default level, CPU) gives a blocked ``Conv`` whose output's only
    consumer is an ``Add`` a fourth, "Sum" input: the convolution adds that tensor as it writes
    its output, and takes the activation that followed the Add as its own. The EXTENDED graph
    ``fused_graph`` saves still has the Add and the activation as kernels; at the layout levels
    they launch nothing. A blocked node is named after the tensor its original node wrote
    (``<tensor>_nchwc``), which ties it to the extended graph's convolution."""
    producer, consumers = graph_edges(fused.graph)
    out: dict[str, str] = {}
    for n in layout.graph.node:
        if (n.domain != "com.microsoft.nchwc" or n.op_type != "Conv" or len(n.input) < 4
                or not n.input[3] or not n.name.endswith("_nchwc")):
            continue
        conv = producer.get(n.name[:-len("_nchwc")])
        if conv is None or conv.op_type not in ("Conv", "FusedConv"):
            continue
        users = consumers.get(conv.output[0], ())
        if len(users) != 1 or users[0].op_type != "Add":
            continue
        add = users[0]
        out[add.name] = conv.name
        act = any(a.name == "activation" for a in n.attribute)
        after = consumers.get(add.output[0], ())
        if (act and conv.op_type == "Conv" and len(after) == 1
                and after[0].op_type in _SUM_ACTIVATIONS):
            out[after[0].name] = conv.name
    return out


def layout_graph(model: Any, threads: int | None = None):
    """The graph of onnxruntime's default level as it runs, layout transform included (ALL):
    read only for the ``com.microsoft.nchwc`` reorders it inserts (``layout_reorders``)."""
    return saved_graph(model, session_options("all", threads))
