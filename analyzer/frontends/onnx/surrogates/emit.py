"""The builder of contrib-op shape surrogates (see ``contrib_shapes``): what a surrogate may
ask about the model (ranks, shapes, dtypes, small constants) and the standard nodes it emits."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64
BIG = (1 << 62)

# onnxruntime ops registered in the default domain that ONNX itself does not define
ORT_DEFAULT_DOMAIN = frozenset({"SimplifiedLayerNormalization"})


# standard ONNX ops whose schemas have no shape inference function (context-dependent functions,
# which ONNX inference does not expand): their outputs take a surrogate as the contrib ops' do
UNINFERRED = frozenset({"GroupNormalization"})


def is_ort_op(domain: str, op: str) -> bool:
    return domain == MS or (domain in ("", "ai.onnx") and op in ORT_DEFAULT_DOMAIN)


def needs_surrogate(domain: str, op: str) -> bool:
    """An onnxruntime op (``is_ort_op``) or a standard op ONNX inference cannot type (``UNINFERRED``)."""
    return is_ort_op(domain, op) or (domain in ("", "ai.onnx") and op in UNINFERRED)


class SurrogateModel:
    """What surrogates may ask about the (inferred) model: ranks, shapes, dtypes, constants."""

    def __init__(self, m: onnx.ModelProto):
        g = m.graph
        self.opset = next((d.version for d in m.opset_import if d.domain in ("", "ai.onnx")), 17)
        self.types: dict[str, int] = {}
        self.shapes: dict[str, tuple] = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            t = vi.type.tensor_type
            if t.elem_type:
                self.types[vi.name] = t.elem_type
            if t.HasField("shape"):
                self.shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim)
        self.values: dict[str, np.ndarray] = {}
        for t in g.initializer:
            self.types[t.name] = t.data_type
            self.shapes[t.name] = tuple(t.dims)
            if t.data_location != TensorProto.EXTERNAL and int(np.prod(t.dims)) <= 64:
                try:
                    self.values[t.name] = numpy_helper.to_array(t)
                except Exception:  # an unreadable constant is just not known
                    pass
        for n in g.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output:
                a = next((a for a in n.attribute if a.name == "value"), None)
                if a is not None and a.t.data_location != TensorProto.EXTERNAL:
                    self.values[n.output[0]] = numpy_helper.to_array(a.t)

    def rank(self, x: str) -> int | None:
        s = self.shapes.get(x)
        return None if s is None else len(s)

    def dim(self, x: str, i: int) -> int | None:
        s = self.shapes.get(x)
        return None if s is None or not -len(s) <= i < len(s) else s[i]

    def dtype(self, x: str) -> int | None:
        return self.types.get(x) or None

    def scalar(self, x: str) -> int | None:
        v = self.values.get(x)
        return None if v is None or v.size != 1 else int(v.reshape(-1)[0])


class Emit:
    """Builds the surrogate nodes of one contrib node ``n``."""

    def __init__(self, n: onnx.NodeProto, info: SurrogateModel):
        self.n, self.info, self.opset = n, info, info.opset
        self.nodes: list[onnx.NodeProto] = []
        # output -> static shape, declared to inference as value_info (old opsets cannot
        # propagate the values a ConstantOfShape surrogate's shape is built from)
        self.declared: dict[str, tuple[int, ...]] = {}
        self.attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        self._k = 0
        self._tag = next((o for o in n.output if o), n.name or n.op_type)

    # inputs / outputs
    def inp(self, i: int) -> str | None:
        return self.n.input[i] if len(self.n.input) > i and self.n.input[i] else None

    def out(self, i: int) -> str | None:
        return self.n.output[i] if len(self.n.output) > i and self.n.output[i] else None

    def attr(self, name, default=None):
        v = self.attrs.get(name, default)
        return v.decode() if isinstance(v, bytes) else v

    # node emission
    def tmp(self) -> str:
        self._k += 1
        return f"{self._tag}__sg{self._k}"

    def op(self, op: str, ins: list[str], out: str | None = None, **attrs) -> str:
        out = out or self.tmp()
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def const(self, vals, dtype=I64) -> str:
        name = self.tmp()
        arr = np.asarray(vals, dtype=helper.tensor_dtype_to_np_dtype(dtype)).reshape(-1)
        self.nodes.append(helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
        return name

    # shape arithmetic on 1-D int64 tensors (ONNX data propagation evaluates these)
    def dims(self, x: str, start: int = 0, end: int | None = None) -> str:
        shape = self.op("Shape", [x])
        if start == 0 and end is None:
            return shape
        if self.opset < 10:  # Slice-1: starts/ends are attributes (old ai.onnx.ml converters)
            return self.op("Slice", [shape], starts=[start], ends=[BIG if end is None else end], axes=[0])
        return self.op("Slice", [shape, self.const([start]), self.const([BIG if end is None else end])])

    def dim(self, x: str, i: int) -> str:
        return self.dims(x, i, i + 1 if i != -1 else None)

    def _part(self, p) -> str:
        return self.const([p]) if isinstance(p, (int, np.integer)) else p

    def cat(self, *parts) -> str:
        return self.op("Concat", [self._part(p) for p in parts], axis=0)

    def add(self, a, b) -> str:
        return self.op("Add", [self._part(a), self._part(b)])

    def mul(self, a, b) -> str:
        return self.op("Mul", [self._part(a), self._part(b)])

    def div(self, d, k: int) -> str:
        """``d // k`` for a one-element dim tensor: a [d] tensor reshaped to [k, -1]."""
        if k == 1:
            return self._part(d)
        flat = self.op("ConstantOfShape", [self._part(d)])
        return self.dim(self.op("Reshape", [flat, self.const([k, -1])]), 1)

    def fill(self, out: str | None, *parts, dtype: int | None = None) -> None:
        """``out`` := a tensor whose shape is the concatenation of ``parts`` (of ``dtype``:
        float unless given; a string tensor is a Cast of it)."""
        if not out:
            return
        shape = self.cat(*parts) if len(parts) > 1 else self._part(parts[0])
        if dtype is None or dtype == F32:
            self.op("ConstantOfShape", [shape], out)
        elif dtype == TensorProto.STRING:
            self.op("Cast", [self.op("ConstantOfShape", [shape])], out, to=dtype)
        else:
            value = helper.make_tensor("v", dtype, [1], [0])
            self.op("ConstantOfShape", [shape], out, value=value)

    def like(self, out: str | None, x: str) -> None:
        if out:
            self.op("Identity", [x], out)

    def reduce_keep(self, x: str, y: str | None, axes: list[int]) -> None:
        if not y:
            return
        if self.opset >= 18:
            self.op("ReduceMean", [x, self.const(axes)], y, keepdims=1)
        else:
            self.op("ReduceMean", [x], y, axes=axes, keepdims=1)

    def transpose(self, x: str, perm: list[int], out: str | None = None) -> str:
        return self.op("Transpose", [x], out, perm=perm)


def input_dtype(e: Emit, i: int) -> int | None:
    x = e.inp(i)
    return e.info.dtype(x) if x else None


def outs_like(e: Emit, dtype) -> list:
    return [dtype] * len(e.n.output)
