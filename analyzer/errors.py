"""The one error hierarchy of opcost.

Problems of the caller's input are ``AnalyzerError`` subclasses; the CLI maps them to exit
codes in one place (``cli/guard.py``): every ``AnalyzerError`` is bad input or usage (exit 2),
except ``CheckFailed`` (exit 1: a regression gate or a strict-coverage finding).  A failure of
opcost itself (a cost rule that crashes on a node it should handle) is an ``InternalError``,
deliberately *not* an ``AnalyzerError``: the user cannot fix it by changing the input, and the
CLI reports it as a bug (exit 3).  Exit codes: 0 ok, 1 a check failed, 2 bad input or usage,
3 internal error (please report it), 130 interrupted.

Messages speak in the caller's terms.  An error that tells the user to set an option carries
it as a ``Hint`` (the option's library keyword and a value in neutral form) and a template
with a placeholder for it; ``str(e)`` words it for a Python caller (``dims={'batch': ...}``,
``loop_trips=N``) and ``e.format("cli")`` for the command line (``--dim batch=VALUE``,
``--loop-trips N``).  ``OPTIONS`` is the one table of both spellings: no message in the
library names a command-line flag itself.

This module imports nothing heavy so that the CLI can import it at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping


@dataclass(frozen=True, slots=True)
class Option:
    """One user option in both spellings.

    ``kind``: ``"mapping"`` (a dict keyed by name: ``dims``, ``inputs``, ``values``),
    ``"scalar"`` (one value: ``loop_trips``, ``hw``) or ``"switch"`` (no value: a flag that
    is a method call in Python).  ``repeat``: on the command line a mapping is one flag per
    entry (``--value a=1 --value b=2``) instead of one joined flag (``--dim a=1,b=2``)."""

    keyword: str
    flag: str
    kind: str = "scalar"
    repeat: bool = False


# option -> its Python keyword and its command-line flag (the only place the library spells flags)
OPTIONS: dict[str, Option] = {
    "dims": Option("dims", "--dim", "mapping"),
    "inputs": Option("inputs", "--input", "mapping", repeat=True),
    "values": Option("values", "--value", "mapping", repeat=True),
    "loop_trips": Option("loop_trips", "--loop-trips"),
    "batch": Option("batch", "--batch"),
    "hw": Option("hw", "--hw"),
    "precision": Option("precision", "--precision"),
    "l2": Option("l2", "--l2"),
    "host": Option("host", "--host"),
    "kwargs_json": Option("kwargs_json", "--kwargs-json"),
    "params_argnums": Option("params_argnums", "--params"),
    "parallel": Option("parallel", "--parallel"),
    "devices": Option("devices", "--devices"),
    "max_regression": Option("threshold_pct", "--max-regression"),
    "strict": Option("Report.require_full_coverage()", "--strict", "switch"),
    "save_baseline": Option("baseline.to_baseline(report)", "--save-baseline", "switch"),
}

STYLES = ("python", "cli")
_META = re.compile(r"\.\.\.|[A-Z][A-Z_]*")          # a metavariable: VALUE, N, DIMS, FILE, ...
_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)(=?)\}")       # {dims} / {dims=} in a template


@dataclass(frozen=True, slots=True)
class Hint:
    """An option the user can set to fix an error, in neutral form.

    ``option``: a key of ``OPTIONS`` (the library keyword: ``dims``, ``loop_trips``...).
    ``value``: for a mapping option a dict of entries (``{"batch": "VALUE"}``) or one entry's
    name (``"axes"``: ``values['axes']`` / ``--value axes``); for a scalar option its value
    (``"N"``); None names the option alone.  Upper-case words (``VALUE``, ``N``, ``FILE``) and
    ``...`` are metavariables, printed as they are (``...`` for a mapping's values in Python); a
    mapping's keys are names (a dim or input of the file, ``B`` included) and always quoted.
    ``example``: a value in the same form, shown as ``(e.g. ...)``.

    In a template, ``{dims}`` is replaced by the rendered hint; for a hint without a value,
    ``{dims=}`` asks for the keyword-argument form in Python (``dims=``; ``--dim`` on the CLI).
    """

    option: str
    value: Any = None
    example: Any = None

    def __post_init__(self):
        if self.option not in OPTIONS:
            raise ValueError(f"unknown option '{self.option}' (not in analyzer.errors.OPTIONS)")

    def render(self, style: str = "python", assign: bool = False) -> str:
        text = _render(OPTIONS[self.option], self.value, style, assign)
        if self.example is not None:
            text += f" (e.g. {_render(OPTIONS[self.option], self.example, style, assign)})"
        return text


def _meta(v: Any) -> bool:
    return isinstance(v, str) and _META.fullmatch(v) is not None


def _py(v: Any, mapping_value: bool = False) -> str:
    if _meta(v):
        return "..." if mapping_value else v
    return repr(v)


def _cli(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def _render(opt: Option, value: Any, style: str, assign: bool) -> str:
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, not {style!r}")
    cli = style == "cli"
    if value is None or opt.kind == "switch":
        return opt.flag if cli else opt.keyword + ("=" if assign and opt.kind != "switch" else "")
    if opt.kind == "mapping" and isinstance(value, Mapping):
        if cli:
            items = [f"{k}={_cli(v)}" for k, v in value.items()]
            return " ".join(f"{opt.flag} {x}" for x in items) if opt.repeat else (
                f"{opt.flag} " + ",".join(items))
        # a key is a name from the file (an upper-case dim such as "B" is not a metavariable)
        body = ", ".join(f"{k!r}: {_py(v, True)}" for k, v in value.items())
        return f"{opt.keyword}={{{body}}}"
    if opt.kind == "mapping":  # one entry, by name
        return f"{opt.flag} {value}" if cli else f"{opt.keyword}[{_py(value)}]"
    return f"{opt.flag} {_cli(value)}" if cli else f"{opt.keyword}={_py(value)}"


def render_template(template: str, hints: Iterable[Hint], style: str = "python") -> str:
    """``template`` with each ``{option}`` / ``{option=}`` placeholder of ``hints`` rendered."""
    by_option: dict[str, Hint] = {}
    for h in hints:
        by_option.setdefault(h.option, h)
    if not by_option:
        return template

    def sub(m: re.Match) -> str:
        h = by_option.get(m.group(1))
        return m.group(0) if h is None else h.render(style, assign=bool(m.group(2)))

    return _PLACEHOLDER.sub(sub, template)


@dataclass(frozen=True, slots=True)
class Message:
    """A message template with its hints that is not (yet) an exception: a reason that an
    error or a report note quotes.  ``str(m)`` is the Python wording."""

    template: str
    hints: tuple[Hint, ...] = ()

    def format(self, style: str = "python") -> str:
        return render_template(self.template, self.hints, style)

    def __str__(self) -> str:
        return self.format("python")


def _restore(cls, template, state):
    err = cls.__new__(cls)
    Exception.__init__(err, template)
    err.__dict__.update(state)
    return err


class AnalyzerError(Exception):
    """Base class: a problem with the user's input that the user can fix.

    ``template`` is the message with ``{option}`` placeholders for ``hints`` (see ``Hint``);
    ``str(e)`` is ``e.format("python")``; the CLI prints ``e.format("cli")``."""

    exit_code = 2

    def __init__(self, message: str = "", *, hints: Iterable[Hint] = ()):
        super().__init__(message)
        self.template = message
        self.hints: tuple[Hint, ...] = tuple(hints)

    def format(self, style: str = "python") -> str:
        """The message worded for a Python caller (``"python"``) or the command line (``"cli"``)."""
        return render_template(self.template, self.hints, style)

    def __str__(self) -> str:
        return self.format("python")

    def __reduce__(self):  # pickles with its template, hints and any other attributes
        return _restore, (type(self), self.template, dict(self.__dict__))


class ModelLoadError(AnalyzerError):
    """The model file is missing, unreadable, not ONNX, truncated or invalid."""


class GraphError(AnalyzerError):
    """The graph is structurally broken (dangling input, cycle, duplicate output)."""


class ShapeError(AnalyzerError):
    """A node's shapes are unknown or inconsistent where a count needs them.

    ``reason`` classifies it for code that decides what to do with it (never the text):
    ``"rank_unknown"`` when a tensor's rank is unknown after shape inference, else None."""

    RANK_UNKNOWN = "rank_unknown"

    def __init__(self, message: str = "", *, hints: Iterable[Hint] = (), reason: str | None = None):
        super().__init__(message, hints=hints)
        self.reason = reason


class UnboundDimError(ShapeError):
    """A symbolic dimension that a count needs has no value (bind it with ``dims=``)."""

    def __init__(self, dim: str, message: str | None = None, *, hints: Iterable[Hint] | None = None):
        self.dim = dim
        if message is None:
            message = f"symbolic dim '{dim}' is unbound; pass {{dims}}"
            hints = (Hint("dims", {dim: "VALUE"}),) if hints is None else hints
        super().__init__(message, hints=hints or ())


class InputSpecError(AnalyzerError):
    """An ``inputs=`` / ``dims=`` / ``values=`` value (or its flag) is malformed or names nothing."""


class HardwareError(AnalyzerError):
    """Unknown hardware id or a malformed hardware profile file."""


class BaselineError(AnalyzerError):
    """A baseline file is unreadable, from another model, or of another schema version."""


class CheckFailed(AnalyzerError):
    """A check the user asked for failed (regression beyond threshold, strict coverage)."""

    exit_code = 1


class InternalError(Exception):
    """A bug in opcost, not a problem of the input: a stage or a cost rule failed unexpectedly.

    Deliberately not an ``AnalyzerError`` (``except AnalyzerError`` does not swallow it).
    ``stage``: where (``"counting"``, ``"rule analyzer.counting.rules.onnx.linear.conv"``);
    ``node`` / ``op``: the node being processed, if any; the original exception is
    ``__cause__``."""

    exit_code = 3

    def __init__(self, stage: str, error: BaseException, node: str | None = None,
                 op: str | None = None):
        self.stage = stage
        self.node = node
        self.op = op
        self.error = error
        where = f"{stage} for node '{node}' ({op})" if node is not None else stage
        super().__init__(f"internal error in {where}: {type(error).__name__}: {error}")

    def __reduce__(self):
        return type(self), (self.stage, self.error, self.node, self.op)
