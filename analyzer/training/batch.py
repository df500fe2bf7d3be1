"""The global batch of an ONNX model: ``set_batch(model, B)``.

Sets dim 0 of every graph input that is not an initializer to ``B``, and rewrites the constant
target of every Reshape whose data depends on those inputs when its leading entry is the old
batch (model-zoo files hard-code it: AlexNet's ``[1, 9216]`` before fc6).  A target led by 0 or
-1 already follows the batch.  Any other constant leading entry cannot be told apart from a real
size: that is an error naming the node.  Flatten keeps the leading axes (its ``axis``), so it
follows the batch by itself.  Returns the new model and the names of the rewritten nodes.
"""

from __future__ import annotations

from typing import Any

from analyzer.errors import InputSpecError


def _read(model: Any):
    import onnx

    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return m, None
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model)), None
    path = str(model)
    return onnx.load(path, load_external_data=False), path


def set_batch(model: Any, batch: int):
    """(ModelProto with batch ``batch``, [rewritten node names], old batch, path or None)."""
    import numpy as np
    from onnx import numpy_helper

    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputSpecError(f"batch must be an integer >= 1, got {batch!r}")
    m, path = _read(model)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    data_inputs = [vi for vi in g.input if vi.name not in inits]
    if not data_inputs:
        raise InputSpecError("batch: the model has no graph input to set the batch of")
    old = None
    batched: set[str] = set()
    for vi in data_inputs:
        dims = vi.type.tensor_type.shape.dim
        if not len(dims):
            continue
        d0 = dims[0]
        if d0.HasField("dim_value"):
            if old is None:
                old = d0.dim_value
        d0.Clear()
        d0.dim_value = batch
        batched.add(vi.name)
    if not batched:
        raise InputSpecError("batch: no graph input has a leading (batch) dimension")
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant" and n.output}
    rewritten: list[str] = []
    used = {}
    for n in g.node:
        if not any(i in batched for i in n.input):
            continue
        batched.update(o for o in n.output if o)
        if n.op_type != "Reshape" or len(n.input) < 2:
            continue
        name = n.input[1]
        if name in inits:
            target = numpy_helper.to_array(inits[name])
        elif name in consts:
            attr = next((a for a in consts[name].attribute if a.name == "value"), None)
            if attr is None:
                continue
            target = numpy_helper.to_array(attr.t)
        else:
            continue   # computed at run time (Shape -> ... -> Concat): follows the batch
        if target.ndim != 1 or target.size == 0 or target[0] in (0, -1):
            continue
        label = n.name or f"Reshape({n.output[0]})"
        if old is None or int(target[0]) != old:
            raise InputSpecError(
                f"batch: Reshape node '{label}' has the constant target {target.tolist()} whose "
                f"leading entry is not the model's batch ({old}); cannot set the batch to {batch} "
                "(rewrite its target to start with -1 or 0)")
        new = np.array(target, dtype=target.dtype)
        new[0] = batch
        new_name = f"{name}__batch{batch}"
        if new_name not in used:
            t = numpy_helper.from_array(new, new_name)
            g.initializer.append(t)
            used[new_name] = True
        n.input[1] = new_name
        rewritten.append(label)
    del g.value_info[:]
    for vi in g.output:
        dims = vi.type.tensor_type.shape.dim
        if len(dims) and vi.name in batched:
            dims[0].Clear()
            dims[0].dim_value = batch
    return m, rewritten, old, path
