"""Runtimes: what runs the model decides which nodes fuse, what each kernel pays to launch, and
which time is being predicted.

=============  ==============  ==========================================================
runtime        fusion policy   time predicted
=============  ==============  ==========================================================
kernel         none            the sum of device kernel times with no host gaps (what a
                               profiler's kernel sum or a CUDA-graph replay shows)
eager          eager           a whole model's wall-clock as an eager framework runs it
                               (CUDA events or ``perf_counter`` around one forward and a
                               final synchronize): one stream, the host issuing op i+1
                               while the device runs op i (``stream_times``)
eager-kernel   eager           the device time of eager PyTorch's kernels with no host
                               gaps: a profiler's kernel sum of one eager call, or a
                               CUDA-graph replay of the eager forward
eager-op       eager           each op's wall-clock timed one call at a time: host
                               dispatch + kernel + synchronize (``perf_counter`` around
                               one call and a device synchronize), summed over ops
onnxruntime    onnxruntime     ``session.run`` of onnxruntime at its default optimization
                               level: its fused kernels plus its per-node dispatch
xla            xla             an XLA-compiled program's device time: one launch per fusion;
                               ``scan``/``while`` bodies launch their kernels on every trip;
                               on a TPU a jitted call's host-timed wall-clock: that plus
                               one program launch per call (``xla_tpu``)
coreml         coreml          a Core ML prediction on the Apple Neural Engine (compute
                               units all): ANE kernels, CPU fallback segments and their
                               switches (``accelerators/coreml.py``)
edgetpu        tflite          an Edge TPU TFLite invoke: mapped int8 ops on the TPU, the
                               parameters beyond its on-chip cache over the host link, the
                               CPU from the first unmapped op (``accelerators/edgetpu.py``)
qnn            qnn             one inference of a QNN graph on the Hexagon NPU as Qualcomm
                               AI Hub times it: epilogues fused into their matrix op, plus
                               a per-inference fixed cost (``accelerators/qnn.py``); the
                               mean of AI Hub's two deployments below
qnn-dlc        qnn             ``qnn`` deployed as a QNN DLC run by QAIRT: its per-inference
                               cost + half the fitted deployment offset
qnn-tflite     qnn             ``qnn`` deployed as TFLite with the QNN delegate: its
                               per-inference cost - half the fitted deployment offset
=============  ==============  ==========================================================

The ``eager`` fusion policy is no fusion but PyTorch's own kernels for the exported graph's
patterns (``eager_plan``): views launch nothing, a view a later op needs contiguous is copied, an
exported ``nn.Linear`` (MatMul + bias Add) and the exporter's GELU chains are one kernel each, a
convolution's bias or folded BatchNorm is a second kernel.  ``kernel`` keeps one kernel per
node that does work.  ``eager-kernel`` is ``eager``'s kernels without their host side: the time
a profiler's kernel sum of one eager PyTorch call shows (the H200 whole-model rows: a ResNet-50
export's 121 ``kernel`` launches against eager's 345, its folded BatchNorms and cuDNN's layout
conversions run as kernels of their own; docs/accuracy.md, Whole models on the H200).

Which runtime a prediction uses: the caller's ``runtime=``; else ``xla`` for a JAX program;
else the profile's ``default_runtime``; else the default of its kind (``KIND_DEFAULT``).

The eager stream (``Runtime.stream``): with host issue cost ``h_i`` and device time ``k_i`` of
kernel ``i`` in graph order, ``host_end_i = host_end_{i-1} + h_i``, ``dev_start_i =
max(host_end_i, dev_end_{i-1})``, ``dev_end_i = dev_start_i + k_i``; the model's wall-clock is
``dev_end_n`` (the final synchronize returns when the last kernel ends; its own cost is not
modelled).  A host-bound chain (every ``h >= k``) takes ``sum h + k_n``; a device-bound one
(every ``k >= h``) ``h_1 + sum k``.  Each layer's row is its exposed time ``dev_end_i -
dev_end_{i-1}``: its kernel ``k_i`` plus the host gap the device waited for, ``max(0, host_end_i
- dev_end_{i-1})``; the rows sum to the wall-clock.  For a one-kernel model both eager
definitions give ``h + k``.

Host-only steps: a node eager PyTorch runs as an aten op that launches no kernel (a view the
plan kept: ``FusionPlan.host_only``) is a step of the stream with host time ``h_i`` =
``HOST_ONLY_RATIO`` x the dispatch figure of a small elementwise op and ``k_i = 0``, in graph
order among the kernels (a kernel at its first member).  It delays every later issue by
``h_i`` and the device only where the device waited for the host: a host-bound chain takes
``h_i`` more, a device-bound one nothing.  Its row is its exposed host time (``gap_i``); a
trailing one makes the wall-clock ``max(dev_end, host_end)`` (the synchronize is issued after
it).  ``eager-op`` adds each one's ``h_i``; ``kernel`` and ``eager-kernel`` have no host and no
such step.

Host dispatch (``eager``, ``eager-op``, ``onnxruntime``) is a per-kernel figure with a source: a profile's own
``launch_overhead_us`` where the runtime is the one it was measured with (a calibrated profile;
``eager-op`` takes a profile calibrated with ``eager``), else on a GPU the per-op-class figures of
``EAGER_OP_CALL_US`` (``eager-op``) or the runtime's host table of ``EAGER_HOSTS`` (``eager``;
default ``EAGER_DISPATCH_US``, another by ``Options.host``), else the kind defaults
below, which reports flag as assumed.  The two GPU tables differ because the time does:
``eager-op``'s figure is the whole host side of one call timed alone (Python, dispatch, launch, the
events and the synchronize, all on the critical path); ``eager``'s is the host's issue cost per op
of a stream that runs ahead without a synchronize per op (assumed smaller: no synchronize, no
events, a warm dispatcher).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from analyzer.errors import InputSpecError
from analyzer.options import EAGER_HOST_NAMES
from analyzer.prediction import xla_tpu
from analyzer.prediction.accelerators import coreml, edgetpu, qnn, qnn_fallback
from analyzer.prediction.efficiency.op_classes import class_chain


@dataclass(frozen=True)
class Runtime:
    name: str
    fusion: str            # a fusion policy of fusion.POLICIES, or xla_cpu_fusion.POLICY
    host_dispatch: bool    # each kernel also pays the host's per-op dispatch
    time_definition: str
    # the runtime's own record of the kernels it runs (read from the runtime itself:
    # prediction.onnxruntime.record) replaces the fusion policy's patterns where one is at hand
    fusion_record: bool = False
    # the kernels run as one stream: the host's dispatch overlaps the device's kernels
    # (``stream_times``); False: each kernel's dispatch and device time add
    stream: bool = False
    # whose measured dispatch (a profile calibrated with that runtime) and dispatch table it uses
    dispatch_as: str = ""
    # which kernels run on the accelerator and which on a fallback unit, and what that costs
    # (``accelerators``: ``place(profile, Kernels) -> (bandwidth override or None, notes)``)
    placement: Any = None
    # the precision the runtime computes in when the caller names none: ``rule(nodes) ->
    # (precision or None, note)`` (``accelerators``)
    precision_rule: Any = None
    # whose per-op host figures the ``eager`` stream charges (a name of ``EAGER_HOSTS``)
    host: str = EAGER_HOST_NAMES[0]
    # the forward of a training step (``training.step``): the eager plan's BatchNorms run in
    # training mode (``eager_plan``'s rule ``bn-train``, ``bn_train``); False: inference
    train_forward: bool = False

    @property
    def dispatch_name(self) -> str:
        return self.dispatch_as or self.name


RUNTIMES: dict[str, Runtime] = {r.name: r for r in (
    Runtime("kernel", "none", False,
            "sum of device kernel times, no host gaps (profiler kernel sum / CUDA-graph replay)"),
    Runtime("eager", "eager", True,
            "eager whole-model wall-clock as the stream runs it: the host issues each op while the "
            "device runs the ones before; the time is when the last kernel ends (host dispatch and "
            "kernels overlap)", stream=True),
    Runtime("eager-kernel", "eager", False,
            "sum of the device times of the kernels eager PyTorch launches, no host gaps "
            "(profiler kernel sum of one eager call / CUDA-graph replay of the eager forward)"),
    Runtime("eager-op", "eager", True,
            "eager wall-clock per op timed one call at a time (host dispatch + kernel + "
            "synchronize), summed over ops", dispatch_as="eager"),
    Runtime("onnxruntime", "onnxruntime", True,
            "onnxruntime session.run wall-clock: fused kernels + per-node dispatch",
            fusion_record=True),
    Runtime("xla", "xla", False,
            "XLA-compiled device time: one launch per fusion, loop bodies once per trip"),
    Runtime("coreml", "coreml", False, coreml.TIME_DEFINITION, placement=coreml.place,
            precision_rule=coreml.precision_rule),
    Runtime("edgetpu", "tflite", False, edgetpu.TIME_DEFINITION, placement=edgetpu.place,
            precision_rule=edgetpu.precision_rule),
    Runtime(qnn.NAME, "qnn", False, qnn.TIME_DEFINITION, placement=qnn_fallback.place, precision_rule=qnn.precision_rule),
    Runtime("qnn-dlc", "qnn", False, qnn.TIME_DEFINITION_DLC, placement=qnn_fallback.place,
            precision_rule=qnn.precision_rule),
    Runtime("qnn-tflite", "qnn", False, qnn.TIME_DEFINITION_TFLITE, placement=qnn_fallback.place,
            precision_rule=qnn.precision_rule),
)}

# the runtime a profile of each kind predicts when neither the caller nor the profile says
KIND_DEFAULT = {"gpu": "kernel", "tpu": "xla", "npu": "kernel", "dsp": "kernel",
                "cpu": "onnxruntime"}

# Host dispatch per op of an eager framework on an NVIDIA GPU, by op class (microseconds):
# LLMCompass's A100 model (PrincetonUniversity/LLMCompass, hardware_model/compute_module.py, as
# digested in shared/reference/digest_latency_modeling.md): 21 us per matmul, 12 us per softmax.
# Its 45 us per layernorm and GELU is not used: those two were torch.compile'd in its
# measurements (a compiled function's call, not an eager op's). Every class but the matrix ones
# takes its eager single-kernel softmax figure (12 us).  Used by the ``eager`` stream, as the
# issue cost of a host running ahead with no synchronize and no events per op (assumed below the
# per-call figures of ``EAGER_OP_CALL_US``, which include them).
EAGER_DISPATCH_US = {"gemm": 21.0, "bgemm": 21.0, "conv": 21.0, "attention": 21.0,
                     "softmax": 12.0}
EAGER_DISPATCH_DEFAULT_US = 12.0
EAGER_DISPATCH_SOURCE = ("LLMCompass A100 per-op overheads (21 µs matmul, 12 µs softmax), "
                         "PrincetonUniversity/LLMCompass hardware_model/compute_module.py; other op "
                         "classes take the 12 µs eager softmax figure (its 45 µs layernorm/GELU were "
                         "torch.compile'd); a host property: one H100 host with torch 2.11 measured "
                         "21-35 µs per op (opcost's H100 check data in bench/results, not fitted on)")


# Host side of one eager PyTorch call timed alone (``eager-op``: CUDA events or perf_counter around
# one call and a synchronize), by op class (microseconds): per class the median over NeuSight's five
# measuring hosts (A100 PCIe, V100 PCIe, T4, P100 PCIe, P4 machines; PyTorch 2.1, one call between
# CUDA events + synchronize) of latency - predicted kernel over each host's near-floor rows
# (bench/fit_neusight.py: its report's "Host dispatch per eager call" table; nn.Conv2d's predicted
# kernel includes cuDNN's launches besides its main kernel, their floors: ``cudnn_conv``).
# Whose figure each class takes: gemm <- nn.Linear (gemm_simt), bgemm and attention (one
# functional matrix call) <- torch.bmm (bgemm_simt), conv <- nn.Conv2d (conv3_simt), norm <-
# nn.LayerNorm, softmax <- torch.softmax, activation <- gelu/tanh/relu, elementwise, reduce and
# the default <- add/mul/div/pow.  A host figure: a tensor-core GEMM takes nn.Linear's too.
EAGER_OP_CALL_US = {"gemm": 44.0, "bgemm": 21.8, "attention": 21.8, "conv": 65.8, "norm": 39.3,
                    "softmax": 27.2, "activation": 25.3, "elementwise": 25.9, "reduce": 25.9}
EAGER_OP_CALL_DEFAULT_US = 25.9
EAGER_OP_CALL_SOURCE = ("NeuSight's five measuring hosts (A100 PCIe, V100 PCIe, T4, P100 PCIe, P4; "
                        "PyTorch 2.1, one call between CUDA events + synchronize), per op class the "
                        "median of their fitted per-call host time (bench/fit_neusight.py): 44.0 µs "
                        "nn.Linear, 21.8 torch.bmm, 65.8 nn.Conv2d, 39.3 LayerNorm, 27.2 softmax, "
                        "25.3 activation, 25.9 elementwise and other ops; the hosts spread "
                        "12.6-104 µs per class (a host property)")


def eager_op_call_us(op_class: str, host: str = "") -> float:
    """Host side (us) of one eager call of ``op_class`` timed alone (``eager-op``): ``host``'s
    ``op_call`` table (a name of ``EAGER_HOSTS`` that has one) or else ``EAGER_OP_CALL_US``; the
    figure of ``op_class`` or of the first class it falls back to that has one (``class_chain``:
    gemm_simt -> gemm, conv3_simt -> conv, softmax_block -> softmax, pooling -> reduce...); else
    the table's default."""
    table = eager_host(host) if host else None
    if table is not None and table.op_call is not None:
        return _class_figure(table.op_call, table.op_call_default_us, op_class)
    return _class_figure(EAGER_OP_CALL_US, EAGER_OP_CALL_DEFAULT_US, op_class)


@dataclass(frozen=True)
class EagerHost:
    """One host's issue cost per op of the ``eager`` stream: ``per_class`` (us, by op class, with
    ``class_chain``'s fallbacks), ``default_us`` for any other class, ``backward_ratio``: a
    backward kernel's host time over its class figure (the autograd engine's node, its
    AccumulateGrad and the cuDNN/cuBLAS backward calls, per kernel of the backward plan), and
    ``source``."""
    per_class: dict
    default_us: float
    backward_ratio: float
    source: str
    # the host side of one eager call timed alone (``eager-op``: dispatch, the events and the
    # synchronize), us by op class with ``class_chain``'s fallbacks, and for any other class;
    # None: the host has no such table, ``eager-op`` takes ``EAGER_OP_CALL_US`` (NeuSight's hosts)
    op_call: dict | None = None
    op_call_default_us: float = 0.0
    op_call_source: str = ""


# The lent H200 host's side of one eager call timed alone (``eager-op``), us by op class: per class
# the median of eager wall-clock - profiler kernel sum over the single-op calls measured there
# (torch 2.11.0+cu130: 780 calls of 8 ops, fp16 and bf16, and 318 nn.Conv2d calls, fp16 / fp32;
# ``bench/eager_op_host.py``, docs/accuracy.md "eager-op on the H200 host's own per-call table"):
# nn.Linear-shaped GEMMs 20.6, torch.bmm 18.9, nn.Conv2d 18.8 (its cuDNN helper launches in the
# kernel sum), layer and RMS norm 18.1, embedding 17.2, add 14.0 (and any other op), softmax
# 13.1, GELU 12.8.
H200_OP_CALL_US = {"gemm": 20.6, "bgemm": 18.9, "attention": 18.9, "conv": 18.8, "norm": 18.1,
                   "gather": 17.2, "elementwise": 14.0, "softmax": 13.1, "activation": 12.8}
H200_OP_CALL_DEFAULT_US = 14.0
H200_OP_CALL_SOURCE = ("the lent H200 host (torch 2.11), per op class the median of eager wall-clock - kernel sum "
                       "over its 1,098 single-op calls (bench/eager_op_host.py): 20.6 µs GEMM, 18.9 bmm, 18.8 "
                       "conv, 18.1 norm, 17.2 embedding, 14.0 add and other ops, 13.1 softmax, 12.8 GELU")


# Per-op host figures of the eager stream for the hosts measured (``Options.host``; the names
# are ``options.EAGER_HOST_NAMES``): "llmcompass-a100" (the default): ``EAGER_DISPATCH_US``,
# backward kernels at their forward figures.  "torch2.11-h200": the lent H200 machine's host
# (torch 2.11.0+cu130, cuDNN 9), fitted on the 44 ``eager`` whole-model rows measured there
# (ResNet-50, MobileNetV2, BERT-base, ViT-B/16; batch 1 and 8; bf16, fp32, TF32; inference and
# training steps) by a grid over (conv, matmul, other, backward ratio), MAPE of the eager
# wall-clock; leave-one-model-out MAPE 22.6 % / bias -3.8 % (in-sample 15.0 % / -3.5 %),
# docs/accuracy.md "Whole models on the H200".
DEFAULT_HOST = EAGER_HOST_NAMES[0]
EAGER_HOSTS = {
    DEFAULT_HOST: EagerHost(EAGER_DISPATCH_US, EAGER_DISPATCH_DEFAULT_US, 1.0, EAGER_DISPATCH_SOURCE),
    "torch2.11-h200": EagerHost(
        {"conv": 42.0, "gemm": 28.0, "bgemm": 28.0, "attention": 28.0}, 10.0, 2.25,
        "the lent H200 host (torch 2.11, cuDNN 9), fitted on its 44 eager whole-model rows "
        "(docs/accuracy.md, Whole models on the H200): 42 µs per convolution (the cuDNN "
        "v9 call), 28 µs per other matrix op, 10 µs per other op, backward kernels 2.25 x their "
        "class figure (autograd engine); leave-one-model-out MAPE 22.6 %, bias -3.8 %",
        op_call=H200_OP_CALL_US, op_call_default_us=H200_OP_CALL_DEFAULT_US, op_call_source=H200_OP_CALL_SOURCE),
}


def eager_host(name: str = "") -> EagerHost:
    """``EAGER_HOSTS[name]`` ("": the default); ``InputSpecError`` naming the hosts otherwise."""
    try:
        return EAGER_HOSTS[name or DEFAULT_HOST]
    except KeyError:
        raise InputSpecError(f"unknown host '{name}' for {{host}}; choose from "
                             f"{', '.join(EAGER_HOSTS)}") from None


# Host time of an op eager PyTorch runs without a kernel (a view: reshape, transpose, unsqueeze,
# expand, select...; eval dropout; .to of its own dtype) over that of a small kernel-launching
# elementwise op: Python, the C++ binding and the dispatcher run for a view too, and it launches
# nothing.  A host-only op's host time = HOST_ONLY_RATIO x the runtime's dispatch figure of a
# small elementwise op (EAGER_DISPATCH_DEFAULT_US, or a profile calibrated with the runtime: its
# measured per-op figure).  Measured, not fitted: the median over those ops of their host time
# over torch.add's, each paired with torch.add timed just before and after, no_grad.
HOST_ONLY_RATIO = 0.81
HOST_ONLY_SOURCE = ("bench/eager_host_ops.py on a shared 2-core x86_64 machine, CPU PyTorch "
                    "2.14.1, no_grad, 4x8 fp32 tensors, 15 trials: the median over 12 view-type "
                    "ops of their host time / torch.add's, 0.81 (per op 0.64 reshape to 3.3 split; "
                    "torch.add / itself 1.09: ~10% noise; 0.72 with grad)")


def eager_dispatch_us(op_class: str, host: str = "") -> float:
    """Host issue cost (us) of one ``op_class`` kernel under ``eager`` on ``host`` (a name of
    ``EAGER_HOSTS``; "": the default, ``EAGER_DISPATCH_US``): the table's figure of ``op_class``
    or of the first class it falls back to that has one (a depthwise convolution or an
    lhs-transposed product is still one matmul-like framework op); else the table's default."""
    table = eager_host(host)
    return _class_figure(table.per_class, table.default_us, op_class)


def _class_figure(table: dict[str, float], default: float, op_class: str) -> float:
    """``table``'s figure of ``op_class`` or of the first class ``class_chain`` falls back to that
    has one; else ``default``."""
    return next((table[c] for c in class_chain(op_class) if c in table), default)


# Per-kernel launch figure of a profile that has none, by kind (microseconds), with why.
KIND_LAUNCH_US: dict[str, tuple[float, str]] = {
    "gpu": (1.5, "assumed: the NVIDIA profiles' 1.5 µs small-op floor"),
    "tpu": (1.0, "assumed: XLA's GPU cost model's 1 µs launch per kernel "
                 "(openxla/xla gpu_performance_model_base.cc); no TPU figure was found"),
    "npu": (10.0, "assumed: 10 µs per layer invocation of an NPU delegate; no figure was found"),
    "dsp": (10.0, "assumed: 10 µs per layer invocation of a DSP runtime; no figure was found"),
    "cpu": (5.0, "assumed: 5 µs per node of a CPU runtime; calibrate the machine for a measured "
                 "figure (analyze hw calibrate)"),
}


def stream_times(host, device):
    """The eager stream over kernels in issue order (last axis; any leading axes, e.g. profiles):
    ``(dev_end, gap)`` for host issue times ``host`` and device times ``device`` (seconds, same
    shape).  ``dev_end_i = max(host_end_i, dev_end_{i-1}) + k_i``, evaluated without a loop as
    a prefix maximum: with ``H_i = sum_{j<=i} h_j`` and ``K_i = sum_{j<=i} k_j``,
    ``dev_end_i = K_i + max_{j<=i} (H_j - K_{j-1})`` (the device last idle before kernel ``j``).
    ``gap_i = max(0, H_i - dev_end_{i-1})``: the host time kernel ``i``'s start waited for, so
    that ``dev_end_i - dev_end_{i-1} = gap_i + k_i``."""
    import numpy as np

    h = np.asarray(host, dtype=np.float64)
    k = np.asarray(device, dtype=np.float64)
    if h.shape[-1] == 0:
        return np.zeros_like(k), np.zeros_like(k)
    H = np.cumsum(h, axis=-1)
    K = np.cumsum(k, axis=-1)
    dev_end = K + np.maximum.accumulate(H - (K - k), axis=-1)
    prev = np.concatenate([np.zeros_like(dev_end[..., :1]), dev_end[..., :-1]], axis=-1)
    gap = np.maximum(H - prev, 0.0)
    return dev_end, gap


def get(name: str) -> Runtime:
    try:
        return RUNTIMES[name]
    except KeyError:
        raise InputSpecError(f"unknown runtime '{name}'; choose from {', '.join(RUNTIMES)}") from None


# the ``xla`` runtime on a CPU: XLA's CPU backend's own fusion boundaries and a scan's per-trip
# slices and counter (``xla_cpu_fusion``); GPU and TPU keep the ``xla`` policy (XLA's GPU
# backend fuses across the boundaries its CPU backend keeps)
XLA_CPU = Runtime("xla", "xla_cpu", False,
                  "XLA-compiled device time: one launch per fusion, loop bodies once per trip")


# the ``xla`` runtime on a TPU: the same fusion policy, timed as a jitted call from the host
# (``xla_tpu``: one program launch per call plus the kernels)
XLA_TPU = Runtime("xla", "xla", False, xla_tpu.TIME_DEFINITION)


def runtime_for(runtime: Runtime, profile) -> Runtime:
    """The runtime as it runs on ``profile``: ``xla`` on a CPU is ``XLA_CPU``, on a TPU
    ``XLA_TPU``; else unchanged."""
    kind = getattr(profile, "kind", "")
    if runtime.name == "xla" and runtime.fusion == "xla" and kind == "cpu":
        return XLA_CPU
    if runtime.name == "xla" and runtime.fusion == "xla" and kind == "tpu":
        return XLA_TPU
    return runtime


def choose(requested: str | None, model_format: str, profile, host: str | None = None) -> tuple[Runtime, str]:
    """(runtime, why) for one profile: the caller's choice, else xla for a JAX program, else the
    profile's default, else its kind's (``runtime_for`` the profile); ``host``: a name of
    ``EAGER_HOSTS`` the runtime charges (None: the default)."""
    if host:   # (Options checked the name; ``eager_host`` refuses an unknown one where used)
        rt, why = choose(requested, model_format, profile)
        return replace(rt, host=host), why
    if requested:
        return runtime_for(get(requested), profile), "requested"
    if model_format == "jaxpr":
        return runtime_for(RUNTIMES["xla"], profile), "JAX program"
    own = getattr(profile, "default_runtime", None)
    if own:
        return runtime_for(get(own), profile), f"{profile.id}'s default"
    return runtime_for(RUNTIMES[KIND_DEFAULT.get(profile.kind, "kernel")], profile), f"default for a {profile.kind}"
