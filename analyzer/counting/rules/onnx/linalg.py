"""Linear algebra beyond products: Det.

Det: LU with partial pivoting, per M x M matrix ``M(M-1)/2`` pivot compares, ``M(M-1)/2``
divides, ``(M-1)M(2M-1)/3`` multiply-adds and ``M-1`` multiplies for the diagonal product.
"""

from __future__ import annotations

from math import prod

from analyzer.counting.cost import Work, register
from analyzer.errors import ShapeError

def _lu_det_ops(m: int) -> int:
    pairs = m * (m - 1) // 2
    return 2 * pairs + (m - 1) * m * (2 * m - 1) // 3 + max(m - 1, 0)


@register("Det")
def det(ins, outs, ctx):
    shape = ins[0].dims()
    m = shape[-1]
    if len(shape) < 2 or shape[-2] != m:
        raise ShapeError(f"Det needs square matrices, got {ins[0]}")
    return Work(vector_flops=prod(shape[:-2]) * _lu_det_ops(m))
