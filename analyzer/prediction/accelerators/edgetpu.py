"""The Coral Edge TPU runtime (runtime ``edgetpu``): what the Edge TPU compiler maps to the TPU,
the on-chip parameter cache, the host link, and the CPU for the rest.

Time predicted: one ``Interpreter.invoke()`` of an Edge TPU-compiled TensorFlow Lite model at
batch 1 (what Coral's C++ benchmarks time: the model only, input preprocessing excluded), the
model already loaded (its cached parameters already on chip).

Rules (Coral, "TensorFlow models on the Edge TPU", https://coral.ai/docs/edgetpu/models-intro/;
"Run multiple models with multiple Edge TPUs", https://coral.ai/docs/edgetpu/multiple-edgetpu/;
Axis, "Optimization tips" for the ARTPEC-7 DLPU, an Edge TPU,
https://developer.axis.com/computer-vision/on-device/system-on-chip/artpec-7/optimization-tips/):

- Only int8-quantized ops the Edge TPU supports are mapped to it (a kernel whose compute dtype is
  not int8 is not).  Without a caller's precision (``precision_rule``) a model is predicted as the
  full-integer quantized model the Edge TPU runs (int8), and the notes say so; a caller's
  ``precision="fp32"`` predicts the unquantized model (nothing maps: all on the CPU).  ``TPU_OPS`` is an
  ONNX reading of Coral's supported-operations table on models-intro (written from that table,
  not checked op by op against the compiler: a candidate for a measured list) (Conv2d, DepthwiseConv2d, TransposeConv,
  FullyConnected = a product with a constant weight, pooling, Add/Sub/Mul, Concatenation,
  Reshape/Squeeze/Transpose/Slice/Split/Pad, Logistic, Tanh, ReLU/ReLU6/PReLU, HardSwish,
  Softmax, Mean/Sum/ReduceMax/ReduceMin, Maximum/Minimum, Resize, SpaceToDepth, Quantize); a
  product of two activations (attention's) is not a FullyConnected and is not mapped.
- The compiler partitions the graph once: from the first op it cannot map, that op and every op
  after it run on the CPU (Axis: "The Edge-TPU compiler cannot partition the model more than once
  ... the unsupported operator and every operator after it runs on the CPU").  CPU kernels run at
  ``HOST_CPU_FLOPS`` and stream their bytes at ``HOST_MEM_BW`` (assumed host figures: a Coral Dev Board's four
  Cortex-A53 cores; not measured here).
- Parameters: the Edge TPU keeps the model's parameter data in its on-chip RAM (multiple-edgetpu:
  "a small amount of RAM that's used to store the model's parameter data locally, enabling faster
  inference speed compared to fetching the data from external memory"): the profile's
  ``onchip_mb`` (MiB), filled in graph order; the parameters that do not fit are fetched from the
  host over the link on every inference.  A mapped kernel pays its overflowing weight bytes / the
  host link's bandwidth (the profile's ``interconnect_gbs``: USB 3.0 or PCIe; a copy of the profile with the other
  figure predicts the other link).  The model's input crosses the link to the TPU before its
  first mapped kernel and the TPU section's output crosses back after its last, at the same
  bandwidth.
- Activations stay in the on-chip SRAM between mapped ops: their traffic is charged at an
  assumed on-chip rate of one byte per int8 operation (``bw = int8 peak``; Coral publishes no
  on-chip bandwidth), in place of the profile's ``mem_bw_gbs`` (the host link).
"""

from __future__ import annotations

from analyzer.prediction.accelerators import Kernels, activation_in_bytes, output_bytes, quantizes_activations

TIME_DEFINITION = ("Edge TPU TFLite invoke wall-clock, batch 1, model loaded: mapped int8 ops on the TPU "
                   "(parameters beyond the on-chip cache and the TPU section's input and output over "
                   "the host link), everything from the first unmapped op on the CPU")

TPU_OPS = frozenset({"Conv", "ConvTranspose", "Add", "Sub", "Mul", "AveragePool", "GlobalAveragePool",
                     "MaxPool", "GlobalMaxPool", "Concat", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                     "Transpose", "Slice", "Split", "Pad", "Sigmoid", "Tanh", "Relu", "Clip", "PRelu",
                     "LeakyRelu", "HardSwish", "Softmax", "ReduceMean", "ReduceSum", "ReduceMax",
                     "ReduceMin", "Max", "Min", "Resize", "SpaceToDepth", "DepthToSpace",
                     "QuantizeLinear", "DequantizeLinear", "BatchNormalization", "Identity"})
_PRODUCTS = frozenset({"MatMul", "Gemm"})
# assumed host: four Cortex-A53 cores at 1.5 GHz x 8 int8 MACs (2 FLOPs) per cycle ~ 0.1 TOP/s,
# LPDDR4 ~ 3 GB/s in practice; not measured here
HOST_CPU_FLOPS = 0.1e12
HOST_MEM_BW = 3e9


def precision_rule(nodes) -> tuple[str, str]:
    """(precision, note) the Edge TPU runs ``nodes`` at when the caller names none: int8."""
    if quantizes_activations(nodes):
        return "int8", "Edge TPU: a quantized graph: predicted at int8"
    return "int8", ("Edge TPU: predicted as the full-integer (int8) quantized model the compiler needs; pass "
                    "a precision to override")


def on_tpu(nd, dtype: str) -> bool:
    """Whether the Edge TPU compiler maps node ``nd`` (a ``fusion.FusionNode``) of a kernel
    computing in ``dtype``."""
    if dtype != "int8" or nd.domain not in ("", "ai.onnx"):
        return False
    if nd.op in _PRODUCTS:
        return bool(nd.constant_inputs & {1})
    return nd.op in TPU_OPS


def place(prof, kern: Kernels) -> tuple[float | None, list[str]]:
    """Map the kernels before the first unmapped one to the TPU and the rest to the CPU (in
    place: peaks and fixed seconds); returns (the on-chip bandwidth the kernels see, notes)."""
    n = len(kern.members)
    mapped = n
    for k, m in enumerate(kern.members):
        if not all(on_tpu(kern.fnodes[i], kern.dtype[k]) for i in m):
            mapped = k
            break
    link = (prof.interconnect_gbs or prof.mem_bw_gbs or 0.0) * 1e9
    cap = (prof.onchip_mb or 0.0) * 2**20
    peak = prof.peak_flops("matrix", "int8") or 1.0
    notes = [f"Edge TPU: {mapped} of {n} kernels on the TPU" + (
        f"; from kernel {mapped} ({kern.fnodes[kern.members[mapped][0]].op}) on the CPU (the compiler "
        "partitions once)" if mapped < n else "")]
    total = over = 0.0
    for k in range(mapped):
        runs = max(float(kern.runs[k]), 1.0)
        before = max(total - cap, 0.0)
        total += float(kern.weight_bytes[k])
        streamed = max(total - cap, 0.0) - before
        over += streamed
        kern.fixed[k] += streamed / link
        if k == 0:
            kern.fixed[k] += activation_in_bytes(kern, k) / link / runs
        if k == mapped - 1:
            kern.fixed[k] += output_bytes(kern, k) / link / runs
    for k in range(mapped, n):
        kern.matrix_peak[k] = HOST_CPU_FLOPS
        kern.vector_peak[k] = HOST_CPU_FLOPS
        kern.fixed[k] += _cpu_bytes(kern, k) / HOST_MEM_BW
    if over:
        notes.append(f"Edge TPU: {over / 2**20:.2f} MiB of parameters exceed the {cap / 2**20:g} MiB on-chip "
                     f"cache and stream over the host link ({link / 1e9:g} GB/s) every inference")
    if mapped < n and kern.dtype[mapped] != "int8":
        notes.append("Edge TPU: only int8-quantized ops map to the TPU")
    return peak, notes


def _cpu_bytes(kern: Kernels, k: int) -> float:
    """Bytes a CPU kernel streams: its activation inputs, its outputs and its weights."""
    return activation_in_bytes(kern, k) + output_bytes(kern, k) + float(kern.weight_bytes[k])
