"""PyTorch's CUDA row kernels (LayerNorm, RMS norm, softmax): a row's serial time, in waves of rows.

Where it applies: the runtimes whose kernels are PyTorch's own (``softmax_passes.PYTORCH_RUNTIMES``:
``kernel``, ``eager``, ``eager-kernel``, ``eager-op``) on an NVIDIA GPU profile whose family file
states row constants (``row_kernels`` in ``hardware_db/efficiency/<family>.json``, or of the nearest
file it inherits: ``bench/hopper_rows.py`` fits ``nvidia-hopper``'s on the H200, all four kinds;
``nvidia-blackwell`` states Hopper's softmax kinds); every other runtime, device, family and kind
gets no term (``pytorch_terms.row_profile_terms`` is 0 there).

Which kernel, from PyTorch's source (one block or one warp walks one row, serially):

- ``layer_norm`` / ``rms_norm``: ``vectorized_layer_norm_kernel`` (``layer_norm_kernel.cu``,
  ``launch_vectorized_layer_norm_kernel``; RMS norm is the same template with ``rms_norm = true``):
  one block of 32 x 4 = 128 threads per row, each thread loading 4 elements (``vec_size``) a step:
  ``ceil(N / 512)`` steps of a row of ``N`` elements.  Runs where ``N`` is a multiple of 4 (the
  vector; the aligned-pointer tests are taken to pass).
- ``softmax_warp``: ``softmax_warp_forward`` (``PersistentSoftmax.cuh``), chosen by ``host_softmax``
  (``SoftMax.cu``) for ``N <= 2048`` and ``N x itemsize <= 8192`` since pytorch/pytorch PR 144679
  (January 2025; 1024 and 4096 before, ``op_classes.SOFTMAX_WARP_ROW``): one warp per row, 4 warps
  (128 threads) a block, each lane walking ``ceil(N / 32)`` elements.
- ``softmax_block``: ``cunn_SoftMaxForwardReg``, a longer row held in registers: one block of
  ``min(N, 1024)`` threads (rounded up to a warp; ``SoftMaxForward_getBlockSize``) per row, each
  thread walking ``ceil(N / 1024)`` elements; ``host_softmax`` takes it where that count
  (``potential_register_count``) is under 10, so for ``N <= 9 x 1024 = 9216``.  A longer row runs
  ``cunn_SoftMaxForwardSmem`` or the multi-pass ``cunn_SoftMaxForward``, which no fitted row
  measured: no kind of this module (its class's set alone).

The term, with ``steps`` as above and the rows one SM holds at once from the launch shape,
``rows_per_sm = (threads per SM // threads per block) x rows per block`` (``THREADS_PER_SM`` of
the family's compute capability, ``softmax_passes``; registers may allow fewer: an upper bound)::

    waves = ceil(M / (SMs x rows_per_sm))
    row_s = waves x (c0 + steps x c_step) / clock                  (c0, c_step: cycles, per kind)
    memory_s = memory_s + row_s     (overlap 0: the row's latency adds to the stream)
               max(memory_s, row_s) (overlap 1: the stream hides under the rows' latency, or not)

(``kernel_time``: ``row_s`` in ``KernelTerms``; ``--explain`` prints it as the memory line's
``rows``).  The constants are in cycles of the SM clock, so they move with the device's clock and
SM count; the combination is per kind (chosen by leave-one-N-out on the fit's rows,
``bench/hopper_rows.py``).  The sets fitted with the term are a family's row classes
(``op_classes.ROW_CLASS``: ``norm_row``, ``softmax_row``, ``softmax_block_row``), which a kernel
takes only where it is one of these kernels and a profile of the lowering has its kind's
constants (``row_class``, ``pytorch_terms.row_kinds_on``): a BatchNormalization, a GroupNormalization, a
SoftmaxCrossEntropyLoss or a pooling (which falls back to ``norm``) keeps its class's set.  Those
sets keep their own floor (``floor_own``: not replaced by, nor part of, the pooled NVIDIA floor,
which holds the row latency of the kernels it was fitted on); a family without them predicts a row
class with its class's set (``CLASS_FALLBACK``).
"""

from __future__ import annotations

from analyzer.counting import kernel_words
from analyzer.errors import AnalyzerError
from analyzer.ir.graph import dtype_bits
from analyzer.prediction.efficiency.op_classes import CLASS_CODE, OP_CLASSES, ROW_CLASS

KINDS = ("", "layer_norm", "rms_norm", "softmax_warp", "softmax_block")   # code 0: no row kernel
KIND_CODE = {k: i for i, k in enumerate(KINDS)}
PARAMS = ("c0_cycles", "step_cycles", "overlap")
ONNX_DOMAINS = ("", "ai.onnx", "com.microsoft")
_NORM_KIND = {"LayerNormalization": "layer_norm", "SimplifiedLayerNormalization": "rms_norm",
              "RMSNormalization": "rms_norm"}
_SOFTMAX_OPS = ("Softmax", "LogSoftmax")
NORM_THREADS, NORM_VEC = 128, 4        # launch_vectorized_layer_norm_kernel: (32, 4) threads, vec_size 4
WARP_ROW, WARP_ROW_BYTES = 2048, 8192  # host_softmax's warp path since PR 144679
WARP, WARP_BLOCK_THREADS = 32, 128     # softmax_warp_forward: a warp a row, 128 threads a block
BLOCK_MAX_THREADS = 1024               # SoftMaxForward_getBlockSize's max_threads
REG_MAX_STEPS = 9                      # host_softmax: the register kernel where potential_reg_cnt < 10


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def kind_of(op: str, length: int, itemsize: int) -> str:
    """The row kernel PyTorch runs for ``op`` over contiguous rows of ``length`` elements of
    ``itemsize`` bytes ("" where none of this module's: a LayerNorm row that is not a multiple
    of the 4-element vector, an op of no row kernel)."""
    if length < 1 or itemsize < 1:
        return ""
    if op in _NORM_KIND:
        return _NORM_KIND[op] if length % NORM_VEC == 0 else ""
    if op in _SOFTMAX_OPS:
        if length <= WARP_ROW and length * itemsize <= WARP_ROW_BYTES:
            return "softmax_warp"
        return "softmax_block" if launch("softmax_block", length)[0] <= REG_MAX_STEPS else ""
    return ""


def launch(kind: str, length: int) -> tuple[int, int, int]:
    """(steps a row takes, threads per block, rows per block) of ``kind`` over rows of
    ``length`` elements (module docstring)."""
    if kind in ("layer_norm", "rms_norm"):
        return ceil_div(length, NORM_THREADS * NORM_VEC), NORM_THREADS, 1
    if kind == "softmax_warp":
        return ceil_div(length, WARP), WARP_BLOCK_THREADS, WARP_BLOCK_THREADS // WARP
    threads = min(ceil_div(length, WARP) * WARP, BLOCK_MAX_THREADS)
    return ceil_div(length, threads), threads, 1


def row_s(xp, kind, rows, length, units, threads_sm, c0_s, step_s) -> dict:
    """``row_s`` per kernel (seconds) and its factors (``row_waves``, ``row_steps``, ``row_c0_s``,
    ``row_step_s``), array code (``efficiency.kernel_time``): ``kind`` (codes of ``KINDS``, 0:
    none), ``rows`` (M) and ``length`` (N) per kernel, ``units`` (SMs), ``threads_sm`` (resident
    threads per SM; 0: unknown, off), ``c0_s`` / ``step_s``: per kind, seconds at the device's
    clock (``pytorch_terms.row_profile_terms``; 0: off)."""
    k = xp.asarray(kind).astype(xp.int32)
    n = xp.maximum(xp.asarray(length), 1.0)
    norm, warp = (k == 1) | (k == 2), k == 3
    block_threads = xp.minimum(xp.ceil(n / WARP) * WARP, float(BLOCK_MAX_THREADS))
    steps = xp.where(norm, xp.ceil(n / (NORM_THREADS * NORM_VEC)), xp.where(warp, xp.ceil(n / WARP),
                                                                            xp.ceil(n / block_threads)))
    threads = xp.where(norm | warp, float(NORM_THREADS), block_threads)
    per_block = xp.where(warp, float(WARP_BLOCK_THREADS // WARP), 1.0)
    resident = xp.floor(xp.asarray(threads_sm) / threads) * per_block * xp.asarray(units)
    c0, st = xp.take(xp.asarray(c0_s), k), xp.take(xp.asarray(step_s), k)
    on = (k > 0) & (resident > 0) & ((c0 > 0) | (st > 0))
    waves = xp.where(on, xp.ceil(xp.asarray(rows) / xp.where(on, resident, 1.0)), 0.0)
    return {"row_s": waves * (c0 + steps * st), "row_waves": waves, "row_steps": xp.where(on, steps, 0.0),
            "row_c0_s": xp.where(on, c0, 0.0), "row_step_s": xp.where(on, st, 0.0)}


def node_row(n) -> tuple[float, float, float]:
    """(kind code, rows M, row length N) of node ``n`` (a ``NodeCost``) where PyTorch runs it as
    one of ``KINDS``; else (0, 0, 0).  A norm's row is its scale's elements (the normalized
    shape); a softmax's the rule's ``row=`` word (the normalized axis is the innermost)."""
    if n.domain not in ONNX_DOMAINS or (n.op not in _NORM_KIND and n.op not in _SOFTMAX_OPS) or not n.in_specs:
        return 0.0, 0.0, 0.0
    x = n.in_specs[0]
    try:
        total = x.numel() if x is not None and x.shape is not None else 0
        itemsize = dtype_bits(x.dtype) // 8 if total else 0
        if n.op in _NORM_KIND:
            scale = n.in_specs[1] if len(n.in_specs) > 1 else None
            length = scale.numel() if _is_scale(scale, x) else 0
        else:
            length = int(kernel_words.value(n.kernel, "row") or 0)
    except AnalyzerError:   # a symbolic dim (unbound): no kernel to price
        return 0.0, 0.0, 0.0
    kind = kind_of(n.op, length, itemsize) if length and total and total % length == 0 else ""
    return (float(KIND_CODE[kind]), float(total // length), float(length)) if kind else (0.0, 0.0, 0.0)


def _is_scale(scale, x) -> bool:
    """Whether ``scale`` is a norm's scale over ``x``'s innermost axes (a shape of lower rank that
    ends ``x``'s): a training step's backward kernel of a norm (``training.backward_time``: its
    second input the upstream gradient, of ``x``'s shape) is not PyTorch's forward row kernel."""
    if scale is None or scale.shape is None or x is None or x.shape is None:
        return False
    r = len(scale.shape)
    return 0 < r < len(x.shape) and tuple(x.shape[-r:]) == tuple(scale.shape)


def kernel_row(pairs) -> tuple[float, float, float]:
    """(kind, rows, length) of one kernel of a PyTorch runtime: its member's ``node_row``
    (``pairs``: one per member) where it has one member, else (0, 0, 0)."""
    return pairs[0] if len(pairs) == 1 else (0.0, 0.0, 0.0)


def combine(xp, memory, kind, rows, length, units, arrays):
    """(memory seconds with the row term, its factors: ``row_s``'s dict and ``row_overlap``) per
    kernel, array code (``efficiency.kernel_time``): ``row_s`` added to ``memory`` (the kind's
    ``row_overlap`` 0) or their max (1); ``memory`` unchanged and no factors where ``arrays``
    carry no row constants."""
    if "row_c0_s" not in arrays:
        return memory, {}
    d = row_s(xp, kind, rows, length, units, arrays["row_threads_sm"], arrays["row_c0_s"], arrays["row_step_s"])
    ov = (xp.take(xp.asarray(arrays["row_overlap"]), xp.asarray(kind).astype(xp.int32)) > 0) & (d["row_s"] > 0)
    r = d["row_s"]
    return xp.where(ov, xp.maximum(memory, r), memory + r), dict(d, row_overlap=xp.where(ov, 1.0, 0.0))


def row_class(code: int, kind: float, on: frozenset) -> int:
    """The class code a kernel of class ``code`` and row kind ``kind`` (``kernel_row``'s) takes:
    its ``ROW_CLASS`` where its kind is ``on`` (``pytorch_terms.row_kinds_on``), else ``code`` (no row kernel, the
    term off, or a class without a row class)."""
    row = ROW_CLASS.get(OP_CLASSES[code]) if int(kind) in on else None
    return CLASS_CODE[row] if row else code
