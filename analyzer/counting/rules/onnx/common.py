"""Small helpers the rule modules share: optional inputs, output specs, ceil(log2), axes, and
the bytes written by ops whose output size depends on the data."""

from __future__ import annotations

from analyzer.errors import ShapeError


def present(ins, i: int) -> bool:
    """Whether optional input ``i`` was given."""
    return len(ins) > i and ins[i] is not None


def output(outs, i: int = 0):
    """Output ``i``'s TensorSpec, or a clear error when the frontend has none (ONNX shape inference
    does not know ORT and some ai.onnx.ml ops: such a model must declare the output's value_info)."""
    spec = outs[i] if len(outs) > i else None
    if spec is None:
        raise ShapeError(f"output {i} has no type or shape (shape inference does not know this op; "
                         f"declare the output's value_info)")
    return spec


def lg(x: int) -> int:
    """ceil(log2 x) for x >= 1 (0 for x <= 1)."""
    return (x - 1).bit_length() if x > 1 else 0


def axis_index(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def upper_bound_writes(outs, bounds) -> tuple[int | None, str | None]:
    """Bytes written when some outputs have a data-dependent size: a static output is written
    whole, an open one at ``bounds[i]`` bytes.  (None, None) when every output is static."""
    present = [(i, o) for i, o in enumerate(outs) if o is not None]
    if all(o.is_static for _, o in present):
        return None, None
    total = sum(o.nbytes() if o.is_static else bounds(i) for i, o in present)
    return total, "output size depends on the data: bytes written are the upper bound"
