"""Core ML on the Apple Neural Engine (runtime ``coreml``): its fusion, which ops the ANE runs and
which Core ML places on the CPU, and what a fallback costs.

Time predicted: the wall-clock of one Core ML prediction with compute units ``all`` at batch 1
(what Xcode's Performance tab reports as a median, the statistic of Apple's coremltools tables),
model load and compilation excluded.

Precision. The ANE computes in fp16, or in int8 for W8A8 models (weights and activations
quantized); weight-only compressed models (int8 weights, palettized, sparse) compute in fp16.
Without a caller's precision (``precision_rule``): a graph that quantizes its activations is
predicted at int8 (W8A8), one with fp32 tensors at fp16 (coremltools converts ML programs with
``compute_precision=FLOAT16`` by default, and the ANE has no fp32), else at its own dtypes.
The profile's ``matrix_tflops`` say how fast each runs: on the A16 int8 runs at the fp16 rate, on
the A17 Pro and M4 at about twice it (coremltools guide, opt-quantization-perf: "In newer hardware
with A17 Pro or M4 chips ... there is increased throughput possible for int8-int8 compute on
Neural Engine, compared to previous versions").

Fusion (policy ``coreml``, ``fusion.py``): Core ML's graph passes fold a BatchNormalization and a bias into the
convolution or product before it and fuse the activation after it (the ANE applies it on the
output as it is written); decomposed layer norms and GELUs become one op; and a connected chain
of elementwise ops and activations runs as one ANE pass (the ``onnxruntime`` patterns of
``fusion.py`` plus elementwise chains).

Placement. The ANE does not run (hollance/neural-engine, docs/unsupported-layers.md, commit
06a7632ebb14a0e4d62ac0f63c054d80577817bf: "RNN layers such as LSTM or GRU, gather, dilated
convolutions, broadcastable and ND layers, custom layers"): ``ANE_UNSUPPORTED`` op types (RNN
layers; ops whose output shape depends on the data, as the ANE runs static shapes; control flow),
a gather whose indices are a tensor the model computes (an embedding lookup; constant indices are a
slice or a fixed permutation, which Core ML's conversion folds or runs as a static op: assumed on
the ANE), and any op outside the ONNX domains (a custom layer); Core ML places those on the CPU.
Dilated convolutions are not told apart (the lowering does not see attributes): they are assumed
on the ANE.  Each maximal run of consecutive fallback kernels (graph order) is one CPU segment: its kernels run at
``FALLBACK_CPU_FLOPS`` (matrix and vector work; memory at the SoC's bandwidth, which the ANE
shares), and the segment pays ``SWITCH_S`` per switch between units (ANE -> CPU before it unless
it starts the model, CPU -> ANE after it unless it ends the model) plus the boundary tensors (its
first kernel's activation inputs and its last kernel's outputs) read once more at the SoC's
memory bandwidth.  Neither figure was measured or fitted (no public row falls back); both are
assumed, and the prediction's notes say how many kernels fell back.
"""

from __future__ import annotations

from analyzer.prediction.accelerators import (Kernels, activation_in_bytes, has_floating, output_bytes,
                                               quantizes_activations, run_bounds)

TIME_DEFINITION = ("Core ML prediction wall-clock, compute units all, batch 1 (the median of Xcode's "
                   "Performance tab): ANE kernels after Core ML's fusion, CPU fallback segments and "
                   "their switches")

# RNN layers (hollance's list), gathers with tensor indices (``on_ane``), ops whose output shape
# depends on the data (the ANE runs static shapes only) and control flow
ANE_UNSUPPORTED = frozenset({"LSTM", "GRU", "RNN", "NonZero", "NonMaxSuppression", "Unique", "Loop", "If",
                             "Scan"})
_GATHERS = frozenset({"Gather", "GatherElements", "GatherND"})
# assumed: two performance cores x 4 128-bit FMA pipes x 4 fp32 lanes x 2 FLOPs x ~3.5 GHz
# (the A-series performance core's four NEON pipes), about 0.2 TFLOP/s; not measured here
FALLBACK_CPU_FLOPS = 0.2e12
# assumed: one switch between the ANE and the CPU (synchronisation and a hand-over of the
# boundary tensor), 100 us; not measured here
SWITCH_S = 100e-6
_ONNX_DOMAINS = ("", "ai.onnx", "com.microsoft")


def precision_rule(nodes) -> tuple[str | None, str]:
    """(precision, note) Core ML runs ``nodes`` (``NodeCost``s) at when the caller names none."""
    if quantizes_activations(nodes):
        return "int8", "Core ML: the graph quantizes its activations: predicted W8A8 (int8) on the ANE"
    if has_floating(nodes, "float32"):
        return "fp16", ("Core ML: fp32 tensors predicted in fp16 (Core ML's default compute precision; the "
                        "ANE has no fp32); pass a precision to override")
    return None, ""


def on_ane(nd) -> bool:
    """Whether the ANE runs node ``nd`` (a ``fusion.FusionNode``)."""
    if nd.domain not in _ONNX_DOMAINS or nd.op in ANE_UNSUPPORTED:
        return False
    if nd.op in _GATHERS:
        return 1 in nd.constant_inputs
    return True


def place(prof, kern: Kernels) -> tuple[float | None, list[str]]:
    """Put the kernels with an op the ANE does not run on the CPU (in place: their peaks and the
    segments' switch and boundary costs; ``accelerators`` says how).  Returns (no bandwidth
    override, notes)."""
    off = [not all(on_ane(kern.fnodes[i]) for i in m) for m in kern.members]
    segments = run_bounds(off)
    if not segments:
        return None, []
    n_kernels = len(off)
    for first, last in segments:
        for k in range(first, last + 1):
            kern.matrix_peak[k] = FALLBACK_CPU_FLOPS
            kern.vector_peak[k] = FALLBACK_CPU_FLOPS
        switches = (first > 0) + (last < n_kernels - 1)
        moved = activation_in_bytes(kern, first) + output_bytes(kern, last)
        kern.fixed[first] += (switches * SWITCH_S + moved / kern.mem_bw) / max(float(kern.runs[first]), 1.0)
    ops = sorted({kern.fnodes[i].op for (a, b) in segments for k in range(a, b + 1) for i in kern.members[k]
                  if not on_ane(kern.fnodes[i])})
    return None, [f"Core ML: {sum(off)} of {n_kernels} kernels run on the CPU in {len(segments)} segment(s) "
                  f"(the ANE does not run {', '.join(ops)}); each at an assumed "
                  f"{FALLBACK_CPU_FLOPS / 1e12:g} TFLOP/s plus {SWITCH_S * 1e6:g} µs per switch"]
