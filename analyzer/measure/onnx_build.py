"""Building blocks of the synthetic ONNX models ``calibrate`` and the CPU probes time: graphs of
independent single-op nodes (``Builder``) whose outputs each feed a 1-element Slice sink
(``with_sinks``), so they stay internal tensors in onnxruntime's arena."""

from __future__ import annotations

import numpy as np

F32 = 1  # onnx.TensorProto.FLOAT


def build_model(nodes, inputs, outputs, inits=(), opset=17):
    from onnx import helper

    g = helper.make_graph(nodes, "calib", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m


def value_info(name, shape, elem=F32):
    from onnx import helper
    return helper.make_tensor_value_info(name, elem, list(shape))


def initializer(name, shape, rng, dtype=np.float32):
    from onnx import numpy_helper
    if np.issubdtype(dtype, np.integer):
        return numpy_helper.from_array(np.zeros(shape, dtype=dtype), name)
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.05).astype(dtype), name)


class Builder:
    """Collects independent single-op nodes into one model; node ``k<i>`` writes output ``k<i>``."""

    def __init__(self, seed=0):
        self.nodes, self.inputs, self.outputs, self.inits = [], [], [], []
        self.rng = np.random.default_rng(seed)
        self.i = 0

    def add(self, op, in_shapes, out_shape=None, weights=(), attrs=None, domain="",
            int_inputs=(), n_out=1):
        from onnx import helper
        k = f"k{self.i}"
        self.i += 1
        names = []
        for j, s in enumerate(in_shapes):
            nm = f"{k}_x{j}"
            elem = 7 if j in int_inputs else F32
            self.inputs.append(value_info(nm, s, elem))
            names.append(nm)
        for j, w in enumerate(weights):
            if w is None:
                names.append("")
                continue
            shape, dt = (w, np.float32) if not isinstance(w[0], type) else (w[1], w[0])
            nm = f"{k}_w{j}"
            self.inits.append(initializer(nm, shape, self.rng, dt))
            names.append(nm)
        outs = [k] + [f"{k}_o{j}" for j in range(1, n_out)]
        self.nodes.append(helper.make_node(op, names, outs, name=k, domain=domain, **(attrs or {})))
        self.outputs.append(helper.make_tensor_value_info(k, F32, None))
        for o in outs[1:]:
            self.outputs.append(helper.make_tensor_value_info(o, F32, None))
        return k

    def model(self, opset=17):
        return with_sinks(build_model(self.nodes, self.inputs, self.outputs, self.inits, opset))


# ops onnxruntime's transpose optimizer moves below a consumer Slice (see ``with_sinks``)
PUSHED_BELOW_SLICE = frozenset({"Transpose"})


def extra_nodes(row_model) -> int:
    """Nodes of a one-row model (``split_rows``) besides its node and its Slice sink: each costs
    one executor dispatch the row's wall-clock includes (``calibrate`` subtracts them)."""
    return sum(1 for n in row_model.graph.node if n.name.endswith("_flat"))


def with_sinks(m):
    """Make each calibration node's output an *internal* tensor read by a 1-element Slice (the
    graph output). Graph outputs are allocated afresh on every run (page faults: a 64 MB Add ran
    at a third of its in-graph bandwidth here); internal tensors live in onnxruntime's arena with
    planned buffers, as in a real network.

    A Transpose's output is first flattened (``<k>_flat``, a Reshape to 1-D: a view, no copy):
    onnxruntime's transpose optimizer pushes a Transpose *below* a Slice, so a Transpose read by
    the Slice alone ran on the one sliced element (every Transpose row measured 0.3 us from
    2 kB to 4 MB); it cannot push one through a Reshape. ``extra_nodes`` counts such nodes."""
    import onnx
    from onnx import helper, numpy_helper

    inferred = onnx.shape_inference.infer_shapes(m)
    producer = {o: n for n in m.graph.node for o in n.output}
    rank = {v.name: len(v.type.tensor_type.shape.dim) for v in inferred.graph.value_info}
    rank.update({v.name: len(v.type.tensor_type.shape.dim) for v in inferred.graph.output
                 if v.type.tensor_type.HasField("shape")})
    outs, sinks, inits = [], [], list(m.graph.initializer)
    for v in m.graph.output:
        r = rank.get(v.name, 0)
        if r == 0:
            outs.append(v)
            continue
        src = v.name
        if producer.get(v.name) is not None and producer[v.name].op_type in PUSHED_BELOW_SLICE:
            shp = numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{v.name}_shp")
            inits.append(shp)
            sinks.append(helper.make_node("Reshape", [v.name, shp.name], [f"{v.name}_flat"],
                                          name=f"{v.name}_flat"))
            src, r = f"{v.name}_flat", 1
        z = numpy_helper.from_array(np.zeros(r, dtype=np.int64), f"{v.name}_s0")
        o = numpy_helper.from_array(np.ones(r, dtype=np.int64), f"{v.name}_s1")
        inits += [z, o]
        sinks.append(helper.make_node("Slice", [src, z.name, o.name], [f"{v.name}_sink"],
                                      name=f"{v.name}_sink"))
        outs.append(helper.make_tensor_value_info(f"{v.name}_sink", v.type.tensor_type.elem_type or F32, None))
    g = helper.make_graph(list(m.graph.node) + sinks, m.graph.name, list(m.graph.input), outs, inits)
    out = helper.make_model(g, opset_imports=list(m.opset_import))
    out.ir_version = m.ir_version
    return out


def sizes(lo, hi, n):
    return sorted({int(round(x)) for x in np.geomspace(lo, hi, n)})
