"""PyTorch's small-index gather on CUDA: an embedding lookup of 16 ids or fewer loops over its ids.

Where it applies: the runtimes whose kernels are PyTorch's own (``softmax_passes.PYTORCH_RUNTIMES``:
``kernel``, ``eager``, ``eager-kernel``, ``eager-op``) on an NVIDIA GPU profile; every other runtime and device gets
no term (``profile_term`` is 0 there and the lowering sets no feature).

Which kernel (``aten/src/ATen/native/cuda/Indexing.cu``, ``index_select_out_cuda_impl``; the same
rule in PyTorch 2.3 and in the releases with the vectorized gather): ``at::embedding`` runs
``index_select(0, ids.reshape(-1))``.  With ``n`` ids (``numIndices``), the output's slice
``D = out numel / n`` elements and every tensor within 32-bit index math (numel < 2**31), ``n <= 16``
runs ``indexSelectSmallIndex`` on a grid of ``min(ceil(D / 128), 8 x SMs)`` blocks of ``min(D, 128)``
threads (``getDefaultMaxThreadsPerBlock``: 128 on CUDA).  Each thread loops over all ``n`` ids in
order; for each it loads the id, then strides over the slice by grid x block, one element per step:
``n x ceil(D / (grid x block))`` steps, each a load of an id and a dependent load of a table element
(the element's dtype does not change the count: the kernel copies one element per step whatever its
size).  Larger ``n`` run a kernel whose threads each take about one element of the whole output
(``indexSelectLargeIndex`` before the vectorized gather, ``gather_out`` since): no serial loop.

The term: a kernel's floor (fitted on kernels of one step per thread) holds one such step; the
small-index kernel adds ``steps - 1`` more, one after the other::

    index_loop_s = max(n x ceil(D / (grid x block)) - 1, 0) x ITER_CYCLES / clock_hz

added to the kernel's memory time (a latency chain, not bandwidth).  ``ITER_CYCLES`` is the one
constant, fitted on public non-H100 rows only: ``bench/small_index_slope.py``, the least-squares
slope of vidur's fp16 embedding kernel times (torch 2.2/2.3, in-model profiler kernel sums) over
M = 1 ... 16 ids on the A100-80GB (40 rows: 0.7272 us per id x 1.41 GHz = 1025 cycles) and the
A40 (30 rows: 0.5576 us x 1.74 GHz = 970 cycles), their mean (998).  The two devices agree within
6 % in cycles (their
DRAM differs: HBM2e and GDDR6), which is why the step is counted in cycles of the SM clock.
Whether the table rows come from the L2 or DRAM is not resolved: vidur's rows reuse their inputs
across repeats.
"""

from __future__ import annotations

from analyzer.errors import AnalyzerError

ONNX_DOMAINS = ("", "ai.onnx")

SMALL_INDEX_MAX_IDS = 16          # index_select_out_cuda_impl: numIndices <= 16
BLOCK_THREADS = 128               # getDefaultMaxThreadsPerBlock (CUDA)
BLOCKS_PER_SM = 8                 # the grid's cap: multiProcessorCount * 8
INDEX_MATH_LIMIT = 2 ** 31        # canUse32BitIndexMath: a tensor of fewer elements
ITER_CYCLES = 998.0               # cycles per step; fitted: bench/small_index_slope.py (module docstring)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def steps(n_ids: int, slice_elems: int, units: int) -> int:
    """Steps one thread of ``indexSelectSmallIndex`` takes: ``n_ids x ceil(D / (grid x block))``
    with ``grid = min(ceil(D / 128), 8 x units)`` (``units`` 0, unknown: no cap) and ``block =
    min(D, 128)``; 0 where PyTorch runs another kernel (more than 16 ids, none, an empty slice)."""
    if not 1 <= n_ids <= SMALL_INDEX_MAX_IDS or slice_elems < 1:
        return 0
    grid = ceil_div(slice_elems, BLOCK_THREADS)
    if units > 0:
        grid = min(grid, BLOCKS_PER_SM * units)
    return n_ids * ceil_div(slice_elems, grid * min(slice_elems, BLOCK_THREADS))


def loop_s(xp, ids, slice_elems, units, iter_s):
    """``index_loop_s`` per kernel, array code (``efficiency.kernel_time``): ``max(steps - 1, 0) x
    iter_s`` with ``steps`` as ``steps`` counts them (``ids`` 0 or over 16: not a small-index kernel, 0 s;
    ``units`` 0: no grid cap; ``iter_s``: ``profile_term``)."""
    on = (ids >= 1) & (ids <= SMALL_INDEX_MAX_IDS) & (slice_elems >= 1)
    d = xp.where(on, slice_elems, 1.0)
    grid = xp.ceil(d / BLOCK_THREADS)
    grid = xp.where(units > 0, xp.minimum(grid, BLOCKS_PER_SM * units), grid)
    n = ids * xp.ceil(d / (grid * xp.minimum(d, float(BLOCK_THREADS))))
    return xp.where(on, xp.maximum(n - 1.0, 0.0) * xp.asarray(iter_s), 0.0)


def node_ids(n) -> tuple[float, float]:
    """(ids, slice elements) of node ``n`` (a ``NodeCost``) where PyTorch runs it as
    ``index_select`` (module docstring): an ONNX Gather whose indices are a vector or a scalar
    (``index_select`` on its axis) or whose shapes are those of a lookup on axis 0 (an embedding:
    ids flattened), 1 id or more, data and output under 2**31 elements; else (0, 0).  The
    small-index kernel is the 1 to 16 ids of them (``loop_s``); ``gather_latency`` prices both."""
    if n.op != "Gather" or n.domain not in ONNX_DOMAINS or len(n.in_specs) < 2 or not n.out_specs:
        return 0.0, 0.0
    data, ids, out = n.in_specs[0], n.in_specs[1], n.out_specs[0]
    if any(s is None or s.shape is None for s in (data, ids, out)):
        return 0.0, 0.0
    try:
        count, total, table = ids.numel(), out.numel(), data.numel()
    except AnalyzerError:   # a symbolic dim (unbound): no kernel to price
        return 0.0, 0.0
    if len(ids.shape) > 1 and tuple(out.shape) != tuple(ids.shape) + tuple(data.shape[1:]):
        return 0.0, 0.0
    if count < 1 or max(table, total) >= INDEX_MATH_LIMIT or total % count:
        return 0.0, 0.0
    return float(count), float(total // count)


def kernel_pair(pairs) -> tuple[float, float]:
    """(ids, slice elements) of one kernel of a PyTorch runtime: its member's ``node_ids``
    (``pairs``: one per member) where it has one member, else (0, 0)."""
    return pairs[0] if len(pairs) == 1 else (0.0, 0.0)


def profile_term(prof, clock_hz: float) -> float:
    """Seconds per step on ``prof`` (``ITER_CYCLES / clock_hz``) where it runs PyTorch's CUDA
    kernels (an NVIDIA GPU) and a clock is known; else 0 (no term)."""
    family = getattr(prof, "family", "") or ""
    if getattr(prof, "kind", "") != "gpu" or not family.startswith("nvidia-") or not clock_hz or clock_hz <= 0:
        return 0.0
    return ITER_CYCLES / float(clock_hz)
