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

Between nodes (``network``) no measurement fits or scores these constants (the nccl-tests rows
are one node each), so none is carried there: the link's datasheet bandwidth and latency in the
unfitted ring (all-reduce also NCCL's pipelined tree, ``2 * nbytes/bw + 2 ceil(log2 n) *
alpha``, where it is less), plus the per-call ``base`` once per call.
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


def constants_from(doc: dict) -> NcclConstants:
    """``NcclConstants`` from the constants file's dict (microseconds to seconds)."""
    pr = doc["protocols"]
    return NcclConstants(base_s=doc["base_us"] * 1e-6,
                         step_s={p: pr[p]["step_us"] * 1e-6 for p in PROTOCOLS},
                         eff={p: pr[p]["efficiency"] for p in PROTOCOLS},
                         coll_eff=dict(doc["collective_efficiency"]),
                         nvls_step_s=doc["nvls"]["step_us"] * 1e-6,
                         out_share=doc["output_share"])


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
