"""The ``qnn`` runtimes' placement (``place``: the ``placement`` of ``qnn``, ``qnn-dlc`` and
``qnn-tflite`` in ``analyzer/prediction/runtimes.py``, the same rules for the three): which
kernels QNN's HTP backend does not run and so fall back to the phone's CPU, and what a CPU
segment costs.  The rest of the runtime (its fusion, the activations kept in the VTCM, the
depthwise and w8a16 rates, the per-inference cost) is ``qnn.py``.

Which ops fall back (``fallback_rule``, the rules as data in ``FALLBACK_RULES``, applied per node
of a kernel by ``off_htp``): a kernel runs on the CPU when one of its nodes is an op outside the
ONNX domains (a custom op: the HTP runs it only through a user-written op package), an ONNX op
type QNN has no translation for (outside ``QNN_OPS``), or one of the listed attribute / dtype
cases (an ``Erf`` alone, not in the GELU kernel the fusion made: QNN runs that kernel as its
``Gelu``; an ``IsNaN`` of a tensor that is neither float32 nor float16).

Sources (each rule of ``FALLBACK_RULES`` carries its own): Qualcomm's AI Engine Direct Delegate
page on custom operators (docs.qualcomm.com 80-63442-10); ``QNN_OPS`` is the ONNX op types
onnxruntime's QNN execution provider registers a builder for, two public versions of its
``op_builder_factory.cc`` (``_ORT_FACTORY``); the IsNaN case is that provider's
``is_nan_op_builder.cc``; the prime CPU cores' clocks are Qualcomm's launch figures
(``PRIME_CORE``).

Cost: each maximal run of consecutive fallback kernels (graph order) is one CPU segment.  Its
kernels compute at ``cpu_flops`` (the Snapdragon's prime core: clock x ``CPU_FLOPS_PER_CYCLE``;
their peaks are set to rate / e_compute, so that compute = work / rate), their memory term as
the family's class gives it, with nothing kept in the NPU's VTCM.  The segment's first kernel
pays, once, ``switches`` x ``switch_s`` + its boundary tensors (its first kernel's activation
inputs and its last kernel's outputs) / the profile's memory bandwidth: a switch (HTP -> CPU
before the segment unless it starts the model, CPU -> HTP after it unless it ends the model)
costs half the family's per-inference graph-execute cost (``run_fixed_s``, or
``run_fixed_int8_s`` at int8): a segment inside the model splits the HTP graph in two, and the
second pays one more graph execute (RPC, power-up, VTCM acquire).  E.g. Conv -> Erf -> Conv:
one segment, 2 switches.

Assumptions: AI Hub compiles with Qualcomm's own converters, whose full op table (80-63442-10
"Supported Operations") was not read op by op: that it agrees with onnxruntime's builders is
assumed.  ``CPU_FLOPS_PER_CYCLE`` (32 fp32 FLOP per cycle, one core) is assumed.  Neither the CPU
rate nor the switch cost was measured or fitted: no AI Hub row of a graph opcost builds has a
kernel these rules put off the NPU (the video networks' TFLite rows put 4-7 layers on the CPU
for a reason the public rules do not give; docs/accuracy.md, Hexagon fallback).  Expect a
fallback segment's time within a factor of about 3.
"""

from __future__ import annotations

import numpy as np

from analyzer.prediction.accelerators import Kernels, Placed, activation_in_bytes, output_bytes, run_bounds

_ORT_FACTORY = ("onnxruntime's QNN execution provider, onnxruntime/core/providers/qnn/builder/op_builder_factory.cc at "
                "https://github.com/microsoft/onnxruntime/blob/00cd7c6df0a66cd628a5ab7e682cb870134a27ee/"
                "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc and "
                "https://github.com/onnxruntime/onnxruntime-qnn/blob/90a0877a886ce883a5f85bdd1c4ffa91b3e6e4ec/"
                "onnxruntime/core/providers/qnn/builder/op_builder_factory.cc")
# the ONNX op types QNN translates: the union of the two registries of ``_ORT_FACTORY`` (each
# registers a builder per op type; the second adds IsNaN, NonZero, Softplus, Xor)
QNN_OPS = frozenset("""
    Abs Add And ArgMax ArgMin Asin Atan AveragePool BatchNormalization Cast Ceil Clip Concat Conv ConvTranspose Cos
    CumSum DepthToSpace DequantizeLinear Div Einsum Elu Equal Exp Expand Flatten Floor FusedMatMul Gather
    GatherElements GatherND Gelu Gemm GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual GridSample HardSigmoid
    HardSwish InstanceNormalization Inverse IsNaN LayerNormalization LeakyRelu Less LessOrEqual Log LogSoftmax
    LpNormalization LRN LSTM MatMul Max MaxPool Mean Min Mod Mul Neg NonZero Not Or Pad Pow PRelu QuantizeLinear
    RandomUniformLike Reciprocal ReduceL2 ReduceMax ReduceMean ReduceMin ReduceProd ReduceSum Relu Reshape Resize
    RMSNormalization Round ScatterElements ScatterND Sigmoid Sign Sin Slice Softmax Softplus SpaceToDepth Split Sqrt
    Squeeze STFT Sub Sum Tanh ThresholdedRelu Tile TopK Transpose Unsqueeze Upsample Where Xor""".split())
_ONNX_DOMAINS = ("", "ai.onnx", "com.microsoft")
_FLOATS = frozenset({"float32", "float16"})

# rule -> (the case in which the HTP does not run the op, its source); ``on_htp`` applies them in
# this order: the domain, the op type, then the op's own case
FALLBACK_RULES = {
    "custom op": ("an op outside the ONNX domains ('', ai.onnx, com.microsoft)",
                  "Qualcomm AI Engine Direct Delegate, Custom Operator Support: a custom op runs only through a "
                  "user-written op package, https://docs.qualcomm.com/doc/80-63442-10/topic/custom_op.html"),
    "no QNN op": ("an ONNX op type outside QNN_OPS (no QNN translation)", _ORT_FACTORY),
    "Erf alone": ("alone, not in the GELU kernel the fusion made (QNN runs that kernel as its Gelu: both registries "
            "list Gelu, neither Erf)", _ORT_FACTORY),
    "IsNaN not float": ("its input neither float32 nor float16",
              "QNN EP is_nan_op_builder.cc ('QNN IsNan Op supports only float32 and float16 input tensors'), "
              "https://github.com/microsoft/onnxruntime/blob/6927e66492ac8857d7352c9cd3c6bb27c3493803/"
              "onnxruntime/core/providers/qnn/builder/opbuilder/is_nan_op_builder.cc"),
}

# the phone's prime CPU core per profile: (core, clock Hz); source: Qualcomm's launch figures as
# reported by droidholic.com ("A prime Cortex-X4 core is clocked at 3.3GHz, compared to the
# Snapdragon 8 Gen 2's Cortex-X3 core at 3.2GHz"), https://droidholic.com/snapdragon-8-gen-3-launched/
PRIME_CORE = {"hexagon-sd8gen2": ("Cortex-X3", 3.2e9), "hexagon-sd8gen3": ("Cortex-X4", 3.3e9)}
# assumed: four 128-bit SIMD FMA pipes x 4 fp32 lanes x 2 FLOPs per FMA = 32 FLOP per cycle (the
# fp32 kernels TFLite's CPU runs for a float model, on one core); not measured here
CPU_FLOPS_PER_CYCLE = 32.0


def cpu_flops(prof) -> tuple[float, str]:
    """(FLOP/s, the unit's name) of the CPU a fallback kernel runs on: the profile's prime core
    (``PRIME_CORE``) x ``CPU_FLOPS_PER_CYCLE``; a profile not in the table takes the 8 Gen 2's
    (said in the name).  E.g. the 8 Gen 2: 3.2e9 x 32 = 102.4 GFLOP/s."""
    core, hz = PRIME_CORE.get(prof.id, PRIME_CORE["hexagon-sd8gen2"])
    said = "" if prof.id in PRIME_CORE else f", {prof.id} states none: the 8 Gen 2's"
    return hz * CPU_FLOPS_PER_CYCLE, f"CPU ({core} prime core{said})"


def fallback_rule(nd, node, alone: bool) -> str | None:
    """The rule of ``FALLBACK_RULES`` that puts node ``nd`` (a ``fusion.FusionNode``) off the HTP,
    or None where the HTP runs it (``node``: its ``NodeCost``, for dtypes, or None; ``alone``: its
    kernel holds no other node)."""
    if nd.domain not in _ONNX_DOMAINS:
        return "custom op"
    if nd.op == "Erf":
        return "Erf alone" if alone else None
    if nd.op not in QNN_OPS:
        return "no QNN op"
    if nd.op == "IsNaN" and node is not None and node.in_specs and node.in_specs[0] is not None \
            and node.in_specs[0].dtype not in _FLOATS:
        return "IsNaN not float"
    return None


def off_htp(kern: Kernels) -> list[tuple[int, str] | None]:
    """Per kernel: (the node index, its rule) of the first member the HTP does not run, or None."""
    out = []
    for m in kern.members:
        hit = None
        for i in m:
            rule = fallback_rule(kern.fnodes[i], None if kern.nodes is None else kern.nodes[i], len(m) == 1)
            if rule is not None:
                hit = (i, rule)
                break
        out.append(hit)
    return out


def switch_s(kern: Kernels) -> float:
    """Seconds per switch between the HTP and the CPU: half the family's per-inference
    graph-execute cost (``run_fixed_int8_s`` at int8, else ``run_fixed_s``; 0 where it has none)."""
    arrays = kern.arrays if kern.arrays is not None else {}
    return 0.5 * float(arrays.get("run_fixed_int8_s" if kern.precision == "int8" else "run_fixed_s", 0.0))


def place(prof, kern: Kernels) -> tuple[float | None, list[str]]:
    """Put the kernels with a node the HTP does not run (``off_htp``) on the CPU (in place: their
    peaks, so that compute = work / ``cpu_flops``, and each segment's switches and boundary bytes
    on its first kernel's fixed seconds; module docstring, "Placement").  Returns (no bandwidth
    override, notes).  E.g. Conv -> Erf -> Conv: one segment, 2 switches."""
    hits = off_htp(kern)
    segments = run_bounds([h is not None for h in hits])
    if not segments:
        return None, []
    rate, unit = cpu_flops(prof)
    e = np.asarray(kern.arrays["e_compute"], np.float64) if kern.arrays is not None else None
    per_switch = switch_s(kern)
    n = len(hits)
    moved_all = 0.0
    for first, last in segments:
        switches = int(first > 0) + int(last < n - 1)
        moved = activation_in_bytes(kern, first) + output_bytes(kern, last)
        moved_all += moved
        for k in range(first, last + 1):
            ek = float(e[int(kern.classes[k])]) if e is not None and kern.classes is not None else 1.0
            kern.matrix_peak[k] = kern.vector_peak[k] = rate / ek if ek > 0 else rate
            own = (switches, moved) if k == first else (0, 0.0)
            if k == first:
                hand = switches * per_switch + (moved / kern.mem_bw if kern.mem_bw else 0.0)
                kern.fixed[k] += hand / max(float(kern.runs[k]), 1.0)
            if kern.placed is not None:
                kern.placed[k] = Placed(unit, rate, own[0], per_switch, own[1], kern.mem_bw,
                                        f"{hits[k][1]}: {kern.fnodes[hits[k][0]].op!a}")
    return None, [fallback_note(kern, hits, segments, (rate, unit, per_switch, moved_all))]


# the most op types a fallback note names
_NAMED = 8


def fallback_note(kern: Kernels, hits, segments, terms) -> str:
    """The prediction's note of a placement: kernels, segments, the op types off the HTP (names
    are data: as Python's ``ascii`` writes them, control and non-ASCII characters escaped), the
    rate and the switches."""
    rate, unit, per_switch, moved = terms
    ops = sorted({kern.fnodes[h[0]].op for h in hits if h is not None})
    named = ", ".join(ascii(o) for o in ops[:_NAMED]) + (f" and {len(ops) - _NAMED} more" if len(ops) > _NAMED else "")
    n_off = sum(h is not None for h in hits)
    switches = sum(int(a > 0) + int(b < len(hits) - 1) for a, b in segments)
    return (f"qnn: {n_off} of {len(hits)} kernels fall back to the {unit} in {len(segments)} segment(s) (ops the "
            f"HTP does not run: {named}); each at {rate / 1e9:.4g} GFLOP/s (assumed: clock x "
            f"{CPU_FLOPS_PER_CYCLE:g} FLOP/cycle), plus {switches} switch(es) x {per_switch * 1e6:.3g} µs (half "
            f"the per-inference graph-execute cost each) and {moved / 1e6:.3g} MB of boundary tensors over "
            "DRAM; their activations are not kept in the NPU's on-chip memory; neither figure measured: expect "
            "the fallback's time within a factor of about 3")
