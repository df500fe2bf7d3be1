"""What the model command does once its arguments are parsed: ``Request`` (its parameters,
grouped) and ``run`` (parse what depends on the model's kind, call the library once, render the
report).  Usage errors are raised as ``InputSpecError`` before any work; ``cli.guard`` turns them
into exit codes.  It computes nothing itself."""

from __future__ import annotations

from dataclasses import dataclass, replace

from analyzer.errors import InputSpecError
from analyzer.options import Options
from cli import scaling as scaling_cli
from cli import scaling_options as scaling_opts
from cli.guard import Spinner
from cli.output import OutputSpec, check as check_output, emit, resolve_format, terminal_width
from cli.parsing import (kwargs_json_text, parse_dims, parse_inputs, parse_values, writable_path,
                         write_output)


@dataclass(frozen=True, kw_only=True)
class Request:
    """The model command's parameters, grouped: what to analyse (``model``, ``hw``), how
    (``options``: the library's ``Options``, built once the model's kind is known), the raw
    specs whose meaning depends on that kind, and the ``output`` spec."""

    model: str
    hw: str | None
    options: Options             # precision, overlap, loop_trips, causal, runtime, l2 (kind-free)
    inputs: tuple[str, ...]      # --input: ONNX shapes, or a JAX program's argument specs
    dims: tuple[str, ...]        # --dim (ONNX)
    values: tuple[str, ...]      # --value (ONNX)
    kwargs_json: str | None      # --kwargs-json (JAX)
    params_args: tuple[str, ...]  # --params (JAX)
    output: OutputSpec
    measure: bool = False        # --measure: run with onnxruntime, compare (ONNX, one profile)
    threads: int | None = None   # --threads (with --measure)
    sensitivity: bool = False    # --sensitivity: what to shrink, what hardware would help
    multi: dict | None = None    # --train, --batch, --devices ... (cli/scaling.py)

    @classmethod
    def from_params(cls, p: dict) -> "Request":
        out = OutputSpec(fmt=resolve_format(p["fmt"], p["output"]), path=p["output"], top=p["top"],
                         group_depth=p["group_depth"], strict=p["strict"], save_baseline=p["save_baseline"],
                         baseline=p["baseline"], max_regression=p["max_regression"], all_rows=p["all_rows"],
                         wide=p["wide"], explain=p["explain"], plot=p["plot"], verbose=p["verbose"])
        opts = Options(precision=p["precision"], overlap=not p["additive"],
                       loop_trips=p["loop_trips"], causal=p["causal"], runtime=p["runtime"], l2=p["l2"],
                       host=p["host"])
        hw = ",".join(p["hw"]) if p["hw"] else None   # --hw a --hw b adds profiles
        if hw is not None and not hw.replace(",", "").strip():   # `--hw ""`: an empty variable
            raise InputSpecError(f"--hw '{hw}' names no profile: give an id, alias or .toml file "
                                 "(analyze hw list)")
        return cls(model=p["model"], hw=hw, options=opts, inputs=p["inputs"], dims=p["dims"],
                   values=p["values"], kwargs_json=p["kwargs_json"], params_args=p["params_args"],
                   output=out, measure=p["measure"], threads=p["threads"], sensitivity=p["sensitivity"])


def run(req: Request) -> None:
    """Parse what depends on the model's kind, call the library once, render the report."""
    from analyzer.frontends.jaxpr.load import is_jax_target
    from analyzer.report import baseline as bl

    model, out, opts = req.model, req.output, req.options
    check_output(out)
    for path, flag in ((out.path, "--output"), (out.save_baseline, "--save-baseline")):
        if path is not None and path != "-":
            writable_path(path, flag)   # before the work: a folder or a missing folder fails now
    multi = req.multi or scaling_opts.pop({k: None for k in scaling_opts.NAMES})
    hws = [h.strip() for h in req.hw.split(",") if h.strip()] if req.hw else None
    doc = threshold = None
    if out.baseline:
        threshold = bl.parse_threshold(out.max_regression or "5%")
        doc = bl.load(out.baseline)
        if hws is None:  # predict on the baseline's own profiles and precision
            base_hws, base_precision = bl.hardware_of(doc)
            hws = base_hws or None
            opts = replace(opts, precision=opts.precision or base_precision)
    _check_measure(req, hws, is_jax_target(model))
    if req.measure and len(multi["batch"] or ()) > 1:
        raise InputSpecError("--measure runs one shape; it does not combine with a --batch sweep")
    _check_sensitivity(req, hws, multi)
    with Spinner(f"analysing {model}") as spinner:
        if is_jax_target(model):   # path/to/file.py:function or package.module:function
            report = _analyze_jax(req, hws, opts, multi, spinner)
        else:
            report = _analyze_onnx(req, hws, opts, multi, doc is not None, spinner)
            if report is None:   # a --dim or --batch sweep: written already
                return
        if doc is not None:
            spinner.update(f"comparing with {out.baseline}")
            report = report.with_comparison(bl.compare(report, doc, threshold, path=out.baseline))
        if multi["plot_scaling"]:
            scaling_cli.plot(report, multi["plot_scaling"])
        emit(report, out, spinner)



def _analyze_jax(req: Request, hws, opts: Options, multi: dict, spinner):
    """The Report of a JAX program (``req.model``: path/to/file.py:function or module:function)."""
    import analyzer
    from analyzer.frontends.jaxpr.load import load_program

    model = req.model
    if req.dims or req.values:
        raise InputSpecError(f"{'--dim' if req.dims else '--value'} applies to ONNX models; "
                             "give a JAX program's shapes with --input NAME=f32[8,128]")
    fn, args, kwargs = load_program(model, parse_inputs(req.inputs),
                                    kwargs_json_text(req.kwargs_json))
    opts = replace(opts, report_name=model, params_argnums=list(req.params_args) or None)
    training = scaling_opts.analysis_options(multi, True)
    if multi["devices"]:   # data parallel of the step (--train: given to scale, not to Options)
        report = scaling_opts.scale(fn, hws, opts, multi, args=args, kwargs=kwargs)
    else:
        report = analyzer.analyze_jax(fn, *args, hw=hws, options=replace(opts, **training),
                                      kwargs=kwargs)
    if req.sensitivity:
        spinner.update("differentiating the latency kernels (--sensitivity)")
        report = report.with_sensitivity(analyzer.sensitivity(report, hw=hws, options=opts))
    return report


def _analyze_onnx(req: Request, hws, opts: Options, multi: dict, baseline: bool, spinner):
    """The Report of an ONNX model (scaled, with sensitivities or a measured run as asked); None
    after a --dim or --batch sweep, whose rows it writes itself."""
    import analyzer

    model, out = req.model, req.output
    if req.kwargs_json:
        raise InputSpecError("--kwargs-json applies to JAX programs (MODEL of the form "
                             "path/to/file.py:function)")
    if req.params_args:
        raise InputSpecError("--params applies to JAX programs; an ONNX model's "
                             "weights are its initializers")
    dim_values = parse_dims(req.dims)
    batches = multi["batch"]
    sweep = any(len(v) > 1 for v in dim_values.values()) or len(batches or ()) > 1
    if sweep and (baseline or out.save_baseline or out.group_depth or out.top
                  or out.all_rows or out.wide or out.explain or out.plot
                  or out.fmt == "html" or multi["train"] or multi["devices"]):
        raise InputSpecError("a --dim or --batch sweep prints one row per value; it does "
                             "not combine with --baseline, --save-baseline, "
                             "--group-depth, --top, --all, --wide, --explain, --plot, "
                             "html, --train or --devices")
    opts = replace(opts, inputs=parse_inputs(req.inputs) or None,
                   values=parse_values(req.values) or None)
    if sweep:
        from analyzer.render.formats import render_sweep

        sw = analyzer.sweep(model, dim_values, hws, options=opts,
                            **({"batch": batches} if batches else {}))
        spinner.stop()
        cols = terminal_width() if out.path is None and out.fmt == "table" else None
        write_output(render_sweep(sw, out.fmt, width=cols), out.path)
        if out.strict:
            for _, rep in sw.points:
                rep.require_full_coverage()
        return None
    dims = {n: v[0] for k, v in dim_values.items() for n in k.split("+")}
    if multi["devices"]:
        report = scaling_opts.scale(model, hws, replace(opts, dims=dims or None), multi)
    else:
        report = analyzer.analyze(model, hws, options=replace(
            opts, dims=dims or None, **scaling_opts.analysis_options(multi, False)))
    if req.sensitivity:
        spinner.update("differentiating the latency kernels (--sensitivity)")
        report = report.with_sensitivity(analyzer.sensitivity(
            report, hw=hws, source=model, options=opts))
    if req.measure:
        from analyzer.measure.run import measure_report

        spinner.update(f"measuring {model} with onnxruntime")
        report = measure_report(report, model, hws[0], threads=req.threads)
    return report


def _check_sensitivity(req: Request, hws: list[str] | None, multi: dict) -> None:
    """Usage errors of --sensitivity, before any work."""
    if not req.sensitivity:
        return
    if not hws:
        raise InputSpecError("--sensitivity differentiates the predicted latency: give profiles "
                             "with --hw, e.g. --hw a100")
    if any(len(v) > 1 for v in parse_dims(req.dims).values()) or len(multi["batch"] or ()) > 1:
        raise InputSpecError("--sensitivity applies to one shape; it does not combine with a "
                             "--dim or --batch sweep")
    for name in ("train", "devices"):
        if multi.get(name):
            raise InputSpecError(f"--sensitivity covers the forward pass on one device; it does "
                                 f"not combine with --{name}")


def _check_measure(req: Request, hws: list[str] | None, jax: bool) -> None:
    """Usage errors of --measure / --threads, before any work."""
    if not req.measure:
        if req.threads is not None:
            raise InputSpecError("--threads applies to --measure (onnxruntime's threads)")
        return
    if jax:
        raise InputSpecError("--measure runs ONNX models with onnxruntime; a JAX program is not "
                             "measured")
    if not hws or len(hws) != 1:
        raise InputSpecError("--measure compares one prediction with the run: give one CPU "
                             "profile, e.g. --hw my-machine.toml (from `analyze hw calibrate`)")
    if req.values:
        raise InputSpecError("--measure feeds every graph input to onnxruntime; it does not "
                             "combine with --value")
    if any(len(v) > 1 for v in parse_dims(req.dims).values()):
        raise InputSpecError("--measure runs one shape; it does not combine with a --dim sweep")
    if req.output.group_depth is not None:
        raise InputSpecError("--measure compares per kernel; it does not combine with --group-depth")
