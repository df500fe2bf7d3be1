"""`analyze` / `opcost`: the command line.

This module parses arguments, calls the library, renders its Report and maps
errors to exit codes in one place (``_guard``): 0 ok, 1 a check failed
(``CheckFailed``), 2 bad input or usage (any other ``AnalyzerError``, worded with
this program's flags: ``e.format("cli")``), 3 an internal error (``InternalError`` or
any other exception: a bug in opcost, one line asking for a report; ``--debug``
prints the traceback), 130 interrupted.
It computes nothing itself, and imports jax/onnx only when a model is analysed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass, replace

import click

from analyzer.errors import AnalyzerError, CheckFailed, InputSpecError, InternalError
from analyzer.options import Options

FORMATS = ("table", "json", "csv", "markdown")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def _parse_inputs(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, eq, shape = v.partition("=")
        if not eq or not name or not shape:
            raise InputSpecError(f"--input '{v}': expected NAME=DIMS, e.g. --input x=1x3x224x224")
        out[name] = shape
    return out


def _parse_values(values: tuple[str, ...]) -> dict[str, list[float | int]]:
    """--value NAME=V[,V...] -> {NAME: [numbers]} (ints stay ints)."""
    out: dict[str, list[float | int]] = {}
    for v in values:
        name, eq, text = v.partition("=")
        if not eq or not name or not text:
            raise InputSpecError(f"--value '{v}': expected NAME=V[,V...], e.g. --value axes=1")
        nums: list[float | int] = []
        for part in text.split(","):
            try:
                nums.append(int(part))
            except ValueError:
                try:
                    nums.append(float(part))
                except ValueError:
                    raise InputSpecError(f"--value '{v}': '{part}' is not a number") from None
        out[name] = nums
    return out


def _parse_dims(values: tuple[str, ...]) -> dict[str, list[int]]:
    """--dim NAME=V or NAME=V1,V2,... (a sweep) -> {NAME: [values]}; one option may bind
    several dims: --dim batch=1,seq=16 (an item with '=' starts the next dim); NAME may join
    dims that move together, seq+total=16,64 (kept as one key for ``analyzer.sweep``)."""
    out: dict[str, list[int]] = {}
    for v in values:
        name = None
        for part in v.split(","):
            if "=" in part:
                name, _, part = part.partition("=")
                group = name.split("+")  # dims joined with + take the same values together
                if not all(group):
                    raise InputSpecError(
                        f"--dim '{v}': expected NAME=VALUE or NAME=V1,V2,..., e.g. --dim batch=8")
                twice = {n for k in out for n in k.split("+")} & set(group)
                if twice or len(set(group)) != len(group):
                    raise InputSpecError(f"--dim '{v}': '{min(twice or group)}' is given twice")
                out[name] = []
            if name is None or not part:
                raise InputSpecError(f"--dim '{v}': expected NAME=VALUE or NAME=V1,V2,..., e.g. --dim batch=8")
            try:
                n = int(part)
            except ValueError:
                raise InputSpecError(f"--dim '{v}': '{part}' is not an integer") from None
            if n < 0:
                raise InputSpecError(f"--dim '{v}': dims cannot be negative")
            out[name].append(n)
    return out


def write_output(text: str, path: str | None) -> None:
    """Write to stdout, or atomically to ``path`` (a temp file in the same folder, then rename)."""
    if path is None or path == "-":
        click.echo(text, nl=False)
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputSpecError(f"--output {path}: folder '{folder}' does not exist")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".opcost-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class _Main(click.Group):
    """A group whose default command analyses a model: `analyze MODEL` and `analyze hw list`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["model", *args]
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
            ])


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="opcost", prog_name="opcost")
def main():
    """opcost: exact per-layer counts and latency predictions for ONNX models."""


@main.command("model", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("model", metavar="MODEL")
@click.option("--hw", "hw", metavar="ID|FILE[,ID...]",
              help="Predict latency on these hardware profiles (ids, aliases or .toml files), "
                   "comma-separated; see `analyze hw list`.")
@click.option("--input", "inputs", multiple=True, metavar="NAME=DIMS",
              help="Set an input's shape, e.g. --input x=1x3x224x224 (repeatable).")
@click.option("--dim", "dims", multiple=True, metavar="NAME=VALUE[,VALUE...]",
              help="Bind a symbolic dim, e.g. --dim batch=8 (repeatable, or --dim batch=1,seq=16); "
                   "several values (--dim seq=128,512,2048) sweep them and print one row per value; "
                   "dims joined with + move together (--dim seq+total=16,64).")
@click.option("--value", "values", multiple=True, metavar="NAME=V[,V...]",
              help="Make a graph input a constant, for inputs whose value decides shapes "
                   "(reduce axes, a window length, a Loop count), e.g. --value axes=1 (repeatable).")
@click.option("--precision", type=click.Choice(PRECISIONS), default=None,
              help="Deploy precision for predictions (overrides the model's float dtypes).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format; json and csv carry exact integers.")
@click.option("--output", "-o", "output", metavar="FILE", default=None,
              help="Write the report to FILE (atomically) instead of stdout.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Show only the N heaviest layers (by predicted time, else FLOPs).")
@click.option("--strict", is_flag=True, help="Exit 1 if any node has no cost rule.")
@click.option("--additive", is_flag=True,
              help="Add compute and memory time per layer (seed 003's model) instead of overlapping "
                   "them (max).")
@click.option("--save-baseline", "save_baseline", metavar="FILE", default=None,
              help="Write a baseline (counts and predicted latency per layer and profile) to FILE.")
@click.option("--baseline", "baseline", metavar="FILE", default=None,
              help="Compare with a baseline; without --hw, predicts on the baseline's profiles.")
@click.option("--max-regression", "max_regression", metavar="PCT", default="5%", show_default=True,
              help="With --baseline: exit 1 when total predicted latency on any profile grows "
                   "by more than PCT.")
@click.option("--kwargs-json", "kwargs_json", metavar="JSON", default=None,
              help="JAX programs: static non-array keyword arguments, e.g. '{\"train\": false}'.")
@click.option("--group-depth", "group_depth", type=click.IntRange(min=1), default=None, metavar="N",
              help="Sum the layer rows by the first N components of their names (module paths).")
@click.option("--loop-trips", "loop_trips", type=click.IntRange(min=0), default=None, metavar="N",
              help="Trip count for Loop/while bodies whose count is not a constant.")
@click.option("--causal", is_flag=True,
              help="Cost fused attention ops as causal kernels (they skip the masked half).")
@click.option("--params", "params_args", multiple=True, metavar="NAME",
              help="JAX programs: an argument that holds weights (counted as params; repeatable).")
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

    \b
      analyze model.onnx --hw a100,h100,tpu-v5e --precision bf16
      analyze model.onnx --hw a100 --save-baseline base.json
      analyze model.onnx --baseline base.json --max-regression 5% --format markdown
      analyze samples/jax_models.py:mlp_infer --input x=f32[8,784] --group-depth 1

    Exit codes: 0 ok, 1 a check failed (--strict, regression beyond
    --max-regression), 2 bad input or usage, 3 internal error (a bug in
    opcost: please report it; --debug shows the traceback).
    """
    debug = params.pop("debug")
    _guard(lambda: _run_model(Request.from_params(params)), debug)


@dataclass(frozen=True)
class OutputSpec:
    """What the model command does with the report: the flags that are not analysis options."""

    fmt: str
    path: str | None             # --output (None: stdout)
    top: int | None
    group_depth: int | None
    strict: bool
    save_baseline: str | None
    baseline: str | None
    max_regression: str


@dataclass(frozen=True)
class Request:
    """The model command's parameters, grouped: what to analyse (``model``, ``hw``), how
    (``options``: the library's ``Options``, built once the model's kind is known), the raw
    specs whose meaning depends on that kind, and the ``output`` spec."""

    model: str
    hw: str | None
    options: Options             # precision, overlap, loop_trips, causal (the kind-free part)
    inputs: tuple[str, ...]      # --input: ONNX shapes, or a JAX program's argument specs
    dims: tuple[str, ...]        # --dim (ONNX)
    values: tuple[str, ...]      # --value (ONNX)
    kwargs_json: str | None      # --kwargs-json (JAX)
    params_args: tuple[str, ...]  # --params (JAX)
    output: OutputSpec

    @classmethod
    def from_params(cls, p: dict) -> "Request":
        out = OutputSpec(p["fmt"], p["output"], p["top"], p["group_depth"], p["strict"],
                         p["save_baseline"], p["baseline"], p["max_regression"])
        opts = Options(precision=p["precision"], overlap=not p["additive"],
                       loop_trips=p["loop_trips"], causal=p["causal"])
        return cls(p["model"], p["hw"], opts, p["inputs"], p["dims"], p["values"],
                   p["kwargs_json"], p["params_args"], out)


def _run_model(req: Request) -> None:
    """Parse what depends on the model's kind, call the library once, render the report."""
    import analyzer
    from analyzer.frontends.jaxpr.load import is_jax_target
    from analyzer.report import baseline as bl

    model, out, opts = req.model, req.output, req.options
    hws = [h.strip() for h in req.hw.split(",") if h.strip()] if req.hw else None
    doc = threshold = None
    if out.baseline:
        threshold = bl.parse_threshold(out.max_regression)
        doc = bl.load(out.baseline)
        if hws is None:  # predict on the baseline's own profiles and precision
            base_hws, base_precision = bl.hardware_of(doc)
            hws = base_hws or None
            opts = replace(opts, precision=opts.precision or base_precision)
    with _progress(f"analysing {model}"):
        if is_jax_target(model):   # path/to/file.py:function or package.module:function
            from analyzer.frontends.jaxpr.load import load_program

            if req.dims or req.values:
                raise InputSpecError(f"{'--dim' if req.dims else '--value'} applies to ONNX models; "
                                     "give a JAX program's shapes with --input NAME=f32[8,128]")
            fn, args, kwargs = load_program(model, _parse_inputs(req.inputs), req.kwargs_json)
            opts = replace(opts, report_name=model, params_argnums=list(req.params_args) or None)
            report = analyzer.analyze_jax(fn, *args, hw=hws, options=opts, kwargs=kwargs)
        else:
            if req.kwargs_json:
                raise InputSpecError("--kwargs-json applies to JAX programs (MODEL of the form "
                                     "path/to/file.py:function)")
            if req.params_args:
                raise InputSpecError("--params applies to JAX programs; an ONNX model's "
                                     "weights are its initializers")
            dim_values = _parse_dims(req.dims)
            sweep = any(len(v) > 1 for v in dim_values.values())
            if sweep and (doc is not None or out.save_baseline or out.group_depth or out.top):
                raise InputSpecError("a --dim sweep prints one row per value; it does not "
                                     "combine with --baseline, --save-baseline, --group-depth or --top")
            opts = replace(opts, inputs=_parse_inputs(req.inputs) or None,
                           values=_parse_values(req.values) or None)
            if sweep:
                from analyzer.render.formats import render_sweep

                sw = analyzer.sweep(model, dim_values, hws, options=opts)
                write_output(render_sweep(sw, out.fmt), out.path)
                if out.strict:
                    for _, rep in sw.points:
                        rep.require_full_coverage()
                return
            dims = {n: v[0] for k, v in dim_values.items() for n in k.split("+")}
            report = analyzer.analyze(model, hws, options=replace(opts, dims=dims or None))
        if doc is not None:
            report = report.with_comparison(bl.compare(report, doc, threshold, path=out.baseline))
    _emit(report, out)


def _emit(report, out: OutputSpec) -> None:
    """Render and write the report (and baseline); raise for a failed --strict or regression."""
    from analyzer.render.formats import render
    from analyzer.report import baseline as bl

    width = None if out.path else _terminal_width()
    if out.group_depth is not None:
        from analyzer.render.grouping import render_groups

        text = render_groups(report, out.group_depth, out.fmt, width=width)
    else:
        color = out.path is None and out.fmt == "table" and sys.stdout.isatty()
        text = render(report, out.fmt, top=out.top, color=color, width=width)
    write_output(text, out.path)
    if out.save_baseline:
        write_output(json.dumps(bl.to_baseline(report), indent=1) + "\n", out.save_baseline)
    if out.strict:
        report.require_full_coverage()
    if report.comparison is not None and report.comparison.failed:
        raise CheckFailed(report.comparison.failure_message())


class _progress:
    """A spinner on stderr while the library works (only on a terminal)."""

    def __init__(self, what: str):
        self.what = what
        self.status = None

    def __enter__(self):
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status(self.what)
            self.status.__enter__()
        return self

    def __exit__(self, *exc):
        if self.status is not None:
            self.status.__exit__(*exc)
        return False


def _terminal_width() -> int | None:
    try:
        return max(os.get_terminal_size().columns, 100) if sys.stdout.isatty() else 160
    except OSError:
        return 160


INTERNAL_EXIT = 3
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN = ("analyzer", "hardware_db", "cli")


def _raised_in(e: BaseException) -> str | None:
    """The module of opcost's own code where ``e`` was raised (its innermost frame there)."""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        rel = os.path.relpath(os.path.abspath(frame.filename), _ROOT)
        if rel.split(os.sep)[0] in _OWN and rel.endswith(".py"):
            mod = rel[:-3].replace(os.sep, ".")
            return mod[:-len(".__init__")] if mod.endswith(".__init__") else mod
    return None


def _guard(fn, debug: bool, stage: str = "analyze") -> None:
    """Run ``fn``; map errors to one line on stderr and the right exit code: an
    ``AnalyzerError`` (the user's input) to its own code, worded with this program's flags;
    anything else is a bug in opcost (exit 3), ``stage`` naming where when the error does not."""
    try:
        fn()
    except AnalyzerError as e:
        if debug:
            traceback.print_exc()
        click.echo(f"error: {e.format('cli')}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
    except Exception as e:  # InternalError, or a bug outside any node
        if debug:
            traceback.print_exc()
        click.echo(_internal_line(e, stage), err=True)
        sys.exit(INTERNAL_EXIT)


def _internal_line(e: Exception, stage: str) -> str:
    """``internal error in <stage> [for node 'n' (Op)]: <Type>: <message>; please report it; ...``"""
    if isinstance(e, InternalError):
        where = e.stage + (f" for node '{e.node}' ({e.op})" if e.node is not None else "")
        cause = e.error
    else:
        where, cause = _raised_in(e) or stage, e
    text = " ".join(str(cause).split())  # one line, whatever the message holds
    what = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
    return f"internal error in {where}: {what}; please report it; --debug for the traceback"


@main.group("hw")
def hw_group():
    """Hardware profiles: `analyze hw list`, `analyze hw show ID`."""


@hw_group.command("list")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
def hw_list(fmt):
    """List the hardware profiles with their peaks and memory bandwidth."""
    def run():
        import hardware_db
        from cli.hwview import render_list

        write_output(render_list(hardware_db.list_profiles(), fmt), None)

    _guard(run, False, "hw list")


@hw_group.command("show")
@click.argument("hw_id", metavar="ID|FILE")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
def hw_show(hw_id, fmt):
    """Show one profile with the source of every number."""
    def run():
        import hardware_db
        from cli.hwview import render_show

        write_output(render_show(hardware_db.get(hw_id), fmt), None)

    _guard(run, False, "hw show")


if __name__ == "__main__":
    main()
