"""``analyzer.sensitivity(report)``: what to shrink and what hardware would help.

Builds a ``CostModel`` that predicts exactly what the report predicts (its profiles, runtime,
precision, overlap and L2 state), differentiates the jitted latency kernel at the report's own counts
(``analyzer.search.grad``) and returns an ``analyzer.report.whatif.WhatIf``; the report carries
it with ``report.with_sensitivity``.  The report's nodes are used as they are (dims, inputs and
batch already bound); ``source`` (the ONNX model the report was made from) is needed only where
a profile runs under onnxruntime, whose own record of its fused kernels decides the lowering.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from analyzer.errors import InputSpecError, InternalError
from analyzer.options import Options
from analyzer.report.whatif import LayerSensitivity, ProfileSensitivity, WhatIf

# the derivative's latency is the report's latency, or the two disagree on what is predicted
_AGREE_RTOL = 1e-4


def sensitivity(report, *, hw: Any = None, source: Any = None,
                options: Options | None = None) -> WhatIf:
    """First-order sensitivities of every prediction in ``report`` (see the module docstring).

    ``hw``: the profiles the report was predicted on, as ``analyze`` took them (needed for
    profiles given as ``.toml`` files; default: the predictions' hardware ids); ``options``: the
    ``Options`` of the analysis (runtime, loop trips, causal, L2 state; without them the
    predictions' own L2 state).
    """
    from analyzer.search import grad
    from analyzer.search.cost_model import CostModel

    preds = report.predictions
    if not preds:
        raise InputSpecError("sensitivity needs predictions: analyze the model with hw=... first")
    opts = options or Options()
    runtimes = {p.runtime for p in preds}
    runtime = opts.runtime or (runtimes.pop() if len(runtimes) == 1 else None)
    precision = preds[0].precision if preds[0].precision_explicit else None
    # the profiles the report was predicted on (a .toml file's, an edited one), not their ids
    hws = hw if hw is not None else [p.target.profile if p.target is not None else p.hardware
                                      for p in preds]
    cm = CostModel(hws, precision=precision, runtime=runtime, overlap=preds[0].overlap,
                   loop_trips=opts.loop_trips, causal=opts.causal,
                   l2=opts.l2 or ("cold" if any(p.l2 == "cold" for p in preds) else None))
    if len(cm.profiles) != len(preds):
        raise InputSpecError(f"sensitivity: {len(cm.profiles)} profiles given for a report "
                             f"predicted on {len(preds)}")
    counted = cm.count(report)
    if source is not None and counted.fmt == "onnx":
        from analyzer.api import onnxruntime_record

        counted = replace(counted, fused=onnxruntime_record(source, cm.targets("onnx")))
    s = grad.sensitivity_of(cm, grad.LatencyFn(cm, counted))
    out = []
    for p, pred in enumerate(preds):
        lat = float(s.latency_s[p]) + pred.run_overhead_s
        if abs(lat - pred.latency_s) > _AGREE_RTOL * max(pred.latency_s, 1e-12):
            raise InternalError(f"sensitivity on {pred.hardware}: the latency function gives "
                                f"{lat!r} s where the report predicts {pred.latency_s!r} s")
        layers = tuple(LayerSensitivity(index=i, name=n.name, op=n.op, flops=float(s.node_flops[i]),
                                        bytes=float(s.node_bytes[i]),
                                        d_latency_d_flops=float(s.dlat_dflops[p, i]),
                                        d_latency_d_bytes=float(s.dlat_dbytes[p, i]))
                       for i, n in enumerate(report.nodes))
        out.append(ProfileSensitivity(hardware=pred.hardware, runtime=pred.runtime, latency_s=pred.latency_s,
                                      d_latency_d_log_peak=float(s.dlat_dpeak[p]),
                                      d_latency_d_log_bandwidth=float(s.dlat_dbw[p]),
                                      d_latency_d_log_fixed=float(s.dlat_dfixed[p]), layers=layers))
    return WhatIf(tuple(out))


__all__ = ["sensitivity"]
