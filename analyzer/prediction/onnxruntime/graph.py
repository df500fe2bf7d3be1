"""What onnxruntime actually runs: its own fused graph, and how it maps back to the user's nodes.

``fused_graph(model, level)`` opens an ``InferenceSession`` with
``SessionOptions.optimized_model_filepath`` set and returns the model onnxruntime saved: its own
record of the fusions it applied (Conv+BatchNormalization folded, Conv+activation -> FusedConv,
MatMul+Add -> Gemm, LayerNorm/GELU/attention fusions, constant folding of shape subgraphs, ...).

Which level is saved, and why
-----------------------------
onnxruntime's default session level is ``ORT_ENABLE_ALL`` (99). On the CPU provider, ALL is
EXTENDED (2) plus the *layout* level (3), whose only CPU transformer today is the
``NchwcTransformer``: it rewrites 4-D convolutions and pools into ``com.microsoft.nchwc``
ops (``Conv``, ``MaxPool``, ``GlobalAveragePool``, ...) with ``ReorderInput``/``ReorderOutput``
between the blocked layout and NCHW. Those are a memory-layout choice of the same kernels, not a
different set of fused kernels: opcost has no rules for the blocked layout (their outputs have no
ONNX shape), and onnxruntime itself warns that the serialized ALL graph "should only be used in
the same environment". So ``level="default"`` (and ``"all"``) *saves* at EXTENDED: the fused kernel
set of the default session, in plain ONNX + ``com.microsoft`` contrib ops that opcost counts.
The layout's cost (blocked kernels are faster; reorders at the boundaries) is what the CPU
calibration measures, because calibration sessions run at the level the user's session uses.

``fusion_map(original, fused)`` joins fused kernels back to original node names through the tensor
names onnxruntime keeps on fusion boundaries: a fused node's output tensors are the outputs of
the last original node it replaced, and its inputs are tensors that still exist in the fused
graph. Walking the original graph backwards from a fused node's outputs, stopping at any tensor
the fused graph still has (its inputs, other kernels' outputs, graph inputs, initializers),
collects exactly the original nodes it replaced. Original nodes no fused node claims were
removed (Identity, Dropout, constant-folded shape arithmetic); ``unmapped`` lists them.

Models whose external weight files are absent (the test fixtures ship graphs only) are given
deterministic random weights of the declared shapes (``with_weights``) so onnxruntime can load
them; the fused graph is returned without its weight *values* mattering to opcost (it counts
shapes and dtypes).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from analyzer.errors import AnalyzerError, ModelLoadError

LEVELS = ("default", "all", "extended", "basic", "off")
# the levels at which onnxruntime's CPU provider runs its NCHWc layout (blocked convolutions and
# pools, with reorders between them); a model saved from them is hardware-specific
LAYOUT_LEVELS = ("default", "all")


class RuntimeMissingError(AnalyzerError):
    """onnxruntime (the optional ``measure`` extra) is not installed."""


def import_ort():
    """onnxruntime, imported lazily; a clear AnalyzerError when the optional extra is missing."""
    try:
        import onnxruntime  # noqa: PLC0415
    except ImportError:
        raise RuntimeMissingError(
            "onnxruntime is not installed; install the optional extra: pip install 'opcost[measure]'"
        ) from None
    return onnxruntime


def ort_level(level: str, *, for_saving: bool = False):
    """The ``GraphOptimizationLevel`` of ``level``; ``for_saving`` maps default/all to EXTENDED."""
    ort = import_ort()
    L = ort.GraphOptimizationLevel
    table = {"default": L.ORT_ENABLE_ALL, "all": L.ORT_ENABLE_ALL, "extended": L.ORT_ENABLE_EXTENDED,
             "basic": L.ORT_ENABLE_BASIC, "off": L.ORT_DISABLE_ALL}
    if level not in table:
        raise AnalyzerError(f"unknown onnxruntime optimization level '{level}' (use one of {', '.join(LEVELS)})")
    if for_saving and level in LAYOUT_LEVELS:
        return L.ORT_ENABLE_EXTENDED
    return table[level]


def session_options(level: str = "default", threads: int | None = None, *, for_saving: bool = False):
    ort = import_ort()
    so = ort.SessionOptions()
    so.graph_optimization_level = ort_level(level, for_saving=for_saving)
    so.intra_op_num_threads = int(threads or os.cpu_count() or 1)
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return so


def load_model(model: Any):
    """An ``onnx.ModelProto`` from a path, bytes or proto (external data read when present)."""
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    try:
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model))
        p = Path(model)
        proto = onnx.load(str(p), load_external_data=False)
        try:
            from onnx.external_data_helper import load_external_data_for_model
            load_external_data_for_model(proto, str(p.parent))
        except (OSError, ValueError, onnx.checker.ValidationError):
            pass  # weights absent: with_weights fills them
        return proto
    except (OSError, onnx.onnx_cpp2py_export.checker.ValidationError) as e:  # type: ignore[attr-defined]
        raise ModelLoadError(f"cannot load ONNX model '{model}': {e}") from None
    except Exception as e:  # protobuf DecodeError and friends
        raise ModelLoadError(f"cannot load ONNX model '{model}': {e}") from None


def with_weights(model: Any, seed: int = 0):
    """A copy of ``model`` whose initializers all hold data: external tensors whose file is absent
    get deterministic random values (float: N(0, 0.02); integer: zeros) of their declared shape."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    proto = load_model(model)
    missing = [t for t in proto.graph.initializer
               if t.data_location == onnx.TensorProto.EXTERNAL]
    if not missing:
        return proto
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    rng = np.random.default_rng(seed)
    for t in out.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
        shape = tuple(t.dims)
        if np.issubdtype(dtype, np.floating):
            arr = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(dtype)
        else:
            arr = np.zeros(shape, dtype=dtype)
        new = numpy_helper.from_array(arr, t.name)
        t.Clear()
        t.CopyFrom(new)
    return out


def model_bytes(model: Any) -> bytes:
    return with_weights(model).SerializeToString()


def fused_graph(model: Any, level: str = "default", threads: int | None = None):
    """The graph onnxruntime's CPU provider runs for ``model`` at ``level`` (an ``onnx.ModelProto``).

    ``level``: the session's ``graph_optimization_level``: "default"/"all" (onnxruntime's default,
    saved at EXTENDED: see the module docstring), "extended", "basic", "off".
    Nodes without a name are given ``<op>_<index>`` so every kernel has a unique name.
    """
    return saved_graph(model, session_options(level, threads, for_saving=True))


def saved_graph(model: Any, so):
    import onnx

    ort = import_ort()
    data = model_bytes(model)
    with tempfile.TemporaryDirectory(prefix="opcost-ort-") as tmp:
        path = os.path.join(tmp, "optimized.onnx")
        so.optimized_model_filepath = path
        try:
            ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own exception types
            raise ModelLoadError(f"onnxruntime cannot load the model: {e}") from None
        fused = onnx.load(path)
    seen: set[str] = set()
    for i, n in enumerate(fused.graph.node):
        if not n.name or n.name in seen:
            n.name = f"{n.op_type}_{i}"
        seen.add(n.name)
    return fused


def _tensor_names(graph) -> set[str]:
    names = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for n in graph.node:
        names.update(x for x in n.input if x)
        names.update(x for x in n.output if x)
    return names


def fusion_map(original: Any, fused: Any) -> dict[str, list[str]]:
    """``{fused node name: [original node names it replaced]}`` from the tensor names onnxruntime
    keeps on fusion boundaries (see the module docstring). Original nodes are listed in graph
    order; each belongs to at most one fused node. A fused node whose outputs are all new
    tensors (e.g. a layout or cast node onnxruntime inserted) maps to ``[]``, unless an original
    node of the same name exists."""
    orig = load_model(original).graph
    fg = fused.graph if hasattr(fused, "graph") else load_model(fused).graph
    producer: dict[str, int] = {}
    for i, n in enumerate(orig.node):
        for o in n.output:
            if o:
                producer[o] = i
    orig_names = {n.name: i for i, n in enumerate(orig.node) if n.name}
    fused_tensors = _tensor_names(fg)
    claimed: dict[int, str] = {}
    out: dict[str, list[str]] = {}
    for fn in fg.node:
        stop = set(x for x in fn.input if x)
        mine: set[int] = set()
        stack = [o for o in fn.output if o in producer]
        seen_t: set[str] = set()
        while stack:
            t = stack.pop()
            if t in seen_t:
                continue
            seen_t.add(t)
            i = producer.get(t)
            if i is None or i in mine or i in claimed:
                continue
            mine.add(i)
            for x in orig.node[i].input:
                if not x or x in stop:
                    continue
                if x in fused_tensors and x not in fn.output:
                    continue  # a tensor the fused graph still has: a boundary
                stack.append(x)
        if not mine and fn.name in orig_names and orig_names[fn.name] not in claimed:
            mine.add(orig_names[fn.name])
        for i in mine:
            claimed[i] = fn.name
        out[fn.name] = [orig.node[i].name or f"{orig.node[i].op_type}_{i}" for i in sorted(mine)]
    return out


def unmapped(original: Any, fmap: dict[str, list[str]]) -> list[str]:
    """Original node names no fused kernel claims (removed or folded by onnxruntime)."""
    orig = load_model(original).graph
    got = {x for v in fmap.values() for x in v}
    names = [n.name or f"{n.op_type}_{i}" for i, n in enumerate(orig.node)]
    return [x for x in names if x not in got]


# weights larger than this are not materialised to ask onnxruntime for its fused graph (a model
# whose external data is absent gets random weights of that size): the patterns are used instead
RECORD_MAX_WEIGHT_BYTES = 2 << 30


def _inserted_upstream(n, producer, orig_tensors, fmap, skip=()):
    """The member-less nodes (``fmap`` gives them no original node) that feed ``n`` through new
    tensors (ones the original graph does not have), walking upstream; nodes in ``skip`` and
    everything above them are not visited."""
    stack, seen = [x for x in n.input if x], set()
    while stack:
        t = stack.pop()
        if t in seen or t in orig_tensors or t not in producer:
            continue
        seen.add(t)
        up = producer[t]
        if fmap.get(up.name) or up.name in skip:
            continue
        yield up
        stack.extend(x for x in up.input if x)


def graph_edges(graph) -> tuple[dict, dict]:
    """``(producer, consumers)`` of an ONNX graph: tensor name -> the node writing it, and ->
    the nodes reading it (graph order)."""
    producer = {o: n for n in graph.node for o in n.output if o}
    consumers: dict[str, list] = {}
    for n in graph.node:
        for x in n.input:
            if x:
                consumers.setdefault(x, []).append(n)
    return producer, consumers


def memberless_owner(original, fused, fmap: dict[str, list[str]]) -> dict[str, str]:
    """``{member-less fused node: the fused node (with original members) it is charged to}``.

    onnxruntime inserts nodes no original node maps to: the Reshape -> Gemm -> Reshape it makes
    of a MatMul + Add on a 3-D input (``fusion_map`` gives the original nodes to the last
    Reshape), a Transpose of a layout rewrite. Each is a launch of its own (dispatch + kernel).
    A member-less node belongs to the first kernel with members it feeds through new tensors
    (the walk of ``kernel_ops``); one that feeds none goes to the next kernel with members
    downstream of it, else to the last kernel of the graph."""
    orig_tensors = _tensor_names(load_model(original).graph)
    fg = fused.graph
    producer, consumers = graph_edges(fg)
    owner: dict[str, str] = {}
    for n in fg.node:
        if not fmap.get(n.name):
            continue
        for up in _inserted_upstream(n, producer, orig_tensors, fmap, skip=owner):
            owner[up.name] = n.name
    last = next((n.name for n in reversed(fg.node) if fmap.get(n.name)), None)
    for n in fg.node:
        if fmap.get(n.name) or n.name in owner or last is None:
            continue
        found, stack, seen = None, [o for o in n.output if o], set()
        while stack and found is None:
            t = stack.pop(0)
            if t in seen:
                continue
            seen.add(t)
            for c in consumers.get(t, ()):
                if fmap.get(c.name):
                    found = c.name
                    break
                stack.extend(o for o in c.output if o)
        owner[n.name] = found or last
    return owner


def extra_launches(original, fused, fmap: dict[str, list[str]],
                   ops: dict[str, str] | None = None,
                   skip: frozenset[str] = frozenset()) -> dict[str, tuple[str, ...]]:
    """``{fused node with members: op types of the extra launches charged to it}``: the op of
    every member-less node it owns (``memberless_owner``) and its own, less one launch of the op
    that stands for the kernel's work (``kernel_ops``: that launch is the kernel itself).
    Member-less nodes in ``skip`` (ones the runtime's layout graph does not run) launch nothing."""
    ops = ops if ops is not None else kernel_ops(original, fused, fmap)
    by_name = {n.name: n.op_type for n in fused.graph.node}
    groups: dict[str, list[str]] = {}
    for m, o in memberless_owner(original, fused, fmap).items():
        if m in skip:
            continue
        groups.setdefault(o, []).append(by_name[m])
    out = {}
    for k, extra in groups.items():
        launches = [by_name[k]] + extra
        if ops.get(k) in launches:
            launches.remove(ops[k])
        else:
            launches = extra
        out[k] = tuple(launches)
    return out


def _op_rank(op: str) -> int:
    from analyzer.prediction.efficiency import kernel_time as eff

    cls = eff.class_chain(eff.op_class_of("", op))[-1]
    if cls in eff.MATRIX_CLASSES:
        return 3
    if cls in ("norm", "softmax", "activation", "other"):
        return 2 if cls != "other" else 0
    if cls in ("elementwise", "reduce", "gather"):
        return 1
    return 0


def kernel_ops(original, fused, fmap: dict[str, list[str]]) -> dict[str, str]:
    """The op type that stands for each fused node's work. onnxruntime sometimes rewrites a
    fusion into several nodes joined by *new* tensors (MatMul+Add on a 3-D input becomes
    Reshape -> Gemm -> Reshape): ``fusion_map`` gives the original nodes to the last of them (the
    one that writes the original tensor), the others map to nothing. The op standing for that
    work is the heaviest (matrix > norm/softmax/activation > elementwise > data movement) of the
    node and the member-less nodes that feed it through new tensors."""
    orig_tensors = _tensor_names(load_model(original).graph)
    fg = fused.graph
    producer = {o: n for n in fg.node for o in n.output if o}
    out = {}
    for n in fg.node:
        best = n.op_type
        for up in _inserted_upstream(n, producer, orig_tensors, fmap):
            if _op_rank(up.op_type) > _op_rank(best):
                best = up.op_type
        out[n.name] = best
    return out
