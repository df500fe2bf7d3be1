"""Runtimes of accelerators that run part of a model off the accelerator: which kernels an NPU's
runtime places on it and which on a fallback unit, and what the split costs.

A runtime with a placement (``runtimes.Runtime.placement``) is given, per profile, the lowering's
kernels (``Kernels``) and changes three things in place: the matrix and vector FLOP/s of each
kernel (a kernel on the fallback unit runs at that unit's rate), the per-launch fixed seconds (the
boundary transfers, a host link's streaming) and, where the runtime says so, the memory bandwidth
the kernels see.  It returns notes for the prediction, and may record in ``Kernels.placed`` the
factors of each kernel it moved (shown by ``--explain``).  ``coreml`` (Core ML on the Apple Neural
Engine), ``edgetpu`` (the Coral Edge TPU runtime) and ``qnn`` (QNN on the Hexagon NPU's HTP, its
three deployments) are the ones here.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class Kernels(NamedTuple):
    """What a placement reads of one lowering (per kernel ``k``, graph order) and the rows it may
    change in place (one profile's)."""

    members: tuple[tuple[int, ...], ...]  # node indices of kernel k
    fnodes: Any                           # fusion.FusionNode per node (op, inputs, bytes, ...)
    dtype: tuple[str, ...]                # compute dtype of kernel k
    mac: Any                              # [K] matrix FLOPs per launch
    flops: Any                            # [K] all FLOPs per launch
    weight_bytes: Any                     # [K] weight bytes per launch
    runs: Any                             # [K] launches
    mem_bw: float                         # the profile's memory bandwidth, B/s
    matrix_peak: Any                      # [K] FLOP/s (changed in place)
    vector_peak: Any                      # [K] FLOP/s (changed in place)
    fixed: Any                            # [K] seconds per launch (changed in place)
    # what some placements also read: the profile family's constants (``efficiency.constants``
    # arrays: e_compute per class code, run_fixed_s, ...), [K] op class codes, the precision the
    # prediction runs at, the report's nodes (``NodeCost``: dtypes and shapes), per node index
    arrays: Any = None
    classes: Any = None
    precision: str = ""
    nodes: Any = None
    # kernel index -> the factors of its placement off the accelerator, filled in place for
    # ``--explain`` (``Placed``); None: not recorded
    placed: Any = None


class Placed(NamedTuple):
    """One kernel a placement moved to a fallback unit, for ``--explain``: its compute time is
    its work / ``rate`` (the peaks are set to rate / e_compute); ``switches`` x ``switch_s`` +
    ``moved_bytes`` / ``mem_bw`` (its segment's hand-over, on the segment's first kernel, 0 on the
    others) are in its fixed seconds, over its launches."""

    unit: str            # where it runs ("CPU (Cortex-X3 prime core)")
    rate: float          # FLOP/s of the unit
    switches: int        # unit switches its segment pays here (0: not the segment's first kernel)
    switch_s: float      # seconds per switch
    moved_bytes: float   # boundary tensors handed over, bytes
    mem_bw: float        # B/s they cross at
    why: str             # the rule that put it there


# ops that quantize activations (a W8A8 graph) and ops that only dequantize (weights)
QUANTIZE_OPS = frozenset({"QuantizeLinear", "DynamicQuantizeLinear", "QLinearConv", "QLinearMatMul",
                          "ConvInteger", "MatMulInteger"})


def quantizes_activations(nodes) -> bool:
    """Whether a graph quantizes its activations (QDQ / QOperator / integer ops: W8A8)."""
    return any(n.op in QUANTIZE_OPS for n in nodes)


def has_floating(nodes, dtype: str) -> bool:
    """Whether any node reads or writes a tensor of ``dtype`` (a ``TensorSpec`` dtype name:
    "float32", ...)."""
    return any(s is not None and s.dtype == dtype for n in nodes for s in (*n.in_specs, *n.out_specs))


def run_bounds(on_unit):
    """[(first, last)] of each maximal run of consecutive kernels with ``on_unit[k]`` true."""
    out, start = [], None
    for k, x in enumerate(on_unit):
        if x and start is None:
            start = k
        if not x and start is not None:
            out.append((start, k - 1))
            start = None
    if start is not None:
        out.append((start, len(on_unit) - 1))
    return out


def activation_in_bytes(kern: Kernels, k: int) -> float:
    """Bytes of kernel ``k``'s non-constant inputs produced outside it (what it reads of
    activations: the tensor a unit boundary hands over)."""
    inside = set(kern.members[k])
    made = {t for i in inside for t in kern.fnodes[i].outputs if t}
    total = 0.0
    for i in inside:
        nd = kern.fnodes[i]
        for pos, (t, b) in enumerate(zip(nd.inputs, nd.input_bytes)):
            if t and pos not in nd.constant_inputs and t not in made:
                total += b
    return total


def output_bytes(kern: Kernels, k: int) -> float:
    """Bytes kernel ``k`` writes (its members' outputs that leave it; an upper bound: every output
    of its last member)."""
    last = kern.fnodes[kern.members[k][-1]]
    return float(sum(last.output_bytes))
