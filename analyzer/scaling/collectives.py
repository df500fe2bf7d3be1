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
    pairwise all-to-all    (n-1)/n * nbytes/bw   +  (n-1) * alpha     (nbytes: the input per rank,
                           of which 1/n stays; one exchange with each of the n-1 peers)

Two levels (``Fabric``): ``g`` devices per node over a fast link, nodes over the network. An
all-reduce over ``n = g * k`` devices is reduce-scatter inside each node, all-reduce of
``nbytes/g`` among the ``k`` nodes (each device's shard on its own network share: the node's
NIC is shared by its ``g`` devices, so each gets ``bw/g``), all-gather inside the node. A node
with one NIC per device (``nics_per_node = g``) gives each device a whole NIC instead.

NCCL's cost (``algorithm="nccl"``, constants ``NcclConstants`` fitted on nccl-tests runs, file
``hardware_db/collectives/nccl.json``): each call costs the least, over the algorithms and
protocols NCCL can run, of

    base  +  steps(algorithm, n) * step(protocol)  +  (F(algorithm, n) + w * out) * nbytes / (bw * eff(protocol) * c)

    algorithm  collective   steps          F (bytes each device moves / nbytes)
    ring       all-reduce   2(n-1)         2(n-1)/n
    ring       all-gather   n-1            (n-1)/n     (reduce-scatter the same)
    tree       all-reduce   2 ceil(log2 n) 2           (between nodes only: inside a node NCCL's
                                                        tree is a chain, never cheaper than ring)
    nvls       all-reduce   2              1           (NVLink SHARP: the switch reduces and
                                                        multicasts; NVSwitch nodes that have it,
                                                        more than 2 GPUs: NCCL sets NVLS up only
                                                        then)

``base``: the per-call cost (launch, synchronisation) whatever the size; ``step``: per step of
the algorithm for protocol LL, LL128 or Simple (NCCL's three; LL sends 4 data bytes per 8-byte
store, so it trades bandwidth for latency); ``eff``: the achieved fraction of the link's
per-direction bandwidth with that protocol; ``c``: a per-collective factor (all-gather reaches
less of the link than all-reduce in nccl-tests); ``w``: the output share, a time per byte of each
rank's output that does not shrink with the ring (``out`` the output per nbytes: 1 for all-reduce
and all-gather, 1/n for reduce-scatter; nccl-tests' bus bandwidth grows with n on NVSwitch nodes,
which ``F`` alone cannot give). NCCL's own tuner picks the algorithm and
protocol the same way (the least predicted time); this model's choice is its own, not a copy of
NCCL's tables.

NVLS's bandwidth is not a fraction of the link: NCCL runs it on a fixed number of channels (CTAs),
``nvls_channels`` of the node (16 on Hopper, 24 on Blackwell inside one NVLink domain: NCCL's
``src/transport/nvls.cc``), and each channel moves at most ``nvls_channel_Bps``, so its byte term
is ``nbytes / min(bw, nvls_channels * nvls_channel_Bps)``.

``base`` is a property of the run (the host's launch and synchronisation path, the driver), not
of the GPUs or links: the fit gives each measured system its own and ships their median. The
constants were fitted inside NVSwitch nodes; between nodes the same ones are
applied to the NIC link (with the link's own per-hop latency added to each step), an
extrapolation no measurement here checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

ALGORITHMS = ("nccl", "ring", "tree")
PROTOCOLS = ("LL", "LL128", "Simple")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


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


def pairwise_alltoall(nbytes: float, n: int, bw: float, alpha: float = 0.0) -> Comm:
    """``(n-1)/n * nbytes/bw + (n-1) * alpha``; ``nbytes`` is the input per device."""
    return ring_allgather(nbytes, n, bw, alpha)


def point_to_point(nbytes: float, bw: float, alpha: float = 0.0) -> Comm:
    _check(nbytes, 2, bw)
    return Comm(nbytes / bw, alpha)


_ALLREDUCE = {"ring": ring_allreduce, "tree": tree_allreduce}


@dataclass(frozen=True)
class NcclConstants:
    """Fitted NCCL constants (seconds, fractions, bytes/s): ``base_s`` per call; per protocol
    ``step_s[p]`` per algorithm step and ``eff[p]`` of the link bandwidth; ``coll_eff[c]`` per
    collective; ``nvls_step_s`` per NVLink SHARP step and ``nvls_channel_Bps`` per NVLS channel."""

    base_s: float
    step_s: dict
    eff: dict
    coll_eff: dict
    nvls_step_s: float
    nvls_channel_Bps: float
    out_share: float = 0.0   # w, the output share (module docstring)

    def __post_init__(self):
        for p in PROTOCOLS:
            if p not in self.step_s or p not in self.eff:
                raise ValueError(f"NCCL constants: protocol {p} missing")
            if not (self.step_s[p] >= 0 and 0 < self.eff[p] <= 1):
                raise ValueError(f"NCCL constants: {p} needs step >= 0 and efficiency in (0, 1]")
        for c in COLLECTIVES:
            if not 0 < self.coll_eff.get(c, 0) <= 1:
                raise ValueError(f"NCCL constants: collective factor of {c} must be in (0, 1]")
        if not (self.base_s >= 0 and self.nvls_step_s >= 0 and self.nvls_channel_Bps > 0
                and self.out_share >= 0):
            raise ValueError("NCCL constants: base, NVLS step, output share >= 0, NVLS channel rate > 0")


def constants_from(doc: dict) -> NcclConstants:
    """``NcclConstants`` from the constants file's dict (microseconds to seconds)."""
    pr = doc["protocols"]
    return NcclConstants(base_s=doc["base_us"] * 1e-6,
                         step_s={p: pr[p]["step_us"] * 1e-6 for p in PROTOCOLS},
                         eff={p: pr[p]["efficiency"] for p in PROTOCOLS},
                         coll_eff=dict(doc["collective_efficiency"]),
                         nvls_step_s=doc["nvls"]["step_us"] * 1e-6,
                         nvls_channel_Bps=doc["nvls"]["channel_gbs"] * 1e9,
                         out_share=doc["output_share"])


class Choice(NamedTuple):
    """An NCCL-model call: its time and the algorithm and protocol that give it."""

    comm: Comm
    algorithm: str
    protocol: str


def candidates(collective: str, n: int, *, nvls: bool = False, tree: bool = False):
    """``(algorithm, protocol, steps, F)`` of every way the model may run ``collective`` on
    ``n`` devices (the table in the module docstring; NVLS only for ``n > 2``)."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}")
    out = []
    if collective == "all_reduce":
        algs = [("ring", 2 * (n - 1), 2 * (n - 1) / n)]
        if tree:
            algs.append(("tree", 2 * math.ceil(math.log2(n)), 2.0))
    else:
        algs = [("ring", n - 1, (n - 1) / n)]
    for alg, steps, f in algs:
        out += [(alg, p, steps, f) for p in PROTOCOLS]
    if nvls and collective == "all_reduce" and n > 2:
        out.append(("nvls", "Simple", 2, 1.0))
    return out


def nccl(collective: str, nbytes: float, n: int, bw: float, k: NcclConstants, *,
         nvls_channels: int = 0, tree: bool = False, extra_step_s: float = 0.0,
         base: bool = True) -> Choice:
    """The least time over ``candidates`` (module docstring): ``base + steps * (step + extra_step_s)
    + (F + w * out) * nbytes / (bw * eff * c)``, NVLS ``(F + w * out) * nbytes / min(bw, nvls_channels
    * nvls_channel_Bps)``
    (``nvls_channels`` 0: no NVLS); ``extra_step_s`` adds a link's own per-hop latency;
    ``base=False`` leaves out the per-call cost (a later phase of one call)."""
    _check(nbytes, n, bw)
    if n == 1:
        return Choice(ZERO, "none", "none")
    best = None
    c = k.coll_eff[collective]
    out = k.out_share / n if collective == "reduce_scatter" else k.out_share
    for alg, proto, steps, f in candidates(collective, n, nvls=nvls_channels > 0, tree=tree):
        if alg == "nvls":
            step, rate = k.nvls_step_s, min(bw, nvls_channels * k.nvls_channel_Bps)
        else:
            step, rate = k.step_s[proto], bw * k.eff[proto] * c
        comm = Comm((f + out) * nbytes / rate, (k.base_s if base else 0.0) + steps * (step + extra_step_s))
        if best is None or comm.total < best.comm.total:
            best = Choice(comm, alg, proto)
    return best


@dataclass(frozen=True)
class Level:
    """One level of a fabric: a link's bytes/s per direction and seconds per message, after the
    achieved fraction of its bandwidth (``efficiency``) and any fitted per-message latency."""

    bw: float
    alpha: float
    name: str = ""
    nvls_channels: int = 0   # NVLink SHARP in the switch: NCCL's NVLS channels (0: none)
    ring: tuple = ()         # (n, bytes/s) where a ring over n devices has a slower bottleneck

    def ring_bw(self, n: int) -> float:
        """Bytes/s per direction of a ring over ``n`` devices of this level: the ``ring`` entry
        for ``n`` (a PCIe node's ring that crosses its host path), else ``bw``."""
        return dict(self.ring).get(n, self.bw)

    @classmethod
    def of(cls, link, efficiency: float = 1.0, alpha_s: float | None = None,
           nvls_channels: int = 0) -> "Level":
        """From a ``hardware_db.links.NetworkLink``: its bandwidth x ``efficiency``, its
        latency (or ``alpha_s`` when given; 0 where the link states none)."""
        if not 0 < efficiency <= 1:
            raise ValueError(f"link efficiency must be in (0, 1], got {efficiency!r}")
        return cls(link.bytes_per_s * efficiency,
                   link.latency_s if alpha_s is None else alpha_s, link.id, nvls_channels)


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
        if self.algorithm == "nccl":
            return nccl(collective, nbytes, n, bw, self.constants,
                        nvls_channels=0 if between_nodes else level.nvls_channels,
                        tree=between_nodes, extra_step_s=level.alpha, base=base).comm
        if collective == "all_reduce":
            return _ALLREDUCE[self.algorithm](nbytes, n, bw, level.alpha)
        return ring_allgather(nbytes, n, bw, level.alpha)

    def allreduce(self, nbytes: float, n: int) -> Comm:
        g, k = self.split(n)
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
        g, k = self.split(n)
        if k == 1:
            inside = g > 1 and self.intra is not None
            level = self.intra if inside else self.inter
            return self._one("all_gather", nbytes, g, level, level.ring_bw(g), not inside)
        if g == 1:   # one device per node: the network alone
            return self._one("all_gather", nbytes, k, self.inter, self.inter.bw, True)
        return (self._one("all_gather", nbytes / k, g, self.intra, self.intra.ring_bw(g), False)
                + self._one("all_gather", nbytes, k, self.inter, self._net_bw(g), True, base=False))

    def reduce_scatter(self, nbytes: float, n: int) -> Comm:
        """``nbytes``: the input per device. Over nodes: reduce-scatter inside each node, then
        of the node's ``nbytes/g`` shard among the nodes on each device's network share (the
        mirror of ``allgather``)."""
        g, k = self.split(n)
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
        (an upper bound: they may overlap). With ``algorithm="nccl"`` each exchange is a
        Simple-protocol send/receive (NCCL runs all-to-all as grouped sends and receives: the
        Simple efficiency and step per peer, like ``p2p``) plus one per-call cost and the output
        share of its ``nbytes`` of output on the first part's link."""
        g, k = self.split(n)
        if n == 1:
            return ZERO
        parts = []
        if k == 1:
            inside = g > 1 and self.intra is not None and self.per_node > 1
            parts.append((self.intra if inside else self.inter, n - 1, None))
        else:
            if g > 1:
                parts.append((self.intra, g - 1, None))
            parts.append((self.inter, n - g, self._net_bw(g)))
        total = ZERO
        for level, peers, bw in parts:
            bw = level.bw if bw is None else bw
            if self.algorithm == "nccl":
                k_ = self.constants
                total = total + Comm(peers / n * nbytes / (bw * k_.eff["Simple"]),
                                     peers * (k_.step_s["Simple"] + level.alpha))
            else:
                total = total + Comm(peers / n * nbytes / bw, peers * level.alpha)
        if self.algorithm == "nccl":
            k_, lv = self.constants, parts[0][0]
            total = total + Comm(k_.out_share * nbytes / (lv.bw * k_.eff["Simple"]), k_.base_s)
        return total

    def p2p(self, nbytes: float, crosses_node: bool) -> Comm:
        level = self.inter if (crosses_node or self.intra is None) else self.intra
        c = point_to_point(nbytes, level.bw, level.alpha)
        if self.algorithm == "nccl":   # one Simple-protocol step, the output share, the per-call cost
            k = self.constants
            return Comm((1 + k.out_share) * nbytes / (level.bw * k.eff["Simple"]),
                        c.latency_s + k.base_s + k.step_s["Simple"])
        return c
