"""Ops that genuinely cost nothing (the ops deliberately left without a rule: ``uncosted.py``).

``FREE``: op (default domain) -> why it costs nothing.  Each is a view in ``analyzer.ir.ops`` (no
arithmetic, no bytes; inputs that are sequences or optionals, with no TensorSpec, are shape-like).
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register

FREE: dict[str, str] = {
    "Optional": "wraps its input (or nothing) in an optional value: no data moves",
    "OptionalGetElement": "unwraps an optional (or passes a tensor through): a view, no data moves",
    "SequenceEmpty": "creates an empty sequence: no tensor data",
    "BitCast": "reinterprets the bits of a same-size dtype in place: a view, no data moves",
}

def _free(reason: str):
    def rule(ins, outs, ctx):
        return Work(note=f"free: {reason}")

    return rule


for _op, _reason in FREE.items():
    register(_op)(_free(_reason))
