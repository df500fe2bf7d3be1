"""Collective communication times: per-message latency and per-byte time as separate terms.

Alpha-beta model (Hockney; Thakur, Rabenseifner & Gropp 2005; NCCL's ring), ``n`` devices, a
message of ``nbytes`` bytes per device, a link of ``bw`` bytes/s per direction and ``alpha``
seconds per message (one step of the algorithm):

    ring all-reduce        2(n-1)/n * nbytes/bw  +  2(n-1) * alpha
    ring all-gather        (n-1)/n * nbytes/bw   +  (n-1) * alpha     (nbytes: the gathered output)
    ring reduce-scatter    (n-1)/n * nbytes/bw   +  (n-1) * alpha     (nbytes: the input per rank)
    tree all-reduce        2 * ceil(log2 n) * (nbytes/bw + alpha)    (binary-tree reduce, then
                           broadcast, whole message per level: seed 002's scheme, not pipelined)
    point-to-point         nbytes/bw + alpha

Two levels (``Fabric``): ``g`` devices per node over a fast link, nodes over the network. An
all-reduce over ``n = g * k`` devices is reduce-scatter inside each node, all-reduce of
``nbytes/g`` among the ``k`` nodes (each device's shard on its own network share: the node's
NIC is shared by its ``g`` devices, so each gets ``bw/g``), all-gather inside the node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

ALGORITHMS = ("ring", "tree")


class Comm(NamedTuple):
    """One collective's time split into its two terms (seconds)."""

    bandwidth_s: float   # the per-byte term
    latency_s: float     # the per-message term

    @property
    def total(self) -> float:
        return self.bandwidth_s + self.latency_s

    def __add__(self, other):  # Comm + Comm adds term by term
        return Comm(self.bandwidth_s + other[0], self.latency_s + other[1])


ZERO = Comm(0.0, 0.0)


def _check(nbytes: float, n: int, bw: float) -> None:
    if n < 1 or int(n) != n:
        raise ValueError(f"device count must be an integer >= 1, got {n!r}")
    if nbytes < 0:
        raise ValueError(f"message bytes must be >= 0, got {nbytes!r}")
    if n > 1 and not bw > 0:
        raise ValueError(f"link bandwidth must be > 0 bytes/s, got {bw!r}")


def ring_allreduce(nbytes: float, n: int, bw: float, alpha: float = 0.0) -> Comm:
    """``2(n-1)/n * nbytes/bw + 2(n-1) * alpha`` (zero for one device)."""
    _check(nbytes, n, bw)
    if n == 1:
        return ZERO
    return Comm(2 * (n - 1) / n * nbytes / bw, 2 * (n - 1) * alpha)


def ring_allgather(nbytes: float, n: int, bw: float, alpha: float = 0.0) -> Comm:
    """``(n-1)/n * nbytes/bw + (n-1) * alpha``; ``nbytes`` is the gathered output per device."""
    _check(nbytes, n, bw)
    if n == 1:
        return ZERO
    return Comm((n - 1) / n * nbytes / bw, (n - 1) * alpha)


def ring_reduce_scatter(nbytes: float, n: int, bw: float, alpha: float = 0.0) -> Comm:
    """``(n-1)/n * nbytes/bw + (n-1) * alpha``; ``nbytes`` is the input per device."""
    return ring_allgather(nbytes, n, bw, alpha)


def tree_allreduce(nbytes: float, n: int, bw: float, alpha: float = 0.0) -> Comm:
    """``2 * ceil(log2 n) * (nbytes/bw + alpha)``: binary-tree reduce then broadcast."""
    _check(nbytes, n, bw)
    if n == 1:
        return ZERO
    levels = math.ceil(math.log2(n))
    return Comm(2 * levels * nbytes / bw, 2 * levels * alpha)


def point_to_point(nbytes: float, bw: float, alpha: float = 0.0) -> Comm:
    _check(nbytes, 2, bw)
    return Comm(nbytes / bw, alpha)


_ALLREDUCE = {"ring": ring_allreduce, "tree": tree_allreduce}


@dataclass(frozen=True)
class Level:
    """One level of a fabric: a link's bytes/s per direction and seconds per message, after the
    achieved fraction of its bandwidth (``efficiency``) and any fitted per-message latency."""

    bw: float
    alpha: float
    name: str = ""

    @classmethod
    def of(cls, link, efficiency: float = 1.0, alpha_s: float | None = None) -> "Level":
        """From a ``hardware_db.links.NetworkLink``: its bandwidth x ``efficiency``, its
        latency (or ``alpha_s`` when given; 0 where the link states none)."""
        if not 0 < efficiency <= 1:
            raise ValueError(f"link efficiency must be in (0, 1], got {efficiency!r}")
        return cls(link.bytes_per_s * efficiency,
                   link.latency_s if alpha_s is None else alpha_s, link.id)


@dataclass(frozen=True)
class Fabric:
    """Devices ``per_node`` to a node over ``intra``, nodes over ``inter`` (two levels).

    ``per_node=1``: every device is its own node (all traffic over ``inter``). ``intra`` may be
    None only when ``per_node`` is 1. ``algorithm``: ring or tree, for the all-reduce."""

    inter: Level
    intra: Level | None = None
    per_node: int = 1
    algorithm: str = "ring"

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {self.algorithm!r}")
        if self.per_node < 1:
            raise ValueError("per_node must be >= 1")
        if self.per_node > 1 and self.intra is None:
            raise ValueError("per_node > 1 needs an intra-node link")

    def split(self, n: int) -> tuple[int, int]:
        """(devices per node used, nodes) for ``n`` devices."""
        g = self.per_node
        if n <= g:
            return n, 1
        if n % g:
            raise ValueError(f"{n} devices do not fill whole nodes of {g}")
        return g, n // g

    def allreduce(self, nbytes: float, n: int) -> Comm:
        g, k = self.split(n)
        ar = _ALLREDUCE[self.algorithm]
        if k == 1:
            level = self.intra if (g > 1 and self.intra is not None and self.per_node > 1) else self.inter
            return ar(nbytes, g, level.bw, level.alpha)
        if g == 1:
            return ar(nbytes, k, self.inter.bw, self.inter.alpha)
        intra = self.intra
        return (ring_reduce_scatter(nbytes, g, intra.bw, intra.alpha)
                + ar(nbytes / g, k, self.inter.bw / g, self.inter.alpha)
                + ring_allgather(nbytes, g, intra.bw, intra.alpha))

    def allgather(self, nbytes: float, n: int) -> Comm:
        g, k = self.split(n)
        level = self.intra if (k == 1 and g > 1 and self.intra is not None) else self.inter
        if k == 1:
            return ring_allgather(nbytes, g, level.bw, level.alpha)
        return (ring_allgather(nbytes / k, g, self.intra.bw, self.intra.alpha)
                + ring_allgather(nbytes, k, self.inter.bw / g, self.inter.alpha))

    def p2p(self, nbytes: float, crosses_node: bool) -> Comm:
        level = self.inter if (crosses_node or self.intra is None) else self.intra
        return point_to_point(nbytes, level.bw, level.alpha)
