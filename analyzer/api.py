"""The public entry points (re-exported from ``analyzer``).

The library never prints and never exits: it returns a ``Report`` or raises an
``AnalyzerError`` subclass.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from analyzer.errors import InputSpecError, ShapeError
from analyzer.options import JAX_KEYWORDS, JAX_OPTIONS_ONLY, ONNX_KEYWORDS, Options, refuse_host_for_jax
from analyzer.options import build as build_options

if TYPE_CHECKING:
    from analyzer.report.counts import Report


def analyze(model: Any, hw: str | Sequence[str] | None = None, *,
            options: Options | None = None, **keywords: Any) -> "Report":
    """Count every node of an ONNX model exactly (and predict latency when ``hw`` is given).

    ``model``: a path, bytes or ``onnx.ModelProto`` (external weight data is never read).
    ``hw``: a profile id/alias/.toml path (or a list of them): adds ``report.predictions``.
    ``options``: an ``analyzer.Options``; keywords override its fields:
    ``inputs``: ``{"x": (1, 3, 224, 224)}`` or ``{"x": "1x3x224x224"}`` sets input shapes.
    ``dims``: ``{"batch": 8}`` binds symbolic dims.
    ``values``: ``{"axes": [1]}`` makes graph inputs constants, for inputs whose value decides
    shapes (reduce axes, a window length, a Loop's trip count).
    ``precision``: deploy precision for predictions (fp32, tf32, bf16, fp16, fp8, int8); None:
    the model's dtypes under its framework's defaults (``Options``).
    ``overlap``: per-layer ``max(compute, memory)`` (True) or seed 003's sum (False).
    ``loop_trips``: trip count of Loop/while bodies whose count is not a constant.
    ``causal``: fused attention ops are costed as causal kernels (they skip the masked half).
    ``batch``: the global batch: dim 0 of every graph input, and the shapes a static export
    fixed at its own batch follow (Reshape targets; Expand / Tile / ConstantOfShape shapes of
    constants a Concat joins with the batch, such as ViT's class token:
    ``analyzer.frontends.onnx.batch``), listed in ``report.model["batch"]``; an ``inputs``
    leading dim or ``dims`` value that contradicts it raises.  ``train``: add a training step
    (``report.training``); ``optimizer``: sgd, momentum, adam, adamw, or none (forward +
    backward only, no update); ``dropout``: with ``train``, a probability in [0, 1): dropouts
    where PyTorch code conventionally puts ``nn.Dropout`` (``analyzer.training.dropout``).
    ``l2``: the L2 state each GPU kernel starts in: "warm" (None) or "cold", the L2 flushed
    before each kernel as a single-op benchmark with a flush times it (``Options``).
    Another keyword raises ``TypeError`` naming these.
    """
    from analyzer.counting import rules  # noqa: F401  (fills the registry has_rule reads)
    from analyzer.counting.cost import has_rule
    from analyzer.frontends.onnx import load as onnx_frontend

    opts = build_options("analyze", options, keywords, ONNX_KEYWORDS)
    if opts.dropout is not None:
        from analyzer.training.dropout import check

        check(opts.dropout)
        if not opts.train:
            raise InputSpecError("dropout applies to a training step (train=True)")
    source, rebatched = model, None
    if opts.batch is not None:
        from dataclasses import replace

        from analyzer.frontends.onnx import batch as onnx_batch

        rebatched = onnx_batch.set_batch(model, opts.batch)
        opts = replace(opts, dims=onnx_batch.agree(rebatched, opts.batch, opts.inputs, opts.dims))
        model = rebatched.model
    with _gc_paused():
        try:
            graph, info = onnx_frontend.load(model, inputs=opts.inputs, dims=opts.dims,
                                             values=opts.values, counted=has_rule)
            if rebatched is not None:
                if rebatched.path:
                    info["path"] = rebatched.path
                info["batch"] = {"value": opts.batch, "was": rebatched.old,
                                 "rewritten_nodes": rebatched.rewritten}
                # a symbolic batch dim the inputs led with is bound to it, as dims= binds
                info["dims"] = {**{s: opts.batch for s in sorted(rebatched.symbols)},
                                **(info.get("dims") or {})}
            targets = _targets(hw, opts, "onnx")
            return _report(graph, info, opts, targets, onnxruntime_record(model, targets))
        except ShapeError as e:
            _batch_hint(e, source, opts, rebatched)
            raise


def _batch_hint(e, source: Any, opts: Options, rebatched) -> None:
    """A shape error on a static export says how its batch changes: ``batch=`` when the caller
    gave an input another leading dim than the file's; with ``batch=`` given, that the export's
    batch was rewritten (the node may hold a shape the rewrite could not follow)."""
    from analyzer.errors import Hint

    if rebatched is not None:
        if rebatched.old is None or rebatched.old == opts.batch:
            return
        e.template += (f"; {{batch}} set the export's batch {rebatched.old} to {opts.batch}: "
                       "this node may hold a shape the export fixed that could not be followed")
    else:
        from analyzer.frontends.onnx.batch import static_change

        change = static_change(source, opts.inputs)
        if change is None:
            return
        old, new = change
        e.template += (f"; the file is a static export at batch {old}: to run it at batch {new}, "
                       f"pass {{batch}} (it rewrites the shapes the export fixed) rather than "
                       "a new dim 0 in the input shapes")
        e.hints = (*e.hints, Hint("batch", new))
        e.args = (e.template, *e.args[1:])
        return
    e.hints = (*e.hints, Hint("batch", opts.batch))
    e.args = (e.template, *e.args[1:])


def onnxruntime_record(model: Any, targets):
    """onnxruntime's record of what it fuses in ``model`` (``onnxruntime.record.fusion_record``),
    when a target's runtime reads its own record (``Runtime.fusion_record``) and onnxruntime is
    installed; else None (the prediction then uses fusion.py's patterns, and its notes say
    which). ``targets``: ``prediction.targets.resolve``'s."""
    from analyzer.errors import AnalyzerError

    ort_profiles = [t.profile for t in targets if t.runtime.fusion_record]
    if not ort_profiles:
        return None
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    from analyzer.prediction.onnxruntime.record import fusion_record

    levels = {p.calibration.get("level", "default") for p in ort_profiles if p.calibration}
    level = levels.pop() if len(levels) == 1 else "default"
    # the NCHWc layout reorders are the CPU provider's: not for a GPU profile's kernels
    layout = all(p.kind == "cpu" for p in ort_profiles)
    try:
        return fusion_record(model, level, layout=layout)
    except AnalyzerError:
        return None


@contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while a graph is analysed.

    The analysis allocates hundreds of thousands of small acyclic objects, each allocation
    burst triggering collections that rescan everything alive (measured: ~0.6 s of a 50k-node
    analysis). Reference counting still frees memory; the collector is restored afterwards.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # What the analysis allocated is either garbage already freed by reference
            # counting or the long-lived result: file it with the old objects (freeze, then
            # unfreeze into the oldest generation) instead of letting the first allocation
            # after gc.enable() scan it as one huge young generation (measured ~0.09 s per
            # 50k-node graph). Cyclic garbage among it is still found by the next full
            # collection.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def _targets(hw, options: Options, model_format: str):
    """``hw`` and the runtime option as targets, decided once for every later stage."""
    from analyzer.prediction.targets import resolve

    return resolve(hw, options.runtime, model_format, options.host)


def _report(graph, info: dict, options: Options, targets, fused=None) -> "Report":
    """The tail every frontend shares: cost the graph, build the Report, predict on the
    ``targets``."""
    from analyzer.counting.engine import cost_graph
    from analyzer.report.counts import Report

    report = Report.from_nodes(info, cost_graph(graph, options.counting()))
    if targets:
        from analyzer.prediction.predict import predict

        report = report.with_predictions(
            predict(report, targets, precision=options.precision, overlap=options.overlap,
                    fused=fused, l2=options.l2))
    if options.train:
        from analyzer.training.step import training

        batch = options.batch
        if batch is None:   # dim 0 of the first input that is not a weight (a JAX program's
            # parameter args come first as often as not)
            weights = set(info.get("params_inputs") or ())
            dims = next((d for n, d in info.get("inputs", {}).items() if n not in weights and d),
                        None)
            batch = dims[0] if dims and isinstance(dims[0], int) else None
        report = report.with_training(training(report, options.optimizer or "sgd", batch,
                                               options.dropout))
    return report


def analyze_jax(fn: Any, *example_args: Any, hw: str | Sequence[str] | None = None,
                options: Options | None = None, kwargs: Mapping[str, Any] | None = None,
                **keywords: Any) -> "Report":
    """Count every equation of a JAX program exactly (and predict latency when ``hw`` is given).

    ``fn`` is traced with ``jax.make_jaxpr(fn)(*example_args, **kwargs)``; the args are
    arrays, pytrees of arrays or ``jax.ShapeDtypeStruct``s (no data is needed); args and kwargs
    holding no array (``train=False``) are passed through as static values.  ``fn`` may also be
    a ``ClosedJaxpr``.  ``jax.grad(loss)`` and whole train steps are programs like any other.

    ``kwargs``: the traced function's keyword arguments, any name (``kwargs={"hw": 2,
    "precision": x}`` reaches ``fn`` even where a name is one of this function's own).
    Other keywords are this function's options when they name one (below), else more of
    ``fn``'s keyword arguments (``train=False``); a name given both ways raises ``TypeError``.

    ``options``: an ``analyzer.Options`` (its ONNX fields ``inputs``, ``dims``, ``values``
    must be unset); keywords override its fields:
    ``params_argnums``: positions (or parameter names) of the args that are weights: their
    elements are ``params`` and their bytes weight bytes (default: none; closed-over constant
    arrays always are). Literals are immediates (neither params nor bytes).
    ``loop_trips``: trip count of ``while`` loops whose count is not static.
    ``hw``, ``precision``, ``overlap``, ``causal``: as for ``analyze``.  ``report_name``: the
    report's model path (default: the function's name).  ``Options.l2`` (as for ``analyze``) is
    taken through ``options=`` only: a keyword ``l2=`` is ``fn``'s own.  ``Options.host`` raises
    ``InputSpecError`` (``options.refuse_host_for_jax``: the host tables are eager PyTorch's).
    """
    from analyzer.counting import rules  # noqa: F401  (fills the registry has_rule reads)
    from analyzer.counting.cost import has_rule
    from analyzer.frontends.jaxpr import load as jaxpr_frontend

    own = {k: keywords.pop(k) for k in JAX_KEYWORDS if k in keywords}
    refuse_host_for_jax(options)
    opts = build_options("analyze_jax", options, own, JAX_KEYWORDS + JAX_OPTIONS_ONLY)
    example_kwargs = dict(kwargs or {})
    for k, v in keywords.items():
        if k in example_kwargs:
            raise TypeError(f"analyze_jax() got keyword argument '{k}' both in kwargs= and "
                            "as a keyword")
        example_kwargs[k] = v
    with _gc_paused():
        graph, info = jaxpr_frontend.load(fn, example_args, example_kwargs,
                                          params_argnums=opts.params_argnums,
                                          path=opts.report_name, counted=has_rule)
        return _report(graph, info, opts, _targets(hw, opts, "jaxpr"))
