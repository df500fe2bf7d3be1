"""onnxruntime's record of what it runs: its fused kernels over the user's nodes, and the NCHWc
layout reorders its CPU provider inserts.

``fusion_record`` is what ``analyzer.analyze`` hands the prediction for the onnxruntime runtime
(``fusion.FusionRecord``); ``layout_reorders`` reads where the reorders run from the graph at the
default level with its layout transform (``ort_layout.layout_graph``), and ``profiled_reorders`` times them
around a calibration row (``calibrate`` fits the ``reorder`` class on them and takes them out of
the rows of the blocked classes).
"""

from __future__ import annotations

from typing import Any

from analyzer.errors import AnalyzerError
from analyzer.prediction.ort_graph import (LAYOUT_LEVELS, RECORD_MAX_WEIGHT_BYTES, extra_launches, fused_graph,
                                           fusion_map, graph_edges, kernel_ops, load_model,
                                           memberless_owner, unmapped)
from analyzer.prediction.ort_layout import layout_graph, layout_sums


# the nodes onnxruntime's NchwcTransformer inserts between the NCHW and the blocked layout
REORDERS = ("ReorderInput", "ReorderOutput")
# fused-graph ops that run in the blocked layout (what a ReorderInput feeds)
_BLOCKED = frozenset({"Conv", "FusedConv", "MaxPool", "AveragePool", "GlobalMaxPool",
                      "GlobalAveragePool"})


def layout_reorders(original: Any, fused: Any, layout: Any,
                    fmap: dict[str, list[str]]) -> tuple[tuple[str, str, str], ...]:
    """``(fused kernel charged, reorder op, NCHW tensor)`` for every layout reorder onnxruntime
    runs at its default level (``layout``: ``layout_graph``; ``fused``: the EXTENDED graph).

    The NCHWc layout is onnxruntime's CPU choice for 4-D convolutions and pools: a chain of them
    stays blocked, and a ``ReorderInput`` (NCHW -> blocked) or ``ReorderOutput`` (blocked -> NCHW)
    runs only where a tensor enters or leaves such a chain (a MobileNetV2 export: 1 reorder for 52
    convolutions; an EfficientNet-B0, whose squeeze-excite blocks leave the layout, 55). Each is a
    launch that reads and writes its tensor. The NCHW tensor of either exists in ``fused``: a
    ``ReorderOutput`` is charged to the kernel that produced it, a ``ReorderInput`` to the blocked
    kernel (convolution or pool) that consumes it, else to its first consumer with members."""
    producer, consumers = graph_edges(fused.graph)
    owner: dict[str, str] | None = None
    out = []
    for n in layout.graph.node:
        if n.op_type not in REORDERS or not n.input or not n.output:
            continue
        if n.op_type == "ReorderOutput":
            t = n.output[0]
            k = producer.get(t)
            name = k.name if k is not None else None
            if name is not None and not fmap.get(name):
                owner = owner if owner is not None else memberless_owner(original, fused, fmap)
                name = owner.get(name)
        else:
            t = n.input[0]
            users = [c for c in consumers.get(t, ()) if fmap.get(c.name)]
            blocked = [c for c in users if c.op_type in _BLOCKED]
            name = (blocked or users or [None])[0]
            name = name.name if name is not None else None
        if name:
            out.append((name, n.op_type, t))
    return tuple(out)


def fusion_record(model: Any, level: str = "default", threads: int | None = 1, *,
                  layout: bool = True):
    """onnxruntime's own record of the kernels it runs for ``model`` at ``level``, as a
    ``fusion.FusionRecord`` over the original node names (``fusion_map``): one entry per fused
    node that replaced original nodes, with its op type; the original nodes no fused node
    claims are ``removed``; with ``layout`` (the CPU provider's record) and a level that
    includes the layout transform (default, all), its NCHWc reorders too (``layout_reorders``).
    Raises ``AnalyzerError`` when onnxruntime is missing or cannot load the model, or the
    weights are too large to materialise."""
    from analyzer.prediction.fusion import FusionRecord

    proto = load_model(model)
    nbytes = 0
    for t in proto.graph.initializer:
        n = 1
        for d in t.dims:
            n *= d
        nbytes += n * 4
    if nbytes > RECORD_MAX_WEIGHT_BYTES:
        raise AnalyzerError(f"weights of {nbytes / 2**30:.1f} GiB: onnxruntime's fused graph not built")
    fused = fused_graph(proto, level, threads)
    saved = "extended" if level in LAYOUT_LEVELS else level
    fmap = fusion_map(proto, fused)
    ops = kernel_ops(proto, fused, fmap)
    reorders: tuple = ()
    sums: dict[str, str] = {}
    source = f"onnxruntime's fused graph (level {saved})"
    if layout and level in LAYOUT_LEVELS:
        lay = layout_graph(proto, threads)
        reorders = layout_reorders(proto, fused, lay, fmap)
        sums = layout_sums(fused, lay)
        source += f" and its {len(reorders)} NCHWc layout reorders"
        if sums:
            source += f" ({len(sums)} residual Add/activation kernels run inside a blocked convolution)"
        reorders = tuple((sums.get(k, k), op, t) for k, op, t in reorders)
    members = {n.name: list(fmap.get(n.name, ())) for n in fused.graph.node}
    for k, conv in sums.items():   # (in graph order: an Add before the activation after it)
        members[conv] += members.pop(k, [])
    kernels = tuple((n.name, ops[n.name], tuple(members[n.name])) for n in fused.graph.node
                    if members.get(n.name))
    extra = tuple((k, v) for k, v in extra_launches(proto, fused, fmap, ops).items()
                  if v and k not in sums)
    return FusionRecord(source, kernels, frozenset(unmapped(proto, fmap)), extra, reorders)


def profiled_reorders(row_model, node, threads: int, level: str, runs: int = 10
                 ) -> list[tuple[int, float]]:
    """``(bytes moved, seconds)`` of each NCHWc layout reorder onnxruntime runs around a row's
    node of a single-op model (``calibrate``'s rows: ``ReorderInput`` of an input, ``ReorderOutput`` of an output; bytes: its tensor read
    and written, as ``fusion`` charges them). Seconds are the profiler's median for the reorder
    less its median for the row's 1-element Slice sink: the profiler's own cost per node
    (2-3 us here, against a Slice kernel of tenths of a microsecond)."""
    from analyzer.prediction.ort_measure import profile_runs

    size = {t: s.nbytes() for t, s in zip(node.in_names, node.in_specs) if s is not None}
    size.update({t: s.nbytes() for t, s in zip(node.out_names, node.out_specs) if s is not None})
    found = [n for n in layout_graph(row_model, threads).graph.node
             if n.op_type in REORDERS and n.input and n.output]
    if not found:
        return []
    node_s, node_op = profile_runs(row_model.SerializeToString(), level, threads, None, runs, 2)
    own = min((t for k, t in node_s.items() if node_op.get(k) == "Slice"), default=0.0)
    out = []
    for n in found:
        if n.name in node_s:
            b = 2 * size.get(n.input[0] if n.op_type == "ReorderInput" else n.output[0], 0)
            out.append((b, max(node_s[n.name] - own, 0.1 * node_s[n.name])))
    return out
