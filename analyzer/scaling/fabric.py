"""Two levels of links (``Fabric``): ``g`` devices per node over a fast link, nodes over the
network, and what each collective costs on them (the per-level forms in
``analyzer.scaling.collectives``).

An all-reduce over ``n = g * k`` devices is reduce-scatter inside each node, all-reduce of
``nbytes/g`` among the ``k`` nodes (each device's shard on its own network share: the node's NIC
is shared by its ``g`` devices, so each gets ``bw/g``), all-gather inside the node. A node with
one NIC per device (``nics = g``) gives each device a whole NIC instead.

With ``algorithm="nccl"`` the fitted NCCL form (``collectives.nccl``) prices what happens inside
a node, where it was fitted (nccl-tests on NVSwitch nodes; scored, not fitted, on two PCIe
servers). Between nodes no measurement fits or scores it, so a fitted constant is not carried
there: the network phase is the unfitted closed form on the link's datasheet bandwidth and
latency (``collectives.network``), and the per-call cost is charged once per call. Where the
constants carry NCCL's own cost model (``NcclConstants.tuning``; opt-in, the shipped constants do not), an all-reduce,
all-gather or reduce-scatter over nodes is priced as NCCL runs it instead
(``collectives.across_nodes``): one ring through all ranks whose bus bandwidth is its slowest hop,
the node's network (``inter.bw * min(nics, g)``) or the link inside the node, and for all-reduce
NCCL's pipelined tree, with NCCL's per-step latencies; not the phases above added one after the
other.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.scaling.collectives import (ALGORITHMS, ZERO, Comm, NcclConstants, across_nodes,
                                          nccl, network, point_to_point, ring_allgather,
                                          ring_allreduce, tree_allreduce)

_ALLREDUCE = {"ring": ring_allreduce, "tree": tree_allreduce}


@dataclass(frozen=True)
class Level:
    """One level of a fabric: a link's bytes/s per direction and seconds per message, after the
    achieved fraction of its bandwidth (``efficiency``) and any fitted per-message latency."""

    bw: float
    alpha: float
    name: str = ""
    nvls_efficiency: float = 0.0   # NVLink SHARP in the switch: NVLS's fraction of bw (0: none)
    ring: tuple = ()         # (n, bytes/s) where a ring over n devices has a slower bottleneck
    latency_source: str = ""   # where ``alpha`` comes from (the link file's source), "" if none

    def ring_bw(self, n: int) -> float:
        """Bytes/s per direction of a ring over ``n`` devices of this level: the ``ring`` entry
        for ``n`` (a PCIe node's ring that crosses its host path), else ``bw``."""
        return dict(self.ring).get(n, self.bw)

    @classmethod
    def of(cls, link, efficiency: float = 1.0, alpha_s: float | None = None,
           nvls_efficiency: float = 0.0) -> "Level":
        """From a ``hardware_db.links.NetworkLink``: its bandwidth x ``efficiency``, its
        per-message latency ``latency_us`` x 1e-6 s with that number's source (or ``alpha_s``
        when given; 0 where the link states none)."""
        if not 0 < efficiency <= 1:
            raise ValueError(f"link efficiency must be in (0, 1], got {efficiency!r}")
        if alpha_s is not None:
            alpha, source = alpha_s, "given by the caller"
        else:
            alpha = link.latency_s
            source = link.sources.get("latency_us", "") if link.latency_us is not None else ""
        return cls(link.bytes_per_s * efficiency, alpha, link.id, nvls_efficiency,
                   latency_source=source)


@dataclass(frozen=True)
class Fabric:
    """Devices ``per_node`` to a node over ``intra``, nodes over ``inter`` (two levels).

    ``per_node=1``: every device is its own node (all traffic over ``inter``). ``intra`` may be
    None only when ``per_node`` is 1. ``algorithm``: nccl (``constants`` needed), ring or tree.
    ``nics``: network cards per node; the node's devices share them, so each device's share of
    the network is ``inter.bw * min(nics, g) / g`` for ``g`` devices per node."""

    inter: Level
    intra: Level | None = None
    per_node: int = 1
    algorithm: str = "ring"
    nics: int = 1
    constants: NcclConstants | None = None

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {self.algorithm!r}")
        if self.algorithm == "nccl" and self.constants is None:
            raise ValueError("algorithm 'nccl' needs the fitted NCCL constants")
        if self.per_node < 1 or self.nics < 1:
            raise ValueError("per_node and nics must be >= 1")
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

    def _net_bw(self, g: int) -> float:
        """One device's share of the network: ``inter.bw * min(nics, g) / g``."""
        return self.inter.bw * min(self.nics, g) / g

    def _one(self, collective: str, nbytes: float, n: int, level: Level, bw: float,
             between_nodes: bool, base: bool = True) -> Comm:
        if self.algorithm == "nccl" and between_nodes:
            return network(collective, nbytes, n, bw, level.alpha,
                           self.constants.base_s if base else 0.0).comm
        if self.algorithm == "nccl":
            return nccl(collective, nbytes, n, bw, self.constants,
                        nvls_efficiency=level.nvls_efficiency, base=base).comm
        if collective == "all_reduce":
            return _ALLREDUCE[self.algorithm](nbytes, n, bw, level.alpha)
        return ring_allgather(nbytes, n, bw, level.alpha)

    def _across(self, collective: str, nbytes: float, g: int, k: int) -> Comm | None:
        """NCCL's cost model over ``k >= 2`` nodes (``collectives.across_nodes``) where the
        constants carry it, else None: the node's network ``g * _net_bw(g)``, the ring's link
        inside the node, NCCL's PCI latencies for a PCIe link and its NVLink ones otherwise."""
        t = self.constants.tuning if self.algorithm == "nccl" else None
        if t is None or k < 2:
            return None
        intra = self.intra if g > 1 else None
        hw = "pci" if intra is not None and intra.name.startswith("pcie") else "nvlink"
        return across_nodes(collective, nbytes, g, k, g * self._net_bw(g),
                            intra.ring_bw(g) if intra is not None else 0.0, t, intra_hw=hw).comm

    def allreduce(self, nbytes: float, n: int) -> Comm:
        g, k = self.split(n)
        if (nccl_net := self._across("all_reduce", nbytes, g, k)) is not None:
            return nccl_net
        if k == 1:
            inside = g > 1 and self.intra is not None and self.per_node > 1
            level = self.intra if inside else self.inter
            return self._one("all_reduce", nbytes, g, level, level.ring_bw(g), not inside)
        if g == 1:
            return self._one("all_reduce", nbytes, k, self.inter, self.inter.bw, True)
        intra = self.intra
        return (self._one("reduce_scatter", nbytes, g, intra, intra.ring_bw(g), False)
                + self._one("all_reduce", nbytes / g, k, self.inter, self._net_bw(g), True, base=False)
                + self._one("all_gather", nbytes, g, intra, intra.ring_bw(g), False, base=False))

    def allgather(self, nbytes: float, n: int) -> Comm:
        """``nbytes``: the gathered output per device. Over nodes: all-gather among the nodes of
        each device's ``nbytes/g`` share (with the devices of the same index in the other nodes,
        on each device's network share), then inside each node of the whole ``nbytes``: the
        mirror of ``reduce_scatter``, so a node's network moves ``(k-1)/k * nbytes`` once."""
        g, k = self.split(n)
        if (nccl_net := self._across("all_gather", nbytes, g, k)) is not None:
            return nccl_net
        if k == 1:
            inside = g > 1 and self.intra is not None
            level = self.intra if inside else self.inter
            return self._one("all_gather", nbytes, g, level, level.ring_bw(g), not inside)
        if g == 1:   # one device per node: the network alone
            return self._one("all_gather", nbytes, k, self.inter, self.inter.bw, True)
        return (self._one("all_gather", nbytes / g, k, self.inter, self._net_bw(g), True, base=False)
                + self._one("all_gather", nbytes, g, self.intra, self.intra.ring_bw(g), False))

    def reduce_scatter(self, nbytes: float, n: int) -> Comm:
        """``nbytes``: the input per device. Over nodes: reduce-scatter inside each node, then
        of the node's ``nbytes/g`` shard among the nodes on each device's network share (the
        mirror of ``allgather``)."""
        g, k = self.split(n)
        if (nccl_net := self._across("reduce_scatter", nbytes, g, k)) is not None:
            return nccl_net
        if k == 1:
            inside = g > 1 and self.intra is not None
            level = self.intra if inside else self.inter
            return self._one("reduce_scatter", nbytes, g, level, level.ring_bw(g), not inside)
        if g == 1:
            return self._one("reduce_scatter", nbytes, k, self.inter, self.inter.bw, True)
        return (self._one("reduce_scatter", nbytes, g, self.intra, self.intra.ring_bw(g), False)
                + self._one("reduce_scatter", nbytes / g, k, self.inter, self._net_bw(g), True,
                            base=False))

    def collective(self, kind: str, nbytes: float, n: int) -> Comm:
        """``kind``: all_reduce, all_gather or reduce_scatter."""
        return {"all_reduce": self.allreduce, "all_gather": self.allgather,
                "reduce_scatter": self.reduce_scatter}[kind](nbytes, n)

    def all_to_all(self, nbytes: float, n: int) -> Comm:
        """Pairwise all-to-all of ``nbytes`` per device (the input; ``1/n`` of it stays): each
        device sends ``nbytes/n`` to each of its ``g-1`` node peers over the intra link and to
        each of the ``n-g`` others over its network share, the two parts one after the other
        (an upper bound: they may overlap). With ``algorithm="nccl"``: one per-call cost; inside
        a node each exchange is a Simple-protocol send/receive (NCCL runs all-to-all as grouped
        sends and receives: the Simple efficiency and step per peer, like ``p2p``) and the
        output share of the ``nbytes`` of output is charged on the intra link; between nodes
        the unfitted ``peers/n * nbytes/bw + peers * alpha`` (``network``)."""
        g, k = self.split(n)
        if n == 1:
            return ZERO
        parts = []   # (level, peers, bytes/s or None for the level's, inside a node)
        if k == 1:
            inside = g > 1 and self.intra is not None and self.per_node > 1
            parts.append((self.intra if inside else self.inter, n - 1, None, inside))
        else:
            if g > 1:
                parts.append((self.intra, g - 1, None, True))
            parts.append((self.inter, n - g, self._net_bw(g), False))
        total, k_ = ZERO, self.constants
        for level, peers, bw, inside in parts:
            bw = level.bw if bw is None else bw
            if self.algorithm == "nccl" and inside:
                total = total + Comm(peers / n * nbytes / (bw * k_.eff["Simple"]),
                                     peers * k_.step_s["Simple"])
            else:
                total = total + Comm(peers / n * nbytes / bw, peers * level.alpha)
        if self.algorithm == "nccl":
            lv, inside = parts[0][0], parts[0][3]
            out = k_.out_share * nbytes / (lv.bw * k_.eff["Simple"]) if inside else 0.0
            total = total + Comm(out, k_.base_s)
        return total

    def p2p(self, nbytes: float, crosses_node: bool) -> Comm:
        """One send of ``nbytes``: ``nbytes/bw + alpha``. With ``algorithm="nccl"`` plus the
        per-call cost; inside a node one Simple-protocol step and the output share at the Simple
        efficiency, ``(1 + w) * nbytes / (bw * eff) + step``; between nodes the unfitted form."""
        inside = not crosses_node and self.intra is not None
        level = self.intra if inside else self.inter
        c = point_to_point(nbytes, level.bw, level.alpha)
        if self.algorithm == "nccl" and inside:
            k = self.constants
            return Comm((1 + k.out_share) * nbytes / (level.bw * k.eff["Simple"]),
                        k.base_s + k.step_s["Simple"])
        if self.algorithm == "nccl":
            return c + (0.0, self.constants.base_s)
        return c
