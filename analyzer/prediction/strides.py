"""Element strides of tensors as an eager framework holds them: which reshapes are views,
which layouts cuBLAS takes as a matrix, the layout an elementwise output takes.  Shapes and
strides are tuples of ints, strides in elements.
"""

from __future__ import annotations

from math import prod
from typing import Sequence

from analyzer.counting import kernel_words


def contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= max(d, 1)
    return tuple(reversed(out))


def view_strides(shape, strides, new_shape):
    """Strides of ``new_shape`` over the storage of a tensor ``shape`` with ``strides`` when a
    view can express it, else None (the rule of aten's computeStride): the old dims split into
    chunks that are contiguous among themselves (``stride[d] == stride[d+1] * size[d+1]``, size-1
    dims ignored); each chunk must be the product of a run of new dims, which get the chunk's
    base stride times the sizes after them."""
    shape, strides, new_shape = list(shape), list(strides), list(new_shape)
    if prod(shape) != prod(new_shape):
        return None
    if prod(shape) == 0 or not shape:
        return contiguous(new_shape)
    # chunks of the old dims, innermost first: (element count, base stride)
    chunks, count, base = [], 1, strides[-1]
    for d in range(len(shape) - 1, -1, -1):
        count *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != count * base):
            chunks.append((count, base))
            if d > 0:
                count, base = 1, strides[d - 1]
    out = [0] * len(new_shape)
    v = len(new_shape) - 1
    for n, b in chunks:
        got = 1
        while v >= 0 and (got < n or new_shape[v] == 1):
            out[v] = got * b
            got *= new_shape[v]
            v -= 1
        if got != n:
            return None
    return tuple(out) if v < 0 else None


def is_contiguous(shape, strides) -> bool:
    """True when ``strides`` are the row-major strides of ``shape`` (size-1 dims any)."""
    expect = 1
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != expect:
            return False
        expect *= d
    return True


def dense_like(shape, strides) -> tuple[int, ...]:
    """Dense strides of ``shape`` in the dimension order of ``strides`` (largest stride
    outermost; ties in dim order): the layout TensorIterator gives an output."""
    order = sorted(range(len(shape)), key=lambda d: (-strides[d], d))
    out, s = [0] * len(shape), 1
    for d in reversed(order):
        out[d] = s
        s *= max(shape[d], 1)
    return tuple(out)


def matrix_ok(rows: int, cols: int, s_rows: int, s_cols: int) -> bool:
    """cuBLAS takes a [rows, cols] matrix with these strides without a copy: one stride 1 and
    the other at least the size of the dim it steps over (prepare_batch_matrix_for_cublas)."""
    return (s_cols == 1 and s_rows >= max(1, cols)) or (s_rows == 1 and s_cols >= max(1, rows))


def broadcast_strides(shape, strides, out_shape) -> tuple[int, ...]:
    """Strides of ``shape`` expanded to ``out_shape`` (stride 0 on the broadcast dims)."""
    pad = len(out_shape) - len(shape)
    out = []
    for i, d in enumerate(out_shape):
        j = i - pad
        out.append(0 if j < 0 or (shape[j] == 1 and d != 1) else strides[j])
    return tuple(out)


def channels_last(shape) -> tuple[int, ...]:
    """Dense strides of ``shape`` [N, C, spatial...] in channels-last order."""
    order = [0, *range(2, len(shape)), 1]
    out, s = [0] * len(shape), 1
    for d in reversed(order):
        out[d] = s
        s *= max(shape[d], 1)
    return tuple(out)


def transpose_perm(node, rank: int) -> list[int]:
    """The permutation of a Transpose ``node`` (its ``kernel`` string ``perm=a,b,...``) when it
    is one of ``range(rank)``, else ONNX's default, the reversed axes."""
    p = kernel_words.ints(node.kernel, "perm")
    if p is not None and sorted(p) == list(range(rank)):
        return list(p)
    return list(range(rank))[::-1]
