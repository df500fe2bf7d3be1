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
   the old batch (which broadcasting would reject at B) is led by B instead;
5. where the old batch B0 is not 1, a constant index over the batch (shape ``[B0, 1, ..., 1]``
   holding ``0 .. B0-1``, transformers' causal/padding mask functions) that meets batched
   tensors holds ``0 .. B-1`` instead; a GatherND of a batched tensor at constant indices
   whose first coordinate is that batch index (the dynamo exporter's form of the same mask
   lookup) gets indices for B rows;
6. where the old batch is not 1, a constant that an elementwise op meets with a batched tensor
   of the same rank led by the old batch in the export (BERT's token type ids, a buffer the
   dynamo exporter expands to ``[B0, S]`` and embeds) is given the batch as in 3, following
   an embedding ``Gather`` (axis 0) to its indices; a constant whose B0 rows are all the same
   (a decoder's mask made from ones and folded by the exporter) is its first row expanded.

A rewritten shape is a new initializer ``<name>__batch<B>`` (a constant shared with nodes that
are not rewritten keeps its value for them); the constants' side (3) is
``batch_constants.Batcher``.  Broadcasts need nothing: ``[1, S, D]`` position
embeddings added to ``[B, S, D]`` stay one copy.  Constant values come from the frontend's
folding of constant-only subgraphs (``fold.fold_graph``); weights are never read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from analyzer.errors import AnalyzerError, InputSpecError
from analyzer.frontends.onnx.batch_constants import Batcher


# elementwise ops whose operands broadcast against each other (pass 7)
BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Where", "And", "Or", "Xor",
                          "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Max",
                          "Min"})


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
    """A private copy of ``model`` (the frontend's reading: a missing, odd or truncated file is a
    ``ModelLoadError``) and its path, if it is a file."""
    from analyzer.frontends.onnx.load import read_model

    m, shown, _ = read_model(model)
    return m, shown if isinstance(model, (str, os.PathLike)) else None


class _Rewriter(Batcher):
    """The passes over the batched nodes (the constants' side is ``Batcher``'s)."""

    def __init__(self, g: onnx.GraphProto, batch: int, old: int | None, batched: set[str],
                 source: Any):
        super().__init__(g, batch, old, batched)
        self.source = source       # the caller's model, read again for its own shapes
        self._exported = None

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
        s = self.exported().get(name)
        src = s.shape if s is not None and s.is_static else None
        if not src or src[0] != self.old:
            return None
        size = src[0]
        for d in src[1:]:
            size *= d
            if size == lead:
                return lead // self.old * self.batch
        return None

    def exported(self) -> dict:
        """The export's own tensor specs (the frontend's, at its batch; empty when the file
        does not load at its own batch: nothing to compare)."""
        if self._exported is None:
            from analyzer.frontends.onnx.load import load

            try:
                graph, _ = load(self.source, counted=lambda domain, op: True)
                self._exported = graph.tensors
            except AnalyzerError:
                self._exported = {}
        return self._exported

    def expand(self, n: onnx.NodeProto) -> None:
        """Pass 4: a batched Expand to a constant shape led by an old batch other than 1."""
        if self.old in (None, 1) or len(n.input) < 2 or n.input[1] in self.batched:
            return
        shape = self.values.get(n.input[1])
        if shape is not None and shape.ndim == 1 and shape.size and int(shape[0]) == self.old:
            self.lead(n, 1, shape, self.batch)

    def batch_index(self, n: onnx.NodeProto) -> None:
        """Pass 5: where the old batch B0 is not 1, a constant index over the batch that meets
        batched tensors: shape ``[B0, 1, ..., 1]`` holding ``0 .. B0-1`` (transformers' mask
        functions index the padding mask with ``arange(batch)[:, None, None, None]``) becomes
        ``0 .. B-1`` of shape ``[B, 1, ..., 1]``."""
        if self.old in (None, 1):
            return
        for i, x in enumerate(n.input):
            v = self.values.get(x) if x and x not in self.batched else None
            if (v is None or v.ndim < 2 or v.shape[0] != self.old or v.size != self.old
                    or v.dtype.kind not in "iu"
                    or not np.array_equal(v.reshape(-1), np.arange(self.old))):
                continue
            new = np.arange(self.batch, dtype=v.dtype).reshape((self.batch,) + v.shape[1:])
            n.input[i] = self.new_const(x, new)
            if self.label(n) not in self.rewritten:
                self.rewritten.append(self.label(n))

    def gather_nd(self, n: onnx.NodeProto) -> None:
        """Pass 6: where the old batch B0 is not 1, a GatherND (``batch_dims`` 0) of a batched
        tensor at constant indices ``[B0, ..., r]`` whose first coordinate is the row's batch
        index (``idx[b, ..., 0] = b``) and whose other coordinates are the same for every b
        (the dynamo exporter's form of the mask functions' padding-mask lookup): the indices
        become ``[B, ..., r]``, row b led by b."""
        if (self.old in (None, 1) or len(n.input) < 2 or n.input[0] not in self.batched
                or n.input[1] in self.batched
                or next((a.i for a in n.attribute if a.name == "batch_dims"), 0) != 0):
            return
        v = self.inline_value(n.input[1])
        if v is None or v.ndim < 2 or v.shape[0] != self.old or v.dtype.kind not in "iu":
            return
        lead = np.arange(self.old).reshape((self.old,) + (1,) * (v.ndim - 2))
        if not (np.all(v[..., 0] == lead) and np.all(v[..., 1:] == v[:1, ..., 1:])):
            return
        new = np.array(np.broadcast_to(v[:1], (self.batch,) + v.shape[1:]))
        new[..., 0] = np.arange(self.batch).reshape((self.batch,) + (1,) * (v.ndim - 2))
        n.input[1] = self.new_const(n.input[1], new)
        if self.label(n) not in self.rewritten:
            self.rewritten.append(self.label(n))

    def broadcast(self, n: onnx.NodeProto, index: int) -> None:
        """Pass 7: where the old batch B0 is not 1, a constant that an elementwise op meets
        with a batched tensor of its rank led by B0 in the export (a buffer's token type ids
        expanded to ``[B0, S]``, then embedded) is given the batch: broadcasting would reject
        B against B0."""
        if self.old in (None, 1):
            return
        exported = self.exported()
        ranks = {len(s.shape) for x in n.input if x in self.batched
                 and (s := exported.get(x)) is not None and s.shape
                 and s.shape[0] == self.old}
        for i, x in enumerate(n.input):
            if not x or x in self.batched:
                continue
            shape = self.shape(x)
            if shape and len(shape) in ranks and shape[0] == self.old:
                n.input[i] = self.give_batch(x, n, index)

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
    r = _Rewriter(g, batch, old, batched, model)
    for index, n in enumerate(list(g.node)):
        if not any(i in batched for i in n.input):
            continue
        if n.op_type == "Reshape" and n.input[0] in batched:
            r.reshape(n)
        elif n.op_type == "Expand" and n.input[0] in batched:
            r.expand(n)
        elif n.op_type == "Concat":
            r.concat(n, index)
        elif n.op_type == "GatherND":
            r.gather_nd(n)
        elif n.op_type in BROADCASTING:
            r.broadcast(n, index)
        if n.op_type != "Concat":
            r.batch_index(n)
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
    except AnalyzerError:
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
