"""The ops deliberately left without a cost rule, each with the reason no rule can count it from
shapes.  They stay uncosted in reports (never a silent zero, DESIGN.md Principle 3); the
op-coverage test (``tests/counting/test_op_coverage.py``) accepts an op of the standard domains
without a rule only if it is listed here.  Data only: nothing is registered.
"""

from __future__ import annotations

UNCOSTED: dict[tuple[str, str], str] = {
    ("", "ImageDecoder"):
        "decoding work depends on the codec and the compressed bytes, not on tensor shapes",
}
