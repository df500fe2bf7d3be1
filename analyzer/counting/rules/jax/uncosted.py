"""JAX primitives deliberately left without a cost rule, each with the reason (data only: nothing
is registered).  Such nodes stay uncosted in reports, with the reason as their note (never a
silent zero, DESIGN.md Principle 3).
"""

from __future__ import annotations

_CALLBACK = ("a Python callback runs on the host, outside the compiled program: its work is "
             "whatever the Python function does, which no shape tells; the transfer of its operands "
             "and results is counted as bytes")

UNCOSTED: dict[tuple[str, str], str] = {
    ("jax", "pure_callback"): _CALLBACK,
    ("jax", "io_callback"): _CALLBACK,
    ("jax", "debug_callback"): _CALLBACK + " (jax.debug.callback)",
    ("jax", "debug_print"): _CALLBACK + " (jax.debug.print)",
    ("jax", "schur"): "no closed-form operation count is stated for it here (iterative QR)",
    ("jax", "hessenberg"): "no operation count convention is stated for it here yet",
    ("jax", "tridiagonal"): "no operation count convention is stated for it here yet",
    ("jax", "tridiagonal_solve"): "no operation count convention is stated for it here yet",
}
