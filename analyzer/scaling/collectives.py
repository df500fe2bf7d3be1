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

Two levels of links (nodes over a network): ``analyzer.scaling.fabric``.

NCCL's cost inside one node (``nccl``; constants ``NcclConstants`` fitted on nccl-tests runs
inside NVSwitch nodes, file ``hardware_db/collectives/nccl.json``): each call costs the least,
over the algorithms and protocols NCCL can run there, of

    base  +  steps(algorithm, n) * step(protocol)  +  (F(algorithm, n) + w * out) * nbytes / (bw * eff(protocol) * c)

    algorithm  collective   steps          F (bytes each device moves / nbytes)
    ring       all-reduce   2(n-1)         2(n-1)/n
    ring       all-gather   n-1            (n-1)/n     (reduce-scatter the same)
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

NVLS moves its ``(F + w * out) * nbytes`` at ``bw * nvls_efficiency``, the node's per-architecture
fraction of the NVLink figure (NCCL's own cost model's factor: Hopper 0.85, Blackwell 0.74;
``hardware_db/links/nodes.toml``); its step is fitted.

``base`` is a property of the run (the host's launch and synchronisation path, the driver), not
of the GPUs or links: the fit gives each measured system its own and ships their median.

Between nodes no measurement fits these constants (the nccl-tests rows are one node each), so
none is carried there. With NCCL's own cost-model constants (``NcclTuning``, from NCCL's
``src/graph/tuning.cc``; ``hardware_db/collectives/nccl_tuning.json``) a call over ``k >= 2``
nodes of ``g`` devices is priced as NCCL structures it (``across_nodes``): one ring through all
``n = g k`` ranks, its channels spread over the node's network cards, so its bus bandwidth is its
slowest hop ``min(B, V)`` (``B`` the node's network bandwidth per direction, ``V`` the ring's link
inside the node); for all-reduce also NCCL's tree, a pipelined double binary tree between nodes
with a chain inside each, whichever NCCL's model makes least:

    ring  lat = base_ring[p] + (steps - s_net) * max(hw_intra_ring[p], o[p]) + s_net * hw_net_ring[p]
          bw  = F(n) * nbytes / (min(B, V) * r[p])
          steps = 2(n-1), s_net = min(2k, steps) (all-reduce); n-1, k-1 (all-gather, reduce-scatter)
    tree  lat = base_tree[p] + 2 * ((g-1) * hw_intra_tree[p] + floor(log2 k) * hw_net_tree[p])
          bw  = nbytes * max(c_k / B, 1 / V) / (q * q[p]),  c_k = 1 for k = 2, 2 for k >= 3

``o``: NCCL's network post overhead (1 us, x3 for Simple); ``r[p]``, ``q``, ``q[p]``: NCCL's
bandwidth factors (ring per protocol; tree, and tree per protocol); ``V`` is not a hop for
``g = 1``. NCCL's per-channel caps, its ring plateau and its tree correction per size need the
channel count, which is not on record: left out. ``s_net``: NCCL counts ``2k`` network steps
for an all-reduce; with one rank per node that exceeds the ring's steps, hence the ``min``.
``c_k``: the bytes each node's network moves per direction per byte of message in a double
binary tree: with two nodes each is the root of one tree and a leaf of
the other (one message each way); from three on a node is an interior with two children in one
tree (two messages each way; NCCL's own tree ratio 0.5). Without ``NcclTuning`` (``network``): the
link's datasheet bandwidth and latency in the unfitted ring (all-reduce also the pipelined tree,
``2 * nbytes/bw + 2 ceil(log2 n) * alpha``, where it is less), plus the per-call ``base`` once.
The shipped constants (``constants_from(doc)`` without a tuning dict) take ``network``: the NCCL
form was scored on public multi-node nccl-tests tables and not adopted (docs/accuracy.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

ALGORITHMS = ("nccl", "ring", "tree")   # the Fabric's collective models
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


@dataclass(frozen=True)
class NcclConstants:
    """Fitted NCCL constants (seconds, fractions, bytes/s): ``base_s`` per call; per protocol
    ``step_s[p]`` per algorithm step and ``eff[p]`` of the link bandwidth; ``coll_eff[c]`` per
    collective; ``nvls_step_s`` per NVLink SHARP step."""

    base_s: float
    step_s: dict
    eff: dict
    coll_eff: dict
    nvls_step_s: float
    out_share: float = 0.0   # w, the output share (module docstring)
    tuning: "NcclTuning | None" = None   # NCCL's cost model for calls that span nodes

    def __post_init__(self):
        for p in PROTOCOLS:
            if p not in self.step_s or p not in self.eff:
                raise ValueError(f"NCCL constants: protocol {p} missing")
            if not (self.step_s[p] >= 0 and 0 < self.eff[p] <= 1):
                raise ValueError(f"NCCL constants: {p} needs step >= 0 and efficiency in (0, 1]")
        for c in COLLECTIVES:
            if not 0 < self.coll_eff.get(c, 0) <= 1:
                raise ValueError(f"NCCL constants: collective factor of {c} must be in (0, 1]")
        if not (self.base_s >= 0 and self.nvls_step_s >= 0 and self.out_share >= 0):
            raise ValueError("NCCL constants: base, NVLS step and output share must be >= 0")


def constants_from(doc: dict, tuning: dict | None = None) -> NcclConstants:
    """``NcclConstants`` from the constants file's dict (microseconds to seconds), with NCCL's
    cost model across nodes from ``tuning`` (the tuning file's dict) when given."""
    pr = doc["protocols"]
    return NcclConstants(base_s=doc["base_us"] * 1e-6,
                         step_s={p: pr[p]["step_us"] * 1e-6 for p in PROTOCOLS},
                         eff={p: pr[p]["efficiency"] for p in PROTOCOLS},
                         coll_eff=dict(doc["collective_efficiency"]),
                         nvls_step_s=doc["nvls"]["step_us"] * 1e-6,
                         out_share=doc["output_share"],
                         tuning=tuning_from(tuning) if tuning is not None else None)


@dataclass(frozen=True)
class NcclTuning:
    """NCCL's cost-model constants (``src/graph/tuning.cc``; seconds and fractions): ``base_s``
    and ``hw_s`` keyed ``(algorithm, protocol)`` and ``(hw, algorithm, protocol)`` with hw one of
    nvlink, pci, net; ``overhead_s[p]`` the network post overhead per protocol; ``ring_bw[p]``,
    ``tree_bw`` and ``tree_proto_bw[p]`` the bandwidth factors."""

    base_s: dict
    hw_s: dict
    overhead_s: dict
    ring_bw: dict
    tree_bw: float
    tree_proto_bw: dict


def tuning_from(doc: dict) -> NcclTuning:
    """``NcclTuning`` from the tuning file's dict (microseconds to seconds)."""
    algs, hws = ("ring", "tree"), ("nvlink", "pci", "net")
    o = doc["net_overhead_us"] * 1e-6
    return NcclTuning(
        base_s={(a, p): doc["base_us"][a][p] * 1e-6 for a in algs for p in PROTOCOLS},
        hw_s={(h, a, p): doc["hw_us"][h][a][p] * 1e-6 for h in hws for a in algs for p in PROTOCOLS},
        overhead_s={p: o * (doc["net_overhead_simple_factor"] if p == "Simple" else 1.0)
                    for p in PROTOCOLS},
        ring_bw=dict(doc["ring_bw_factor"]), tree_bw=doc["tree_bw_factor"],
        tree_proto_bw=dict(doc["tree_protocol_bw_factor"]))


class Choice(NamedTuple):
    """An NCCL-model call: its time and the algorithm and protocol that give it."""

    comm: Comm
    algorithm: str
    protocol: str


def candidates(collective: str, n: int, *, nvls: bool = False):
    """``(algorithm, protocol, steps, F)`` of every way the model may run ``collective`` on
    ``n`` devices inside one node (the table in the module docstring; NVLS only for ``n > 2``)."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}")
    steps, f = (2 * (n - 1), 2 * (n - 1) / n) if collective == "all_reduce" else (n - 1, (n - 1) / n)
    out = [("ring", p, steps, f) for p in PROTOCOLS]
    if nvls and collective == "all_reduce" and n > 2:
        out.append(("nvls", "Simple", 2, 1.0))
    return out


def nccl(collective: str, nbytes: float, n: int, bw: float, k: NcclConstants, *,
         nvls_efficiency: float = 0.0, base: bool = True) -> Choice:
    """Inside one node, the least time over ``candidates`` (module docstring): ``base + steps *
    step + (F + w * out) * nbytes / (bw * eff * c)``, NVLS ``(F + w * out) * nbytes / (bw *
    nvls_efficiency)`` (``nvls_efficiency`` 0: no NVLS); the fitted step
    holds the link's own per-hop latency. ``base=False`` leaves out the per-call cost (a later
    phase of one call)."""
    _check(nbytes, n, bw)
    if n == 1:
        return Choice(ZERO, "none", "none")
    best = None
    c = k.coll_eff[collective]
    out = k.out_share / n if collective == "reduce_scatter" else k.out_share
    if not 0 <= nvls_efficiency <= 1:
        raise ValueError(f"NVLS efficiency must be in [0, 1], got {nvls_efficiency!r}")
    for alg, proto, steps, f in candidates(collective, n, nvls=nvls_efficiency > 0):
        if alg == "nvls":
            step, rate = k.nvls_step_s, bw * nvls_efficiency
        else:
            step, rate = k.step_s[proto], bw * k.eff[proto] * c
        comm = Comm((f + out) * nbytes / rate, (k.base_s if base else 0.0) + steps * step)
        if best is None or comm.total < best.comm.total:
            best = Choice(comm, alg, proto)
    return best


def network(collective: str, nbytes: float, n: int, bw: float, alpha: float = 0.0,
            base_s: float = 0.0) -> Choice:
    """Between nodes under the NCCL model: the unfitted closed forms on the link's bytes/s per
    direction ``bw`` and per-message latency ``alpha``, plus ``base_s`` (the per-call cost; 0 for
    a later phase of one call). all-reduce: the less of the ring ``2(n-1)/n * nbytes/bw + 2(n-1)
    * alpha`` and NCCL's pipelined double binary tree ``2 * nbytes/bw + 2 ceil(log2 n) * alpha``;
    all-gather and reduce-scatter: the ring ``(n-1)/n * nbytes/bw + (n-1) * alpha``. No fitted
    step, protocol efficiency or output share: those were fitted on NVLink rows inside a node."""
    _check(nbytes, n, bw)
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}")
    if n == 1:
        return Choice(ZERO, "none", "none")
    if collective != "all_reduce":
        return Choice(ring_allgather(nbytes, n, bw, alpha) + (0.0, base_s), "ring", "unfitted")
    ring = ring_allreduce(nbytes, n, bw, alpha)
    levels = 2 * math.ceil(math.log2(n))
    tree = Comm(2 * nbytes / bw, levels * alpha)
    best = ("ring", ring) if ring.total <= tree.total else ("tree", tree)
    return Choice(best[1] + (0.0, base_s), best[0], "unfitted")


def ring_across_nodes(collective: str, nbytes: float, g: int, k: int, bw: float, t: NcclTuning,
                 hw: str):
    """NCCL's ring over ``g * k`` ranks on ``k`` nodes, per protocol: ``(protocol, Comm)``."""
    n = g * k
    if collective == "all_reduce":
        steps, f, s_net = 2 * (n - 1), 2 * (n - 1) / n, min(2 * k, 2 * (n - 1))
    else:
        steps, f, s_net = n - 1, (n - 1) / n, k - 1
    for p in PROTOCOLS:
        intra = max(t.hw_s[(hw, "ring", p)], t.overhead_s[p])
        lat = t.base_s[("ring", p)] + (steps - s_net) * intra + s_net * t.hw_s[("net", "ring", p)]
        yield p, Comm(f * nbytes / (bw * t.ring_bw[p]), lat)


def tree_across_nodes(nbytes: float, g: int, k: int, net_bw: float, intra_bw: float, t: NcclTuning,
                 hw: str):
    """NCCL's tree all-reduce on ``k`` nodes of ``g`` ranks, per protocol: ``(protocol, Comm)``."""
    per_byte = max((1 if k == 2 else 2) / net_bw, 1 / intra_bw if g > 1 else 0.0)
    for p in PROTOCOLS:
        lat = t.base_s[("tree", p)] + 2 * ((g - 1) * t.hw_s[(hw, "tree", p)]
                                            + math.floor(math.log2(k)) * t.hw_s[("net", "tree", p)])
        yield p, Comm(nbytes * per_byte / (t.tree_bw * t.tree_proto_bw[p]), lat)


def across_nodes(collective: str, nbytes: float, g: int, k: int, net_bw: float,
                 intra_bw: float, t: NcclTuning, *, intra_hw: str = "nvlink") -> Choice:
    """A call over ``k >= 2`` nodes of ``g`` ranks under NCCL's cost model (module docstring):
    the least over the ring (all three collectives) and, for all-reduce, the tree, per protocol.
    ``net_bw``: the node's network bytes/s per direction; ``intra_bw``: the ring's link inside a
    node (unused for ``g = 1``); ``intra_hw``: ``nvlink`` or ``pci`` (NCCL's hardware class of
    the link inside a node). ``nbytes`` as in the ring forms (all-gather: the output)."""
    if collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}")
    if k < 2 or g < 1:
        raise ValueError(f"across_nodes needs k >= 2 nodes and g >= 1 ranks each, got {k}, {g}")
    _check(nbytes, g * k, net_bw)
    if g > 1 and not intra_bw > 0:
        raise ValueError(f"intra-node bandwidth must be > 0 bytes/s, got {intra_bw!r}")
    bw = min(net_bw, intra_bw) if g > 1 else net_bw
    ways = [("ring", p, c) for p, c in ring_across_nodes(collective, nbytes, g, k, bw, t, intra_hw)]
    if collective == "all_reduce":
        ways += [("tree", p, c) for p, c in tree_across_nodes(nbytes, g, k, net_bw, intra_bw, t, intra_hw)]
    alg, proto, comm = min(ways, key=lambda w: w[2].total)
    return Choice(comm, alg, proto)
