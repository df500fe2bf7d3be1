"""Ops that genuinely cost nothing, and the ops deliberately left without a rule.

``FREE``: op (default domain) -> why it costs nothing.  Each is a view in ``analyzer.ir.ops`` (no
arithmetic, no bytes; inputs that are sequences or optionals, with no TensorSpec, are shape-like).

``UNCOSTED``: ``(domain, op)`` -> why no rule can count it from shapes.  These stay uncosted in
reports (never a silent zero, DESIGN.md Principle 3); the op-coverage test accepts them only with
a reason.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register

FREE: dict[str, str] = {
    "Optional": "wraps its input (or nothing) in an optional value: no data moves",
    "OptionalGetElement": "unwraps an optional (or passes a tensor through): a view, no data moves",
    "SequenceEmpty": "creates an empty sequence: no tensor data",
    "BitCast": "reinterprets the bits of a same-size dtype in place: a view, no data moves",
}

UNCOSTED: dict[tuple[str, str], str] = {
    ("", "ImageDecoder"):
        "decoding work depends on the codec and the compressed bytes, not on tensor shapes",
}


def _free(reason: str):
    def rule(ins, outs, ctx):
        return Work(note=f"free: {reason}")

    return rule


for _op, _reason in FREE.items():
    register(_op)(_free(_reason))
