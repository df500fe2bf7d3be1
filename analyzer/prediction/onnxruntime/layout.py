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


# the layout graph's own nodes that stand for no fused-graph kernel and are charged elsewhere:
# the reorders (``record.layout_reorders``, which also charge the bytes they move)
_REORDERS = frozenset({"ReorderInput", "ReorderOutput"})


def layout_kernel_of(node, fused_names: set[str], producer: dict) -> str | None:
    """The fused-graph (EXTENDED) node a node of the layout graph runs, or None when it runs
    none. A node the layout transform left alone keeps its name; a blocked node is named after
    the tensor its fused-graph node writes, ``<tensor>_nchwc`` (a convolution, a pool) or
    ``<tensor>_<tag>_nchwc`` (a BatchNormalization or a per-channel Mul it rewrote into a
    blocked depthwise convolution: tags ``bn``, ``mul``). A node that writes a tensor of the fused
    graph runs that tensor's producer (a name onnxruntime numbers may differ between the two
    saved graphs; the tensor names it keeps on kernel boundaries do not)."""
    if node.name in fused_names:
        return node.name
    for o in node.output:
        if o in producer:
            return producer[o].name
    if node.domain != "com.microsoft.nchwc" or not node.name.endswith("_nchwc"):
        return None
    stem = node.name[:-len("_nchwc")]
    for t in (stem, stem.rsplit("_", 1)[0]):
        k = producer.get(t)
        if k is not None:
            return k.name
    return None


def layout_inserted(fused: Any, layout: Any) -> tuple[tuple[str, str], ...]:
    """``(layout node name, op)`` of every node onnxruntime's layout transform inserts that runs
    none of the fused graph's kernels and is no reorder, in graph order, each with the fused-graph
    kernel it is charged to: ``((kernel, op), ...)``.

    With symbolic spatial dimensions (a PaddleOCR export's ``-1 x 3 x -1 x -1`` input) the
    transform cannot prove a residual Add's two blocked inputs the same shape to fold the Add into
    the convolution (``layout_sums``); it runs the Add on the blocked tensors instead, with a
    ``Reshape`` of each input to ``N x C/b x H x W x b`` and one of the sum back: three launches
    the fused graph does not have. Each is charged to the first kernel downstream of it in the
    layout graph that runs a fused-graph kernel (else the last upstream one)."""
    fused_names = {n.name for n in fused.graph.node}
    producer = {o: n for n in fused.graph.node for o in n.output if o}
    lay_prod, lay_cons = graph_edges(layout.graph)
    out = []
    for n in layout.graph.node:
        if n.op_type in _REORDERS or layout_kernel_of(n, fused_names, producer) is not None:
            continue
        owner = _nearest(n, lay_cons, lambda m: layout_kernel_of(m, fused_names, producer), down=True)
        if owner is None:
            owner = _nearest(n, lay_prod, lambda m: layout_kernel_of(m, fused_names, producer), down=False)
        if owner is not None:
            out.append((owner, n.op_type))
    return tuple(out)


def _nearest(node, edges: dict, kernel_of, *, down: bool) -> str | None:
    """The fused-graph kernel (``kernel_of``) of the nearest layout node downstream (``edges``:
    consumers) or upstream (``edges``: producer) of ``node``, breadth first; None if none."""
    queue = list(node.output if down else node.input)
    seen: set[str] = set()
    while queue:
        t = queue.pop(0)
        if not t or t in seen:
            continue
        seen.add(t)
        nexts = edges.get(t, ()) if down else ([edges[t]] if t in edges else [])
        for m in nexts:
            k = kernel_of(m)
            if k is not None:
                return k
            queue.extend(m.output if down else m.input)
    return None


def layout_absent(fused: Any, layout: Any, sums: dict[str, str]) -> frozenset[str]:
    """The fused-graph (EXTENDED) nodes the layout graph runs no kernel of, less the Adds and
    activations ``layout_sums`` folds into a convolution (those are charged to it).

    A ``Transpose`` between NCHW and NHWC next to a blocked chain (a ConvNeXt export's permutes
    around its LayerNorm) is absorbed into the reorder that leaves or enters the layout: a
    ``ReorderOutput``/``ReorderInput`` with ``channels_last`` writes or reads the NHWC tensor
    directly, so the Transpose launches nothing and its bytes are the reorder's (charged by
    ``record.layout_reorders``). Reorders are not counted as running a fused-graph node."""
    fused_names = {n.name for n in fused.graph.node}
    producer = {o: n for n in fused.graph.node for o in n.output if o}
    ran = {layout_kernel_of(n, fused_names, producer) for n in layout.graph.node
           if n.op_type not in _REORDERS}
    return frozenset(n.name for n in fused.graph.node if n.name not in ran and n.name not in sums)


def absent_hosts(fused: Any, fmap: dict[str, list[str]], absent: frozenset[str]) -> dict[str, str]:
    """``{absent fused node: the kernel its reorders and extra launches are charged to}``: the
    first kernel with original nodes it feeds that the layout graph runs (breadth first over the
    fused graph), else the one that feeds it; absent nodes with neither are left out."""
    producer, consumers = graph_edges(fused.graph)
    runs = {n.name for n in fused.graph.node if fmap.get(n.name) and n.name not in absent}

    def search(n, down: bool) -> str | None:
        queue, seen = list(n.output if down else n.input), set()
        while queue:
            t = queue.pop(0)
            if not t or t in seen:
                continue
            seen.add(t)
            for m in (consumers.get(t, ()) if down else ([producer[t]] if t in producer else [])):
                if m.name in runs:
                    return m.name
                queue.extend(m.output if down else m.input)
        return None

    out = {}
    for n in fused.graph.node:
        if n.name in absent:
            host = search(n, True) or search(n, False)
            if host is not None:
                out[n.name] = host
    return out
