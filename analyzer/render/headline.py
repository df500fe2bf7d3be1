"""The headline of each prediction: what was predicted and on what evidence (formatting only).

A latency means little without the runtime it is for, the time it defines (kernel sum,
eager wall-clock, ``session.run``, XLA device time), where its efficiencies come from
(provenance) and the assumptions that change it (``Prediction.notes``: a defaulted runtime, a
launch or dispatch figure assumed for a profile that has none).  Every human format shows them
next to the latency; when profiles side by side are not predicted like for like (different
runtimes, provenance, or one charged assumed figures and another not), ``caveat`` says so in one
line.
"""

from __future__ import annotations

import re
from typing import Sequence

from analyzer.render import safe

_PAREN = re.compile(r"\s*\([^()]*\)")


def human_time(s: float) -> str:
    if s < 0:
        return "-" + human_time(-s)
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def prediction_line(p) -> str:
    """'latency on a100-80gb-sxm (fp32, kernel, architecture constants): 1.2 ms [memory 60%, ...]'."""
    shares = ", ".join(f"{b} {100 * s:.0f}%" for b, s in p.bound_share.items() if s > 0)
    return (f"latency on {p.hardware} ({p.precision}, {p.runtime}, {p.provenance}): "
            f"{human_time(p.latency_s)} [{shares}]")


def _runtime_note(p, note: str) -> bool:
    """True for the note that only says how the runtime was chosen ('runtime xla (...)')."""
    return note.startswith(f"runtime {p.runtime} (")


def assumed(p) -> tuple[str, ...]:
    """The notes that charge an assumed figure (every note but the runtime's own choice)."""
    return tuple(n for n in p.notes if not _runtime_note(p, n))


def detail_lines(p) -> list[str]:
    """Lines under a prediction's headline: time definition, provenance, each note."""
    why = next((n for n in p.notes if _runtime_note(p, n)), None)
    chosen = f" ({why[len(f'runtime {p.runtime} ('):-1]})" if why else ""
    out = [f"runtime {p.runtime}{chosen}: {p.time_definition or 'time definition not stated'}"]
    out.append(f"provenance {p.provenance}" + (f": {p.provenance_detail}" if p.provenance_detail else ""))
    out += [f"assumed: {n}" for n in assumed(p)]
    return out


def caveat(predictions: Sequence) -> str | None:
    """One line when profiles side by side are not predicted like for like, else None."""
    if len(predictions) < 2:
        return None
    parts = []
    for what, key in (("runtimes", lambda p: p.runtime), ("provenance", lambda p: p.provenance)):
        if len({key(p) for p in predictions}) > 1:
            parts.append(f"different {what} (" + ", ".join(f"{p.hardware}: {key(p)}"
                                                            for p in predictions) + ")")
    charged = [p.hardware for p in predictions if assumed(p)]
    if charged and len(charged) < len(predictions):
        clean = [p.hardware for p in predictions if not assumed(p)]
        parts.append(f"{', '.join(charged)} charged assumed figures (see 'assumed:'), "
                     f"{', '.join(clean)} not")
    if not parts:
        return None
    return "not like for like: " + "; ".join(parts)


def provenance_word(p) -> str:
    """Where the efficiencies come from, in a word: calibrated, architecture, generic, datasheet."""
    return (p.provenance or "?").split()[0]


def short_note(note: str) -> str:
    """A note's first clause, without its parentheses: ``gathers (embedding lookups) are
    predicted as PyTorch's vectorized gather (since 2.8: ...); the index_select ...`` ->
    ``gathers are predicted as PyTorch's vectorized gather``.  The full note is in
    ``--verbose``, ``--explain`` and JSON."""
    depth, cut = 0, len(note)
    for i, ch in enumerate(note):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and ch == ";":
            cut = i
            break
    head = note[:cut]
    while True:
        lean = _PAREN.sub("", head)
        if lean == head:
            break
        head = lean
    return " ".join(head.split()) or note


def shared_notes(predictions: Sequence) -> tuple[list[str], list[list[int]]]:
    """Each assumption once (``short_note``, a profile's own id written as "the profile" when
    several profiles share the note) and, per prediction, the 1-based numbers of its notes."""
    texts: list[str] = []
    owners: list[list[int]] = []
    index: dict[str, int] = {}
    for pi, p in enumerate(predictions):
        for n in assumed(p):
            key = short_note(n).replace(p.hardware, "\0")
            k = index.get(key)
            if k is None:
                k = index[key] = len(texts)
                texts.append(key)
                owners.append([])
            owners[k].append(pi)
    shown = [t.replace("\0", predictions[o[0]].hardware if len(o) == 1 else "the profile")
             for t, o in zip(texts, owners)]
    per = [[k + 1 for k, o in enumerate(owners) if pi in o] for pi in range(len(predictions))]
    return shown, per


def short_caveat(predictions: Sequence) -> str | None:
    """``caveat`` in one short line: which aspects differ (the profile table shows how)."""
    if len(predictions) < 2:
        return None
    parts = []
    if len({p.runtime for p in predictions}) > 1:
        parts.append("runtimes")
    if len({p.provenance for p in predictions}) > 1:
        parts.append("constants")
    charged = sum(1 for p in predictions if assumed(p))
    if charged and charged < len(predictions):
        parts.append("assumed figures (notes)")
    return "not like for like: different " + ", ".join(parts) if parts else None


def text_lines(predictions: Sequence) -> list[str]:
    """The terminal headline of every prediction (its line, indented details) and the caveat."""
    out = []
    for p in predictions:
        out.append(safe.text(prediction_line(p)))
        out += [f"  {safe.text(x)}" for x in detail_lines(p)]
    c = caveat(predictions)
    if c:
        out.append(safe.text(c))
    return out


def markdown_lines(predictions: Sequence) -> list[str]:
    """A bullet per prediction (runtime, time definition, provenance, assumptions); the caveat
    in bold."""
    out = []
    for p in predictions:
        out.append(f"- **{safe.md_text(p.hardware)}** ({p.precision}): {human_time(p.latency_s)}")
        out += [f"  - {safe.md_text(x)}" for x in detail_lines(p)]
    c = caveat(predictions)
    if c:
        out.append(f"- **{safe.md_text(c)}**")
    return out


def comment_lines(predictions: Sequence) -> list[str]:
    """'# '-prefixed lines for the head of a CSV file (read with ``comment='#'``)."""
    out = []
    for p in predictions:
        out.append(safe.text(f"# {p.hardware}: latency_s={p.latency_s!r} precision={p.precision} "
                             f"runtime={p.runtime}"))
        out += [f"#   {safe.text(x)}" for x in detail_lines(p)]
    c = caveat(predictions)
    if c:
        out.append(f"# {safe.text(c)}")
    return out
