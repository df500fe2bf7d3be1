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
def hw_list(fmt):
    """List the hardware profiles with their peaks and memory bandwidth."""
    def run():
        import hardware_db
        from cli.hwview import render_list

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
