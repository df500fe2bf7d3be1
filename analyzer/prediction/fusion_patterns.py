"""The pattern fusion policies (``onnxruntime``, ``tflite``, ``coreml``; ``qnn`` starts from
them): the joins each makes, on a union of node groups (``fusion_legality.Joins``: a join that
would put a kernel on a cycle of the kernel graph is refused).  The policies themselves are
described in ``fusion``'s docstring.
"""

from __future__ import annotations

from analyzer.prediction.fusion_legality import Sets

_ACTIVATIONS = frozenset({"Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid",
                          "HardSwish", "Elu", "Selu", "Softplus"})
_MATRIX = frozenset({"Conv", "ConvTranspose", "MatMul", "Gemm", "FusedConv", "FusedMatMul"})
_NORM_PARTS = frozenset({"ReduceMean", "Sub", "Pow", "Add", "Sqrt", "Div", "Mul", "Reciprocal",
                         "Cast"})
_GELU_PARTS = frozenset({"Div", "Erf", "Add", "Mul", "Tanh", "Pow"})
_CHAIN = frozenset({"elementwise", "activation", "swish"})   # the coreml policy's elementwise chains
_NORM_OPS = frozenset({"LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization"})
_GELU_OPS = frozenset({"Gelu", "FastGelu"})


def _edges(nodes, producer):
    """(producer index, consumer index, input position) for every data edge between nodes."""
    for j, nd in enumerate(nodes):
        for pos, t in enumerate(nd.inputs):
            i = producer.get((nd.level, t)) if t else None
            if i is not None and i != j:
                yield i, j, pos


def _only_consumer(i: int, nodes, consumers) -> int | None:
    """The single consumer of node ``i``'s single used output, else None."""
    nd = nodes[i]
    users = [c for t in nd.outputs if t for c in consumers.get((nd.level, t), ())]
    return users[0] if len(set(users)) == 1 else None


def onnxruntime(nodes, sets, producer, consumers) -> None:
    # 1. matrix op <- BatchNormalization (folded) <- activation; MatMul <- Add(constant bias)
    for i, nd in enumerate(nodes):
        if nd.op not in _MATRIX or nd.domain not in ("", "ai.onnx", "com.microsoft"):
            continue
        cur = i
        nxt = _only_consumer(cur, nodes, consumers)
        if nxt is not None and nodes[nxt].op == "BatchNormalization" and nd.op.startswith("Conv"):
            sets.union(i, nxt)
            cur = nxt
            nxt = _only_consumer(cur, nodes, consumers)
        if (nxt is not None and nd.op == "MatMul" and nodes[nxt].op == "Add"
                and nodes[nxt].constant_inputs):
            sets.union(i, nxt)
            cur = nxt
            nxt = _only_consumer(cur, nodes, consumers)
        if nxt is not None and nodes[nxt].op in _ACTIVATIONS:
            sets.union(i, nxt)
    # 2. decomposed layer norms and GELUs: connected components of their part ops
    _components(nodes, sets, producer, _NORM_PARTS, need_any={"ReduceMean"},
                need_also={"Sqrt", "Reciprocal"})
    _components(nodes, sets, producer, _GELU_PARTS, need_any={"Erf", "Tanh"}, need_also=None)
    # 3. residual Add -> LayerNorm (SkipLayerNormalization); bias Add -> Gelu (BiasGelu)
    for i, j, _ in _edges(nodes, producer):
        a, b = nodes[i], nodes[j]
        if a.op == "Add" and a.launches and (b.op in _NORM_OPS or b.op in _GELU_OPS) \
                and _only_consumer(i, nodes, consumers) == j:
            sets.union(i, j)


def coreml(nodes, sets, producer, consumers) -> None:
    """Core ML's fusion (the ``coreml`` runtime, ``accelerators/coreml.py``): the onnxruntime
    patterns and connected chains of elementwise ops and activations (one ANE pass)."""
    onnxruntime(nodes, sets, producer, consumers)
    for i, j, _ in _edges(nodes, producer):
        a, b = nodes[i], nodes[j]
        if a.launches and b.launches and a.op_class in _CHAIN and b.op_class in _CHAIN:
            sets.union(i, j)


def _components(nodes, sets, producer, parts, need_any, need_also) -> None:
    """Join connected sets of ``parts`` ops that contain one of ``need_any`` (and, when given,
    one of ``need_also``): the decomposed form of a norm or an activation."""
    local = Sets(len(nodes))
    edges = [(i, j) for i, j, _ in _edges(nodes, producer)
             if nodes[i].op in parts and nodes[j].op in parts and nodes[i].launches and nodes[j].launches]
    for i, j in edges:
        local.union(i, j)
    groups: dict[int, list[int]] = {}
    for i, nd in enumerate(nodes):
        if nd.op in parts and nd.launches:
            groups.setdefault(local.find(i), []).append(i)
    chosen = set()
    for root, members in groups.items():
        ops = {nodes[m].op for m in members}
        if len(members) > 1 and ops & need_any and (need_also is None or ops & need_also):
            chosen.add(root)
    # joined along the component's edges in graph order (a join ``sets`` refuses leaves the
    # rest of the component connected to what it joined)
    for i, j in edges:
        if local.find(i) in chosen:
            sets.union(i, j)
