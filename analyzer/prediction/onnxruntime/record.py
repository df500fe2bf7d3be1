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
from analyzer.prediction.onnxruntime.graph import (LAYOUT_LEVELS, RECORD_MAX_WEIGHT_BYTES,
                                                   extra_launches, fused_graph, fusion_map, graph_edges,
                                                   kernel_ops, load_model, memberless_owner, unmapped)
from analyzer.prediction.onnxruntime.layout import (absent_hosts, layout_absent, layout_graph,
                                                    layout_inserted, layout_sums)


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
    source = f"onnxruntime's fused graph (level {saved})"
    lay = _layout_part(proto, fused, fmap, threads) if layout and level in LAYOUT_LEVELS else None
    reorders, sums, absent, moved, inserted = lay[:5] if lay else ((), {}, frozenset(), {}, ())
    source += lay[5] if lay else ""
    members = {n.name: list(fmap.get(n.name, ())) for n in fused.graph.node}
    for k, conv in sums.items():   # (in graph order: an Add before the activation after it)
        members[conv] += members.pop(k, [])
    removed = set(unmapped(proto, fmap))
    for k in absent:
        removed.update(members.pop(k, ()))
    kernels = tuple((n.name, ops[n.name], tuple(members[n.name])) for n in fused.graph.node
                    if members.get(n.name))
    extra: dict[str, list[str]] = {}
    for k, v in extra_launches(proto, fused, fmap, ops, skip=absent).items():
        if v and k not in sums:
            extra.setdefault(moved.get(k, k), []).extend(v)
    for k, op in inserted:
        extra.setdefault(moved.get(k, k), []).append(op)
    return FusionRecord(source, kernels, frozenset(removed),
                        tuple((k, tuple(v)) for k, v in extra.items()), reorders)


def _layout_part(proto, fused, fmap, threads):
    """What the layout graph (``layout_graph``) changes of the fused graph's kernels: ``(reorders
    (charged to the kernel that runs them), layout_sums, layout_absent, {fused node: kernel its
    launches are charged to}, layout_inserted, a phrase for the record's source)``."""
    lay = layout_graph(proto, threads)
    sums = layout_sums(fused, lay)
    absent = layout_absent(fused, lay, sums)
    moved = {**absent_hosts(fused, fmap, absent), **sums}
    reorders = tuple((moved.get(k, k), op, t) for k, op, t in layout_reorders(proto, fused, lay, fmap))
    inserted = layout_inserted(fused, lay)
    text = f" and its {len(reorders)} NCHWc layout reorders"
    if sums:
        text += f" ({len(sums)} residual Add/activation kernels run inside a blocked convolution)"
    if absent:
        text += f"; {len(absent)} of its nodes run inside a reorder"
    if inserted:
        text += f"; {len(inserted)} launches the layout inserts ({', '.join(sorted({o for _, o in inserted}))})"
    return reorders, sums, absent, moved, inserted, text
