"""Static trip counts of ``while`` loops (the pattern ``fori_loop`` and counted loops build)."""

from __future__ import annotations

from typing import Any, Mapping

from analyzer.frontends.jaxpr.values import Known, open_jaxpr

_CMP = {"lt", "le", "gt", "ge", "ne"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "ne": "ne"}


def while_trips(p: Mapping[str, Any], cond_consts, body_consts, init) -> tuple[int | None, str]:
    """The trip count of a ``while`` whose condition compares a counter with a known bound.

    Recognised: the condition's output is ``lt/le/gt/ge/ne(a, b)`` where one side is a carry slot
    (the counter) that the body steps by a known constant (``add``/``sub``), and the other side is
    a literal, a known cond const, or a carry slot that the body passes through unchanged; the
    counter's and bound's initial values are known. ``fori_loop`` with traced-but-constant bounds
    and hand-written counted loops have this form."""
    cj, _ = open_jaxpr(p["cond_jaxpr"])
    bj, _ = open_jaxpr(p["body_jaxpr"])
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    n_carry = len(init)
    if len(cj.outvars) != 1:
        return None, "condition has several outputs"
    pred = cj.outvars[0]
    eqn = next((e for e in cj.eqns if pred in e.outvars), None)
    if eqn is None or eqn.primitive.name not in _CMP:
        return None, "condition is not a comparison of a counter with a bound"
    cond_carry = {v: i for i, v in enumerate(cj.invars[cn:])}
    cond_const = {v: cond_consts[i] for i, v in enumerate(cj.invars[:cn])}
    lhs, rhs = (_side(v, cond_carry, cond_const) for v in eqn.invars[:2])
    op = eqn.primitive.name
    if lhs is None or rhs is None:
        return None, "bound is not known at trace time"
    if lhs[0] != "carry":
        lhs, rhs, op = rhs, lhs, _FLIP[op]
    if lhs[0] != "carry" or not 0 <= lhs[1] < n_carry:
        return None, "no loop counter in the condition"
    step = _step_of(bj, bn, lhs[1])
    start = _known(init[lhs[1]])
    if not step or start is None:
        return None, "counter's step or start is not a constant"
    if rhs[0] == "carry":
        if _step_of(bj, bn, rhs[1]) != 0 or _known(init[rhs[1]]) is None:
            return None, "bound changes in the loop or is not known"
        bound = _known(init[rhs[1]])
    else:
        bound = rhs[1]
    try:
        start, bound = int(start), int(bound)
    except (TypeError, ValueError):
        return None, "counter is not an integer"
    if op in ("le", "ge"):
        bound += 1 if op == "le" else -1
        op = "lt" if op == "le" else "gt"
    trips = _trips(op, start, step, bound)
    if trips is None:
        return None, "counter never reaches its bound"
    return trips, f"counter from {start} step {step} to {bound}"


def _known(x):
    return x.value if isinstance(x, Known) else None


def _side(v, cond_carry: dict, cond_const: dict):
    """One side of the condition's comparison: ('carry', slot) | ('value', number) | None."""
    from jax.extend.core import Literal

    if isinstance(v, Literal):
        return ("value", v.val)
    if v in cond_carry:
        return ("carry", cond_carry[v])
    if v in cond_const and _known(cond_const[v]) is not None:
        return ("value", _known(cond_const[v]))
    return None


def _step_of(bj, bn: int, slot: int) -> int | None:
    """The constant the body ``bj`` (with ``bn`` consts) adds to carry ``slot`` each trip (None:
    not a counter); 0 if the body passes it through unchanged."""
    from jax.extend.core import Literal

    invar, outvar = bj.invars[bn + slot], bj.outvars[slot]
    if outvar is invar:
        return 0
    e = next((e for e in bj.eqns if outvar in e.outvars), None)
    if e is None or e.primitive.name not in ("add", "sub"):
        return None
    a, b = e.invars
    sign = 1 if e.primitive.name == "add" else -1
    if a is invar and isinstance(b, Literal):
        return sign * int(b.val)
    if b is invar and isinstance(a, Literal) and sign == 1:
        return int(a.val)
    return None


def _trips(op: str, start: int, step: int, bound: int) -> int | None:
    """Trips of ``counter op bound`` from ``start`` by ``step`` (op: lt, gt or ne); None when the
    counter never reaches the bound: lt, step 3, 0 -> 10: ceil(10 / 3) = 4."""
    if op == "lt" and step > 0:
        return max(0, -(-(bound - start) // step))
    if op == "gt" and step < 0:
        return max(0, -(-(start - bound) // -step))
    if op == "ne" and (bound - start) % step == 0 and (bound - start) // step >= 0:
        return (bound - start) // step
    return None
