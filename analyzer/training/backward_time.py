"""The backward kernel plan (``backward_plan``) priced on a profile with the forward prediction's
runtime, through the prediction stage's own lowering and kernel-time model.

Each backward kernel becomes a one-kernel node (``as_nodes``: its op's class, its shapes as
specs, so a GEMM's tile, wave and split-K terms see its own M, N, K; its counts and bytes) and
the nodes are lowered under the forward's runtime with no fusion: the same peaks, engines
(PyTorch's fp32 defaults: ``gemm_simt``/``bgemm_simt`` on FMA units, TF32 convolutions),
efficiency constants, fixed cost and host dispatch per kernel as the forward's kernels.

Which time (the runtime's time definition, ``prediction.runtimes``):

- ``eager``: one stream, the forward's kernels then the backward's, the host issuing each while
  the device runs the ones before (``runtimes.stream_times`` over both lists): backward time =
  ``dev_end`` of the last backward kernel - ``dev_end`` of the last forward kernel.  The
  autograd engine issues backward ops from C++ without Python; no sourced per-op figure for
  that was found, so on the default host each backward kernel pays the same per-kernel host
  dispatch as a forward one (``runtimes.EAGER_DISPATCH_US``); a measured host
  (``runtimes.EAGER_HOSTS``, ``Options.host``) charges ``backward_ratio`` x its class figure
  (``torch2.11-h200``: 2.25, fitted on that host's training steps).
- ``kernel``: the sum of the backward kernels' device times.
- ``eager-op``: the sum of their per-op times (dispatch + kernel each; the dispatch that of one
  call timed alone, ``runtimes.EAGER_OP_CALL_US``).

A BatchNorm's backward at bf16 or fp16 is PyTorch's native two-pass kernel (``bn_backward``): its
second pass's bytes are priced with the rest, and its device time is at least its per-channel
serial loop (``prediction.bn_stats``).

A node of the fallback list (no rule) enters with its ratio-method time (``step.backward_rows``:
body + launches) as device time and no host time of its own.  Other runtimes (xla, onnxruntime,
coreml, edgetpu, tflite, qnn ...) and non-GPU profiles keep the ratio method (``step``): their
backward is not PyTorch's autograd.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from analyzer.counting.cost import Cost
from analyzer.counting.engine import COSTED, NodeCost
from analyzer.prediction import engines
from analyzer.training import bn_backward
from analyzer.training.backward_plan import BackwardPlan

PLAN_RUNTIMES = engines.PYTORCH_RUNTIMES     # eager, eager-op, kernel, eager-kernel


def applies(pred, profile) -> bool:
    """Whether ``pred``'s backward is priced by the kernel plan: a PyTorch runtime on a GPU,
    with the forward's per-kernel table at hand."""
    return (pred.runtime in PLAN_RUNTIMES and getattr(profile, "kind", "") == "gpu"
            and pred.kernel_table is not None)


def as_nodes(plan: BackwardPlan) -> list[NodeCost]:
    """One ``NodeCost`` per backward kernel: counts, specs, bytes in its dtype."""
    out = []
    for k in plan.kernels:
        spec = next((s for s in k.out_specs if s is not None), None)
        dtype = spec.dtype if spec is not None else "float32"
        cost = Cost(mac_flops=k.mac_flops, vector_flops=k.vector_flops,
                    transcendentals=k.transcendentals, activation_bytes_read=k.bytes_read,
                    activation_bytes_written=k.bytes_written)
        out.append(NodeCost(k.name, k.op, "", COSTED, cost, k.in_specs, k.out_specs,
                            mac_dtype=dtype if k.mac_flops else None,
                            bytes_by_dtype=((dtype, k.bytes),), out_names=(k.name,)))
    return out


@dataclass(frozen=True)
class BackwardTime:
    """One profile's backward: seconds, the fixed cost inside them, per-kernel times."""

    backward_s: float
    overhead_s: float
    kernel_s: tuple[float, ...]      # per backward kernel (plan order): its time (exposed on a stream)
    fallback_s: float                # the fallback nodes' ratio-method seconds


def kernel_terms(plan: BackwardPlan, nodes_b, pred, profile, autograd: bool = False):
    """(time, host, overhead) arrays [K] of the plan's kernels on ``profile`` under ``pred``'s
    runtime, precision and L2 state (host: the dispatch part of time, 0 without host dispatch)."""
    from analyzer.prediction import runtimes
    from analyzer.prediction.kernels import run
    from analyzer.prediction.lowering import lower

    if not nodes_b:
        z = np.zeros(0)
        return z, z, z
    rt = pred.target.runtime if pred.target is not None else runtimes.get(pred.runtime)
    precision = pred.precision if pred.precision_explicit else None
    native = bn_backward.with_reread(plan, pred)   # (PyTorch's bf16/fp16 BatchNorm backward)
    nodes_b = as_nodes(native) if native is not plan else nodes_b
    low = lower(nodes_b, [profile], precision, replace(rt, fusion="none"), l2_state=pred.l2)
    _, _, ovh, time, _ = run(low, overlap=pred.overlap)
    host = low.runs * low.host[0] if low.host is not None else np.zeros(len(nodes_b))
    idx = np.asarray(low.plan.kernel_of)
    t, h, o = np.zeros(len(nodes_b)), np.zeros(len(nodes_b)), np.zeros(len(nodes_b))
    on = idx >= 0
    t[on], h[on], o[on] = time[0][idx[on]], host[idx[on]], ovh[0][idx[on]]
    t = h + np.maximum(t - h, bn_backward.loop_s(plan, pred, profile))   # (its serial loop, where longer)
    # the autograd engine's host time beyond the class figure (``backward_ratio``; autograd only)
    extra = (backward_ratio(rt) - 1.0) * h if autograd else np.zeros_like(h)
    return t + extra, h + extra, o + extra


def backward_ratio(rt) -> float:
    """A backward kernel's host time over its class figure: the ``eager`` stream's host's
    ``backward_ratio`` (``runtimes.EAGER_HOSTS``); 1 for any other runtime (``eager-op``'s
    per-call table, no host for ``kernel``)."""
    from analyzer.prediction import runtimes

    return runtimes.eager_host(rt.host).backward_ratio if rt.name == "eager" else 1.0


def backward_time(plan: BackwardPlan, nodes_b, pred, profile, fallback_rows,
                  autograd: bool = True) -> BackwardTime:
    """The backward of ``plan`` after ``pred``'s forward (module docstring).  ``fallback_rows``:
    node index -> (body s, launches s) of the ratio method for the plan's fallback nodes.
    ``autograd``: the kernels are the autograd engine's (their host time ``backward_ratio`` x
    the class figure); False: forward kernels issued after the forward (a step's dropouts)."""
    from analyzer.prediction import runtimes

    t, h, o = kernel_terms(plan, nodes_b, pred, profile, autograd)
    fb = {i: sum(fallback_rows.get(i, (0.0, 0.0))) for i in plan.fallback}
    dev = np.array([t[j] - h[j] if kind == "k" else fb[j] for kind, j in plan.order], np.float64)
    host = np.array([h[j] if kind == "k" else 0.0 for kind, j in plan.order], np.float64)
    fb_ovh = sum(fallback_rows.get(i, (0.0, 0.0))[1] for i in plan.fallback)
    stream = pred.target.runtime.stream if pred.target is not None else runtimes.get(pred.runtime).stream
    table = pred.kernel_table
    if stream and table.host is not None:
        fh = np.asarray(table.host, np.float64)
        fd = np.asarray(table.time, np.float64) - fh
        end, gap = runtimes.stream_times(np.concatenate([fh, host]), np.concatenate([fd, dev]))
        nf = len(fh)
        f_end = float(end[nf - 1]) if nf else 0.0
        total = float(end[-1]) - f_end if len(end) > nf else 0.0
        exposed = dev + gap[nf:]
        ovh = [o[j] - h[j] + g if kind == "k" else 0.0 for (kind, j), g in zip(plan.order, gap[nf:])]
        per = tuple(float(exposed[m]) for m, (kind, _) in enumerate(plan.order) if kind == "k")
        return BackwardTime(total, float(sum(ovh)) + fb_ovh, per, float(sum(fb.values())))
    total = float(t.sum()) + float(sum(fb.values()))
    return BackwardTime(total, float(o.sum()) + fb_ovh, tuple(float(x) for x in t),
                        float(sum(fb.values())))


def each_seconds(kernels, pred, profile) -> list[float]:
    """Seconds of each of ``kernels`` alone under ``pred``'s runtime on ``profile`` (the terms
    ``seconds_of`` sums when not ``after_forward``)."""
    if not kernels:
        return []
    plan = BackwardPlan(tuple(kernels), (), tuple(("k", j) for j in range(len(kernels))))
    return [float(x) for x in kernel_terms(plan, as_nodes(plan), pred, profile)[0]]


def seconds_of(kernels, pred, profile, after_forward: bool) -> float:
    """Seconds of extra ``kernels`` (a training step's dropouts) under ``pred``'s runtime on
    ``profile``, priced like the plan's: issued on the forward's stream after its kernels
    where the plan applies and ``after_forward``, else the sum of their times."""
    if not kernels:
        return 0.0
    plan = BackwardPlan(tuple(kernels), (), tuple(("k", j) for j in range(len(kernels))))
    nodes_b = as_nodes(plan)
    if after_forward and applies(pred, profile):
        return backward_time(plan, nodes_b, pred, profile, {}, autograd=False).backward_s
    return float(kernel_terms(plan, nodes_b, pred, profile)[0].sum())
