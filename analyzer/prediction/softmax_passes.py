"""PyTorch's CUDA softmax over long rows: the passes of ``cunn_SoftMaxForward`` and where its
re-reads are served.

Where it applies: the runtimes whose kernels are PyTorch's own (``PYTORCH_RUNTIMES``: ``kernel``,
``eager``, ``eager-kernel``, ``eager-op``) on an NVIDIA GPU profile (kind ``gpu``, an ``nvidia-`` family).  No
other runtime (``xla``, ``onnxruntime``, ...) or device runs these kernels: their kernels carry
no re-read bytes, and a non-NVIDIA profile's lowering switches them off (``profile_terms``).

Which kernel (``aten/src/ATen/native/cuda/SoftMax.cu``, ``host_softmax``, softmax and
log_softmax over the last dimension, rows of ``L`` elements of ``itemsize`` bytes, beyond the
warp kernel's ``op_classes.SOFTMAX_WARP_ROW``): the block is ``SoftMaxForward_getBlockSize(L)``
= min(L, 1024) rounded up to a multiple of 32 threads, 1024 for every such row.  The row stays
on chip and is read once from global memory in registers (``cunn_SoftMaxForwardReg``:
ceil(L / 1024) < 10, L <= 9216) or in shared memory (``cunn_SoftMaxForwardSmem``: L x itemsize
below the block's shared memory, sharedMemPerBlock = 48 KiB without the opt-in, CUDA C++
Programming Guide's technical specifications, less the 32 warps x 4 B reduction scratch, and L a
multiple of the 16-byte vector, 16 / itemsize elements).  Any other row runs
``cunn_SoftMaxForward``: a max pass and a sum-of-exps pass over the row in global memory, then a
pass that reads it again and writes the output: 3 reads + 1 write where the count has 1 + 1, so
the kernel re-reads ``2 x`` its input's bytes (``reread_bytes``).

Where the re-reads are served: one block per row, ``BLOCK_THREADS`` threads, shared memory only
for the reduction, so an SM holds at most ``threads per SM // 1024`` of them
(``THREADS_PER_SM``: the maximum resident threads per SM of the family's compute capability,
CUDA C++ Programming Guide, technical specifications; registers may allow fewer: the figure is
an upper bound, so the test below is conservative).  The rows in flight, SMs x resident blocks x
row bytes, are re-read while still in the L2 when they fit it: ``row_bytes <= l2_row`` with
``l2_row = L2 bytes / (SMs x resident blocks)``; else the re-reads come from DRAM.  L2-served
bytes are priced by the efficiency model's cache rule (``efficiency.kernel_time``: bytes that skip
DRAM cost only the per-SM term); DRAM-served ones as DRAM bytes.  The flush of a cold L2
(``l2_state``: cold) happens before the kernel, not between its passes: re-reads that fit are
L2-served in either state.  ``l2_row = 0`` (unknown L2 or SM count): DRAM.
"""

from __future__ import annotations

from analyzer.counting import kernel_words
from analyzer.prediction.efficiency import op_classes as eff

PYTORCH_RUNTIMES = frozenset({"kernel", "eager", "eager-op", "eager-kernel"})
REG_ROW = 9 * 1024                 # cunn_SoftMaxForwardReg: ceil(L / 1024) < 10
SMEM_BYTES = 48 * 1024 - 32 * 4    # sharedMemPerBlock less the reduction scratch (1024 / 32 warps x 4 B)
VECTOR_BYTES = 16                  # the smem kernel's aligned vector (float4)
BLOCK_THREADS = 1024               # SoftMaxForward_getBlockSize for L > 1024
# maximum resident threads per SM by compute capability (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability"): 3.x, 5.x, 6.x, 7.0, 8.0, 9.0, 10.0: 2048; 7.5: 1024;
# 8.6, 8.9, 12.0: 1536.  A family that spans capabilities takes the largest (Blackwell: sm_100
# 2048, sm_120 1536), an upper bound on the rows in flight.
THREADS_PER_SM = {"nvidia-kepler": 2048, "nvidia-maxwell": 2048, "nvidia-pascal": 2048, "nvidia-volta": 2048,
                  "nvidia-turing": 1024, "nvidia-ampere": 2048, "nvidia-ampere-ga10x": 1536, "nvidia-ada": 1536,
                  "nvidia-hopper": 2048, "nvidia-blackwell": 2048}
THREADS_PER_SM_DEFAULT = 2048      # an NVIDIA family not listed: the largest of any capability
_BLOCK = frozenset(eff.CLASS_CODE[c] for c in ("softmax_block", "softmax_block_row"))   # (its row class: one kernel)


def rereads(length: int, itemsize: int) -> bool:
    """Whether PyTorch's CUDA softmax over contiguous rows of ``length`` elements of
    ``itemsize`` bytes runs ``cunn_SoftMaxForward`` (reads each row three times; module
    docstring).  Rows of the warp kernel (``SOFTMAX_WARP_ROW`` or shorter) do not."""
    if length <= max(REG_ROW, eff.SOFTMAX_WARP_ROW) or itemsize <= 0:
        return False
    vector = max(VECTOR_BYTES // itemsize, 1)
    return not (length * itemsize < SMEM_BYTES and length % vector == 0)


def node_rereads(n, fn) -> tuple[float, float]:
    """(re-read bytes per launch, row bytes) of node ``n`` (a ``NodeCost``; ``fn`` its
    ``FusionNode``, bytes under the lowering's precision) if PyTorch's CUDA kernels run it as
    ``cunn_SoftMaxForward`` (``rereads``), else (0, 0): 2 x its first input's bytes and the
    bytes of one row of ``length`` elements (its rule's ``row=`` word)."""
    if fn.op_class != "softmax_block" or not fn.input_bytes or not n.in_specs or n.in_specs[0] is None:
        return 0.0, 0.0
    elements = n.in_specs[0].numel() if n.in_specs[0].shape is not None else 0
    row = kernel_words.value(n.kernel, "row")
    if not elements or row is None:
        return 0.0, 0.0
    length, itemsize = int(row), fn.input_bytes[0] // elements
    if not rereads(length, itemsize):
        return 0.0, 0.0
    return 2.0 * fn.input_bytes[0], float(length * itemsize)


def per_node(nodes, fnodes) -> dict[int, tuple[float, float]]:
    """node index -> ``node_rereads`` of the nodes of class ``softmax_block`` that have re-reads."""
    out = {}
    for i, fn in enumerate(fnodes):
        if fn.op_class == "softmax_block":
            got = node_rereads(nodes[i], fn)
            if got[0]:
                out[i] = got
    return out


def kernel_features(runtime_name: str, cls_codes, members, per_node) -> tuple[list[float], list[float]]:
    """([K] re-read bytes per launch, [K] row bytes) of a plan's kernels (``kernel_pair`` of each;
    ``per_node``: node index -> its ``node_rereads``, for the nodes that have one)."""
    reread, row = [0.0] * len(members), [0.0] * len(members)
    if runtime_name not in PYTORCH_RUNTIMES or not per_node:
        return reread, row
    for k, m in enumerate(members):
        if m[0] in per_node:
            reread[k], row[k] = kernel_pair(runtime_name, cls_codes[k], [per_node.get(i, (0.0, 0.0)) for i in m])
    return reread, row


def kernel_pair(runtime_name: str, cls_code: int, pairs) -> tuple[float, float]:
    """(re-read bytes per launch, row bytes) of one kernel: its member's ``node_rereads``
    (``pairs``: one per member) where it is one member of class ``softmax_block`` (or its row class) run
    by a PyTorch runtime; else (0, 0)."""
    if runtime_name in PYTORCH_RUNTIMES and len(pairs) == 1 and cls_code in _BLOCK:
        return pairs[0]
    return 0.0, 0.0


def profile_terms(prof) -> tuple[float, float]:
    """(``softmax_reread``: 1 where ``prof`` runs PyTorch's CUDA kernels, an NVIDIA GPU, else 0;
    ``softmax_l2_row``: the largest row, bytes, whose rows in flight fit its L2, ``L2 bytes /
    (SMs x resident blocks)``, 0 where the L2 or SM count is unknown).  The profile's own L2
    (``onchip_mb``), whatever L2 state the kernels start in (module docstring)."""
    family = getattr(prof, "family", "") or ""
    if getattr(prof, "kind", "") != "gpu" or not family.startswith("nvidia-"):
        return 0.0, 0.0
    blocks = THREADS_PER_SM.get(family, THREADS_PER_SM_DEFAULT) // BLOCK_THREADS
    units, l2 = float(getattr(prof, "units", 0) or 0), float(getattr(prof, "onchip_mb", 0) or 0) * 1e6
    return 1.0, (l2 / (units * blocks) if units > 0 and l2 > 0 and blocks > 0 else 0.0)


def rereads_of(xp, reread, row_bytes, arrays):
    """(L2-served, DRAM-served) re-read bytes per kernel: ``reread`` x ``softmax_reread`` (the
    profile runs PyTorch's CUDA kernels: 1, else 0), from the L2 where ``row_bytes <=
    softmax_l2_row`` (> 0: the rows in flight fit the L2), else from DRAM (module docstring)."""
    if "softmax_reread" not in arrays:
        return 0.0, 0.0
    rr = reread * xp.asarray(arrays["softmax_reread"])
    l2_row = xp.asarray(arrays.get("softmax_l2_row", 0.0))
    in_l2 = (l2_row > 0) & (row_bytes <= l2_row)
    return xp.where(in_l2, rr, 0.0), xp.where(in_l2, 0.0, rr)


def reread_detail(xp, l2_reread, dram_reread, row_bytes, arrays, ones) -> dict:
    """``rereads_of``' bytes per kernel for ``detail``, with each row's bytes and the profile's
    ``softmax_l2_row`` (``KernelTerms.reread_*``)."""
    return dict(reread_l2_bytes=l2_reread * ones, reread_dram_bytes=dram_reread * ones, reread_row_bytes=row_bytes,
                reread_l2_row=xp.asarray(arrays.get("softmax_l2_row", 0.0)) * ones)
