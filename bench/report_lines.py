"""The one way a bench script hands out its report: the lines to a file (UTF-8, one trailing
newline) and the same to stdout."""

from __future__ import annotations


def emit(path: str, lines: list[str]) -> None:
    """Write ``lines`` to ``path`` and print them."""
    text = "\n".join(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)


def emit_text(path: str | None, text: str) -> None:
    """Write ``text`` as it is to ``path`` (when one is given) and print it."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    print(text)
