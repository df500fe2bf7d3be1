"""Types for the formal inputs of control-flow bodies, and shape inference of a body alone.

A Loop/Scan/SequenceMap body often declares its inputs without a shape (exporters write
``float`` or nothing), and ONNX inference of the outer model types a body only as far as its
outer-scope constants allow (it does not see their values).  The outer node implies the
body's input specs exactly:

- ``Loop``: iteration number ``int64[]``, condition ``bool[]``, each carried value the outer
  initial value's spec (kept only where the body hands back the same shape: a value that
  grows every trip has no single spec, and its declared one stays);
- ``Scan`` (opset 9+): each state the outer initial state's spec, each scan input the outer
  scan input without its scan axis; opset 8's batched form drops the batch axis of states
  and the batch and sequence axes of scan inputs;
- ``SequenceMap``: the element spec of each sequence input (when all its elements share
  one), each tensor input as it is.

``infer`` builds a standalone model of the body with those input types, the outer-scope
tensors it reads as typed inputs (as initializers where their small value is known, so
shapes computed from them resolve) and runs ONNX inference on it.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import onnx
from onnx import helper, numpy_helper

from analyzer.ir.graph import Graph, Node, TensorSpec
from analyzer.frontends.onnx.types import DTYPES

_ONNX_TYPE = {name: code for code, name in DTYPES.items()}


def _drop_axes(s: TensorSpec | None, axes) -> TensorSpec | None:
    if s is None or s.shape is None:
        return None
    r = len(s.shape)
    drop = {a + r if a < 0 else a for a in axes}
    if any(not 0 <= a < r for a in drop):
        return None
    return TensorSpec(tuple(d for i, d in enumerate(s.shape) if i not in drop), s.dtype)


def implied_inputs(node: Node, graph: Graph) -> list[TensorSpec | None] | None:
    """The specs the outer ``node`` gives its body's formal inputs, in order (None: no
    implied spec for that input), or None for a node whose body takes no inputs."""
    get = graph.tensors.get
    ins = node.inputs
    a = node.attrs
    if node.op == "Loop" and not node.domain:
        return ([TensorSpec((), "int64"), TensorSpec((), "bool")]
                + [get(x) if x else None for x in ins[2:]])
    if node.op == "Scan" and not node.domain:
        m = int(a.get("num_scan_inputs", 0))
        if "directions" in a or (graph.opsets.get("", 0) == 8):  # opset 8: batched
            states, scans = ins[1:len(ins) - m], ins[len(ins) - m:]
            return ([_drop_axes(get(x), (0,)) for x in states]
                    + [_drop_axes(get(x), (0, 1)) for x in scans])
        states, scans = ins[:len(ins) - m], ins[len(ins) - m:]
        axes = list(a.get("scan_input_axes") or [0] * m)
        return ([get(x) for x in states]
                + [_drop_axes(get(x), (ax,)) for x, ax in zip(scans, axes)])
    if node.op == "SequenceMap" and not node.domain:
        out = []
        for x in ins:
            s = get(x) if x else None
            if s is None and x in graph.sequences:
                el = graph.sequences[x]
                s = el[0] if el and all(e == el[0] for e in el) else None
            out.append(s)
        return out
    return None


def _type(s: TensorSpec) -> onnx.TypeProto:
    dims = None if s.shape is None else [None if d == "?" else d for d in s.shape]
    return helper.make_tensor_type_proto(_ONNX_TYPE[s.dtype], dims)


def _graphs(g: onnx.GraphProto):
    """``g`` and every sub-graph inside it, at any depth."""
    yield g
    for n in g.node:
        for at in n.attribute:
            if at.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(at.g)
            elif at.type == onnx.AttributeProto.GRAPHS:
                for sub in at.graphs:
                    yield from _graphs(sub)


def _used(g: onnx.GraphProto, acc: set[str]) -> None:
    for sg in _graphs(g):
        for n in sg.node:
            acc.update(x for x in n.input if x)


def _defined(g: onnx.GraphProto, acc: set[str]) -> None:
    for sg in _graphs(g):
        acc.update(vi.name for vi in sg.input)
        acc.update(t.name for t in sg.initializer)
        for n in sg.node:
            acc.update(o for o in n.output if o)


def infer(sg: onnx.GraphProto, typed: Mapping[str, TensorSpec], outer: Graph,
          values: Mapping[str, np.ndarray] | None = None,
          hints: Mapping[str, TensorSpec] | None = None):
    """ONNX inference of the body ``sg`` alone, its formal inputs typed as ``typed`` (name ->
    spec; the others keep their declared types).  ``values``: values the frontend folded
    inside the body (pads an STFT computes from a shape, a Reshape target): given as
    initializers in place of the nodes that compute them, so the shapes that depend on them
    resolve where ONNX data propagation does not reach.  ``hints``: specs of tensors computed
    inside the body that ONNX inference cannot type (the outputs of a nested ``If`` whose
    condition folded), given as value_info.  Returns the inferred GraphProto, or
    None when inference fails (the caller keeps the specs it had)."""
    g = onnx.GraphProto()
    g.CopyFrom(sg)
    if values:
        keep = [n for n in g.node if not n.output or not all(o in values for o in n.output if o)]
        given = {o for n in g.node for o in n.output if o} - {o for n in keep for o in n.output}
        del g.node[:]
        g.node.extend(keep)
        for name in sorted(given):
            try:
                g.initializer.append(numpy_helper.from_array(np.asarray(values[name]), name=name))
            except Exception:
                return None
    for vi in g.input:
        s = typed.get(vi.name)
        if s is not None and s.dtype in _ONNX_TYPE:
            vi.type.CopyFrom(_type(s))
    # the body's outputs and intermediate types are inferred afresh (a declared type may be
    # the less resolved one, and a stale value_info would clash with the new input types)
    outs = [onnx.ValueInfoProto(name=vi.name) for vi in g.output]
    del g.output[:]
    g.output.extend(outs)
    del g.value_info[:]
    for name, s in (hints or {}).items():
        if s is not None and s.dtype in _ONNX_TYPE and not (values and name in values):
            g.value_info.append(helper.make_value_info(name, _type(s)))
    used: set[str] = set()
    defined: set[str] = set()
    _used(sg, used)
    _defined(sg, defined)
    for name in sorted(used - defined):
        v = outer.values.get(name)
        if v is not None and name in outer.constants:
            try:
                g.initializer.append(numpy_helper.from_array(np.asarray(v), name=name))
                continue
            except Exception:
                pass
        s = outer.tensors.get(name)
        if s is not None and s.dtype in _ONNX_TYPE:
            g.input.append(helper.make_value_info(name, _type(s)))
    opsets = [helper.make_opsetid(d, v) for d, v in outer.opsets.items() if v]
    m = helper.make_model(g, opset_imports=opsets or [helper.make_opsetid("", 17)])
    try:
        return onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False,
                                                 data_prop=True).graph
    except Exception:
        return None


def _insert(s: TensorSpec | None, axis: int, n) -> TensorSpec | None:
    if s is None or s.shape is None:
        return None
    r = len(s.shape)
    a = axis + r + 1 if axis < 0 else axis
    if not 0 <= a <= r:
        return None
    return TensorSpec(s.shape[:a] + (n,) + s.shape[a:], s.dtype)


def _either(a: TensorSpec | None, b: TensorSpec | None) -> TensorSpec | None:
    """The spec an If output has whichever branch runs: the dims both branches agree on, ``?``
    where they differ (as ONNX merges them); None when dtype or rank differ or one is unknown."""
    if a is None or b is None or a.shape is None or b.shape is None or a.dtype != b.dtype \
            or len(a.shape) != len(b.shape):
        return None
    return TensorSpec(tuple(x if x == y else "?" for x, y in zip(a.shape, b.shape)), a.dtype)


def implied_outputs(node: Node, graph: Graph) -> list[TensorSpec | None] | None:
    """The specs of a Loop's or Scan's outputs implied by its (typed) body: final states and
    carried values as the body hands them back, scan outputs stacked over the trip count
    (``?`` when the count is not known here); an If with a constant condition: its taken
    branch's outputs, else what both branches agree on.  None for other nodes."""
    if node.op == "If" and not node.domain:
        c = graph.values.get(node.inputs[0]) if node.inputs else None
        if c is not None and np.asarray(c).size == 1:  # a constant condition: the taken branch's
            br = node.subgraphs.get("then_branch" if bool(np.asarray(c).reshape(-1)[0]) else "else_branch")
            return None if br is None else [br.tensors.get(o) for o in br.outputs]
        then, other = node.subgraphs.get("then_branch"), node.subgraphs.get("else_branch")
        if then is None or other is None or len(then.outputs) != len(other.outputs):
            return None
        return [_either(then.tensors.get(a), other.tensors.get(b))
                for a, b in zip(then.outputs, other.outputs)]
    body = node.subgraphs.get("body")
    if body is None or node.domain or node.op not in ("Loop", "Scan"):
        return None
    bout = [body.tensors.get(o) for o in body.outputs]
    ins, a = node.inputs, node.attrs
    if node.op == "Loop":
        k = len(ins) - 2
        m = graph.values.get(ins[0]) if ins and ins[0] else None
        trips = int(np.asarray(m).reshape(-1)[0]) if m is not None and np.asarray(m).size == 1 else "?"
        return bout[1:1 + k] + [_insert(s, 0, trips) for s in bout[1 + k:]]
    m = int(a.get("num_scan_inputs", 0))
    n_state = len(ins) - m
    if "directions" in a or graph.opsets.get("", 0) == 8:  # opset 8: batched
        n_state -= 1
        first = graph.tensors.get(ins[-m]) if m else None
        if first is None or first.shape is None or len(first.shape) < 2:
            return None
        b, t = first.shape[0], first.shape[1]
        return ([_insert(s, 0, b) for s in bout[:n_state]]
                + [_insert(_insert(s, 0, t), 0, b) for s in bout[n_state:]])
    first = graph.tensors.get(ins[n_state]) if m else None
    axis = int((a.get("scan_input_axes") or [0])[0])
    trips = "?"
    if first is not None and first.shape is not None and -len(first.shape) <= axis < len(first.shape):
        trips = first.shape[axis]
    out_axes = list(a.get("scan_output_axes") or [0] * (len(bout) - n_state))
    return bout[:n_state] + [_insert(s, ax, trips) for s, ax in zip(bout[n_state:], out_axes)]
