"""The intermediate representation: plain frozen data shared by every frontend.

A ``Graph`` is a list of ``Node``s in topological order plus a table of
``TensorSpec``s keyed by tensor name.  Dims are ints or symbol names (str); a
symbol stays a symbol until the user binds it.  ``"?"`` marks a dim that shape
inference could not determine at all.  Nothing here imports onnx or jax.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod
from types import MappingProxyType
from typing import Any, Hashable, Mapping, MutableMapping, NamedTuple

from analyzer.errors import ShapeError, UnboundDimError

Dim = int | str

# Bits per element of every dtype name used in the IR (ONNX and JAX names map onto these).
DTYPE_BITS: dict[str, int] = {
    "float64": 64, "float32": 32, "float16": 16, "bfloat16": 16,
    "float8e4m3fn": 8, "float8e4m3fnuz": 8, "float8e5m2": 8, "float8e5m2fnuz": 8, "float8e8m0": 8,
    "float4e2m1": 4,
    "int64": 64, "int32": 32, "int16": 16, "int8": 8, "int4": 4, "int2": 2,
    "uint64": 64, "uint32": 32, "uint16": 16, "uint8": 8, "uint4": 4, "uint2": 2,
    "bool": 8, "complex64": 64, "complex128": 128,
    # Variable-length strings have no fixed size; we charge a pointer-sized slot.
    "string": 64,
}

# Bits per element of each precision a prediction runs at (hardware_db's names): the one table of
# a precision's width. tf32 is stored in 32 bits (its 19-bit format is a tensor-core input mode).
# w8a16 (int8 weights, int16 activations): its activations' width here, its weights' in WEIGHT_BITS.
PRECISION_BITS: dict[str, int] = {"fp32": 32, "tf32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8,
                                  "w8a16": 16}
# Bits per floating weight element of the precisions whose weights are stored narrower than their
# activations (the others: PRECISION_BITS).
WEIGHT_BITS: dict[str, int] = {"w8a16": 8}

# dtype abbreviations of a spec such as ``f32[8,128]`` (--input) -> IR dtype names
SPEC_DTYPES: dict[str, str] = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "f8e4m3fn": "float8e4m3fn", "f8e5m2": "float8e5m2", "f8e4m3fnuz": "float8e4m3fnuz",
    "f8e5m2fnuz": "float8e5m2fnuz",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "i4": "int4",
    "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8", "u4": "uint4",
    "bool": "bool", "pred": "bool", "c64": "complex64", "c128": "complex128",
}
FLOAT_DTYPES = frozenset(d for d in DTYPE_BITS if d.startswith(("float", "bfloat")))
INT_DTYPES = frozenset(d for d in DTYPE_BITS if d.startswith(("int", "uint")))
# A constant of these dtypes is structure, never a trainable weight: an index, a threshold
# compared against, a position-id or causal-mask buffer (PyTorch registers those as buffers,
# not parameters). Its elements are not params; its bytes are still read as weight bytes.
# int8/int4/int32 constants stay weights (quantized weights and biases).
STRUCTURE_DTYPES = frozenset({"int64", "uint64", "bool"})


def dtype_bits(dtype: str) -> int:
    try:
        return DTYPE_BITS[dtype]
    except KeyError:
        raise ShapeError(f"unknown dtype '{dtype}'") from None


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """Shape and dtype of one tensor. ``shape is None`` means the rank is unknown."""

    shape: tuple[Dim, ...] | None
    dtype: str
    # element count, computed once (None while a dim is symbolic or the rank unknown)
    _numel: int | None = field(init=False, repr=False, compare=False, default=None)
    # the hash of (shape, dtype), computed once: specs key many memo dicts
    _hash: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self):
        s = self.shape
        if s is not None and all(type(d) is int for d in s):
            object.__setattr__(self, "_numel", prod(s))
        object.__setattr__(self, "_hash", hash((s, self.dtype)))

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):
        # rebuilt from its fields: string hashes differ between processes
        return (TensorSpec, (self.shape, self.dtype))

    @property
    def rank(self) -> int:
        if self.shape is None:
            raise ShapeError("tensor rank is unknown after shape inference", reason=ShapeError.RANK_UNKNOWN)
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(type(d) is int for d in self.shape)

    @property
    def unresolved(self) -> bool:
        """Shape inference could not finish it: unknown rank, '?' dims or the symbols it
        derives (``unk__N``); a user's symbolic dim (``batch``) is resolved, just unbound."""
        return self.shape is None or any(type(d) is str and (d == "?" or d.startswith("unk__"))
                                         for d in self.shape)

    @property
    def unknowns(self) -> int:
        """How far from static: non-int dims, or a huge number for an unknown rank (of two
        specs for one tensor, the one with fewer unknowns is kept)."""
        if self.shape is None:
            return 1 << 20
        return sum(1 for d in self.shape if type(d) is not int)

    def dims(self) -> tuple[int, ...]:
        """The shape as ints; raises ``UnboundDimError`` naming the first symbolic dim."""
        if self.shape is None:
            raise ShapeError("tensor rank is unknown after shape inference", reason=ShapeError.RANK_UNKNOWN)
        for d in self.shape:
            if type(d) is not int:
                raise UnboundDimError(d)
        return self.shape  # type: ignore[return-value]

    def dim(self, axis: int) -> int:
        d = self.dims()
        return d[axis]

    def numel(self) -> int:
        n = self._numel
        if n is None:
            return prod(self.dims())  # raises, naming the symbolic dim
        return n

    def nbytes(self) -> int:
        """Exact bytes of the tensor in its real dtype; sub-byte types are packed."""
        n = self._numel
        if n is None:
            n = self.numel()
        bits = DTYPE_BITS.get(self.dtype)
        if bits is None:
            bits = dtype_bits(self.dtype)  # raises for an unknown dtype
        return (n * bits + 7) // 8

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.dtype}[?]"
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"


_EMPTY: Mapping[str, Any] = MappingProxyType({})


def merge_specs(target: MutableMapping[str, TensorSpec], new: Mapping[str, TensorSpec],
                keys=None) -> bool:
    """Take each spec of ``new`` (those named in ``keys``, when given) that knows more than
    ``target``'s (fewer unknown dims; a missing spec knows nothing). True when any did."""
    improved = False
    for k, s in new.items():
        if keys is not None and k not in keys:
            continue
        old = target.get(k)
        if old is None or old.unknowns > s.unknowns:
            target[k] = s
            improved = True
    return improved


def unresolved(spec: TensorSpec | None) -> bool:
    """No spec at all, or one shape inference could not finish (``TensorSpec.unresolved``)."""
    return spec is None or spec.unresolved


class Node(NamedTuple):
    """One operator application. ``inputs`` keeps ``""`` for omitted optional inputs.

    ``attr_key``: a hashable identity of the attributes (the frontend's serialized
    attributes), or None; nodes with equal op, input/output specs and ``attr_key`` have
    equal costs, which lets the engine cost a repeated block once."""

    name: str
    op: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any] = _EMPTY
    # Sub-graphs of control-flow ops (If/Loop/Scan bodies), keyed by attribute name.
    subgraphs: Mapping[str, "Graph"] = _EMPTY
    attr_key: Hashable | None = None


@dataclass(slots=True)
class Graph:
    """A resolved graph: every tensor the nodes touch has a ``TensorSpec``.

    ``constants`` names the tensors whose values are fixed before the model runs
    (initializers, Constant outputs and anything computed only from constants);
    ``values`` holds the values that are known and small (shape arithmetic);
    ``folded`` names the nodes whose outputs are all constant, which a runtime
    evaluates ahead of time and so cost nothing at inference.
    """

    name: str
    nodes: list[Node]
    tensors: dict[str, TensorSpec]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    constants: frozenset[str] = frozenset()
    values: Mapping[str, Any] = field(default_factory=dict)
    folded: frozenset[str] = frozenset()
    opsets: Mapping[str, int] = field(default_factory=dict)
    # folded constant -> the file constants it is computed from (where params are counted)
    sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # sequence-valued tensor -> the specs of its elements, in order, where the frontend can
    # follow them (SequenceConstruct, SplitToSequence, SequenceInsert, ...); absent: unknown
    sequences: Mapping[str, tuple[TensorSpec, ...]] = field(default_factory=dict)
    # node name (as the engine names rows: ``ctrl/child`` inside sub-graphs) -> (name, op) of
    # the file's function-op node whose body it came from (``frontends/functions.py``)
    decomposed: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # folded tensor -> why evaluating its node on known values failed (explains an unknown
    # shape downstream: often a model that does not support the bound dims)
    fold_errors: Mapping[str, str] = field(default_factory=dict)
    # a control-flow body (If branch, Loop/Scan body), not the model's own graph
    is_body: bool = False
    # default-domain op -> the first opset that defines it, for the ops of this graph that the
    # model's opset does not define yet (an invalid model; the frontend knows the schemas)
    newer_ops: Mapping[str, int] = field(default_factory=dict)
    # node name -> the file's name for it, where the file names several nodes alike (valid
    # ONNX: names need not be unique) and the frontend made them unique (``name~2``)
    renamed: Mapping[str, str] = field(default_factory=dict)

    def spec(self, name: str) -> TensorSpec | None:
        return self.tensors.get(name) if name else None
