"""Schedule arithmetic of data and pipeline parallel training: pure functions of per-layer times
(seconds) and byte counts, no Report (``data_parallel`` and ``pipeline`` feed them).

Gradient buckets (PyTorch DDP, Megatron-LM's DDP): the gradients are taken in reverse parameter
order (the order backward produces them) and a bucket is closed as soon as its bytes reach the
cap (the tensor that crosses the cap stays in the bucket); PyTorch's first bucket has its own,
smaller cap. A bucket's collective may start when the backward of the last layer that produces
one of its gradients has finished; the collectives run on one stream, in bucket order:

    start_k = max(ready_k, end_{k-1}),   end_k = start_k + c_k,   exposed = max(0, end_K - T_bwd)

Fully sharded units (ZeRO-3 / FSDP): unit u's parameters are all-gathered before its forward
and again before its backward, the gathers one unit ahead of the compute (prefetch), and its
gradients reduce-scattered after its backward, all on one communication stream in issue order.

Pipeline (p stages, m micro-batches, stage s taking ``t_s`` per micro-batch in one direction,
its outgoing point-to-point send ``x_s`` counted with it, the last stage sending nothing):

    T_dir = sum_s (t_s + x_s) + (m - 1) * max_s (t_s + x_s)

the time of a linear pipeline of uniform micro-batches: the first micro-batch crosses every
stage, the other m - 1 leave at the pace of the slowest. With equal stages and no sends it is
``(m + p - 1) * t``: GPipe and non-interleaved 1F1B alike (1F1B reorders the same work to hold
fewer activations, not to shorten the step). A training step is the forward pass plus the
backward pass, each by this formula.

Interleaved 1F1B (Megatron-LM's virtual pipeline, Narayanan et al. 2021, section 2.2.2): each
device holds ``v`` model chunks (device s: chunks s, s+p, ..., s+(v-1)p of the p*v), ``t_s`` and
``x_s`` now its whole per-micro-batch work and sends over its v chunks. The fill and the drain
move in chunk-sized steps, 1/v of a device's micro-batch:

    T_dir = m * max_s (t_s + x_s) + (sum_s (t_s + x_s) - max_s (t_s + x_s)) / v

which is the formula above at v = 1, and ``(m + (p-1)/v) * t`` for equal stages without sends:
the bubble ``(p-1)/v`` stage times instead of ``p-1`` (its fraction of the step
``(p-1)/(v*m + p-1)``; Megatron's bubble ratio over the ideal time, ``(p-1)/(v*m)``). Each
micro-batch crosses ``p*v - 1`` chunk boundaries each way instead of ``p - 1``.
"""

from __future__ import annotations

import bisect
from fractions import Fraction
from typing import Sequence


def buckets(sizes: Sequence[float], cap: float | None, first_cap: float | None = None) -> list[list[int]]:
    """Indices of ``sizes`` (already in backward order) grouped into buckets: a bucket closes
    once its bytes reach ``cap`` (``first_cap`` for the first bucket); ``cap`` None: one bucket."""
    out: list[list[int]] = []
    cur: list[int] = []
    acc = 0.0
    for i, s in enumerate(sizes):
        cur.append(i)
        acc += s
        limit = first_cap if (not out and first_cap is not None) else cap
        if limit is not None and acc >= limit:
            out.append(cur)
            cur, acc = [], 0.0
    if cur:
        out.append(cur)
    return out


def stream(ready: Sequence[float], durations: Sequence[float], free: float = 0.0) -> list[float]:
    """End times of collectives issued in order on one stream: ``start_k = max(ready_k,
    end_{k-1})`` (``free``: when the stream is first free), ``end_k = start_k + d_k``."""
    ends = []
    for r, d in zip(ready, durations):
        free = max(free, r) + d
        ends.append(free)
    return ends


def exposed_after(ends: Sequence[float], compute_end: float) -> float:
    """``max(0, last end - compute_end)``: what the step waits for after its compute."""
    return max(0.0, (ends[-1] if ends else 0.0) - compute_end)


def sharded_units(fwd: Sequence[float], bwd: Sequence[float], gather: Sequence[float],
                  scatter: Sequence[float]) -> tuple[float, float]:
    """(forward end, backward end) of fully sharded units (ZeRO-3 / FSDP), each phase's clock
    starting at 0. Forward: gather 0 first; unit u's compute starts at ``max(end of u-1, gather_u
    end)``, and gather u+1 is issued when unit u's compute starts (one ahead). Backward, units
    in reverse: the same with the gathers again, then unit u's reduce-scatter issued when its
    backward ends; the backward phase ends when compute and the stream are both done."""
    n = len(fwd)
    if n == 0:
        return 0.0, 0.0
    ag = [0.0] * n
    ag[0] = free = gather[0]
    end = 0.0
    for u in range(n):
        start = max(end, ag[u])
        if u + 1 < n:
            ag[u + 1] = free = max(free, start) + gather[u + 1]
        end = start + fwd[u]
    f_end = end
    ag[n - 1] = free = gather[n - 1]
    end = 0.0
    for u in range(n - 1, -1, -1):
        start = max(end, ag[u])
        if u > 0:
            ag[u - 1] = free = max(free, start) + gather[u - 1]
        end = start + bwd[u]
        free = max(free, end) + scatter[u]
    return f_end, max(end, free)


EXACT_LAYERS = 4096   # above this many layers the partition bisects (see ``partition``)


def partition(costs: Sequence[float], p: int, tail: Sequence[float] | None = None) -> list[int]:
    """Contiguous split of ``costs`` into ``p`` non-empty stages minimising the largest stage
    cost, where a stage ending after item j also pays ``tail[j]`` (its outgoing send; 0 for the
    last stage). Dynamic programme over the split points, ``D[k][j] = min_i max(D[k-1][i],
    S[j] - S[i] + tail[j-1])`` (S: prefix sums), every i tried (exact; O(p n^2), vectorised)
    up to ``EXACT_LAYERS`` items. Beyond, the best i is bisected at the crossing of
    ``D[k-1][i]`` (rising in i when the tails are equal) and ``S[j] - S[i]`` (falling): exact
    for equal tails, close otherwise (O(p n log n)). Returns the p-1 cut positions (stage k is
    items ``cuts[k-1] .. cuts[k]-1``)."""
    import numpy as np

    n = len(costs)
    if not 1 <= p <= n:
        raise ValueError(f"{p} stages need between 1 and {n} layers")
    tail = np.zeros(n) if tail is None else np.asarray(tail, dtype=float)
    end_tail = np.append(tail[:-1], 0.0)   # the last stage sends nothing
    pre = np.concatenate(([0.0], np.cumsum(np.asarray(costs, dtype=float))))
    prev = np.full(n + 1, np.inf)
    prev[1:] = pre[1:] + end_tail          # D[1][j]: items 0..j-1 in one stage
    choice: list[np.ndarray] = []
    for k in range(2, p + 1):
        cur, arg = np.full(n + 1, np.inf), np.zeros(n + 1, dtype=int)
        for j in range(k, n + 1):
            cur[j], arg[j] = _best_split(prev, pre, j, k - 1, end_tail[j - 1], n <= EXACT_LAYERS)
        choice.append(arg)
        prev = cur
    cuts, j = [], n
    for arg in reversed(choice):
        j = int(arg[j])
        cuts.append(j)
    return sorted(cuts)


def _best_split(prev, pre, j: int, lo: int, t: float, exact: bool) -> tuple[float, int]:
    """``min over i in [lo, j-1] of max(prev[i], pre[j] - pre[i] + t)`` and its i."""
    import numpy as np

    if exact:
        v = np.maximum(prev[lo:j], pre[j] - pre[lo:j] + t)
        a = int(np.argmin(v))
        return float(v[a]), lo + a
    keys = range(lo, j)
    pos = bisect.bisect_left(keys, True, key=lambda i: prev[i] >= pre[j] - pre[i] + t)
    best, bi = float("inf"), lo
    for i in (lo + pos - 1, lo + pos):
        if lo <= i < j:
            v = max(prev[i], pre[j] - pre[i] + t)
            if v < best:
                best, bi = v, i
    return best, bi


def pipeline_time(stage: Sequence[float], send: Sequence[float], m: int, v: int = 1) -> float:
    """``m * max_s c_s + (sum_s c_s - max_s c_s) / v`` with ``c_s = t_s + x_s`` (module
    docstring): one direction of ``m`` micro-batches through the devices, ``stage[s]`` and
    ``send[s]`` per micro-batch; ``v`` model chunks per device (1: ``sum_s c_s + (m - 1) *
    max_s c_s``, GPipe and non-interleaved 1F1B)."""
    if m < 1:
        raise ValueError(f"micro-batches must be >= 1, got {m!r}")
    if v < 1:
        raise ValueError(f"virtual stages must be >= 1, got {v!r}")
    per = [t + x for t, x in zip(stage, send)]
    if not per:
        return 0.0
    top = max(per)
    return m * top + (sum(per) - top) / v


def in_flight(p: int, m: int, schedule: str, v: int = 1) -> Fraction:
    """Micro-batches of activations the first device holds at once (in whole-device
    micro-batches): GPipe m (every forward before any backward), 1F1B ``min(p, m)`` (p warm-up
    forwards, then one out per one in), interleaved ``min(m, p + (p-1)/v)``: Megatron's warm-up
    of ``(v-1) p + 2 (p-1)`` chunk forwards on the first device, plus the one in flight, each
    1/v of a device's micro-batch (Korthikanti et al. 2022's factor ``1 + (p-1)/(p v)`` on p)."""
    if schedule == "gpipe":
        return Fraction(m)
    if schedule == "interleaved":
        return min(Fraction(m), p + Fraction(p - 1, v))
    return Fraction(min(p, m))
