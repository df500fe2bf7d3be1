"""Where ONNX shape inference needs help, for the frontend's ``_build``: re-inference with
folded values, shape surrogates (Compress with a constant condition; onnxruntime contrib and
ai.onnx.ml ops through ``contrib_shapes``), negative axes below opset 11, and BatchNormalization's
statistics outputs.  Each acts on a private copy of the model or on the spec dict only.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from analyzer.ir.graph import Node, TensorSpec, merge_specs
from analyzer.frontends.onnx import fold
from analyzer.frontends.onnx.read import DOMAIN_OF, collect_specs, infer_model
from analyzer.frontends.onnx.types import DTYPES


# ONNX data propagation carries every integer vector as a list of dims (about 150 bytes per
# element, more where it names unknown ones): a vector longer than this, a constant (Range(0,
# 1e7) in a 200-byte file) or a graph input, would cost gigabytes there
_PROPAGATE_LIMIT = 1 << 18
_INT_VECTOR = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})


def _int_vector_source(n) -> bool:
    """A constant-only node that may build a long integer vector (a float ConstantOfShape,
    the common weight buffer, cannot)."""
    if n.op not in fold.AMPLIFYING:
        return False
    if n.op != "ConstantOfShape":
        return True
    v = n.attrs.get("value")  # (none: float zeros)
    return v is not None and v.data_type in _INT_VECTOR


def may_propagate(g: onnx.GraphProto, candidates, ops, init_names, init_values) -> bool:
    """Whether shape inference may propagate data: not when the graph holds an integer vector
    over ``_PROPAGATE_LIMIT`` elements, known before inference (a graph input's declared or
    bound shape, or a constant-only node's output sized from constant values).  Without it,
    the shape arithmetic still resolves: the fold rounds hand inference its values."""
    for vi in g.input:
        t = vi.type.tensor_type
        if t.elem_type in _INT_VECTOR and len(t.shape.dim) == 1 and \
                t.shape.dim[0].dim_value > _PROPAGATE_LIMIT:
            return False
    if fold.AMPLIFYING.isdisjoint(ops) or not any(map(_int_vector_source, candidates)):
        return True
    oversized: dict[str, tuple] = {}
    fold.fold_graph(candidates, {}, (set(init_names), dict(init_values)), oversized=oversized)
    return not any(len(shape) == 1 and shape[0] > _PROPAGATE_LIMIT and dt.kind in "iu"
                   for shape, dt in oversized.values())


def open_specs(nodes, folded, specs, defined) -> bool:
    """Whether a node that runs reads or writes a tensor with no spec or an unresolved one
    (a folded constant without a value, a Gather from a weight table, counts as read)."""
    unknown = {id(v) for v in {id(v): v for v in specs.values()}.values() if v.unresolved}
    missing = bool(defined.difference(specs.keys()))  # a node output with no spec at all
    return bool(missing or unknown) and any(
        x and (x not in specs or id(specs[x]) in unknown)
        for n in nodes if n.name not in folded for x in (*n.inputs, *n.outputs))


def infer_with_values(m, file_nodes, nodes, folded, values, init_names, data_prop=True):
    """ONNX inference over a copy of ``m`` whose folded values are initializers: (the
    inferred model, its specs), or None when folding found no value to give."""
    extra = [numpy_helper.from_array(v, name=k) for k, v in values.items() if k not in init_names]
    if not extra and not any(n.op in _VALUE_SURROGATES for n in nodes):
        return None
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    # drop only folded nodes whose outputs all became initializers; a folded node without a
    # known value (a Gather from a weight table) must still produce its output
    gone = {n.name for n in nodes if n.name in folded and all(o in values for o in n.outputs if o)}
    keep = [p for p, n in zip(m2.graph.node, file_nodes) if n.name not in gone]
    keep = [q for p in keep for q in _value_surrogate(p, values)]
    del m2.graph.node[:]
    m2.graph.node.extend(keep)
    m2.graph.initializer.extend(extra)
    if m2.ir_version < 4:  # IR < 4: inference reads only initializers that are also inputs
        m2.graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                              for t in extra)
    # the file's own declarations with symbols in them (a quantizer's earlier 'unk__1') would
    # win over the values now known: let inference work those tensors out again
    given = {t.name for t in extra}
    declared = [vi for vi in m2.graph.value_info if vi.name not in given and not any(
        d.dim_param or not d.HasField("dim_value") for d in vi.type.tensor_type.shape.dim)]
    if len(declared) != len(m2.graph.value_info):
        del m2.graph.value_info[:]
        m2.graph.value_info.extend(declared)
    inferred = infer_model(m2, data_prop=data_prop)
    return inferred, collect_specs(inferred.graph)


_VALUE_SURROGATES = frozenset({"Compress"})


def _value_surrogate(p: onnx.NodeProto, values) -> list[onnx.NodeProto]:
    """For inference only: an op whose output size a constant input decides but which ONNX
    inference leaves open (Compress with a constant condition) becomes a standard op with the
    same output shape (a Gather of the kept positions); other nodes stay as they are."""
    if p.op_type == "Compress" and p.domain in ("", "ai.onnx") and len(p.input) > 1 \
            and p.input[1] in values:
        keep = np.flatnonzero(np.asarray(values[p.input[1]]).astype(bool))
        idx = f"{p.output[0]}__kept"
        nodes = [onnx.helper.make_node("Constant", [], [idx],
                                       value=numpy_helper.from_array(keep.astype(np.int64), idx))]
        axis = next((a.i for a in p.attribute if a.name == "axis"), None)
        data = p.input[0]
        if axis is None:  # no axis: the flattened input
            flat = f"{p.output[0]}__flat"
            nodes += [onnx.helper.make_node("Constant", [], [flat + "_shape"],
                                            value=numpy_helper.from_array(np.array([-1], np.int64))),
                      onnx.helper.make_node("Reshape", [data, flat + "_shape"], [flat])]
            data, axis = flat, 0
        return nodes + [onnx.helper.make_node("Gather", [data, idx], [p.output[0]], axis=axis)]
    return [p]


def default_opset(m: onnx.ModelProto) -> int:
    return next((d.version for d in m.opset_import if d.domain in ("", "ai.onnx")), 0)


# ops whose 'axis' / 'axes' count from the end only since opset 11, and whether the axes refer
# to the output's rank (Unsqueeze) rather than the first input's
_AXIS_OPS = {"Concat": False, "Split": False, "Gather": False, "Softmax": False,
             "LogSoftmax": False, "Hardmax": False, "Flatten": False, "ArgMax": False,
             "ArgMin": False, "Squeeze": False, "Unsqueeze": True, "Slice": False,
             "ReduceMean": False, "ReduceSum": False, "ReduceMax": False, "ReduceMin": False,
             "ReduceProd": False, "ReduceL1": False, "ReduceL2": False, "ReduceLogSum": False,
             "ReduceLogSumExp": False, "ReduceSumSquare": False, "Compress": False}


def negative_axes(m: onnx.ModelProto, specs) -> bool:
    """Before opset 11, axes could not count from the end, but exporters write -1 and runtimes
    accept it; ONNX inference then leaves the output untyped.  Rewrite them, in this private
    copy, with the input's rank where it is known.  True when anything changed."""
    changed = False
    for p in m.graph.node:
        out_rank = _AXIS_OPS.get(p.op_type)
        if out_rank is None or p.domain not in ("", "ai.onnx") or not p.input:
            continue
        s = specs.get(p.input[0])
        if s is None or s.shape is None:
            continue
        for a in p.attribute:
            if a.name == "axis" and a.type == onnx.AttributeProto.INT and a.i < 0:
                a.i += len(s.shape)
                changed = True
            elif a.name == "axes" and a.type == onnx.AttributeProto.INTS and any(x < 0 for x in a.ints):
                rank = len(s.shape) + (len(a.ints) if out_rank else 0)
                fixed = [x + rank if x < 0 else x for x in a.ints]
                del a.ints[:]
                a.ints.extend(fixed)
                changed = True
    return changed


def batch_norm_statistics(nodes: list[Node], specs: dict) -> None:
    """BatchNormalization's statistics outputs (running / saved mean and variance), which ONNX
    inference leaves untyped at opsets 9-13: one value per channel, the input's dtype."""
    for n in nodes:
        if n.op != "BatchNormalization" or n.domain or len(n.outputs) < 2:
            continue
        x = specs.get(n.inputs[0])
        if x is None or x.shape is None or len(x.shape) < 2:
            continue
        for o in n.outputs[1:]:
            if o and o not in specs:
                specs[o] = TensorSpec((x.shape[1],), x.dtype)


def contrib_output_shapes(inferred: onnx.ModelProto, nodes: list[Node], specs: dict, ops: set[str]) -> None:
    """Shapes for the outputs of onnxruntime contrib ops (and everything downstream), which
    ONNX inference leaves unknown: inference over a copy with shape surrogates, repeated
    while it resolves more (a surrogate may need a rank only the previous round found)."""
    from analyzer.frontends.onnx.surrogates.contrib import (MS, ORT_DEFAULT_DOMAIN, UNINFERRED, needs_surrogate,
                                                            surrogate_copy)
    from analyzer.frontends.onnx.surrogates.ml import ML

    # the common case (no onnxruntime or ai.onnx.ml op at all) decided by two C-level passes
    domains = set(map(DOMAIN_OF, nodes))
    if MS not in domains and ML not in domains and ORT_DEFAULT_DOMAIN.isdisjoint(ops) and UNINFERRED.isdisjoint(ops):
        return
    contrib_outs = [o for n in nodes if n.domain == ML or needs_surrogate(n.domain, n.op)
                    for o in n.outputs if o]
    touched = {x for n in nodes if n.domain == ML or needs_surrogate(n.domain, n.op)
               for x in (*n.inputs, *n.outputs) if x}
    for _ in range(4):
        # no spec, or one inference left open (a converter's unnamed batch dim: [None, 1])
        needs = {o for o in contrib_outs if o not in specs or specs[o].unresolved}
        if not needs:
            return
        # each round starts from the file's inferred model again, with what earlier rounds
        # learned about the tensors the contrib / ml nodes touch
        sub = surrogate_copy(inferred, needs, {x: specs[x] for x in touched if x in specs})
        if sub is None:
            return
        m2, dtypes = sub
        base = infer_model(m2)
        found = collect_specs(base.graph)
        for k, t in dtypes.items():  # the real output dtypes, not the surrogates'
            if k in found:
                found[k] = TensorSpec(found[k].shape, DTYPES.get(t, found[k].dtype))
        merge_specs(specs, found)
        if {o for o in contrib_outs if o not in specs or specs[o].unresolved} == needs:
            return  # no progress
