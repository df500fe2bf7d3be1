"""Runtimes: what runs the model decides which nodes fuse, what each kernel pays to launch, and
which time is being predicted.

=============  ==============  ==========================================================
runtime        fusion policy   time predicted
=============  ==============  ==========================================================
kernel         none            the sum of device kernel times with no host gaps (what a
                               profiler's kernel sum or a CUDA-graph replay shows)
eager          none            each op's wall-clock as an eager framework runs it: host
                               dispatch + kernel + synchronize (``time.time()`` around
                               one call and a device synchronize), summed over ops
onnxruntime    onnxruntime     ``session.run`` of onnxruntime at its default optimization
                               level: its fused kernels plus its per-node dispatch
xla            xla             an XLA-compiled program's device time: one launch per fusion;
                               ``scan``/``while`` bodies launch their kernels on every trip
=============  ==============  ==========================================================

Which runtime a prediction uses: the caller's ``runtime=``; else ``xla`` for a JAX program;
else the profile's ``default_runtime``; else the default of its kind (``KIND_DEFAULT``).

Host dispatch (``eager``, ``onnxruntime``) is a per-kernel figure with a source: a profile's own
``launch_overhead_us`` where the runtime is the one it was measured with (a calibrated profile),
else the per-op-class figures of ``EAGER_DISPATCH_US`` / the kind defaults below, which reports
flag as assumed.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.errors import InputSpecError
from analyzer.prediction.efficiency.op_classes import class_chain


@dataclass(frozen=True)
class Runtime:
    name: str
    fusion: str            # a fusion policy of fusion.POLICIES
    host_dispatch: bool    # each kernel also pays the host's per-op dispatch
    time_definition: str
    # the runtime's own record of the kernels it runs (read from the runtime itself:
    # prediction.onnxruntime.record) replaces the fusion policy's patterns where one is at hand
    fusion_record: bool = False


RUNTIMES: dict[str, Runtime] = {r.name: r for r in (
    Runtime("kernel", "none", False,
            "sum of device kernel times, no host gaps (profiler kernel sum / CUDA-graph replay)"),
    Runtime("eager", "none", True,
            "eager wall-clock per op (host dispatch + kernel + synchronize), summed"),
    Runtime("onnxruntime", "onnxruntime", True,
            "onnxruntime session.run wall-clock: fused kernels + per-node dispatch",
            fusion_record=True),
    Runtime("xla", "xla", False,
            "XLA-compiled device time: one launch per fusion, loop bodies once per trip"),
)}

# the runtime a profile of each kind predicts when neither the caller nor the profile says
KIND_DEFAULT = {"gpu": "kernel", "tpu": "xla", "npu": "kernel", "dsp": "kernel",
                "cpu": "onnxruntime"}

# Host dispatch per op of an eager framework on an NVIDIA GPU, by op class (microseconds):
# LLMCompass's A100 model (PrincetonUniversity/LLMCompass, hardware_model/compute_module.py, as
# digested in shared/reference/digest_latency_modeling.md): 21 us per matmul, 12 us per softmax.
# Its 45 us per layernorm and GELU is not used: those two were torch.compile'd in its
# measurements (a compiled function's call, not an eager op's). Every class but the matrix ones
# takes its eager single-kernel softmax figure (12 us).
EAGER_DISPATCH_US = {"gemm": 21.0, "bgemm": 21.0, "conv": 21.0, "attention": 21.0,
                     "softmax": 12.0}
EAGER_DISPATCH_DEFAULT_US = 12.0
EAGER_DISPATCH_SOURCE = ("LLMCompass A100 per-op overheads (21 us matmul, 12 us softmax), "
                         "PrincetonUniversity/LLMCompass hardware_model/compute_module.py; other op "
                         "classes take the 12 us eager softmax figure (its 45 us layernorm/GELU were "
                         "torch.compile'd); a host property: one H100 host with torch 2.11 measured "
                         "21-35 us per op (opcost's H100 check data in bench/results, not fitted on)")


def eager_dispatch_us(op_class: str) -> float:
    """``EAGER_DISPATCH_US`` of ``op_class`` or of the first class it falls back to that has a
    figure (a depthwise convolution or an lhs-transposed product is still one matmul-like
    framework op); else the default."""
    return next((EAGER_DISPATCH_US[c] for c in class_chain(op_class) if c in EAGER_DISPATCH_US),
                EAGER_DISPATCH_DEFAULT_US)


# Per-kernel launch figure of a profile that has none, by kind (microseconds), with why.
KIND_LAUNCH_US: dict[str, tuple[float, str]] = {
    "gpu": (1.5, "assumed: the NVIDIA profiles' 1.5 us small-op floor"),
    "tpu": (1.0, "assumed: XLA's GPU cost model's 1 us launch per kernel "
                 "(openxla/xla gpu_performance_model_base.cc); no TPU figure was found"),
    "npu": (10.0, "assumed: 10 us per layer invocation of an NPU delegate; no figure was found"),
    "dsp": (10.0, "assumed: 10 us per layer invocation of a DSP runtime; no figure was found"),
    "cpu": (5.0, "assumed: 5 us per node of a CPU runtime; calibrate the machine for a measured "
                 "figure (analyze hw calibrate)"),
}


def get(name: str) -> Runtime:
    try:
        return RUNTIMES[name]
    except KeyError:
        raise InputSpecError(f"unknown runtime '{name}'; choose from {', '.join(RUNTIMES)}") from None


def choose(requested: str | None, model_format: str, profile) -> tuple[Runtime, str]:
    """(runtime, why) for one profile: the caller's choice, else xla for a JAX program, else the
    profile's default, else its kind's."""
    if requested:
        return get(requested), "requested"
    if model_format == "jaxpr":
        return RUNTIMES["xla"], "JAX program"
    own = getattr(profile, "default_runtime", None)
    if own:
        return get(own), f"{profile.id}'s default"
    return RUNTIMES[KIND_DEFAULT.get(profile.kind, "kernel")], f"default for a {profile.kind}"
