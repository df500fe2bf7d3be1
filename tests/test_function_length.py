"""Functions short enough to read: at most ``MAX_LINES`` lines (``def`` to last line, comments and
docstring included) in the library (``analyzer/``) and the CLI (``cli/``). bench/ and samples/ are
scripts, outside the budget. An exception is named below with its reason; the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 80

# "path:function": why it is longer (each is a split still to make, not a licence)
EXCEPTIONS: dict[str, str] = {}


def _long_functions() -> dict[str, int]:
    out = {}
    for folder in ("analyzer", "cli"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_LINES:
                        out[f"{rel}:{node.name}"] = lines
    return out


def test_no_function_is_longer_than_the_budget():
    over = {k: v for k, v in _long_functions().items() if k not in EXCEPTIONS}
    assert not over, f"functions over {MAX_LINES} lines (split them along their seams): {over}"


def test_every_exception_is_still_needed():
    # a function split (or moved) leaves the list: the budget then holds for it too
    stale = sorted(set(EXCEPTIONS) - set(_long_functions()))
    assert not stale, f"no longer over {MAX_LINES} lines (or moved): remove from EXCEPTIONS: {stale}"
