"""JSON that every parser reads: never ``Infinity`` or ``NaN``.

``json.dumps`` writes non-finite floats as ``Infinity`` / ``NaN`` by default, which is not JSON
(RFC 8259) and which strict parsers (``jq``, JavaScript's ``JSON.parse``, Go, Rust) reject.  A
value that is not a finite number has no number to write: ``dumps`` writes it as ``null`` (the
arithmetic intensity of a node that moves no bytes, a share of a zero latency), and always with
``allow_nan=False`` so that nothing slips through.  The common case costs one ``json.dumps``: the
document is walked only when the first attempt finds a non-finite float.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (``inf``, ``-inf``, ``nan``) replaced by None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def dumps(obj: Any, indent: int | None = 2, **kw: Any) -> str:
    """``json.dumps(obj)`` with non-finite floats as null, never ``Infinity``/``NaN``."""
    try:
        return json.dumps(obj, indent=indent, allow_nan=False, **kw)
    except ValueError:   # "Out of range float values are not JSON compliant"
        return json.dumps(finite(obj), indent=indent, allow_nan=False, **kw)
