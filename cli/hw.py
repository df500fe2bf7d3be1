"""`analyze hw ...`: the hardware-profile commands (list, show).

Imports nothing heavy at start-up: `analyze hw list` must not import jax or onnx."""

from __future__ import annotations

import click

from cli.guard import guard
from cli.parsing import write_output


@click.group("hw", context_settings={"help_option_names": ["-h", "--help"]})
def hw_group():
    """Hardware profiles: `analyze hw list`, `analyze hw show ID`."""


@hw_group.command("list")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
@click.option("--links", "links", is_flag=True,
              help="List the interconnect links and node designs (--link and --node IDs for --devices) instead of profiles.")
def hw_list(fmt, links):
    """List the hardware profiles with their peaks and memory bandwidth (--links: the links)."""
    def run():
        import hardware_db
        from cli.hwview import render_list

        if links:
            from hardware_db import links as link_db
            from cli.scaling import render_links

            write_output(render_links(link_db.list_links(), fmt, link_db.list_nodes()), None)
            return
        write_output(render_list(hardware_db.list_profiles(), fmt), None)

    guard(run, False, "hw list")


@hw_group.command("show")
@click.argument("hw_id", metavar="ID|FILE")
@click.option("--format", "fmt", type=click.Choice(("table", "json")), default="table", show_default=True)
def hw_show(hw_id, fmt):
    """Show one profile with the source of every number."""
    def run():
        import hardware_db
        from cli.hwview import render_show

        write_output(render_show(hardware_db.get(hw_id), fmt), None)

    guard(run, False, "hw show")


@hw_group.command("calibrate", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--out", "out", required=True, metavar="FILE",
              help="Write the measured profile (TOML) to FILE (atomically).")
@click.option("--runtime", type=click.Choice(("onnxruntime", "xla")),
              default="onnxruntime", show_default=True,
              help="The runtime to measure: onnxruntime (needs the measure extra) or xla (JAX's "
                   "XLA CPU backend; needs jax). The profile predicts it by default.")
@click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
              help="onnxruntime: intra-op threads of the measured sessions (default: all cores); "
                   "predict and measure with the same number. Not for xla (it uses every core).")
@click.option("--id", "profile_id", metavar="NAME", default=None,
              help="The profile's id (default: calibrated-<host>-<threads>t, or calibrated-<host>-xla).")
@click.option("--debug", is_flag=True, help="Show a traceback on errors.")
def hw_calibrate(out, runtime, threads, profile_id, debug):
    """Measure this machine (synthetic programs only: 2-7 minutes with onnxruntime, 1-2 with
    xla, on an otherwise idle machine) and write a CPU profile that --hw reads: onnxruntime
    sessions of single-op models, or with --runtime xla jitted JAX programs run by XLA's CPU
    backend.

    \b
    Example:
      analyze hw calibrate --out my-machine.toml --threads 4
      analyze model.onnx --hw my-machine.toml --measure --threads 4
      analyze hw calibrate --out my-xla.toml --runtime xla
      analyze samples/jax_models.py:mlp_infer --input x=f32[1,784] \\
          --hw my-xla.toml
    """
    guard(lambda: _calibrate(out, runtime, threads, profile_id), debug, "hw calibrate")


def _calibrate(out: str, runtime: str, threads: int | None, profile_id: str | None) -> None:
    import time

    from analyzer.errors import InputSpecError
    from cli.guard import ProgressBar
    from cli.parsing import writable_path

    writable_path(out, "--out")   # refuse a folder or a missing folder before measuring
    if runtime == "xla" and threads is not None:
        raise InputSpecError("hw calibrate: --threads is for --runtime onnxruntime; XLA's CPU backend "
                             "runs on every core (leave --threads out)")
    from analyzer.measure.calibrate import calibrate

    if runtime == "xla":
        from analyzer.measure.xla.calibrate import import_jax
        import_jax()   # one line naming what to install, before the progress bar starts
    else:
        from analyzer.prediction.onnxruntime.graph import import_ort
        import_ort()   # the measure extra: one line naming it, before the progress bar starts
    t0 = time.perf_counter()
    with ProgressBar("calibrating") as bar:
        doc = calibrate(runtime, threads, progress=bar)
    if profile_id:
        doc = {**doc, "id": profile_id}
    _write_profile_atomically(doc, out)
    from cli.hwview import render_calibration

    click.echo(render_calibration(doc, out, time.perf_counter() - t0), nl=False)


def _write_profile_atomically(doc, path: str) -> None:
    """``write_profile`` to a temp file beside ``path``, renamed into place; then check that
    hardware_db loads it (a profile that --hw cannot read is a bug in opcost: an internal error,
    the file kept so that the measurement is not lost)."""
    import hardware_db
    from analyzer.errors import HardwareError, InternalError
    from analyzer.measure.calibrate import write_profile
    from cli.parsing import atomic_write

    atomic_write(path, lambda tmp: write_profile(doc, tmp), "--out")
    try:
        hardware_db.load_file(path)
    except HardwareError as e:
        raise InternalError(f"hw calibrate (wrote {path}, but --hw cannot load it)", e) from e
