"""The CLI's one error boundary and its terminal helpers.

``guard`` maps errors to exit codes in one place: 0 ok, 1 a check failed (``CheckFailed``),
2 bad input or usage (any other ``AnalyzerError``, worded with this program's flags:
``e.format("cli")``), 3 an internal error (``InternalError`` or any other exception: a bug in
opcost, one line asking for a report; ``--debug`` prints the traceback), 130 interrupted.
``Spinner`` and ``ProgressBar`` draw on stderr only when it is a terminal.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Callable

import click

from analyzer.errors import AnalyzerError, InternalError
from analyzer.render import safe

INTERNAL_EXIT = 3
INTERRUPTED_EXIT = 130
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OWN = ("analyzer", "hardware_db", "cli")


def raised_in(e: BaseException) -> str | None:
    """The module of opcost's own code where ``e`` was raised (its innermost frame there)."""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        rel = os.path.relpath(os.path.abspath(frame.filename), _ROOT)
        if rel.split(os.sep)[0] in _OWN and rel.endswith(".py"):
            mod = rel[:-3].replace(os.sep, ".")
            return mod[:-len(".__init__")] if mod.endswith(".__init__") else mod
    return None


def guard(fn: Callable[[], None], debug: bool, stage: str = "analyze") -> None:
    """Run ``fn``; map errors to one line on stderr and the right exit code: an
    ``AnalyzerError`` (the user's input) to its own code, worded with this program's flags;
    anything else is a bug in opcost (exit 3), ``stage`` naming where when the error does not."""
    try:
        fn()
    except AnalyzerError as e:
        if debug:
            traceback.print_exc()
        click.echo(error_line(e), err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(INTERRUPTED_EXIT)
    except Exception as e:  # InternalError, or a bug outside any node
        if debug:
            traceback.print_exc()
        click.echo(internal_line(e, stage), err=True)
        sys.exit(INTERNAL_EXIT)


def error_line(e: AnalyzerError) -> str:
    """``error: <message>``: one line, names in it shown as text (``analyzer.render.safe``)."""
    return f"error: {safe.text(e.format('cli'))}"


def internal_line(e: Exception, stage: str) -> str:
    """``internal error in <stage> [for node 'n' (Op)]: <Type>: <message>; please report it; ...``"""
    if isinstance(e, InternalError):
        where = e.stage + (f" for node '{e.node}' ({e.op})" if e.node is not None else "")
        cause = e.error
    else:
        where, cause = raised_in(e) or stage, e
    text = " ".join(str(cause).split())  # one line, whatever the message holds
    what = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
    return safe.text(f"internal error in {where}: {what}; please report it; --debug for the "
                     f"traceback")


class Spinner:
    """A spinner on stderr while the library works (only on a terminal)."""

    def __init__(self, what: str):
        self.what = what
        self.status = None

    def __enter__(self):
        if sys.stderr.isatty():
            from rich.console import Console

            self.status = Console(stderr=True).status(safe.markup(self.what))
            self.status.__enter__()
        return self

    def update(self, what: str) -> None:
        if self.status is not None:
            self.status.update(safe.markup(what))

    def __exit__(self, *exc):
        if self.status is not None:
            self.status.__exit__(*exc)
        return False


class ProgressBar:
    """A progress bar on stderr (only on a terminal) fed by a library ``progress(fraction,
    text)`` callback: ``with ProgressBar("calibrating") as bar: lib(progress=bar)``."""

    def __init__(self, what: str):
        self.what = what
        self._progress = None
        self._task = None

    def __enter__(self):
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(TextColumn("{task.description}"), BarColumn(),
                                      TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
                                      console=Console(stderr=True), transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task(safe.markup(self.what), total=1.0)
        return self

    def __call__(self, fraction: float, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=max(0.0, min(1.0, float(fraction))),
                                  description=safe.markup(f"{self.what}: {text}"))

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.__exit__(*exc)
        return False


def terminal_width() -> int | None:
    try:
        return max(os.get_terminal_size().columns, 100) if sys.stdout.isatty() else 160
    except OSError:
        return 160
