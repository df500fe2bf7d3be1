"""The constants a static export baked its batch into, given the new batch.

A constant (computed from initializers and Constants only) that a batched tensor meets where
broadcasting cannot stand in for the batch (a Concat along another axis than 0) must be led
by the batch itself.  ``Batcher.give_batch`` follows such a constant back to what gave it the
export's batch and rewrites that: the shape of an ``Expand`` or ``ConstantOfShape``, the repeats
of a ``Tile``, the target of a ``Reshape`` (each a new initializer, so that a constant shared
with other nodes keeps its value for them), through elementwise ops, casts and transposes that
keep axis 0, an embedding ``Gather`` (axis 0) to its indices, an ``Expand`` of a constant led
by the old batch to a shape led by it; a constant that holds the old batch itself (batch 1) gets
an ``Expand`` inserted, as does the first row of a constant whose value is known and whose rows
at an old batch above 1 are all the same (a mask made from ones, folded by the exporter: an
initializer or Constant is read for it where the file holds it inline, up to 2^22 elements).
Values come from the frontend's folding (``fold.fold_graph``), shapes of the constants it
left without a value (weights the file does not hold) from their producers; weights are never
read.  ``analyzer.frontends.onnx.batch`` runs the passes over the batched nodes.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from analyzer.errors import InputSpecError
from analyzer.frontends.onnx import fold
from analyzer.frontends.onnx.read import read_initializers
from analyzer.ir.graph import Node

ELEMENTWISE = frozenset({
    "Identity", "Cast", "CastLike", "Neg", "Abs", "Add", "Sub", "Mul", "Div", "Pow", "Where",
    "Sqrt", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Max", "Min", "Equal", "Not",
    "And", "Or", "Xor", "Less", "LessOrEqual", "Greater", "GreaterOrEqual",
})


def fold_constants(g: onnx.GraphProto, batched: set[str]):
    """(values, specs, oversized) of the constant-only tensors: the frontend's folding over
    the nodes none of whose inputs is batched."""
    specs, values = read_initializers(g)
    consts = set(specs)
    nodes = []
    for i, n in enumerate(g.node):
        if n.op_type not in fold.FOLDABLE or n.domain not in ("", "ai.onnx"):
            continue
        if any(x in batched for x in n.input):
            continue
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute
                 if a.type not in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)}
        nodes.append(Node(n.name or f"{n.op_type}_{i}", n.op_type, "", tuple(n.input),
                          tuple(n.output), attrs))
    oversized: dict = {}
    _, values, _, _ = fold.fold_graph(nodes, specs, (consts, values), oversized=oversized)
    return values, specs, oversized


class Batcher:
    """A graph proto being given batch ``batch`` (``old``: the export's; ``batched``: the
    tensors computed from the graph inputs).  ``rewritten`` names the nodes changed (and the
    Expands inserted, which ``inserted`` holds with the index of the node they go before)."""

    def __init__(self, g: onnx.GraphProto, batch: int, old: int | None, batched: set[str]):
        self.g, self.batch, self.old, self.batched = g, batch, old, batched
        self.values, self.specs, self.oversized = fold_constants(g, batched)
        self.producer = {o: n for n in g.node for o in n.output if o}
        self.names: set[str] | None = None   # every name of the graph, once a new one is made
        self.made: dict[tuple, str] = {}
        self.rewritten: list[str] = []
        self.done: dict[str, str] = {}     # constant -> its batched name
        self.inserted: list[tuple[int, onnx.NodeProto]] = []   # (before node index, Expand)
        self._shapes: dict[str, tuple | None] = {}

    # -- what is known of a constant
    def shape(self, name: str) -> tuple | None:
        if name in self.values:
            return tuple(int(d) for d in self.values[name].shape)
        s = self.specs.get(name)
        if s is not None and s.shape is not None and s.is_static:
            return tuple(s.shape)
        if name in self.oversized:
            return tuple(self.oversized[name][0])
        if name not in self._shapes:
            self._shapes[name] = None   # a cycle in a broken graph ends here
            self._shapes[name] = self._computed(name)
        return self._shapes[name]

    def _computed(self, name: str) -> tuple | None:
        """The shape of a constant the folding left without a value (its data is a weight the
        file does not hold), from its producer's input shapes and shape values."""
        p = self.producer.get(name)
        if p is None or len(p.output) != 1:
            return None
        op, ins = p.op_type, list(p.input)
        try:
            if op == "ConstantOfShape":
                v = self.values.get(ins[0])
                return None if v is None else tuple(int(d) for d in v)
            src = self.shape(ins[0]) if ins and ins[0] else None
            if src is None:
                return None
            if op == "Expand":
                v = self.values.get(ins[1])
                return None if v is None else tuple(np.broadcast_shapes(src, tuple(int(d) for d in v)))
            if op == "Tile":
                v = self.values.get(ins[1])
                return None if v is None else tuple(a * int(b) for a, b in zip(src, v))
            if op == "Reshape":
                v = self.values.get(ins[1])
                if v is None:
                    return None
                out = [src[i] if int(d) == 0 else int(d) for i, d in enumerate(v)]
                if -1 in out:
                    known = int(np.prod([d for d in out if d != -1]))
                    out[out.index(-1)] = int(np.prod(src)) // known if known else 0
                return tuple(out)
            if op == "Transpose":
                perm = next((list(a.ints) for a in p.attribute if a.name == "perm"), None)
                perm = perm or list(range(len(src)))[::-1]
                return tuple(src[i] for i in perm)
            if op == "Gather" and next((a.i for a in p.attribute if a.name == "axis"), 0) == 0:
                idx = self.shape(ins[1]) if len(ins) > 1 else None
                return None if idx is None else tuple(idx) + tuple(src[1:])
            if op in ELEMENTWISE:
                shapes = [self.shape(x) for x in ins if x]
                if op == "CastLike":
                    shapes = shapes[:1]
                return None if None in shapes else tuple(np.broadcast_shapes(*shapes))
        except (ValueError, IndexError):
            return None
        return None

    def inline_value(self, name: str, kinds: str = "iu"):
        """The value of a constant (initializer or Constant node) the folding did not read
        (over its 4,096 elements), where the file holds it inline, up to 2^22 elements, of a
        numpy dtype kind in ``kinds`` (an index table, a mask); None otherwise."""
        v = self.values.get(name)
        if v is not None:
            return v if v.dtype.kind in kinds else None
        t = next((t for t in self.g.initializer if t.name == name), None)
        if t is None and (p := self.producer.get(name)) is not None and p.op_type == "Constant":
            t = next((a.t for a in p.attribute if a.name == "value"), None)
        if (t is None or t.data_location == onnx.TensorProto.EXTERNAL
                or int(np.prod(t.dims)) > 1 << 22
                or onnx.helper.tensor_dtype_to_np_dtype(t.data_type).kind not in kinds):
            return None
        return numpy_helper.to_array(t)

    def label(self, n: onnx.NodeProto) -> str:
        return n.name or f"{n.op_type}({n.output[0]})"

    def unique(self, base: str) -> str:
        """``base`` + ``__batch<B>``, made unique among the graph's names."""
        if self.names is None:
            self.names = {t.name for t in self.g.initializer} | {vi.name for vi in self.g.input}
            self.names |= {o for n in self.g.node for o in n.output}
        name, k = f"{base}__batch{self.batch}", 1
        while name in self.names:
            k += 1
            name = f"{base}__batch{self.batch}~{k}"
        self.names.add(name)
        return name

    def new_const(self, base: str, value: np.ndarray) -> str:
        """A new initializer holding ``value`` (one per distinct value of one ``base``)."""
        key = (base, str(value.dtype), value.tobytes())
        if key not in self.made:
            self.made[key] = name = self.unique(base)
            self.g.initializer.append(numpy_helper.from_array(value, name))
        return self.made[key]

    def lead(self, n: onnx.NodeProto, idx: int, value: np.ndarray, at: int) -> None:
        """Input ``idx`` of ``n`` becomes ``value`` with entry 0 set to ``at``."""
        new = np.array(value, dtype=value.dtype).reshape(-1)
        new[0] = at
        n.input[idx] = self.new_const(n.input[idx], new)
        if self.label(n) not in self.rewritten:
            self.rewritten.append(self.label(n))

    def unknown(self, name: str) -> str:
        p = self.producer.get(name)
        where = f" (it comes from {p.op_type} node '{self.label(p)}')" if p is not None else ""
        return f"its shape could not be worked out{where}"

    def cannot(self, via: onnx.NodeProto, name: str, why: str) -> InputSpecError:
        return InputSpecError(
            f"batch: cannot set the batch to {self.batch}: {via.op_type} node '{self.label(via)}' "
            f"joins the batch with the constant '{name}', which may hold the export's batch "
            f"({self.ref}): {why}")

    @property
    def ref(self) -> int:
        return 1 if self.old is None else self.old

    def give_batch(self, name: str, via: onnx.NodeProto, index: int) -> str:
        """The name of ``name`` led by the batch: its producer rewritten, or an inserted Expand."""
        if name in self.done:
            return self.done[name]
        shape = self.shape(name)
        if shape is None:
            raise self.cannot(via, name, self.unknown(name))
        if not shape:
            raise self.cannot(via, name, "is a scalar")
        if shape[0] == self.batch:
            return name
        if shape[0] != self.ref:
            raise InputSpecError(
                f"batch: cannot set the batch to {self.batch}: {via.op_type} node "
                f"'{self.label(via)}' joins the batch with the constant '{name}' of shape "
                f"{list(shape)}, whose leading {shape[0]} is not the export's batch ({self.ref})")
        p = self.producer.get(name)
        row = None
        if self.ref != 1:
            v = self.inline_value(name, "biuf")
            if v is not None and np.all((v == v[:1]) | (v != v)):
                # rows that are all the same (a mask made from ones at the export's batch,
                # folded by the exporter or by opcost) are one row, broadcast
                row = self.new_const(name, np.ascontiguousarray(v[:1]))
            elif p is None or p.op_type == "Constant":
                raise self.cannot(via, name, f"its data holds {self.ref} "
                                  f"{'rows' if v is None else 'different rows'}, which no "
                                  "Expand can make another number of")
        elif p is None or p.op_type == "Constant":   # the old batch 1 is in the constant itself
            row = name
        if row is not None:
            out = self.insert_expand(row, len(shape), index)
            self.done[name] = out
            return out
        self.follow(p, name, via)
        self.done[name] = name
        return name

    def follow(self, p: onnx.NodeProto, name: str, via: onnx.NodeProto) -> None:
        """Rewrite producer ``p`` of the constant ``name`` so that its output is led by B."""
        op, b = p.op_type, self.batch
        why = f"comes from {op} node '{self.label(p)}'"
        if op in ("Expand", "ConstantOfShape"):
            k = 1 if op == "Expand" else 0
            shape = self.values.get(p.input[k]) if len(p.input) > k else None
            if shape is None or shape.ndim != 1 or shape.size == 0:
                raise self.cannot(via, name, f"{why}, whose shape is not a known constant")
            if op == "Expand":
                src = self.shape(p.input[0])
                if src is None:
                    raise self.cannot(via, name, f"{why}, whose input's shape is unknown")
                # broadcast, ranks right-aligned: output dim 0 is the input's when the input
                # has more axes than the shape, else max(input's, shape[0]) where one is 1
                if len(src) > shape.size or (len(src) == shape.size and src[0] != 1):
                    led = len(src) == shape.size and int(shape[0]) != 1
                    if led and not int(shape[0]) == src[0] == self.ref:
                        raise self.cannot(via, name, f"{why}, which expands a tensor led by "
                                                     f"{src[0]} to {shape.tolist()}")
                    p.input[0] = self.give_batch(p.input[0], via, self.index_of(p))
                    if led:   # the shape repeats the export's batch of its input
                        self.lead(p, 1, shape, b)
                    return
            self.lead(p, k, shape, b)
            return
        if op == "Tile":
            reps = self.values.get(p.input[1]) if len(p.input) > 1 else None
            src = self.shape(p.input[0])
            if reps is None or src is None or not src:
                raise self.cannot(via, name, f"{why}, whose repeats or input shape are unknown")
            # output dim 0 = src[0] * reps[0]: the repeats carry the batch when they can
            if src[0] == 1 or (int(reps[0]) != 1 and b % src[0] == 0):
                self.lead(p, 1, reps, b // src[0])
                return
            if int(reps[0]) == 1:   # the input carries the old batch: follow it
                p.input[0] = self.give_batch(p.input[0], via, self.index_of(p))
                return
            raise self.cannot(via, name, f"{why}, which repeats a tensor led by {src[0]} "
                                         f"that {b} is not a multiple of")
        if op == "Reshape":
            target = self.values.get(p.input[1]) if len(p.input) > 1 else None
            src = self.shape(p.input[0])
            if target is None or src is None or not src or src[0] != self.ref:
                raise self.cannot(via, name, f"{why}, whose target or input is not led by the "
                                             "export's batch")
            p.input[0] = self.give_batch(p.input[0], via, self.index_of(p))
            if int(target[0]) not in (0, -1):
                self.lead(p, 1, target, b)
            return
        if op == "Transpose":
            perm = next((list(a.ints) for a in p.attribute if a.name == "perm"), None)
            if perm is not None and perm[0] == 0:
                p.input[0] = self.give_batch(p.input[0], via, self.index_of(p))
                return
            raise self.cannot(via, name, f"{why}, which moves axis 0")
        if op == "Gather" and next((a.i for a in p.attribute if a.name == "axis"), 0) == 0:
            # rows of a table at constant indices (an embedding): the indices carry the batch
            p.input[1] = self.give_batch(p.input[1], via, self.index_of(p))
            return
        if op in ELEMENTWISE:
            rank = len(self.shape(name) or ())
            led = [i for i, x in enumerate(p.input) if x and x not in self.batched
                   and (s := self.shape(x)) is not None and len(s) == rank and s[0] == self.ref]
            if not led:
                raise self.cannot(via, name, f"{why}, none of whose inputs is led by it")
            at = self.index_of(p)
            for i in led:
                p.input[i] = self.give_batch(p.input[i], via, at)
            return
        raise self.cannot(via, name, f"{why}, which opcost cannot give another batch")

    def index_of(self, n: onnx.NodeProto) -> int:
        for i, x in enumerate(self.g.node):
            if x is n or (x.output == n.output):
                return i
        return 0

    def insert_expand(self, name: str, rank: int, index: int) -> str:
        """An Expand of ``name`` (led by 1) to the batch, inserted before node ``index``."""
        out = self.unique(name)
        shape = self.new_const(f"{name}__shape", np.array([self.batch] + [1] * (rank - 1),
                                                            dtype=np.int64))
        node = onnx.helper.make_node("Expand", [name, shape], [out], name=f"{name}/batch_expand")
        self.inserted.append((index, node))
        self.rewritten.append(node.name)
        return out
