"""`analyze` / `opcost`: the command line's group and its model command.

The model command declares its options here; ``cli.model_run`` parses what depends on the
model's kind (``cli.parsing``), calls the library once, renders the Report
(``analyzer.render``), and leaves errors to ``cli.guard.guard``, the one place they
become exit codes: 0 ok, 1 a check failed, 2 bad input or usage, 3 internal error, 130
interrupted.  The hardware commands are ``cli.hw``.  It computes nothing itself, and imports
jax/onnx only when a model is analysed.
"""

from __future__ import annotations

import textwrap
from dataclasses import replace

import click

from analyzer.options import L2_STATES
from cli.guard import guard
from cli import model_run
from cli import scaling_options as scaling_opts
from cli.hw import hw_group
from cli.output import FORMAT_ALIASES, FORMATS

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
              help="Whose per-op host figures --runtime eager charges (and eager-op, where the table "
                   "has per-call figures): llmcompass-a100 (the default), torch2.11-h200 (an H200 host "
                   "with torch 2.11; docs/model.md). ONNX models only.")
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
    guard(lambda: model_run.run(replace(model_run.Request.from_params(params),
                                        multi=scaling_opts.pop(params))), debug)


main.add_command(hw_group)


if __name__ == "__main__":
    main()
