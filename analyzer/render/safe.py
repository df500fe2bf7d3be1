"""Names are data: the one place that makes text from a model, a profile or a path safe to show.

Node, tensor, file and profile names come from files the user did not necessarily write.  Every
renderer (and the CLI's error lines) passes them through here, so that no name can act as
markup or as a control character:

``text(s)``      terminal-safe: every control character (C0 including tab, newline and CR, DEL,
                 C1), every bidirectional-override / isolate mark, the line and paragraph
                 separators, the byte-order mark and lone surrogates (undecodable bytes of a
                 path) are shown visibly as ``\\x1b`` / ``\\u202e`` escapes; the result is one
                 line that prints what it says.
``cell(s)``      a ``rich.text.Text`` of ``text(s)``: a table cell or title that rich never
                 reads as markup (``block[/attn]``, ``heads[b]/relu`` print as they are).
``markup(s)``    ``text(s)`` with rich markup escaped, for a string that rich parses.
``md_code(s)``   a markdown code span that no backtick run in ``s`` can close (the fence is
                 longer than any run); ``table=True`` (a table cell) also escapes ``|``.
``md_text(s)``   markdown text with its active punctuation backslash-escaped (emphasis, links,
                 HTML such as ``<img>``, pipes, code spans), so that it renders as itself.
``csv_cell(s)``  a CSV text cell: the name exact (newline, tab, quote and comma kept: the csv
                 writer quotes the cell per RFC 4180) with the other controls escaped as
                 ``text`` does, and a leading ``'`` when it starts with ``=``, ``+``, ``-``
                 or ``@`` (a spreadsheet would run it as a formula).  Number
                 columns are not passed here: exact integers stay exact.

JSON needs none of this: ``json.dumps`` escapes control characters (and, with ``ensure_ascii``,
everything outside ASCII), so JSON keeps the names exact.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["text", "cell", "markup", "md_code", "md_text", "csv_cell"]

# C0 (tab, newline, CR, ESC, BEL, ...), DEL and C1 (0x80-0x9f: CSI 0x9b, OSC 0x9d, ...);
# ALM; LRM/RLM; LINE/PARAGRAPH SEPARATOR; LRE/RLE/PDF/LRO/RLO; LRI/RLI/FSI/PDI; BOM;
# lone surrogates (argv bytes that are not UTF-8 arrive as U+DC80..U+DCFF).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
                     "\u2066-\u2069\ufeff\ud800-\udfff]")
# in a CSV cell a newline or tab is data the quoting carries (a terminal only moves the cursor)
_UNSAFE_CSV = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                         "\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_MD_ACTIVE = re.compile(r"([\\`*_\[\]<>|~&])")
_BACKTICKS = re.compile(r"`+")
_FORMULA = ("=", "+", "-", "@")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def text(s: Any) -> str:
    """``s`` as text with every control / bidi-override character shown as an escape."""
    s = s if isinstance(s, str) else str(s)
    return _UNSAFE.sub(_escape, s) if _UNSAFE.search(s) else s


def cell(s: Any, style: str = ""):
    """A rich ``Text`` of ``text(s)`` (never parsed as markup)."""
    from rich.text import Text

    return Text(text(s), style=style)


def markup(s: Any) -> str:
    """``text(s)`` with rich markup escaped, for strings that rich parses as markup."""
    from rich.markup import escape

    return escape(text(s))


def md_code(s: Any, table: bool = False) -> str:
    """``s`` as a markdown code span that nothing inside it can close or break out of."""
    body = text(s)
    if table:
        body = body.replace("|", "\\|")
    run = max((len(r) for r in _BACKTICKS.findall(body)), default=0)
    fence = "`" * (run + 1)
    if body.startswith("`") or body.endswith("`") or (body and not body.strip(" ")):
        body = f" {body} "   # a space keeps a leading/trailing backtick off the fence
    return f"{fence}{body}{fence}" if body else "` `"


def md_text(s: Any) -> str:
    """``s`` as markdown text (one line) with emphasis, link, HTML, code and pipe
    punctuation backslash-escaped."""
    return _MD_ACTIVE.sub(r"\\\1", text(s))


def csv_cell(s: Any) -> str:
    """A CSV text cell: the name exactly as the file spells it, save the characters a terminal
    acts on, and never read as a spreadsheet formula.  Newline, tab, quote and comma stay as
    they are (the csv writer quotes the cell, RFC 4180, and ``csv.reader`` gives the name
    back); the other controls (ESC, CR, C1, bidi overrides) are shown as ``text`` shows them."""
    s = s if isinstance(s, str) else str(s)
    s = _UNSAFE_CSV.sub(_escape, s) if _UNSAFE_CSV.search(s) else s
    return "'" + s if s.startswith(_FORMULA) else s
