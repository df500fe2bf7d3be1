"""The ONNX checker's verdict on a model, at the cost of its distinct nodes.

``onnx.checker.check_model`` takes about 2 us a node (0.1 s on a 50,000-node graph, a tenth of
an analysis) and stops at an untyped graph output, which exporters leave where inference
types it.  But what it checks of a node (the op exists in the model's opset, attributes have
the schema's types, input and output counts) depends only on the node's op, domain,
attributes and which inputs are given: nodes equal in those (a transformer repeats a few
dozen kinds) have the same verdict.  So one node of each kind goes into a small model with
placeholder-typed inputs and outputs, which the checker sees (a kind: the op, the attributes'
names and types, the input specs); control-flow nodes go in as
they are, their bodies' outer-scope reads declared as inputs.  A second small model, of the
kinds whose input dtypes inference found, is type-checked (``check_type``): an int64 weight
of a Conv.  The file-level checks (IR version, opset versions) are direct.  Each finding is
one ``GraphError`` (``ModelLoadError`` for the file) naming the node.
"""

from __future__ import annotations

import onnx

from analyzer.errors import GraphError, ModelLoadError
from analyzer.frontends.onnx.surrogates.emit import ORT_DEFAULT_DOMAIN
from analyzer.frontends.onnx.types import DTYPES

_PLACEHOLDER = onnx.TensorProto.FLOAT
_ELEM = {v: k for k, v in DTYPES.items()}
_KNOWN_DOMAINS = {"": "ai.onnx", "ai.onnx": "ai.onnx", "ai.onnx.ml": "ai.onnx.ml",
                  "ai.onnx.preview.training": "ai.onnx.preview.training"}


def check_versions(m: onnx.ModelProto, where: str) -> None:
    """The model's IR version and the opsets of the standard domains are ones the installed
    onnx knows (its shape inference and schemas would silently fall back otherwise)."""
    if m.ir_version > onnx.IR_VERSION:
        raise ModelLoadError(f"{where}: IR version {m.ir_version} is newer than the installed onnx "
                             f"{onnx.__version__} supports (up to {onnx.IR_VERSION}); upgrade onnx")
    known = onnx.defs.C.schema_version_map()
    for d in m.opset_import:
        dom = _KNOWN_DOMAINS.get(d.domain)
        if dom is None:
            continue
        top = known.get("" if dom == "ai.onnx" else dom, (0, 0))[1]
        if d.version > top:
            raise ModelLoadError(
                f"{where}: opset {d.version} of domain '{dom}' is newer than the installed onnx "
                f"{onnx.__version__} knows (up to {top}); upgrade onnx")


def check_kernels(nodes, specs) -> None:
    """A Conv's ``kernel_shape`` agrees with its weight's spatial dims (the ONNX checker and
    inference let a disagreement through; the counts would follow one or the other)."""
    for n in nodes:
        if n.op not in ("Conv", "ConvTranspose") or n.domain or "kernel_shape" not in n.attrs:
            continue
        w = specs.get(n.inputs[1]) if len(n.inputs) > 1 else None
        if w is None or w.shape is None or not w.is_static:
            continue
        ks = list(n.attrs["kernel_shape"])
        if ks != list(w.shape[2:]):
            raise GraphError(f"node '{n.name}' ({n.op}) is invalid: kernel_shape {ks} disagrees "
                             f"with its weight '{n.inputs[1]}' of shape {list(w.shape)} "
                             f"(kernel {list(w.shape[2:])})")


def _outer_reads(g: onnx.GraphProto) -> set[str]:
    own = {vi.name for vi in g.input} | {t.name for t in g.initializer} | {
        o for p in g.node for o in p.output}
    reads = set()
    for p in g.node:
        reads.update(x for x in p.input if x)
        for a in p.attribute:
            for sg in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                       a.graphs if a.type == onnx.AttributeProto.GRAPHS else ()):
                reads |= _outer_reads(sg)
    return reads - own


def check_nodes(m: onnx.ModelProto, protos, nodes, specs) -> None:
    """Check one node of each kind of ``nodes`` (``protos``: their NodeProtos, in the same
    order) with the ONNX checker, and those whose input dtypes ``specs`` knows for types.
    Raises ``GraphError`` naming the first node the checker rejects."""
    seen: set[tuple] = set()   # (op, domain, attr_key, input spec ids): the common fast test
    kinds: set[tuple] = set()  # the same with the attributes' names and types for attr_key
    signatures: dict = {}      # attr_key -> the attributes' names and types (what the checker sees)
    picked = []
    get = specs.get
    for i, n in enumerate(nodes):  # (a protobuf node is read only when picked: that is slow)
        if n.attr_key is not None:
            # input specs are shared objects per distinct type: their ids stand for the dtypes
            key = (n.op, n.domain, n.attr_key, len(n.outputs), *map(id, map(get, n.inputs)))
            if key in seen:
                continue
            seen.add(key)
            if n.op in ORT_DEFAULT_DOMAIN and n.domain == "":
                continue  # onnxruntime registers these in the default domain (contrib surrogates)
            sig = signatures.get(n.attr_key)
            if sig is None:
                sig = signatures[n.attr_key] = _signature(n.attrs)
            kind = (key[0], key[1], sig, n.inputs.count(""), *key[3:])
            if kind in kinds:
                continue
            kinds.add(kind)
        picked.append((protos[i], n))
    if not picked:
        return
    structure, typed = _mini(m, picked, specs, False), _mini(m, picked, specs, True)
    try:
        onnx.checker.check_model(structure, full_check=False)
    except onnx.checker.ValidationError as e:
        raise GraphError(_finding(e, picked)) from None
    if typed is None:
        return
    try:
        onnx.shape_inference.infer_shapes(typed, check_type=True, strict_mode=False)
    except onnx.shape_inference.InferenceError as e:
        raise GraphError(_finding(e, picked)) from None


def _signature(attrs) -> tuple:
    """Attribute names and value types (of the first element, for a list): the checker
    verifies those, not the values (a tensor value's own consistency aside)."""
    return tuple((k, type(v).__name__, type(v[0]).__name__ if isinstance(v, list) and v else "")
                 for k, v in attrs.items())


def _empty(t: onnx.TensorProto) -> None:
    if t.data_location == onnx.TensorProto.EXTERNAL:
        del t.external_data[:]
        del t.dims[:]
        t.dims.append(0)
        t.data_location = onnx.TensorProto.DEFAULT
        t.raw_data = b""


def _no_location(q: onnx.NodeProto) -> None:
    """Stripped values (``read.strip_constant``, ``read.strip_bodies``) in ``q`` and its
    bodies as empty tensors: the checker would look for their (made-up) file."""
    for a in q.attribute:
        if a.type == onnx.AttributeProto.TENSOR:
            _empty(a.t)
        for sg in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                   a.graphs if a.type == onnx.AttributeProto.GRAPHS else ()):
            for t in sg.initializer:
                _empty(t)
            for n in sg.node:
                _no_location(n)


def _mini(m: onnx.ModelProto, picked, specs, typed: bool) -> onnx.ModelProto | None:
    g = onnx.GraphProto(name="check")
    declared: set[str] = set()
    for k, (p, n) in enumerate(picked):
        bodies = [a for a in p.attribute if a.type in (onnx.AttributeProto.GRAPH,
                                                       onnx.AttributeProto.GRAPHS)]
        elems = [_ELEM.get(getattr(specs.get(x), "dtype", None)) if x else 0 for x in n.inputs]
        if typed and (bodies or None in elems):
            continue  # type-checked only where every input dtype is known
        q = g.node.add()
        q.op_type, q.domain, q.name = p.op_type, p.domain, n.name
        q.attribute.extend(p.attribute)
        _no_location(q)
        for i, x in enumerate(p.input):
            name = f"__check_{k}_i{i}" if x else ""
            q.input.append(name)
            if name:
                g.input.append(_vi(name, elems[i] if typed else None))
        for j, o in enumerate(p.output):
            name = f"__check_{k}_o{j}" if o else ""
            q.output.append(name)
            if name:
                g.output.append(_vi(name, None))
        for a in bodies:
            for sg in ([a.g] if a.type == onnx.AttributeProto.GRAPH else a.graphs):
                for x in sorted(_outer_reads(sg) - declared):
                    declared.add(x)
                    g.input.append(_vi(x, None))
    if not g.node:
        return None
    mini = onnx.helper.make_model(g, opset_imports=list(m.opset_import))
    mini.ir_version = m.ir_version
    mini.functions.extend(m.functions)
    return mini


def _vi(name: str, elem: int | None) -> onnx.ValueInfoProto:
    """A graph input or output of the small models: its real dtype without a shape (for the
    type check), or a placeholder scalar (for the checker, which wants a type and a shape)."""
    if elem is None:
        return onnx.helper.make_tensor_value_info(name, _PLACEHOLDER, [])
    return onnx.helper.make_tensor_value_info(name, elem, None)


def _finding(e: Exception, picked) -> str:
    lines = [x.strip() for x in str(e).strip().splitlines() if x.strip()]
    text = lines[0] if lines else type(e).__name__
    text = text.replace("[ShapeInferenceError] ", "").replace("[TypeInferenceError] ", "")
    name = next((n.name for _, n in picked if f"Name: {n.name} " in str(e) or
                 f"node name: {n.name})" in str(e)), None)
    op = next((n.op for _, n in picked if n.name == name), None)
    for k in range(len(picked)):  # the mini model's tensor names mean nothing to the user
        text = text.replace(f"__check_{k}_", "")
    where = f"node '{name}' ({op})" if name else "the model"
    if text.startswith("No Op registered for ") and op is not None:
        domain = next(n.domain for _, n in picked if n.name == name)
        v = text.rsplit(" ", 1)[-1]
        first = [x.since_version for x in onnx.defs.get_all_schemas_with_history()
                 if x.name == op and x.domain == domain]
        text = (f"{op} is not defined in opset {v} (it exists from opset {min(first)})" if first
                else f"'{op}' is not an operator of domain '{domain or 'ai.onnx'}' (opset {v})")
    return f"{where} is invalid (ONNX checker): {text}"
