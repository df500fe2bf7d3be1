"""`analyze` / `opcost`: the command line's group and its model command.

The model command parses its arguments (``cli.parsing``), calls the library once, renders
the Report (``analyzer.render``) and leaves errors to ``cli.guard.guard``, the one place they
become exit codes: 0 ok, 1 a check failed, 2 bad input or usage, 3 internal error, 130
interrupted.  The hardware commands are ``cli.hw``.  It computes nothing itself, and imports
jax/onnx only when a model is analysed.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

import click

from analyzer.errors import InputSpecError
from analyzer.options import L2_STATES, Options
from cli.guard import Spinner, guard
from cli import scaling as scaling_cli
from cli import scaling_options as scaling_opts
from cli.hw import hw_group
from cli.output import FORMAT_ALIASES, FORMATS, OutputSpec, check as check_output, emit, resolve_format, terminal_width
from cli.parsing import (kwargs_json_text, parse_dims, parse_inputs, parse_values, writable_path,
                         write_output)

PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "w8a16")
# analyzer.prediction.runtimes.RUNTIMES, kept static so that --help imports no prediction code
# (a test checks the two agree); the help text reads their descriptions when it is shown
RUNTIMES = ("kernel", "eager", "eager-kernel", "eager-op", "onnxruntime", "xla", "coreml", "edgetpu", "qnn", "qnn-dlc",
            "qnn-tflite")


HELP_TEXT_WIDTH = 44   # click's help: 80 columns less 2, the option column (30 + 2) and 2


class _RuntimeOption(click.Option):
    """--runtime, whose help lists each runtime's time definition from the library, read only
    when help is rendered."""

    def get_help_record(self, ctx):
        from analyzer.prediction.runtimes import RUNTIMES as defs

        lines = [self.help, "\n\b"]
        # each runtime wrapped to the help's text column (click's 80-column cap leaves 44),
        # its continuation lines hanging under it: a '\b' block is printed as it is
        lines += [x for name in RUNTIMES if name in defs
                  for x in textwrap.wrap(f"{name}: {defs[name].time_definition}", HELP_TEXT_WIDTH,
                                         subsequent_indent="  ", break_on_hyphens=False)]
        self.help = "\n".join(lines)
        try:
            return super().get_help_record(ctx)
        finally:
            self.help = lines[0]


_IMPLIED = "opcost.model_implied"   # ctx.meta key: the user typed no `model` before MODEL


class _ModelContext(click.Context):
    """The model command's context: when the user left the command name out (`analyze x.onnx`),
    usage errors and help say `analyze [OPTIONS] MODEL` / `Try 'analyze --help'`, what they
    typed, never the hidden command's name."""

    @property
    def command_path(self) -> str:
        if self.meta.get(_IMPLIED) and self.parent is not None:
            return self.parent.command_path
        return super().command_path


class _ModelCommand(click.Command):
    context_class = _ModelContext


class _Main(click.Group):
    """A group whose default command analyses a model: `analyze MODEL` and `analyze hw list`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["model", *args]
            ctx.meta[_IMPLIED] = True
        return super().parse_args(ctx, args)

    def format_help(self, ctx, formatter):
        model_cmd = self.commands["model"]
        with click.Context(model_cmd, info_name=ctx.info_name, parent=ctx.parent) as sub:
            model_cmd.format_help(sub, formatter)
        formatter.write_paragraph()
        with formatter.section("Other commands"):
            formatter.write_dl([
                ("hw list", "list the hardware profiles (ids, aliases, peaks, bandwidth)"),
                ("hw show ID", "one profile with the source of every number"),
                ("hw calibrate --out FILE", "measure this machine (onnxruntime or XLA) into a profile"),
            ])


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="opcost", prog_name="opcost")
def main():
    """opcost: exact per-layer counts and latency predictions for ONNX models."""


@main.command("model", cls=_ModelCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("model", metavar="MODEL")
@click.option("--hw", "hw", metavar="ID|FILE[,ID...]", multiple=True,
              help="Predict latency on these hardware profiles (ids, aliases or .toml files), "
                   "comma-separated or repeated (--hw a100 --hw h100: both); see `analyze hw list`.")
@click.option("--input", "inputs", multiple=True, metavar="NAME=DIMS",
              help="Set an input's shape, e.g. --input x=1x3x224x224 (repeatable); also "
                   "x=batch,3,224,224 (a symbol keeps its case; commas when it holds an x) or "
                   "x=f32[1,3,224,224] (the dtype must be the file's). A JAX program takes "
                   "DTYPE[dims]: --input x=f32[8,784].")
@click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE[,VALUE...]",
              help="Bind a symbolic dim, e.g. --dim batch=8 (repeatable, or --dim batch=1,seq=16); "
                   "several values (--dim seq=128,512,2048) sweep them and print one row per value; "
                   "dims joined with + move together (--dim seq+total=16,64). A static "
                   "export has no symbolic batch: set it with --batch.")
@click.option("--batch", "batch", default=None, metavar="B[,B...]",
              help="Set the batch of an ONNX model, e.g. --batch 64: dim 0 of every graph input, "
                   "and the shapes a static (batch 1) export fixed follow it (Reshape targets, "
                   "a class token's Expand; JSON's model.batch lists the rewritten nodes). "
                   "Several values (--batch 1,8,64) sweep it, one row per value. Also the global "
                   "batch of --train and --devices.")
@click.option("--value", "values", multiple=True, metavar="NAME=V[,V...]",
              help="Make a graph input a constant, for inputs whose value decides shapes "
                   "(reduce axes, a window length, a Loop count), e.g. --value axes=1 (repeatable).")
@click.option("--precision", type=click.Choice(PRECISIONS), default=None,
              help="Deploy precision for predictions (overrides the model's float dtypes). "
                   "fp32: every product on the FMA units (PyTorch with allow_tf32 off); tf32: on the "
                   "tensor cores. Without it an fp32 model takes its framework's defaults (PyTorch: "
                   "TF32 convolutions, fp32 matmuls), stated in the notes. w8a16: int8 weights (1 B), "
                   "int16 activations (2 B), products at the device's 16-bit rate (on a Hexagon NPU its "
                   "fitted int8 x int16 rate), stated in the notes.")
@click.option("--l2", "l2", type=click.Choice(L2_STATES), default=None,
              help="The L2 state each GPU kernel starts in, part of the time predicted: warm (the "
                   "default) finds in the L2 what the kernel before it left there (a kernel inside "
                   "a model, an op re-run back to back, CUDA-graph replays); cold has the L2 flushed "
                   "before each kernel, every byte from DRAM (a single-op benchmark with a flush: "
                   "Triton's do_bench, nvbench). GPU profiles only; others warn.")
@click.option("--host", "host", default=None, metavar="NAME",
              help="Whose per-op host figures --runtime eager charges: llmcompass-a100 (the "
                   "default), torch2.11-h200 (an H200 host with torch 2.11; docs/model.md).")
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None, cls=_RuntimeOption,
              metavar="NAME",
              help="What runs the model, which decides fusion, per-kernel dispatch and the time "
                   "predicted (default: xla for a JAX program, else the profile's own, else its "
                   "kind's):")
@click.option("--format", "fmt", type=click.Choice((*FORMATS, *FORMAT_ALIASES), case_sensitive=False),
              default=None,
              help="Output format (md: markdown; default: from -o FILE's extension .json .csv .md .html, else "
                   "the terminal view); json and csv carry exact integers; html is one offline "
                   "file with a roofline chart and a sortable layer table.")
@click.option("--output", "-o", "output", metavar="FILE", default=None,
              help="Write the report to FILE (atomically) instead of stdout.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show only the N heaviest layers (by predicted time, else FLOPs; the terminal "
                   "view shows 15 by default) in the table, csv, markdown and html.")
@click.option("--all", "all_rows", is_flag=True,
              help="Show every layer and every rollup row (the terminal view, markdown, html).")
@click.option("--wide", is_flag=True,
              help="All the columns: counts by kind, bytes by class, intensity, kernel, output.")
@click.option("--verbose", "verbose", is_flag=True,
              help="The terminal view's headline with every note, assumption and provenance in "
                   "full under each profile (json, csv and markdown carry them always).")
@click.option("--explain", "explain", metavar="LAYER", default=None,
              help="Print one layer's arithmetic: counts, bytes, intensity, ridge point, each "
                   "time term and the efficiency constants with their provenance.")
@click.option("--plot", "plot", metavar="FILE.png|svg|html", default=None,
              help="Write the roofline chart alone (png/svg through matplotlib, html through "
                   "plotly; needs opcost[plot]).")
@click.option("--strict", is_flag=True, help="Exit 1 if any node has no cost rule.")
@click.option("--additive", is_flag=True,
              help="Add compute and memory time per layer (a plain roofline sum) instead of overlapping "
                   "them (max).")
@click.option("--save-baseline", "save_baseline", metavar="FILE", default=None,
              help="Write a baseline (counts and predicted latency per layer and profile) to FILE.")
@click.option("--baseline", "baseline", metavar="FILE", default=None,
              help="Compare with a baseline; without --hw, predicts on the baseline's profiles.")
@click.option("--max-regression", "max_regression", metavar="PCT", default=None,
              help="With --baseline: exit 1 when total predicted latency on any profile grows "
                   "by more than PCT percent (5% or 5: a bare number is percent too, never a "
                   "fraction; default 5%).")
@click.option("--kwargs-json", "kwargs_json", metavar="JSON|@FILE", default=None,
              help="JAX programs: static non-array keyword arguments, e.g. '{\"train\": false}', "
                   "or @FILE to read them from a JSON file.")
@click.option("--group-depth", "group_depth", type=click.IntRange(min=1), default=None, metavar="N",
              help="Sum the layer rows by the first N components of their names (module paths).")
@click.option("--loop-trips", "loop_trips", type=click.IntRange(min=0), default=None, metavar="N",
              help="Trip count for Loop/while bodies whose count is not a constant.")
@click.option("--causal", is_flag=True,
              help="Cost fused attention ops as causal kernels (they skip the masked half).")
@click.option("--params", "params_args", multiple=True, metavar="NAME",
              help="JAX programs: an argument that holds weights (counted as params; with "
                   "--devices, the gradients data parallel all-reduces; repeatable).")
@click.option("--measure", is_flag=True,
              help="Also run the model with onnxruntime on this machine's CPU and print predicted "
                   "vs measured per layer and in total (ONNX, one CPU --hw profile, e.g. one "
                   "written by `analyze hw calibrate`; needs opcost[measure]).")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --measure: onnxruntime's intra-op threads (default: the profile's "
                   "calibration threads, else all cores).")
@click.option("--sensitivity", is_flag=True,
              help="Also show what to shrink (the layers whose 10% fewer FLOPs or bytes save "
                   "most) and what hardware would help (10% more peak, bandwidth, less launch "
                   "cost), first-order, from the latency kernel's derivatives; needs --hw. JSON "
                   "carries every layer's derivatives.")
@scaling_opts.options
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
def model_cmd(**params):
    """Count params, FLOPs (MAC / vector / transcendental) and bytes of every node of MODEL.

    \b
    MODEL is an .onnx file (weights in external .data files are never read), or a
    JAX program: path/to/file.py:function or package.module:function, traced
    with --input shapes such as --input x=f32[8,784] (no data needed).
    Examples:
      analyze resnet50.onnx
      analyze model.onnx --dim batch=8 --format json -o report.json
      analyze model.onnx --input x=1x3x224x224 --top 10 --strict
      analyze bert.onnx --dim batch=1,seq=128,512,2048 --hw h100
      analyze vit.onnx --batch 1,8,64 --hw a100

    \b
      analyze model.onnx --hw a100,h100,tpu-v5e --precision bf16
      analyze model.onnx --hw a100 --save-baseline base.json
      analyze model.onnx --baseline base.json --max-regression 5% -o gate.md
      analyze samples/jax_models.py:mlp_infer --input x=f32[8,784] --group-depth 1
      analyze model.onnx --hw my-machine.toml --measure --runtime onnxruntime
      analyze model.onnx --hw a100,h100 --sensitivity

    Exit codes: 0 ok, 1 a check failed (--strict, regression beyond
    --max-regression), 2 bad input or usage, 3 internal error (a bug in
    opcost: please report it; --debug shows the traceback).
    """
    debug = params.pop("debug")
    guard(lambda: _run_model(replace(Request.from_params(params),
                                     multi=scaling_opts.pop(params))), debug)


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


def _run_model(req: Request) -> None:
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


main.add_command(hw_group)


if __name__ == "__main__":
    main()
