"""Facts about ops that hold whatever cost rules exist: what every stage may ask of an op.

For each ``(domain, op)``:

- ``io``, how the op touches memory: ``"data"`` (reads its data inputs, writes its outputs: the
  default), ``"view"`` (a metadata change: no bytes move), ``"meta"`` (reads only metadata,
  writes its small output) or ``"control"`` (runs sub-graphs: a cost rule returns a ``Plan``);
- ``shape_inputs``: input indices that are shape-like arguments (axes, sizes, indices into a
  shape, sequences and optionals without a TensorSpec): never params, never read as data.

An op not listed is ``data`` with no shape-like inputs.  The frontends (constant folding), the
engine (byte classes, params), provenance (which input steers a shape) and the report (views
are "free") read these facts; the cost rules (``analyzer.counting``) only count, so this table
does not depend on which rules exist.  Plain data, grouped by domain.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

DATA, VIEW, META, CONTROL = "data", "view", "meta", "control"
IO_KINDS = (DATA, VIEW, META, CONTROL)

# ONNX spells the default domain both ways.
_DOMAIN_ALIASES = {"ai.onnx": ""}


def canonical_domain(domain: str) -> str:
    return _DOMAIN_ALIASES.get(domain, domain)


class OpFacts(NamedTuple):
    io: str = DATA
    shape_inputs: frozenset[int] = frozenset()


PLAIN = OpFacts()  # an op not listed


# ----------------------------------------------------------------------------- ai.onnx (the default domain)

_ONNX: dict[str, tuple[str, Iterable[int]]] = {
    # view
    "BitCast": (VIEW, ()),
    "Flatten": (VIEW, ()),
    "Identity": (VIEW, ()),
    "Optional": (VIEW, ()),
    "OptionalGetElement": (VIEW, (0,)),
    "Reshape": (VIEW, (1,)),
    "SequenceEmpty": (VIEW, ()),
    "SequenceErase": (VIEW, (0, 1)),
    "Squeeze": (VIEW, (1,)),
    "Unsqueeze": (VIEW, (1,)),
    # meta
    "OptionalHasElement": (META, (0,)),
    "SequenceLength": (META, (0,)),
    "Shape": (META, ()),
    "Size": (META, ()),
    # control
    "If": (CONTROL, (0,)),
    "Loop": (CONTROL, (0, 1)),
    "Scan": (CONTROL, ()),
    "SequenceMap": (CONTROL, ()),
    # data
    "AffineGrid": (DATA, (1,)),
    "Clip": (DATA, (1, 2)),
    "Col2Im": (DATA, (1, 2)),
    "ConstantOfShape": (DATA, (0,)),
    "CumProd": (DATA, (1,)),
    "CumSum": (DATA, (1,)),
    "DFT": (DATA, (1, 2)),
    "Dropout": (DATA, (1, 2)),
    "Expand": (DATA, (1,)),
    "EyeLike": (DATA, (0,)),
    "MaxUnpool": (DATA, (2,)),
    "MelWeightMatrix": (DATA, (0, 1, 2, 3, 4)),
    "NonMaxSuppression": (DATA, (2, 3, 4)),
    "OneHot": (DATA, (1,)),
    "Pad": (DATA, (1, 2, 3)),
    "RandomNormalLike": (DATA, (0,)),
    "RandomUniformLike": (DATA, (0,)),
    "Range": (DATA, (0, 1, 2)),
    "ReduceL1": (DATA, (1,)),
    "ReduceL2": (DATA, (1,)),
    "ReduceLogSum": (DATA, (1,)),
    "ReduceLogSumExp": (DATA, (1,)),
    "ReduceMax": (DATA, (1,)),
    "ReduceMean": (DATA, (1,)),
    "ReduceMin": (DATA, (1,)),
    "ReduceProd": (DATA, (1,)),
    "ReduceSum": (DATA, (1,)),
    "ReduceSumSquare": (DATA, (1,)),
    "Resize": (DATA, (1, 2, 3)),
    "STFT": (DATA, (1, 3)),
    "SequenceAt": (DATA, (1,)),
    "SequenceInsert": (DATA, (0, 2)),
    "Slice": (DATA, (1, 2, 3, 4)),
    "Split": (DATA, (1,)),
    "SplitToSequence": (DATA, (1,)),
    "Tile": (DATA, (1,)),
    "TopK": (DATA, (1,)),
    "Trilu": (DATA, (1,)),
    "Upsample": (DATA, (1,)),
}


# ----------------------------------------------------------------------------- ai.onnx.ml

_ONNX_ML: dict[str, tuple[str, Iterable[int]]] = {
    # data
    "CastMap": (DATA, (0,)),
    "DictVectorizer": (DATA, (0,)),
}


# ----------------------------------------------------------------------------- ai.onnx.preview.training

_TRAINING: dict[str, tuple[str, Iterable[int]]] = {
    # control
    "Gradient": (CONTROL, ()),
}


# ----------------------------------------------------------------------------- com.microsoft (onnxruntime contrib ops)

_ONNXRUNTIME: dict[str, tuple[str, Iterable[int]]] = {
    # view
    "ExpandDims": (VIEW, (1,)),
    # data
    "Attention": (DATA, (6,)),
    "DecoderMaskedMultiHeadAttention": (DATA, (7, 8, 9)),
    "GroupQueryAttention": (DATA, (5, 6)),
    "MultiHeadAttention": (DATA, (8, 9)),
    "Pad": (DATA, (1, 2)),
    "Range": (DATA, (0, 1, 2)),
    "Trilu": (DATA, (1,)),
}


# ----------------------------------------------------------------------------- jax primitives (the jaxpr frontend)

_JAX: dict[str, tuple[str, Iterable[int]]] = {
    # view
    "after_all": (VIEW, ()),
    "bitcast_convert_type": (VIEW, ()),
    "create_token": (VIEW, ()),
    "device_put": (VIEW, ()),
    "empty": (VIEW, ()),
    "empty2": (VIEW, ()),
    "expand_dims": (VIEW, ()),
    "layout_constraint": (VIEW, ()),
    "mesh_cast": (VIEW, ()),
    "name": (VIEW, ()),
    "optimization_barrier": (VIEW, ()),
    "pvary": (VIEW, ()),
    "random_unwrap": (VIEW, ()),
    "random_wrap": (VIEW, ()),
    "reshape": (VIEW, ()),
    "reshard": (VIEW, ()),
    "sharding_constraint": (VIEW, ()),
    "squeeze": (VIEW, ()),
    "stop_gradient": (VIEW, ()),
    # meta
    "platform_index": (META, ()),
    # control
    "cond": (CONTROL, ()),
    "scan": (CONTROL, ()),
    "while": (CONTROL, ()),
    # data
    "dynamic_slice": (DATA, range(1, 65)),
    "dynamic_update_slice": (DATA, range(2, 66)),
    "pad": (DATA, (1,)),
}

OPS: dict[tuple[str, str], OpFacts] = {
    (domain, op): OpFacts(io, frozenset(shape_inputs))
    for domain, table in (("", _ONNX), ("ai.onnx.ml", _ONNX_ML),
                          ("ai.onnx.preview.training", _TRAINING), ("com.microsoft", _ONNXRUNTIME),
                          ("jax", _JAX))
    for op, (io, shape_inputs) in table.items()
}
assert all(f.io in IO_KINDS for f in OPS.values())


def facts(domain: str, op: str) -> OpFacts:
    """The facts of ``op`` in ``domain`` (``PLAIN`` when none are listed)."""
    return OPS.get((canonical_domain(domain), op), PLAIN)
