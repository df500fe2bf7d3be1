"""Measure an ONNX model with onnxruntime and set the run beside a Report's prediction.

``measure_report(report, model, hw)`` runs ``model`` on this machine's CPU through
``analyzer.measure.onnxruntime.measure`` (onnxruntime's fusion record joins its kernels to
opcost's nodes) and returns ``report.with_measured(compare_measured(report, measured))``: the
numbers and their definitions are in ``analyzer.report.measured``.

What is compared must be comparable: an ONNX model, one prediction, made for a CPU profile and for
runtime ``onnxruntime`` (whose time is ``session.run`` wall-clock, what is measured); anything
else is an ``InputSpecError``.  The run uses the profile's calibration threads and session level
when it has them (a profile written by ``analyze hw calibrate``), and the input shapes the report
was analysed at (symbolic dims bound to the report's values; a declared fixed dim that the report
changed cannot be run and is an error).  onnxruntime is the optional ``measure`` extra.
"""

from __future__ import annotations

from typing import Any

from analyzer.errors import Hint, InputSpecError


def run_dims(report, proto) -> dict[str, int]:
    """The values of ``proto``'s symbolic input dims at the shapes ``report`` was analysed at."""
    shapes = report.model.get("inputs", {}) if isinstance(report.model, dict) else {}
    inits = {t.name for t in proto.graph.initializer}
    dims: dict[str, int] = {}
    for vi in proto.graph.input:
        if vi.name in inits or vi.name not in shapes:
            continue
        got = shapes[vi.name]
        declared = vi.type.tensor_type.shape.dim
        for k, d in enumerate(declared):
            have = got[k] if k < len(got) else None
            if d.dim_param and isinstance(have, int):
                dims[d.dim_param] = have
            elif d.HasField("dim_value") and isinstance(have, int) and have != d.dim_value:
                decl = "x".join(str(x.dim_value) if x.HasField("dim_value") else x.dim_param
                                for x in declared)
                raise InputSpecError(
                    f"input '{vi.name}' is declared {decl} and onnxruntime runs it so; it was "
                    f"analysed as {'x'.join(map(str, got))}: measure it at its declared shape "
                    f"(drop {{inputs}})", hints=(Hint("inputs"),))
    return dims


def measure_report(report, model: Any, hw: Any, *, threads: int | None = None, runs: int = 20,
                   q: float = 0.5):
    """``report`` (with one prediction, made on ``hw``) carrying a measured onnxruntime run of
    ``model`` (a path, bytes or ``onnx.ModelProto``) next to it.

    ``hw``: the profile id/path (or ``HardwareProfile``) the prediction was made on.
    ``threads``: onnxruntime's intra-op threads (default: the profile's calibration threads, else
    all cores). ``runs``: timed runs (at least). ``q``: the quantile over runs (0.5: medians)."""
    import hardware_db
    from analyzer.prediction.onnxruntime.graph import import_ort, load_model
    from analyzer.measure.onnxruntime import measure
    from analyzer.report.measured import compare_measured

    fmt = report.model.get("format") if isinstance(report.model, dict) else None
    if fmt != "onnx":
        raise InputSpecError("only ONNX models can be measured (onnxruntime runs them); "
                             f"this report is of a {fmt or 'non-ONNX'} program")
    if len(report.predictions) != 1:
        raise InputSpecError(f"a measured run is compared with one prediction; this report has "
                             f"{len(report.predictions)} (pass one profile to {{hw}})",
                             hints=(Hint("hw"),))
    profile = hardware_db.get(hw)
    pred = report.predictions[0]
    if profile.kind != "cpu":
        raise InputSpecError(
            f"the run is measured on this machine's CPU; {profile.id} is a {profile.kind}: "
            "predict on a CPU profile (one written by `analyze hw calibrate`) to compare")
    if pred.runtime != "onnxruntime":
        raise InputSpecError(
            f"the run is onnxruntime's session.run; the prediction is for runtime {pred.runtime} "
            "(predict for runtime onnxruntime to compare)")
    import_ort()
    cal = profile.calibration or {}
    threads = threads or cal.get("threads")
    level = cal.get("level", "default")
    proto = load_model(model)
    measured = measure(proto, threads=threads, level=level, runs=runs, dims=run_dims(report, proto),
                       q=q)
    return report.with_measured(compare_measured(report, measured))
