"""Tiny ONNX model builders shared by the tests (``from onnx_builders import ...``).

``one_node("MatMul", (4, 5), W)`` builds a model with one node named ``"n"`` whose
inputs are, in order: a shape (a float32 graph input ``x0``, ``x1``...), a
``(shape, elem_type)`` pair (a graph input of that ONNX type), a numpy array (an
initializer ``w0``, ``w1``...), a ``str`` (an existing tensor name) or ``""`` (an
omitted optional input). Output shapes are left to ONNX shape inference.
``graph(...)`` builds a few-node model from ``helper.make_node`` nodes.
``assert_search_scores_equal_analyze(model, hw, runtime)`` checks the search's fast path
against ``analyze`` on one built model.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT
OPSET = 17


def _input_vi(name: str, spec: Any) -> onnx.ValueInfoProto:
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], int) \
            and isinstance(spec[0], (tuple, list)):
        shape, elem = spec
    else:
        shape, elem = spec, F32
    return helper.make_tensor_value_info(name, elem, list(shape))


def graph(nodes: Sequence[onnx.NodeProto], inputs: Mapping[str, Any], outputs: Sequence[str] | Mapping[str, Any],
          inits: Mapping[str, np.ndarray] | None = None, *, value_info: Sequence[onnx.ValueInfoProto] = (),
          opset: int = OPSET, domains: Mapping[str, int] | None = None) -> onnx.ModelProto:
    """A model from nodes; ``inputs``: name -> shape or (shape, elem_type); ``outputs``: names
    (type left to inference) or name -> (shape, elem_type); ``inits``: name -> array."""
    ins = [_input_vi(k, v) for k, v in inputs.items()]
    if isinstance(outputs, Mapping):
        outs = [_input_vi(k, v) for k, v in outputs.items()]
    else:
        outs = [onnx.ValueInfoProto(name=o) for o in outputs]
    g = helper.make_graph(list(nodes), "g", ins, outs,
                          initializer=[numpy_helper.from_array(np.asarray(v), k)
                                       for k, v in (inits or {}).items()],
                          value_info=list(value_info))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in (domains or {}).items()]
    return helper.make_model(g, opset_imports=ops, ir_version=8 if opset <= 17 else 10)


def one_node(op: str, *args: Any, n_out: int = 1, opset: int = OPSET, domain: str = "",
             **attrs: Any) -> onnx.ModelProto:
    """A one-node model; see the module docstring for ``args``; ``attrs`` are the node's attributes."""
    inputs: dict[str, Any] = {}
    inits: dict[str, np.ndarray] = {}
    names: list[str] = []
    for a in args:
        if isinstance(a, str):
            names.append(a)
        elif isinstance(a, np.ndarray):
            name = f"w{len(inits)}"
            inits[name] = a
            names.append(name)
        else:
            name = f"x{len(inputs)}"
            inputs[name] = a
            names.append(name)
    outs = ["y"] if n_out == 1 else [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, name="n", domain=domain or None, **attrs)
    return graph([node], inputs, outs, inits, opset=opset,
                 domains={domain: 1} if domain else None)


def weight(*shape: int, dtype=np.float32) -> np.ndarray:
    """A deterministic constant tensor (values do not matter to any count)."""
    return np.ones(shape, dtype=dtype)


def matmul_chain(layers: int = 4, batch: int = 64, width: int = 256) -> onnx.ModelProto:
    """``layers`` equal MatMuls x @ W_i (width x width), one tensor between them: each its own
    repeated block (the scaling tests' toy model)."""
    nodes, inits, x = [], {}, "x"
    for i in range(layers):
        inits[f"w{i}"] = weight(width, width)
        nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"y{i}"], name=f"mm{i}"))
        x = f"y{i}"
    return graph(nodes, {"x": (batch, width)}, [x], inits)


def ints(*values: int) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


def analyze(model: onnx.ModelProto, **kw):
    import analyzer

    return analyzer.analyze(model, **kw)


def cost_of(op: str, *args: Any, **kw):
    """The ``Cost`` of the single node of ``one_node(op, *args, **kw)``."""
    return node_of(op, *args, **kw).cost


def node_of(op: str, *args: Any, **kw):
    """The ``NodeCost`` of the single node of ``one_node(op, *args, **kw)``."""
    return analyze(one_node(op, *args, **kw)).node("n")


def named_inputs(ins) -> tuple[dict, dict, list[str]]:
    """(graph inputs, initializers, input names) for node inputs given as ``one_node`` takes
    them: a str (an existing name or "" for an omitted one), an array (an initializer
    ``w0``...) or a shape (a graph input ``x0``...)."""
    inputs, inits, names = {}, {}, []
    for a in ins:
        if isinstance(a, str):
            names.append(a)
        elif isinstance(a, np.ndarray):
            inits[f"w{len(inits)}"] = a
            names.append(f"w{len(inits) - 1}")
        else:
            inputs[f"x{len(inputs)}"] = a
            names.append(f"x{len(inputs) - 1}")
    return inputs, inits, names


def typed(op, ins, outs, *, domain="com.microsoft", opset=17, **attrs):
    """NodeCost of a one-node model "n" (inputs as onnx_builders.one_node takes them; ``outs``: the
    declared (shape, elem_type) of each output, a bare shape meaning float32, "" an omitted one)."""
    inputs, inits, names = named_inputs(ins)
    out_names = [f"y{i}" if o != "" else "" for i, o in enumerate(outs)]
    declared = {name: o if (len(o) == 2 and isinstance(o[0], tuple) and isinstance(o[1], int)) else (o, onnx.TensorProto.FLOAT)
                for name, o in zip(out_names, outs) if name}
    node = helper.make_node(op, names, out_names, name="n", domain=domain or None, **attrs)
    m = graph([node], inputs, declared, inits, opset=opset, domains={domain: 1} if domain else None)
    return analyze(m).node("n")


def bert_shaped(layers: int = 24, hidden: int = 64, seq: int = 32) -> onnx.ModelProto:
    """A BERT-shaped chain with a torch exporter's nested names
    (``/model/encoder/layer.{i}/attention/self/query/MatMul`` ...): per layer query, key and
    value MatMuls summed, the attention output dense, the intermediate dense and the output
    dense (each MatMul then Add), so that the heaviest rows differ only by their layer number
    and their sub-module.  Weights shared between layers (small in memory)."""
    w = {"W": weight(hidden, hidden), "B": weight(hidden)}
    nodes = []
    x = "x"
    for i in range(layers):
        p = f"/model/encoder/layer.{i}"

        def dense(src, where, tag, p=p):
            mm, out = f"{p}/{where}/MatMul", f"{p}/{where}/{tag}"
            nodes.append(helper.make_node("MatMul", [src, "W"], [mm + ":0"], name=mm))
            nodes.append(helper.make_node("Add", [mm + ":0", "B"], [out], name=f"{p}/{where}/Add"))
            return out

        q = dense(x, "attention/self/query", "q")
        k = dense(x, "attention/self/key", "k")
        v = dense(x, "attention/self/value", "v")
        nodes.append(helper.make_node("Add", [q, k], [f"{p}/qk"], name=f"{p}/attention/self/Add"))
        nodes.append(helper.make_node("Add", [f"{p}/qk", v], [f"{p}/qkv"],
                                      name=f"{p}/attention/self/Add_1"))
        a = dense(f"{p}/qkv", "attention/output/dense", "a")
        m = dense(a, "intermediate/dense", "m")
        x = dense(m, "output/dense", "o")
    return graph(nodes, {"x": (1, seq, hidden)}, [x], w)


def assert_search_scores_equal_analyze(model: onnx.ModelProto, hw: str, runtime: str) -> None:
    """``CostModel.score`` of ``model`` (three batches of two copies: learned, then its kernel
    rows rebuilt) equals ``analyze``'s latency to 1e-6, with the fast path's rows lowered and no
    mismatch against the full lowering."""
    import analyzer

    cm = analyzer.CostModel(hw, runtime=runtime)
    raw = model.SerializeToString()
    got = [cm.score([raw, raw]) for _ in range(3)]
    want = analyzer.analyze(model, hw=hw, runtime=runtime).predictions[0].latency_s
    np.testing.assert_allclose(np.asarray(got, np.float64).ravel(), want, rtol=1e-6)
    assert cm._rows.stats["lowered"] >= 1 and cm._rows.stats["mismatch"] == 0
