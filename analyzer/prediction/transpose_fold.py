"""XLA's GPU transpose folding as the ``xla`` plan applies it (``fusion.plan``): which rank-2
transposes launch nothing because XLA's GPU compiler folds them into the matrix products that
read them (``xla_folded``), and each node's part in it (``fold_role``, which the search's fast
path keeps per node).  Sources: ``TransposeFolding`` / ``CanFoldTransposeOperandIntoDot`` in
``xla/service/gpu/gpu_compiler.cc`` and ``matmul_utils.cc`` (openxla/xla)."""

from __future__ import annotations

from typing import Any, Sequence

# a node of the plan (``fusion.FusionNode``: its fields ``matrix2d``, ``launches``, ``domain``,
# ``op``, ``op_class``, ``outputs``, ``level`` are read here)
FusionNode = Any

_TRANSPOSES = frozenset({("", "Transpose"), ("jax", "transpose")})
# op classes of a matrix product whose operand a transpose folds into (not convolutions)
_PRODUCTS = frozenset({"gemm", "bgemm", "gemm_tn", "gemm_simt", "bgemm_simt"})


def xla_folded(nodes: Sequence[FusionNode], consumers, graph_outputs: frozenset[str] = frozenset()) -> dict[int, int]:
    """{transpose node: the first product reading it} of the transposes XLA's GPU compiler folds
    into matrix products, so that they launch nothing.  ``TransposeFolding`` with
    ``CanFoldTransposeOperandIntoDot`` runs before the GEMM rewriters on every GPU generation,
    with no flag (``xla/service/gpu/gpu_compiler.cc``): a transpose operand of a dot becomes the
    dot's dimension numbers (a cuBLAS transpose flag, a Triton dimension order) when the
    operand's non-contracting dimensions keep their order and the transpose's input has a
    (batch, row, column) matrix layout (``xla/service/gpu/matmul_utils.cc``).  Planned where
    both hold whatever the permutation: a transpose of a rank-2 tensor (``matrix2d``) read only
    by matrix products of rank-2 operands and result (one contracting dimension, no batch), not
    a graph output.  Higher ranks depend on the permutation and the dimension numbers, which
    the plan's nodes do not carry: they stay loop-fusion nodes."""
    out: dict[int, int] = {}
    for i, nd in enumerate(nodes):
        if fold_role(nd) != 1:
            continue
        t = nd.outputs[0]
        readers = consumers.get((nd.level, t), ())
        if readers and (nd.level or t not in graph_outputs) and all(fold_role(nodes[u]) == 2 for u in readers):
            out[i] = readers[0]
    return out


def fold_role(nd: FusionNode) -> int:
    """``nd``'s part in ``xla_folded``: 1 a rank-2 transpose that launches, 2 a matrix product
    of rank-2 operands and result, else 0 (the search's fast path keeps it per node)."""
    if not nd.matrix2d:
        return 0
    if nd.launches and (nd.domain, nd.op) in _TRANSPOSES and nd.outputs:
        return 1
    return 2 if nd.op_class in _PRODUCTS else 0
