"""What the model command does with a Report: which format, which rows, where it goes.

Usage errors of the output flags are found here before any work (``check``); ``emit`` renders
(``analyzer.render``) and writes (``cli.parsing.write_output``).  Nothing here computes.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

from analyzer.errors import CheckFailed, InputSpecError

FORMATS = ("table", "json", "csv", "markdown", "html")
FORMAT_ALIASES = {"md": "markdown"}   # --format md: what people type for markdown (as -o x.md)
EXTENSIONS = {".json": "json", ".csv": "csv", ".md": "markdown", ".markdown": "markdown",
              ".html": "html", ".htm": "html", ".txt": "table"}
PLOT_EXTENSIONS = (".png", ".svg", ".html")
HINTS = {"all": "--all", "explain": "--explain LAYER", "verbose": "--verbose", "wide": "--wide",
         "top": "--top {n}"}


@dataclass(frozen=True, kw_only=True)
class OutputSpec:
    """What the model command does with the report: the flags that are not analysis options."""

    fmt: str                     # resolved: --format, else -o's extension, else table
    path: str | None             # --output (None: stdout)
    top: int | None
    group_depth: int | None
    strict: bool
    save_baseline: str | None
    baseline: str | None
    max_regression: str | None
    all_rows: bool = False       # --all
    wide: bool = False           # --wide
    explain: str | None = None   # --explain LAYER
    plot: str | None = None      # --plot FILE.png|svg|html
    verbose: bool = False        # --verbose: the terminal headline with every note in full


def resolve_format(fmt: str | None, path: str | None) -> str:
    """--format when given, else the extension of -o FILE, else the terminal view."""
    if fmt:
        return FORMAT_ALIASES.get(fmt, fmt)
    if path and path != "-":
        return EXTENSIONS.get(os.path.splitext(path)[1].lower(), "table")
    return "table"


def check(out: OutputSpec) -> None:
    """Usage errors of the output flags, before any work."""
    if out.max_regression is not None and not out.baseline:
        raise InputSpecError("--max-regression sets the limit of a baseline check; give the "
                             "baseline with --baseline FILE")
    if out.top is not None and out.all_rows:
        raise InputSpecError("--top N shows the N heaviest layers, --all every layer: give one")
    if out.top is not None and out.fmt == "json":
        raise InputSpecError("--top does not apply to json: the JSON report carries every node "
                             "(select with jq, e.g. sort_by(.time_s) on predictions[0].nodes); "
                             "use --format csv or markdown for the top rows")
    if out.top is not None and out.group_depth is not None:
        raise InputSpecError("--top picks layers; --group-depth sums them by module: give one")
    if (out.all_rows or out.wide) and out.fmt not in ("table", "markdown", "html"):
        raise InputSpecError(f"--all and --wide shape the human views; {out.fmt} carries every "
                             f"row and column already")
    if out.explain is not None and (out.fmt != "table" or out.group_depth is not None):
        raise InputSpecError("--explain LAYER prints one layer's arithmetic as text; it does not "
                             "combine with --format/-o other than the terminal view, or "
                             "--group-depth")
    if out.verbose and out.fmt != "table":
        raise InputSpecError(f"--verbose shows every note in full in the terminal view; {out.fmt} "
                             f"carries them already")
    if out.fmt == "html" and out.path in (None, "-") and stdout_is_terminal():
        raise InputSpecError("--format html is one page of several MB for a browser, not for the "
                             "terminal: write it with -o report.html (or redirect stdout to a file)")
    if out.plot is not None and os.path.splitext(out.plot)[1].lower() not in PLOT_EXTENSIONS:
        raise InputSpecError(f"--plot {out.plot}: give a .png, .svg or .html file")


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def terminal_width() -> int | None:
    """The columns to lay the table out in: ``COLUMNS`` when it is set (a pipe too: the caller
    asked for that width), else the terminal stdout is; None when stdout is a pipe or a file
    and ``COLUMNS`` is unset: one line per row, never shortened.  At least 40."""
    cols = os.environ.get("COLUMNS", "")
    if cols.strip().isdigit() and int(cols) > 0:
        return max(int(cols), 40)
    if not sys.stdout.isatty():
        return None
    return max(shutil.get_terminal_size((100, 24)).columns, 40)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def emit(report, out: OutputSpec, spinner=None) -> None:
    """Render and write the report (and baseline, and plot); raise for a failed --strict or
    regression.  A failed gate never overwrites its own baseline."""
    import click

    from analyzer.render.formats import render
    from analyzer.report import baseline as bl
    from cli import scaling as scaling_cli
    from cli.parsing import write_output

    def phase(what: str) -> None:
        if spinner is not None:
            spinner.update(what)

    to_terminal = out.path is None or out.path == "-"
    width = terminal_width() if to_terminal and out.fmt == "table" else None
    phase("rendering")
    if out.explain is not None:
        from analyzer.render.explain import render_explain
        from analyzer.report.rollups import find_node

        from analyzer.render import safe

        text = render_explain(report, find_node(report, out.explain, safe.text), width)
    elif out.group_depth is not None:
        from analyzer.render.grouping import render_groups

        text = render_groups(report, out.group_depth, out.fmt, width=width, wide=out.wide,
                             hints=HINTS)
    else:
        color = to_terminal and out.fmt == "table" and sys.stdout.isatty()
        text = render(report, out.fmt, top=out.top, color=color, width=width,
                      all_rows=out.all_rows, wide=out.wide, hints=HINTS, verbose=out.verbose)
    if out.explain is None:
        text += scaling_cli.render_rows(report, out.fmt, width)
    if spinner is not None:
        spinner.stop()   # erased before the report or any message reaches the terminal
    write_output(text, out.path)
    if out.plot:
        from analyzer.render.plots import write_roofline

        phase(f"plotting {out.plot}")
        how = write_roofline(report, out.plot)
        click.echo(f"roofline chart written to {out.plot} ({how})", err=True)
    failed = report.comparison is not None and report.comparison.failed
    if out.save_baseline:
        if failed and out.baseline and _same_file(out.save_baseline, out.baseline):
            click.echo(f"baseline {out.save_baseline} kept: the check failed, so it is not "
                       f"overwritten", err=True)
        else:
            from analyzer.report.finite_json import dumps

            write_output(dumps(bl.to_baseline(report), indent=1) + "\n", out.save_baseline,
                         "--save-baseline")
    if out.strict:
        report.require_full_coverage()
    if failed:
        from analyzer.render.pieces import failure_line

        raise CheckFailed(failure_line(report.comparison))
