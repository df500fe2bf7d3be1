"""The ONNX frontend: a model file, bytes or ModelProto -> ``ir.Graph``.

Weight bytes are never read (``load_external_data=False``; a model whose ``.data``
file is absent still analyses).  Steps: parse, check the structure (dangling
inputs, cycles), bind user dims, run ONNX shape inference with data propagation,
fold constant-only subgraphs, and re-infer once when folding revealed values that
shapes depend on.  Rare passes run only when the graph holds their ops: decomposition of
function ops (``functions``), onnxruntime contrib shapes (``contrib_shapes``), sequence
elements (``sequences``), control-flow bodies (``onnx_subgraphs``).  Proto reading and
inference live in ``onnx_read``; the help ONNX inference needs (re-inference with folded
values, surrogates, old-opset axes) in ``onnx_shapes``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

import onnx

from analyzer.errors import ModelLoadError
from analyzer.frontends.onnx import fold, functions, sequences, utf8
from analyzer.frontends.onnx.bind import (  # noqa: F401
    bind_declared,
    bind_inputs,
    bind_values,
    declared_dims,
    parse_shape,
)
from analyzer.frontends.onnx.check import check_kernels, check_nodes, check_versions
from analyzer.frontends.onnx.read import (
    OP_OF,
    collect_specs,
    infer_model,
    newer_ops,
    read_initializers,
    read_nodes,
    strip_bodies,
    topo_order,
)
from analyzer.frontends.onnx.shapes import (
    batch_norm_statistics,
    contrib_output_shapes,
    default_opset,
    infer_with_values,
    may_propagate,
    negative_axes,
    open_specs,
)
from analyzer.frontends.onnx.subgraphs import (
    attach_subgraphs,
    control_outputs,
    subgraph_protos,
    unsettled,
)
from analyzer.ir import dims as dim_expr
from analyzer.ir.graph import Graph, merge_specs
from analyzer.userfiles import CAPS, read_regular

_FOLD_ROUNDS = 64  # fold -> infer rounds (one per level of shape math that inference cannot see
# through, e.g. a Pad whose pads a ConstantOfShape-Concat builds per block); each must fold more

# ----------------------------------------------------------------------------- loading

def read_model(model: Any) -> tuple[onnx.ModelProto, str, bytes | None]:
    """Parse ``model`` (path, bytes or ModelProto) without reading external weight data.

    Returns the proto (a private copy that may be modified), a display path, and the
    serialized bytes it was parsed from (None for a ModelProto)."""
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        m = _checked(m, "<ModelProto>")
        _names_as_text(m, m.SerializeToString())
        return m, "<ModelProto>", None
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        m = _checked(_parse(data, "<bytes>"), "<bytes>")
        return m, "<bytes>", _names_as_text(m, data)
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        # a regular file up to protobuf's 2 GiB limit: never a FIFO (a hang) or /dev/zero
        data = read_regular(path, str(path), CAPS["model"], ModelLoadError)
        m = _checked(_parse(data, str(path)), str(path))
        return m, str(path), _names_as_text(m, data)
    raise ModelLoadError(
        f"cannot analyse a {type(model).__name__}: pass a path, bytes or an onnx.ModelProto")


def _parse(data: bytes, where: str) -> onnx.ModelProto:
    if not data:
        raise ModelLoadError(f"{where}: file is empty")
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise ModelLoadError(
            f"{where}: not an ONNX model (protobuf parse failed: {e}); truncated or another format?"
        ) from None
    return m


def _names_as_text(m: onnx.ModelProto, data: bytes) -> bytes | None:
    """``data`` when every name of ``m`` is UTF-8 text; else the names that are not are decoded
    in ``m`` (``utf8.fix``: backslash escapes) and None (``m`` no longer matches ``data``)."""
    if utf8.check(data):
        return data
    utf8.fix(m)
    return None


def _checked(m: onnx.ModelProto, where: str) -> onnx.ModelProto:
    # Random bytes can parse as a protobuf; a real model has an IR version, an opset and a graph.
    if m.ir_version <= 0 or not m.HasField("graph") or not m.opset_import:
        raise ModelLoadError(f"{where}: not an ONNX model (no IR version, opset or graph found)")
    check_versions(m, where)  # (a graph without nodes is odd but valid: it analyses to nothing)
    return m


# ----------------------------------------------------------------------------- binding

def _foreign_symbols(g: onnx.GraphProto, specs) -> bool:
    """Whether a spec has a symbolic dim that no graph input declares (nor ONNX inference
    generated, ``unk__``): it comes from the file's value_info."""
    own = {d.dim_param for vi in g.input for d in vi.type.tensor_type.shape.dim if d.dim_param}
    for s in {id(s): s for s in specs.values()}.values():
        for d in s.shape or ():
            if type(d) is str and d != "?" and d not in own and not d.startswith("unk__") \
                    and not dim_expr.is_expression(d):
                return True
    return False


def _drop_symbolic_declarations(g: onnx.GraphProto) -> bool:
    """Drop the value_info entries of standard-op outputs whose shape has a symbol or an
    unknown dim (ONNX inference works them out again). True when any went."""
    std = {o for n in g.node if n.domain in ("", "ai.onnx") and n.op_type not in _SELF_TYPED
           for o in n.output}
    keep = [vi for vi in g.value_info if vi.name not in std or not any(
        not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)]
    if len(keep) == len(g.value_info):
        return False
    del g.value_info[:]
    g.value_info.extend(keep)
    return True


_SELF_TYPED = frozenset({"If", "Loop", "Scan", "SequenceMap"})  # typed from bodies: keep


def _declared_outputs_as_hints(g: onnx.GraphProto, rebound: bool, branch: bool = False) -> bool:
    """A graph output's declared shape is the exporter's trace (batch 1, a symbol of its own),
    not a fact: for outputs of standard ops, which ONNX inference types, the shape is dropped
    (the dtype stays), so that the shapes ``inputs=``, ``dims=`` or folded values decide win.
    (A declaration that disagrees with inference wins inside ONNX inference: an ImageNet
    classifier declared [1, 1000] counted its last Gemm at batch 1 at any batch.)  Without
    ``rebound`` (no input was bound) only declarations with a symbol or an unknown dim go: the
    fixed ones were traced at the shapes being analysed.  ``branch``: ``g`` is an If branch,
    whose value_info is the same trace's and goes alike (``_branch_hints``).  True when
    anything changed."""
    def traced(vi):
        return vi.type.tensor_type.HasField("shape") and (rebound or any(
            not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim))

    drop = [vi for vi in g.output if traced(vi)]
    if branch:
        drop += [vi for vi in g.value_info if traced(vi)]
    if not drop:
        return False
    std = {o for n in g.node if n.domain in ("", "ai.onnx") and n.op_type not in _SELF_TYPED
           for o in n.output}
    changed = False
    for vi in drop:
        t = vi.type.tensor_type
        if vi.name in std:
            t.ClearField("shape")
            changed = True
    return changed


def _branch_hints(n: onnx.NodeProto, rebound: bool) -> bool:
    """``_declared_outputs_as_hints`` for every If branch in or under the control-flow node
    ``n``: a branch's outputs are declared by the same trace (batch 1 when the input is 8x8),
    its own nodes decide them.  True when anything changed."""
    changed = False
    branch = n.op_type == "If" and n.domain in ("", "ai.onnx")
    for a in n.attribute:
        for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                  a.graphs if a.type == onnx.AttributeProto.GRAPHS else ()):
            if branch:
                changed |= _declared_outputs_as_hints(g, rebound, branch=True)
            for m in g.node:
                if len(m.attribute) and any(x.type in _GRAPH_TYPES for x in m.attribute):
                    changed |= _branch_hints(m, rebound)
    return changed


_GRAPH_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def load(model: Any, *, inputs: Mapping[str, Any] | None = None,
         dims: Mapping[str, int] | None = None,
         values: Mapping[str, Any] | None = None,
         counted: Callable[[str, str], bool]) -> tuple[Graph, dict]:
    """Load, bind, infer and fold an ONNX model. Returns the graph and model info.

    ``counted(domain, op)``: whether the caller counts that op directly; a function op it does
    not count is decomposed into its body (``functions``)."""
    m, path, data = read_model(model)
    bound = bind_inputs(m, inputs, dims)
    fixed = bind_values(m, values)
    hints = _declared_outputs_as_hints(m.graph, bool(bound or inputs or fixed))
    # binding edits the graph inputs: then inference must see the edited proto
    graph = _build(m, path, counted, None if (inputs or dims or values or hints) else data,
                   rebound=bool(bound or inputs or fixed))
    real = set(graph.inputs)  # graph inputs that are not initializers
    info = {
        "path": path,
        "format": "onnx",
        "inputs": {vi.name: list(graph.tensors[vi.name].shape or ()) if vi.name in graph.tensors
                   else declared_dims(vi) for vi in m.graph.input if vi.name in real},
        "outputs": [vi.name for vi in m.graph.output],
        "dims": bound,
        **({"values": fixed} if fixed else {}),
        "opset": {d.domain or "ai.onnx": d.version for d in m.opset_import},
        "producer": m.producer_name,
    }
    return graph, info


def _build(m: onnx.ModelProto, path: str, counted, data: bytes | None = None,
           expanded: bool = False, rebound: bool = False) -> Graph:
    """The Graph of ``m``; ``data``: ``m`` serialized, when the caller has it already.
    ``expanded``: function ops were already decomposed (``functions``), or must not be.
    ``rebound``: inputs, dims or values were given (``_declared_outputs_as_hints``)."""
    g = m.graph
    cache: dict[bytes, tuple[str, Any]] = {}
    init_specs, init_values, stripped = read_initializers(g, strip=True)
    if stripped:  # weights were inline: the file's bytes hold them, the stripped proto not
        data = None
    init_names = init_specs.keys()
    available = {vi.name for vi in g.input} | init_names
    big_constants: list[str] = []
    renamed: dict[str, str] = {}
    nodes, in_order, defined, candidates = read_nodes(g, cache, available, init_names, big_constants,
                                                      renamed)
    if any(n.attr_key is None for n in nodes):  # control flow: only such nodes have bodies
        for i, n in enumerate(nodes):
            # a body's big constants and initializers are stripped likewise, and an If
            # branch's traced declarations dropped: the protos then differ from data
            if n.attr_key is None and (strip_bodies(g.node[i]) | _branch_hints(g.node[i], rebound)):
                big_constants.append("")
    if big_constants:  # a Constant node's value was inline: the stripped proto differs from data
        data = None
    ops = set(map(OP_OF, nodes))  # every op name of the graph: decides the rare passes below
    if not expanded and functions.wanted(m, nodes, ops, counted):  # uncounted function ops (rare)
        return functions.build_decomposed(
            m, lambda x: _build(x, path, counted, data if x is m else None, True, rebound), counted)
    file_nodes = nodes  # file order (the re-inference copy keeps it)
    if not in_order:
        nodes = topo_order(nodes, available)
        candidates = nodes  # file-order candidates would miss a constant produced later

    prop = may_propagate(g, candidates, ops, init_names, init_values)
    inferred = infer_model(m, data, prop)
    specs = collect_specs(inferred.graph)
    if _foreign_symbols(g, specs) and _drop_symbolic_declarations(g):
        # the file's value_info named a symbol no input has ('seqlen' for a Reshape whose target
        # folds to [20, 1, 8210]): a declaration is a hint, inference decides
        inferred = infer_model(m, None, prop)
        specs = collect_specs(inferred.graph)
    specs.update(init_specs)
    check_nodes(m, g.node, file_nodes, specs)  # what the ONNX checker rejects, naming the node
    if "Conv" in ops or "ConvTranspose" in ops:
        check_kernels(nodes, specs)
    old_opset = 0 < default_opset(m) < 11
    if old_opset:
        while negative_axes(m, specs):  # old opsets: exporters' negative axes block inference
            inferred = infer_model(m, data_prop=prop)
            specs = collect_specs(inferred.graph)
            specs.update(init_specs)
    contrib_output_shapes(inferred, nodes, specs, ops)
    inferred, (constants, values, folded, sources), fold_errors = _fold_and_infer(
        m, inferred, specs, file_nodes, nodes, candidates, defined, init_names, init_values, prop, ops,
        old_opset)
    if "BatchNormalization" in ops:
        batch_norm_statistics(nodes, specs)
    # after re-inference: adds SequenceLength values
    seqs = {} if sequences.OPS.isdisjoint(ops) else sequences.follow(nodes, specs, values)
    opsets = {d.domain or "": d.version for d in m.opset_import}
    graph = Graph(
        name=g.name or Path(path).stem,
        nodes=nodes,
        tensors=specs,
        inputs=tuple(vi.name for vi in g.input if vi.name not in init_names),
        outputs=tuple(vi.name for vi in g.output),
        constants=frozenset(constants),
        values=values,
        folded=frozenset(folded),
        opsets=opsets,
        sources=sources,
        sequences=seqs,
        fold_errors=fold_errors,
        newer_ops=newer_ops(nodes, opsets),
        renamed=renamed,
    )
    if any(n.attr_key is None for n in nodes):  # only control-flow nodes have graph attributes
        _type_bodies(graph, inferred, cache, candidates, specs, init_names, init_values, fold_errors)
    return graph


def _fold_and_infer(m, inferred, specs, file_nodes, nodes, candidates, defined, init_names, init_values,
                    prop, ops, old_opset: bool):
    """(the last inferred model, fold.fold_graph's (constants, values, folded, sources), the fold
    errors). Folding may compute values (Reshape targets, Expand shapes, Range limits) that
    inference could not see: they go to inference as initializers and it infers again; the
    specs (updated in place) that resolves may let more fold (a Shape of a now-static tensor),
    so it repeats while it helps, at most _FOLD_ROUNDS times."""
    n_values = -1
    for _ in range(_FOLD_ROUNDS):
        fold_errors: dict[str, str] = {}
        folding = fold.fold_graph(candidates, specs, (set(init_names), dict(init_values)), failures=fold_errors)
        values, folded = folding[1], folding[2]
        patched = old_opset and negative_axes(m, specs)  # ranks this round resolved
        if (len(values) == n_values and not patched) or not open_specs(nodes, folded, specs, defined):
            break
        n_values = len(values)
        better = infer_with_values(m, file_nodes, nodes, folded, values, init_names, prop)
        if better is None and patched:
            again = infer_model(m, data_prop=prop)
            better = (again, collect_specs(again.graph))
        if better is None:
            break
        inferred, better_specs = better
        if not merge_specs(specs, better_specs):
            break
        # a contrib op fed by what this round resolved (an OCR export's DynamicQuantizeLSTM
        # behind a Reshape whose target folds from the symbolic image width)
        contrib_output_shapes(inferred, nodes, specs, ops)
    return inferred, folding, fold_errors


def _type_bodies(graph: Graph, inferred, cache, candidates, specs, init_names, init_values,
                 fold_errors: dict[str, str]) -> None:
    """Attach the control-flow nodes' sub-graphs. Loop/Scan outputs typed from their bodies
    resolve the nodes downstream, whose bodies are then typed again: one round per level of a
    chain of control-flow nodes (each round must resolve something), re-typing only the nodes
    not yet settled."""
    attach_subgraphs(graph, subgraph_protos(inferred.graph), cache)
    while pending := unsettled(graph):
        inferred = control_outputs(graph, inferred, cache)
        if inferred is None:
            break
        # the shapes the bodies gave may fold more: an If's condition read from the shape
        # of a tensor after a Loop or another If ('squeeze when dim 0 is 1')
        constants, values, folded, sources = fold.fold_graph(
            candidates, specs, (set(init_names), dict(init_values)), failures=fold_errors)
        graph.constants, graph.values = frozenset(constants), values
        graph.folded, graph.sources = frozenset(folded), sources
        attach_subgraphs(graph, subgraph_protos(inferred.graph), cache, only=pending)
