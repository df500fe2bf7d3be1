"""Static trip counts of ``while`` loops (the pattern ``fori_loop`` and counted loops build)."""

from __future__ import annotations

from typing import Any, Mapping

_CMP = {"lt", "le", "gt", "ge", "ne"}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "ne": "ne"}


def while_trips(p: Mapping[str, Any], cond_consts, body_consts, init) -> tuple[int | None, str]:
    """The trip count of a ``while`` whose condition compares a counter with a known bound.

    Recognised: the condition's output is ``lt/le/gt/ge/ne(a, b)`` where one side is a carry slot
    (the counter) that the body steps by a known constant (``add``/``sub``), and the other side is
    a literal, a known cond const, or a carry slot that the body passes through unchanged; the
    counter's and bound's initial values are known. ``fori_loop`` with traced-but-constant bounds
    and hand-written counted loops have this form."""
    from jax.extend.core import Literal

    from analyzer.frontends.jaxpr.load import Known, open_jaxpr

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

    def known(x):
        return x.value if isinstance(x, Known) else None

    def side(v):
        """('carry', slot) | ('value', number) | None"""
        if isinstance(v, Literal):
            return ("value", v.val)
        if v in cond_carry:
            return ("carry", cond_carry[v])
        if v in cond_const and known(cond_const[v]) is not None:
            return ("value", known(cond_const[v]))
        return None

    def step_of(slot):
        """The constant the body adds to carry ``slot`` each trip (None: not a counter); 0 if the
        body passes it through unchanged."""
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

    lhs, rhs = side(eqn.invars[0]), side(eqn.invars[1])
    op = eqn.primitive.name
    if lhs is None or rhs is None:
        return None, "bound is not known at trace time"
    if lhs[0] != "carry":
        lhs, rhs, op = rhs, lhs, _FLIP[op]
    if lhs[0] != "carry" or not 0 <= lhs[1] < n_carry:
        return None, "no loop counter in the condition"
    step = step_of(lhs[1])
    start = known(init[lhs[1]])
    if not step or start is None:
        return None, "counter's step or start is not a constant"
    if rhs[0] == "carry":
        if step_of(rhs[1]) != 0 or known(init[rhs[1]]) is None:
            return None, "bound changes in the loop or is not known"
        bound = known(init[rhs[1]])
    else:
        bound = rhs[1]
    try:
        start, bound = int(start), int(bound)
    except (TypeError, ValueError):
        return None, "counter is not an integer"
    if op in ("le", "ge"):
        bound += 1 if op == "le" else -1
        op = "lt" if op == "le" else "gt"
    if op == "lt" and step > 0:
        trips = max(0, -(-(bound - start) // step))
    elif op == "gt" and step < 0:
        trips = max(0, -(-(start - bound) // -step))
    elif op == "ne" and (bound - start) % step == 0 and (bound - start) // step >= 0:
        trips = (bound - start) // step
    else:
        return None, "counter never reaches its bound"
    return trips, f"counter from {start} step {step} to {bound}"
