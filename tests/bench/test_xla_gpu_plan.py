"""bench/xla_gpu_plan.py's cycle check of a kernel plan, on hand-made graphs.

A fused kernel that feeds another kernel and reads that kernel's result cannot run (each kernel
runs once, all inputs ready). Graph 1: a -> b -> c with a, c in kernel K1 and b in K2: K1 -> K2 ->
K1, both on a cycle. Graph 2: a -> v -> c with v launching nothing (a view): K1 -> view -> K1 is
one kernel reading its own member through a free node, no cycle. Graph 3: a -> b -> c as three
kernels: a chain, no cycle.
"""

from __future__ import annotations

import xla_gpu_plan as X

NAMES = ["a", "b", "c"]
CHAIN = [(0, 1), (1, 2)]


def test_a_kernel_around_another_is_a_cycle():
    assert X.cyclic_kernels(NAMES, ["K1", "K2", "K1"], CHAIN) == ["K1", "K2"]


def test_a_free_node_between_members_is_not():
    assert X.cyclic_kernels(NAMES, ["K1", None, "K1"], CHAIN) == []


def test_a_chain_of_kernels_is_not():
    assert X.cyclic_kernels(NAMES, ["K1", "K2", "K3"], CHAIN) == []
