"""The CLI's one error boundary and its terminal helpers.

``guard`` maps errors to exit codes in one place: 0 ok, 1 a check failed (``CheckFailed``),
2 bad input or usage (any other ``AnalyzerError``, worded with this program's flags:
``e.format("cli")``), 3 an internal error (``InternalError`` or any other exception: a bug in
opcost, one line asking for a report; ``--debug`` prints the traceback), 130 interrupted.
``Spinner`` and ``ProgressBar`` draw one line on stderr only when it is a terminal; it fits
the terminal and is erased when done.
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


class StatusLine:
    """One line on a terminal stream (stderr), redrawn in place: at most the terminal's width
    less one column (a line as wide as the terminal wraps on some terminals and then cannot be
    erased), and erased when done, so nothing of it stays above the output.  Draws nothing when
    the stream is not a terminal."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, stream=None, width: int | None = None):
        import threading

        self.stream = stream if stream is not None else sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self.text = ""
        self._lock = threading.Lock()
        self._frame = 0

    def columns(self) -> int:
        if self.width is not None:
            return self.width
        import shutil

        return max(shutil.get_terminal_size((80, 24)).columns, 20)

    def frame(self, text: str) -> str:
        """What one redraw shows: a spinner, the text cut at its end to fit."""
        room = self.columns() - 1
        line = f"{self.FRAMES[self._frame % len(self.FRAMES)]} {safe.text(text)}"
        return line if len(line) <= room else line[:max(room - 1, 0)] + "…"

    def draw(self, text: str | None = None) -> None:
        if not self.on:
            return
        with self._lock:
            if text is not None:
                self.text = text
            self._frame += 1
            self.stream.write("\r" + self.frame(self.text) + "\x1b[K")
            self.stream.flush()

    def clear(self) -> None:
        if self.on:
            with self._lock:
                self.stream.write("\r\x1b[K")
                self.stream.flush()


class Spinner:
    """A status line on stderr while the library works (only on a terminal), animated by a
    thread; ``stop`` erases it (the model command stops it before it writes the report)."""

    def __init__(self, what: str, stream=None, width: int | None = None):
        self.what = what
        self.line = StatusLine(stream, width)
        self._stop = None
        self._thread = None

    def __enter__(self):
        if self.line.on:
            import threading

            self._stop = threading.Event()
            self.line.draw(self.what)

            def spin():
                while not self._stop.wait(0.1):
                    self.line.draw()

            self._thread = threading.Thread(target=spin, daemon=True)
            self._thread.start()
        return self

    def update(self, what: str) -> None:
        if self._stop is not None and not self._stop.is_set():
            self.line.draw(what)

    def stop(self) -> None:
        """Stop and erase the line (again: nothing)."""
        if self._stop is not None and not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self.line.clear()

    def __exit__(self, *exc):
        self.stop()
        return False


class ProgressBar:
    """A progress line on stderr (only on a terminal) fed by a library ``progress(fraction,
    text)`` callback: ``with ProgressBar("calibrating") as bar: lib(progress=bar)``; it fits
    the terminal and is erased when done."""

    def __init__(self, what: str, stream=None, width: int | None = None):
        self.what = what
        self.line = StatusLine(stream, width)

    def __enter__(self):
        self.line.draw(self.what)
        return self

    def __call__(self, fraction: float, text: str) -> None:
        pct = 100 * max(0.0, min(1.0, float(fraction)))
        self.line.draw(f"{pct:3.0f}% {self.what}: {text}")

    def __exit__(self, *exc):
        self.line.clear()
        return False


def terminal_width() -> int | None:
    try:
        return max(os.get_terminal_size().columns, 100) if sys.stdout.isatty() else 160
    except OSError:
        return 160
