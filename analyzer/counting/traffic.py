"""One node's traffic: its byte classes (weights read, activations read and written, per dtype)
and the params of its constant inputs.  Called by the engine (``engine.py``) once per distinct
node; params are counted per tensor name, the first time a runtime node consumes it."""

from __future__ import annotations

from analyzer.counting.cost import Cost, Work
from analyzer.errors import ShapeError
from analyzer.ir.graph import STRUCTURE_DTYPES, Graph, Node, TensorSpec
from analyzer.ir.ops import DATA, VIEW


def add_held(held, cost: Cost, by_dtype):
    """A rule's attribute-held weights added to its node's cost: (params, cost, by_dtype)."""
    params, reads = held
    merged = dict(by_dtype)
    for dt, nbytes in reads:
        merged[dt] = merged.get(dt, 0) + nbytes
    extra = sum(b for _, b in reads)
    return params, cost._replace(weight_bytes=cost.weight_bytes + extra), tuple(merged.items())


def new_params(node: Node, ins, cidx: tuple[int, ...], counted: set[str], override,
            graph: Graph) -> int:
    """Elements of the constant data inputs (indices ``cidx``) that no earlier node
    consumed (each tensor once). A folded input counts the file constants it was
    computed from (``graph.sources``); ``override`` (the rule's ``Work.params``) gives
    the count of packed inputs. A constant of a structure dtype (int64, uint64, bool:
    indices, thresholds, position-id and mask buffers) counts 0: a buffer, not a parameter."""
    params = 0
    sources = graph.sources
    tensors = graph.tensors
    for i in cidx:
        name = node.inputs[i]
        src = sources.get(name)
        if src is None:
            if name not in counted:
                counted.add(name)
                spec = ins[i]
                if spec is None or spec.dtype not in STRUCTURE_DTYPES:
                    params += override[i] if override and i in override else spec.numel()
            continue
        for leaf in src:
            if leaf not in counted:
                counted.add(leaf)
                spec = tensors[leaf]
                if spec.dtype not in STRUCTURE_DTYPES:
                    params += spec.numel()
    return params


def node_bytes(node: Node, ins: tuple[TensorSpec | None, ...], outs, work: Work,
           shape_inputs: frozenset[int], io: str, constants: frozenset[str]):
    """The byte classes of one node (params are counted separately, per tensor name)."""
    weight = act_read = written = 0
    by_dtype: dict[str, int] = {}
    reads = work.reads
    data = io == DATA
    for i, name in enumerate(node.inputs):
        if not name or i in shape_inputs:
            continue
        spec = ins[i]
        if not data:
            continue
        if reads and i in reads:
            nbytes = reads[i]
            if spec is None:  # e.g. a sequence input: the rule knows what it reads
                act_read += nbytes
                continue
        elif spec is None:
            raise ShapeError(f"input {i} '{name}' has no type or shape")
        else:
            nbytes = spec.nbytes()
        by_dtype[spec.dtype] = by_dtype.get(spec.dtype, 0) + nbytes
        if name in constants:
            weight += nbytes
        else:
            act_read += nbytes
    if io == VIEW:
        pass
    elif work.writes is not None:
        written = work.writes
        if written:
            dt = next((s.dtype for s in outs if s is not None), "float32")
            by_dtype[dt] = by_dtype.get(dt, 0) + written
    else:
        for name, spec in zip(node.outputs, outs):
            if not name:
                continue
            if spec is None:
                raise ShapeError(f"output '{name}' has no type or shape")
            nb = spec.nbytes()
            written += nb
            by_dtype[spec.dtype] = by_dtype.get(spec.dtype, 0) + nb
    cost = Cost(0, work.mac_flops, work.vector_flops, work.transcendentals,
                weight, act_read, written)
    return cost, tuple(by_dtype.items())
