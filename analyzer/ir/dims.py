"""Symbolic dims that are expressions: torch's dynamo exporter writes ``Min(512, s50)``,
``4*s77`` or ``((s0 - 1)//2) + 1`` as the dim_param of intermediate tensors.

Such a dim is not a name a user can bind; it is a function of the input symbols.  Once those
are bound, ``evaluate`` gives its value (a whitelisted arithmetic: + - * // / %, unary -,
Min, Max, FloorDiv, CeilDiv, Mod, floor/ceiling/CeilToInt/FloorToInt, integer literals and
symbol names; nothing else is evaluated), and ``symbols`` names the symbols an unbound one
needs.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from typing import Mapping

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FUNCS = {
    "Min": min, "Max": max,
    "FloorDiv": lambda a, b: a // b, "CeilDiv": lambda a, b: -(-a // b), "Mod": lambda a, b: a % b,
    "floor": math.floor, "ceiling": math.ceil, "FloorToInt": math.floor, "CeilToInt": math.ceil,
    "IntTrueDiv": lambda a, b: a / b, "TruncToInt": int,
}
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Div: operator.truediv, ast.Mod: operator.mod}


def is_expression(dim: str) -> bool:
    """A dim_param that is not a plain name (``batch``, ``s50``)."""
    return not _NAME.fullmatch(dim)


def symbols(dim: str) -> list[str]:
    """The symbol names in an expression dim, in order of appearance (functions excluded)."""
    out: list[str] = []
    for name in _NAME.findall(dim):
        if name not in _FUNCS and name not in out:
            out.append(name)
    return out


def evaluate(dim: str, bound: Mapping[str, int]) -> int | None:
    """The value of an expression dim with ``bound`` symbols, or None (a symbol unbound, a
    construct outside the whitelist, or a result that is not a non-negative integer)."""
    try:
        tree = ast.parse(dim, mode="eval")
        v = _eval(tree.body, bound)
    except (SyntaxError, ValueError, KeyError, TypeError, ZeroDivisionError, RecursionError):
        return None
    if isinstance(v, float):
        if not v.is_integer():
            return None
        v = int(v)
    return v if isinstance(v, int) and v >= 0 else None


def _eval(node: ast.AST, bound: Mapping[str, int]):
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return bound[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, bound), _eval(node.right, bound))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, bound)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS \
            and not node.keywords:
        return _FUNCS[node.func.id](*(_eval(a, bound) for a in node.args))
    raise ValueError(f"not a dim expression: {ast.dump(node)}")
