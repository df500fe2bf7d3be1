"""A node's ``kernel`` string (``Work.kernel``, ``NodeCost.kernel``): the kernel variant its specs
do not show, as words separated by spaces.  A word is a bare name (``depthwise``,
``lhs_transposed``: the rule's kernel form, always first) or ``key=value`` (``row=1024``,
``perm=0,2,1``, ``relayout=0,1``, ``reduction=mean``).  Counts never depend on it; the
prediction stage reads it through these functions only."""

from __future__ import annotations


def words(kernel: str | None) -> list[str]:
    """The words of ``kernel`` ([] for None or an empty string)."""
    return (kernel or "").split()


def head(kernel: str | None) -> str:
    """The first word ('' where there is none): a rule's bare kernel form."""
    ws = words(kernel)
    return ws[0] if ws else ""


def value(kernel: str | None, key: str) -> str | None:
    """The value of the first ``key=value`` word of ``kernel``; None where it has none."""
    prefix = key + "="
    return next((w[len(prefix):] for w in words(kernel) if w.startswith(prefix)), None)


def ints(kernel: str | None, key: str) -> tuple[int, ...] | None:
    """``key``'s value as comma-separated integers (``perm=0,2,1`` -> (0, 2, 1)); None where
    ``kernel`` has no such word."""
    v = value(kernel, key)
    return None if v is None else tuple(int(x) for x in v.split(",") if x != "")


def with_word(kernel: str | None, word: str | None) -> str | None:
    """``kernel`` with ``word`` appended (either may be None or empty)."""
    return f"{kernel or ''} {word}".strip() if word else kernel
