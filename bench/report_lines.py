"""The one way a bench script hands out its report: the lines to a file (UTF-8, one trailing
newline) and the same to stdout."""

from __future__ import annotations


def emit(path: str, lines: list[str]) -> None:
    """Write ``lines`` to ``path`` and print them."""
    text = "\n".join(lines)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print(text)
