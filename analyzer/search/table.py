"""Latency tables of choice-based search spaces: score candidates by gather + sum.

A space is a list of stages; each stage a list of candidate blocks: builders
``(input_shape) -> ModelProto`` or fixed ONNX models (one data input, one output).  Each block is
costed in its context: the input shape the previous stage's chosen block produces (``build``
walks every reachable context, stage by stage, and scores every (context, block) model in one
batched ``CostModel.score`` call per stage).  ``LatencyTable.score(choices)`` for an int array
``[n, n_stages]`` is then a numpy gather and sum per stage.

Exactness: the table's latency equals ``analyze(compose(space, choice, input_shape))`` where no
kernel fuses across a stage boundary.  Runtimes ``kernel`` and ``eager`` never fuse, so the
table is exact for them.  ``xla`` and ``onnxruntime`` may fuse the last node of one block with
the first of the next (an elementwise tail into the next block's elementwise head under xla; a
Conv/MatMul at the end of a block with an activation or bias Add at the start of the next under
onnxruntime): the composed model then launches fewer kernels and moves fewer bytes, and the
table overstates its latency by that kernel's fixed cost plus the boundary tensor's round trip
(write + read).  Blocks that end in a matrix op or an activation and start with a matrix op or
a norm (the usual case) do not fuse across the boundary under either runtime.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np


@dataclass(kw_only=True)
class LatencyTable:
    """``latency[s]``: ``[n_contexts_s, n_blocks_s, P]`` seconds of block b of stage s in context
    c; ``next_context[s]``: ``[n_contexts_s, n_blocks_s]`` the context it leaves to stage s+1;
    ``contexts[s]``: the input shapes (context c of stage s); ``flops`` / ``params``:
    ``[n_contexts_s, n_blocks_s]`` exact counts (accuracy proxies); ``hw``: profile ids."""

    hw: tuple[str, ...]
    latency: list[np.ndarray]
    next_context: list[np.ndarray]
    contexts: list[list[tuple[int, ...]]]
    flops: list[np.ndarray] = field(default_factory=list)
    params: list[np.ndarray] = field(default_factory=list)
    blocks: list[list[str]] = field(default_factory=list)

    @property
    def stages(self) -> int:
        return len(self.latency)

    def _walk(self, choices, arrays) -> np.ndarray:
        choices = np.asarray(choices)
        if choices.ndim == 1:
            choices = choices[None]
        ctx = np.zeros(len(choices), np.int64)
        total = None
        for s in range(self.stages):
            ch = choices[:, s]
            v = arrays[s][ctx, ch]
            total = v if total is None else total + v
            ctx = self.next_context[s][ctx, ch]
        return total

    def score(self, choices) -> np.ndarray:
        """Latency ``[n, P]`` of candidates ``choices`` (int ``[n, n_stages]``)."""
        return self._walk(choices, self.latency)

    def count(self, choices, what: str = "flops") -> np.ndarray:
        """Exact ``flops`` or ``params`` ``[n]`` of candidates (from the same tables)."""
        return self._walk(choices, self.flops if what == "flops" else self.params)

    def save(self, path: str) -> None:
        """``.npz`` (arrays; contexts and names as JSON inside) or ``.json``."""
        meta = {"hw": list(self.hw), "contexts": [[list(c) for c in cs] for cs in self.contexts],
                "blocks": self.blocks}
        if str(path).endswith(".json"):
            doc = {**meta, "latency": [a.tolist() for a in self.latency],
                   "next_context": [a.tolist() for a in self.next_context],
                   "flops": [a.tolist() for a in self.flops],
                   "params": [a.tolist() for a in self.params]}
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            return
        arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
        for s in range(self.stages):
            arrays[f"latency_{s}"] = self.latency[s]
            arrays[f"next_{s}"] = self.next_context[s]
            arrays[f"flops_{s}"] = self.flops[s]
            arrays[f"params_{s}"] = self.params[s]
        np.savez(path, **arrays)

    @classmethod
    def load(cls, path: str) -> "LatencyTable":
        if str(path).endswith(".json"):
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
            return cls(hw=tuple(d["hw"]), latency=[np.asarray(a, np.float64) for a in d["latency"]],
                       next_context=[np.asarray(a, np.int64) for a in d["next_context"]],
                       contexts=[[tuple(c) for c in cs] for cs in d["contexts"]],
                       flops=[np.asarray(a, np.float64) for a in d["flops"]],
                       params=[np.asarray(a, np.float64) for a in d["params"]], blocks=d["blocks"])
        z = np.load(path)
        meta = json.loads(bytes(z["meta"]).decode())
        n = len(meta["contexts"])
        return cls(hw=tuple(meta["hw"]), latency=[z[f"latency_{s}"] for s in range(n)],
                   next_context=[z[f"next_{s}"] for s in range(n)],
                   contexts=[[tuple(c) for c in cs] for cs in meta["contexts"]],
                   flops=[z[f"flops_{s}"] for s in range(n)], params=[z[f"params_{s}"] for s in range(n)],
                   blocks=meta["blocks"])


def _block_model(block, shape):
    return block(shape) if callable(block) else block


def build(cm, space: Sequence[Sequence[Any]], input_shape: tuple[int, ...]) -> LatencyTable:
    contexts = [[tuple(input_shape)]]
    lat, nxt, flops, params, names = [], [], [], [], []
    for s, blocks in enumerate(space):
        ctxs = contexts[s]
        models = [_block_model(b, c) for c in ctxs for b in blocks]
        counted = [cm.count(m) for m in models]
        lowered = [cm.lower(c) for c in counted]
        l, _ = cm._latency(lowered, detail=False)
        nb = len(blocks)
        lat.append(l.reshape(len(ctxs), nb, -1))
        flops.append(np.array([sum(n.cost.flops for n in c.nodes) for c in counted],
                              np.float64).reshape(len(ctxs), nb))
        params.append(np.array([sum(n.cost.params for n in c.nodes) for c in counted],
                               np.float64).reshape(len(ctxs), nb))
        out_shapes = []
        for c in counted:
            specs = [v for v in c.outputs.values() if v is not None]
            if len(specs) != 1:
                from analyzer.errors import GraphError

                raise GraphError(f"stage {s}: a block must have one output, got {len(specs)}")
            out_shapes.append(tuple(int(d) for d in specs[0].shape))
        following: dict[tuple, int] = {}
        idx = np.array([following.setdefault(o, len(following)) for o in out_shapes], np.int64)
        nxt.append(idx.reshape(len(ctxs), nb))
        contexts.append(list(following))
        names.append([getattr(b, "__name__", f"block{j}") for j, b in enumerate(blocks)])
    return LatencyTable(hw=cm.hw, latency=lat, next_context=nxt, contexts=contexts[:-1], flops=flops,
                        params=params, blocks=names)


def compose(space: Sequence[Sequence[Any]], choice: Sequence[int], input_shape) -> Any:
    """The whole model of one candidate: its chosen blocks chained (each block's input renamed
    to the previous block's output; every other name prefixed with its stage)."""
    import onnx
    from onnx import helper

    shape = tuple(input_shape)
    nodes, inits, vinfo = [], [], []
    first_in = last_out = None
    opsets: dict[str, int] = {}
    for s, (blocks, j) in enumerate(zip(space, choice)):
        m = _block_model(blocks[int(j)], shape)
        m = onnx.shape_inference.infer_shapes(m)
        g = m.graph
        init_names = {t.name for t in g.initializer}
        (x,) = [vi for vi in g.input if vi.name not in init_names]
        (y,) = list(g.output)

        def rn(name, s=s, x=x.name):
            if not name:
                return name
            if name == x and last_out is not None:
                return last_out
            return f"s{s}/{name}"

        for n in g.node:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            c.name = f"s{s}/{n.name}"
            c.input[:] = [rn(t) for t in n.input]
            c.output[:] = [rn(t) for t in n.output]
            nodes.append(c)
        for t in g.initializer:
            c = onnx.TensorProto()
            c.CopyFrom(t)
            c.name = rn(t.name)
            inits.append(c)
        if first_in is None:
            first_in = onnx.ValueInfoProto()
            first_in.CopyFrom(x)
            first_in.name = rn(x.name)
        out = onnx.ValueInfoProto()
        out.CopyFrom(y)
        out.name = rn(y.name)
        last_out = out.name
        dims = [d.dim_value for d in y.type.tensor_type.shape.dim]
        shape = tuple(dims)
        for o in m.opset_import:
            opsets[o.domain] = max(opsets.get(o.domain, 0), o.version)
        last_vi = out
    g = helper.make_graph(nodes, "composed", [first_in], [last_vi], initializer=inits,
                          value_info=vinfo)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    model.ir_version = 8
    return model
