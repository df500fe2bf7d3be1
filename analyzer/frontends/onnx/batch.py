"""The global batch of an ONNX model: ``set_batch(model, B)`` -> the model as it runs at batch B.

Exporters trace at a fixed batch (the *old* batch, 1 almost always) and bake it into constants.
``set_batch`` makes a copy of the model and

1. sets dim 0 of every graph input that is not an initializer to B (the *batched* tensors are
   those inputs and everything computed from them, shape arithmetic included, except what a
   ``Gather`` picks along axis 0 with constant indices: fixed rows, no batch axis left);
2. rewrites the target of every Reshape of a batched tensor whose target is constant (an
   initializer, a Constant, or folded from constants only) and led by the old batch: its
   leading entry becomes B (model-zoo AlexNet's ``[1, 9216]``; BERT's and GPT-2's
   ``[1, 32, 2, 64]`` head splits).  A target led by 0 or -1 follows the batch by itself, as
   does one computed from a ``Shape`` of a batched tensor.  Any other constant leading entry
   cannot be told apart from a real size: an error naming the node;
3. gives the batch to the constants a Concat joins with batched tensors along another axis
   than 0 (a class token ``[1, 1, D]`` beside the patches ``[B, N, D]``: ViT, DeiT).  Such a
   constant is followed back to what gave it the old batch, through elementwise ops, casts and
   transposes that keep axis 0: an ``Expand`` or ``ConstantOfShape`` whose constant shape is
   led by the old batch (its leading entry becomes B), a ``Tile`` whose repeats make the old
   batch (``repeats[0] = B / dim 0 of its input``), a ``Reshape`` of such a constant led by the
   old batch; an initializer or Constant that holds the old batch itself gets an ``Expand`` to
   B inserted.  What cannot be followed is an error naming the node and why;
4. where the old batch is not 1, an ``Expand`` of a batched tensor to a constant shape led by
   the old batch (which broadcasting would reject at B) is led by B instead.

A rewritten shape is a new initializer ``<name>__batch<B>`` (a constant shared with nodes that
are not rewritten keeps its value for them).  Broadcasts need nothing: ``[1, S, D]`` position
embeddings added to ``[B, S, D]`` stay one copy.  Constant values come from the frontend's
folding of constant-only subgraphs (``fold.fold_graph``); weights are never read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from analyzer.errors import InputSpecError
from analyzer.frontends.onnx import fold
from analyzer.frontends.onnx.read import read_initializers
from analyzer.ir.graph import Node

# ops a constant passes through with its axis 0 kept (elementwise: dim 0 broadcasts)
_ELEMENTWISE = frozenset({
    "Identity", "Cast", "CastLike", "Neg", "Abs", "Add", "Sub", "Mul", "Div", "Pow", "Where",
    "Sqrt", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Max", "Min", "Equal", "Not",
})


@dataclass
class Rebatched:
    """``model``: the copy at the new batch; ``rewritten``: the names of the nodes whose shape
    constants were rewritten (and of inserted Expands); ``old``: the file's batch (dim 0 of the
    first input with a fixed one; None when every input's dim 0 is symbolic); ``symbols``: the
    symbolic dims that led an input (now fixed to the batch); ``path``: the file's path, if any."""

    model: onnx.ModelProto
    rewritten: list[str] = field(default_factory=list)
    old: int | None = None
    symbols: set[str] = field(default_factory=set)
    path: str | None = None


def _read(model: Any) -> tuple[onnx.ModelProto, str | None]:
    if isinstance(model, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model)
        return m, None
    if isinstance(model, (bytes, bytearray, memoryview)):
        return onnx.load_from_string(bytes(model)), None
    path = str(model)
    return onnx.load(path, load_external_data=False), path


def _fold(g: onnx.GraphProto, batched: set[str]):
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


class _Rewriter:
    def __init__(self, g: onnx.GraphProto, batch: int, old: int | None, batched: set[str]):
        self.g, self.batch, self.old, self.batched = g, batch, old, batched
        self.values, self.specs, self.oversized = _fold(g, batched)
        self.producer = {o: n for n in g.node for o in n.output if o}
        self.names: set[str] | None = None   # every name of the graph, once a new one is made
        self.made: dict[tuple, str] = {}
        self.rewritten: list[str] = []
        self.done: dict[str, str] = {}     # constant -> its batched name
        self.inserted: list[tuple[int, onnx.NodeProto]] = []   # (before node index, Expand)
        self._shapes: dict[str, tuple | None] = {}
        self._exported = None
        self.source = None

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
            if op in _ELEMENTWISE:
                shapes = [self.shape(x) for x in ins if x]
                if op == "CastLike":
                    shapes = shapes[:1]
                return None if None in shapes else tuple(np.broadcast_shapes(*shapes))
        except (ValueError, IndexError):
            return None
        return None

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

    # -- the passes
    def reshape(self, n: onnx.NodeProto) -> None:
        """Pass 2: a batched Reshape with a constant target led by the old batch."""
        if len(n.input) < 2 or n.input[1] in self.batched:
            return   # computed from a Shape of a batched tensor: follows the batch
        target = self.values.get(n.input[1])
        if target is None or target.ndim != 1 or target.size == 0 or target[0] in (0, -1):
            return
        if self.old is not None and int(target[0]) == self.old:
            self.lead(n, 1, target, self.batch)
            return
        merged = self.merged(n.input[0], int(target[0]))
        if merged is None:
            raise InputSpecError(
                f"batch: Reshape node '{self.label(n)}' has the constant target "
                f"{target.tolist()} whose leading entry is neither the model's batch "
                f"({self.old}) nor the batch merged with the next axes of its input; cannot set "
                f"the batch to {self.batch} (rewrite its target to start with -1 or 0)")
        self.lead(n, 1, target, merged)

    def merged(self, name: str, lead: int) -> int | None:
        """A target's leading entry that merges the batch with the next axes of the input
        (onnxruntime's optimizer flattens ``[1, 32, 128]`` to ``[32, 128]`` around a Gemm):
        ``lead`` = the product of the input's first k >= 2 dims at the export's batch, led by
        that batch; at B it is ``lead / old * B``.  None when it is not such a product."""
        if not self.old:
            return None
        if self._exported is None:   # the export's own shapes (the frontend's, at its batch)
            from analyzer.frontends.onnx.load import load

            try:
                graph, _ = load(self.source, counted=lambda domain, op: True)
                self._exported = graph.tensors
            except Exception:  # the file does not load at its own batch: nothing to compare
                self._exported = {}
        s = self._exported.get(name)
        src = s.shape if s is not None and s.is_static else None
        if not src or src[0] != self.old:
            return None
        size = src[0]
        for d in src[1:]:
            size *= d
            if size == lead:
                return lead // self.old * self.batch
        return None

    def expand(self, n: onnx.NodeProto) -> None:
        """Pass 4: a batched Expand to a constant shape led by an old batch other than 1."""
        if self.old in (None, 1) or len(n.input) < 2 or n.input[1] in self.batched:
            return
        shape = self.values.get(n.input[1])
        if shape is not None and shape.ndim == 1 and shape.size and int(shape[0]) == self.old:
            self.lead(n, 1, shape, self.batch)

    def concat(self, n: onnx.NodeProto, index: int) -> None:
        """Pass 3: a Concat of batched tensors and constants along an axis other than 0."""
        ins = [x for x in n.input if x]
        if not any(x in self.batched for x in ins):
            return
        consts = [x for x in ins if x not in self.batched]
        if not consts:
            return
        axis = next((a.i for a in n.attribute if a.name == "axis"), 0)
        rank = next((len(s) for s in map(self.shape, consts) if s is not None), None)
        if rank is None:
            raise self.cannot(n, consts[0], self.unknown(consts[0]))
        if axis % max(rank, 1) == 0:
            return   # joined along the batch axis: the constant rows are rows of their own
        for i, x in enumerate(n.input):
            if x and x not in self.batched:
                n.input[i] = self.give_batch(x, n, index)

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
        if p is None or p.op_type == "Constant":   # the old batch is in the constant itself
            if self.ref != 1:
                raise self.cannot(via, name, f"its data holds {self.ref} rows, which no "
                                             "Expand can make another number of")
            out = self.insert_expand(name, len(shape), index)
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
                    if len(src) == shape.size and int(shape[0]) != 1:
                        raise self.cannot(via, name, f"{why}, which expands a tensor led by "
                                                     f"{src[0]} to {shape.tolist()}")
                    p.input[0] = self.give_batch(p.input[0], via, self.index_of(p))
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
        if op in _ELEMENTWISE:
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


def set_batch(model: Any, batch: int) -> Rebatched:
    """``model`` (a path, bytes or ModelProto; never modified) at the global batch ``batch``."""
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        several = isinstance(batch, (list, tuple, range))
        raise InputSpecError(f"batch must be an integer >= 1, got {batch!r}"
                             + (" (analyzer.sweep takes several)" if several else ""))
    batch = int(batch)
    m, path = _read(model)
    g = m.graph
    inits = {t.name for t in g.initializer}
    data_inputs = [vi for vi in g.input if vi.name not in inits]
    if not data_inputs:
        raise InputSpecError("batch: the model has no graph input to set the batch of")
    old, symbols = None, set()
    batched: set[str] = set()
    for vi in data_inputs:
        dims = vi.type.tensor_type.shape.dim
        if not len(dims):
            continue
        d0 = dims[0]
        if d0.HasField("dim_value"):
            if old is None:
                old = d0.dim_value
        elif d0.dim_param:
            symbols.add(d0.dim_param)
        d0.Clear()
        d0.dim_value = batch
        batched.add(vi.name)
    if not batched:
        raise InputSpecError("batch: no graph input has a leading (batch) dimension")
    shape_math: set[str] = set()   # Shape outputs and what is computed from them
    for n in g.node:
        ins = [i for i in n.input if i in batched]
        if not ins:
            continue
        outs = [o for o in n.output if o]
        if n.op_type in ("Shape", "Size") or all(i in shape_math for i in ins):
            shape_math.update(outs)
        elif (n.op_type == "Gather" and n.input[0] in batched and len(n.input) > 1
              and n.input[1] not in batched
              and next((a.i for a in n.attribute if a.name == "axis"), 0) == 0):
            continue   # fixed rows picked along axis 0 (an optimizer's folded mask indices):
            # the batch axis is consumed, the output does not carry it
        batched.update(outs)
    r = _Rewriter(g, batch, old, batched)
    r.source = model
    for index, n in enumerate(list(g.node)):
        if not any(i in batched for i in n.input):
            continue
        if n.op_type == "Reshape" and n.input[0] in batched:
            r.reshape(n)
        elif n.op_type == "Expand" and n.input[0] in batched:
            r.expand(n)
        elif n.op_type == "Concat":
            r.concat(n, index)
    if r.inserted:   # keep the nodes in topological order: each Expand before its Concat
        nodes = list(g.node)
        for index, node in sorted(r.inserted, key=lambda t: -t[0]):
            nodes.insert(index, node)
        del g.node[:]
        g.node.extend(nodes)
    del g.value_info[:]
    for vi in g.output:
        dims = vi.type.tensor_type.shape.dim
        if len(dims) and vi.name in batched:
            dims[0].Clear()
            dims[0].dim_value = batch
    return Rebatched(m, r.rewritten, old, symbols, path)


def agree(r: Rebatched, batch: int, inputs, dims) -> dict | None:
    """``dims`` without the symbols the batch fixed; raises when ``inputs`` or ``dims`` give an
    input's dim 0 another value than ``batch`` (never one silently over the other)."""
    from analyzer.errors import Hint
    from analyzer.frontends.onnx.bind import parse_shape

    for name, shape in (inputs or {}).items():
        shape = parse_shape(shape, name) if isinstance(shape, str) else tuple(shape)
        if shape and isinstance(shape[0], (int, np.integer)) and int(shape[0]) != batch:
            raise InputSpecError(
                f"{{batch}} sets dim 0 of every graph input, but {{inputs}} gives input "
                f"'{name}' the leading dim {int(shape[0])}: give one of them, or the same batch",
                hints=(Hint("batch", batch), Hint("inputs")))
    if not dims:
        return dims
    for k, v in dims.items():
        if k in r.symbols and v != batch:
            raise InputSpecError(
                f"{{batch}} sets the inputs' leading dim '{k}', but {{dims}} binds it to {v}: "
                "give one of them, or the same value",
                hints=(Hint("batch", batch), Hint("dims")))
    left = {k: v for k, v in dims.items() if k not in r.symbols}
    return left or None


def static_change(model: Any, inputs) -> tuple[int, int] | None:
    """(the export's batch, the new one) when ``inputs`` gives a graph input whose dim 0 the
    file fixes another leading dim: the case where ``set_batch`` is what the caller wants."""
    from analyzer.frontends.onnx.bind import parse_shape

    if not inputs:
        return None
    try:
        m, _ = _read(model)
    except Exception:
        return None
    by_name = {vi.name: vi for vi in m.graph.input}
    for name, shape in inputs.items():
        vi = by_name.get(name)
        if vi is None:
            continue
        try:
            shape = parse_shape(shape, name) if isinstance(shape, str) else tuple(shape)
        except InputSpecError:
            continue
        dims = vi.type.tensor_type.shape.dim
        if (shape and len(dims) and dims[0].HasField("dim_value")
                and isinstance(shape[0], (int, np.integer)) and int(shape[0]) != dims[0].dim_value):
            return dims[0].dim_value, int(shape[0])
    return None
