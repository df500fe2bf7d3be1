"""XLA CPU's YNNPACK dots over the cores (bench/xla_ynn_dots.py's rule): each ``gemm``-class
dot of the ``xla_cpu`` plan runs in ``tiles / ceil(tiles / threads)`` parts, priced as
``xla_partition``'s split loop fusions."""

from __future__ import annotations

import math

import numpy as np

# YNNPACK's dot tiling (google/XNNPACK ynnpack/subgraph/dot.cc, choose_split_factors, commit
# 00f1405b7f58) and the column block taken for this CPU's fp32 kernel
RULE = {
    "source": "google/XNNPACK ynnpack/subgraph/dot.cc (choose_split_factors), commit 00f1405b7f58",
    "k_cap": 1024,              # "If k gets big, we're going to tile k anyways"
    "min_tile_dim": 64,         # min_area = min(m, 64) x min(n, 64)
    "max_tile_area": 256 * 256,
    "max_tile_cost": 1024 * 64,  # (split_m + split_n) x k
    "aspect_ratio": 4,          # target split_m / split_n
    "first_split_m": 16,
}
BLOCK_N = 16
# the op class of the dots XLA's CPU backend runs in YNNPACK (opcost's class names)
YNN_DOT_CLASSES = frozenset({"gemm"})


def tile(m: int, n: int, k: int, block_n: int = BLOCK_N) -> tuple[int, int]:
    """(split_m, split_n): YNNPACK's output tile of an ``m`` x ``n`` dot over ``k`` (the module
    docstring's rule)."""
    r = RULE
    k = min(k, r["k_cap"])
    min_area = min(m, r["min_tile_dim"]) * min(n, r["min_tile_dim"])
    sn, sm = min(n, block_n), min(m, r["first_split_m"])
    while True:
        if sn * sm >= min_area and ((sm + sn) * k >= r["max_tile_cost"] or sm * sn >= r["max_tile_area"]):
            break
        if (r["aspect_ratio"] * sn <= sm or sm >= m) and sn < n:
            sn *= 2
        elif (sm <= r["aspect_ratio"] * sn or sn >= n) and sm < m:
            sm *= 2
        else:
            break
    return sm, sn


def tiles(m: int, n: int, k: int, block_n: int = BLOCK_N) -> int:
    """The tasks YNNPACK cuts an ``m`` x ``n`` dot over ``k`` into."""
    if m <= 0 or n <= 0:
        return 1
    sm, sn = tile(m, n, k, block_n)
    return math.ceil(m / sm) * math.ceil(n / sn)


def parts(m: int, n: int, k: int, threads: int) -> float:
    """The cores' worth of work a dot's tiles run on: ``tiles / ceil(tiles / threads)``."""
    t = tiles(m, n, k)
    if threads <= 1 or t <= 1:
        return 1.0
    return t / math.ceil(t / threads)



def kernel_parts(nodes, plan, threads: int) -> np.ndarray:
    """[K] the parts of each kernel of ``plan`` that is a YNNPACK dot (its heaviest member a
    ``gemm``-class ``dot_general``, unbatched) on ``threads`` cores; 1 for the others."""
    from analyzer.prediction.kernel_rows import gemm_view, node_op_class

    out = np.ones(plan.kernels)
    if threads <= 1:
        return out
    for k, members in enumerate(plan.members):
        head = nodes[max(members, key=lambda i: (nodes[i].cost.mac_flops, nodes[i].cost.flops))]
        if head.op != "dot_general" or not head.cost.mac_flops or node_op_class(head) not in YNN_DOT_CLASSES:
            continue
        m, n, kk, batch, _ = gemm_view(head)
        if batch and batch > 1:
            continue
        out[k] = parts(int(m), int(n), int(kk), threads)
    return out
