"""PyTorch's CUDA gather on Hopper: the id load before the row load (a dependent round trip).

An embedding lookup (``at::embedding`` -> ``index_select(0, ids)``) runs one of two kernels
(``small_index`` says which): ``indexSelectSmallIndex`` for 16 ids or fewer, else, for a row
(``slice``) whose bytes are a multiple of 16 (contiguous, 16-B aligned), the vectorized gather
(``IndexKernelUtils.cu``, ``vectorized_gather_kernel<16>``): a grid of ``ids x ceil(slice bytes /
4096)`` blocks of ``min(256, slice bytes / 16 rounded up to 32)`` threads; each thread loads its
block's id, then one 16-B vector of that table row at an address the id gives, then stores it.
The model prices that kernel as a row copy of the same bytes (the family's ``gather`` class takes
the elementwise set, fitted on adds, whose loads depend on nothing). Two things a copy does not
have, both from the id load that must finish before the row load can issue:

- **One exposed round trip** per kernel (``dep_s``): the first blocks wait for their id before any
  row byte moves; later blocks' id loads overlap other blocks' row loads. Its length is a load's
  latency in the kernel's L2 state: warm, the ids and rows the previous call left in the L2 (an
  L2 hit); cold, the L2 flushed before the kernel (a DRAM access, and whatever else a flush
  leaves cold). ``dep_s = DEP_CYCLES[state] / clock``, added to the memory time of both kernels.
- **A lower streaming rate** (``rate``, the vectorized gather only): each of an SM's resident
  threads (2,048 on Hopper: CUDA's compute-capability 9.0 limit) holds one 16-B load, and for the
  id's share of its residency it holds no row bytes in flight; with Little's law (rate = bytes in
  flight / latency) that stretches the streaming time by ``(L_id + L_row) / L_row``. Fitted as
  one factor ``RATE`` on the memory term (DRAM + per-SM), not derived: the loaded latency
  ``L_row`` is not known (``RATE - 1 = 0.142`` with ``L_id`` the warm 424 cycles puts it near
  3,000 cycles, 1.5 us at 1.98 GHz, a loaded-DRAM figure, not checked).

So, per kernel of ``ids`` ids of ``slice`` elements of ``elem_bytes``::

    memory_s = rate x (dram_s + sm_s) + index_loop_s + dep_s
    rate  = RATE where ids > 16 and slice x elem_bytes % 16 == 0 (the vectorized gather), else 1
    dep_s = DEP_CYCLES[warm | cold] / clock   for every gather kernel (ids >= 1), else 0

Fitted on the H200 SXM's PyTorch embedding rows (``bench/data/hopper_mem/``; docs/accuracy.md
"GPU, the gather on Hopper"; torch 2.11, 98 vectorized-gather cases x warm and cold, 1.98 GHz SM
clock; ``bench/gather_latency_fit.py``):
relative least squares of the measured time less the prediction without these terms on
``[warm / clock, cold / clock, memory_s]``. Chosen by a rule fixed first (leave one id count out:
8.4 % over all 138 cases x both states against 24.1 % without; the latency alone 11.7 %, the rate
alone 20.7 %). The add rows' own residual in the same regression is -250 cycles warm and +776
cold: part of the cold figure is the flushed start every kernel pays that the elementwise set
(fitted warm) lacks, not the id alone.

Where it applies: the ``nvidia-hopper`` family's profiles (H100 SXM/PCIe, H200) under the runtimes
whose kernels are PyTorch's own (``softmax_passes.PYTORCH_RUNTIMES``); not the ``-pytorch2.3``
variants (the 2024 ``index_select``, whose sets were fitted on gather rows and hold their
latency already), not other families (no current-kernel gather rows to fit or check them on).
"""

from __future__ import annotations

from analyzer.prediction import small_index

FAMILIES = ("nvidia-hopper",)      # the family the constants were fitted on (its devices' gathers)
DEP_CYCLES = {"warm": 424.0, "cold": 2241.0}   # one dependent load's latency; fitted (docstring)
RATE = 1.142                       # the vectorized gather's streaming time over a copy's; fitted
VECTOR_BYTES = 16                  # vectorized_gather_kernel<16>: the row's bytes a multiple of 16


def profile_terms(prof, clock_hz: float, cold: bool) -> tuple[float, float]:
    """(``dep_s``, ``rate``) of ``prof``: ``DEP_CYCLES`` of its L2 state (``cold``: flushed) over
    ``clock_hz`` and ``RATE`` on a profile of ``FAMILIES`` with a known clock; else (0, 1)."""
    if getattr(prof, "kind", "") != "gpu" or getattr(prof, "family", "") not in FAMILIES or not clock_hz > 0:
        return 0.0, 1.0
    return DEP_CYCLES["cold" if cold else "warm"] / float(clock_hz), RATE


def memory_s(xp, base, feat, units, elem_bytes, arrays) -> tuple:
    """(memory seconds, {``index_loop_s``, ``gather_dep_s``, ``gather_rate``}) per kernel, array code
    (``efficiency.kernel_time``): ``base`` (DRAM + per-SM seconds) x ``rate`` + ``index_loop_s``
    (``small_index.loop_s``) + ``dep_s`` as the module docstring has them; ``feat(name)``: the
    kernels' ``index_ids`` and ``index_slice`` (``small_index.node_ids``; 0: not a PyTorch gather);
    ``units``: SMs; ``arrays``: the profile's ``index_iter_s``, ``gather_dep_s`` and ``gather_rate``
    (absent: off)."""
    ids, slice_elems = feat("index_ids"), feat("index_slice")
    loop = small_index.loop_s(xp, ids, slice_elems, units, arrays.get("index_iter_s", 0.0))
    gather = (ids >= 1) & (slice_elems >= 1)
    row_bytes = slice_elems * elem_bytes
    vec = gather & (ids > small_index.SMALL_INDEX_MAX_IDS) & (elem_bytes > 0) & (row_bytes % VECTOR_BYTES == 0)
    rate = xp.where(vec, xp.asarray(arrays.get("gather_rate", 1.0)), 1.0)
    dep = xp.where(gather, xp.asarray(arrays.get("gather_dep_s", 0.0)), 0.0)
    zero = xp.zeros_like(base)
    return base * rate + loop + dep, {"index_loop_s": loop + zero, "gather_dep_s": dep + zero,
                                      "gather_rate": rate + zero}
