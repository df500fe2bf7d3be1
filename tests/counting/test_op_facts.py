"""``analyzer.ir.ops``: the op facts (io kind, shape-like inputs) agree with the ops' schemas and
with how their cost rules behave, and the IR does not depend on the cost registry."""

from __future__ import annotations

import onnx.defs

import analyzer.counting.rules  # noqa: F401  (fills the registry)
from analyzer.counting.cost import RULES
from analyzer.ir import ops


def _returns_plan(fn) -> bool:
    return "Plan" in fn.__code__.co_names


def test_control_ops_are_exactly_those_whose_rules_return_a_plan():
    for (dom, op), rule in RULES.items():
        assert (ops.facts(dom, op).io == ops.CONTROL) == _returns_plan(rule.fn), (dom, op)


def test_every_control_op_has_a_rule():
    assert [k for k, f in ops.OPS.items() if f.io == ops.CONTROL and k not in RULES] == []


def test_shape_inputs_are_inputs_the_op_has():
    most: dict[tuple[str, str], int] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        key = (ops.canonical_domain(s.domain), s.name)
        most[key] = max(most.get(key, 0), s.max_input)
    bad = [f"{d or 'ai.onnx'}::{op} {sorted(f.shape_inputs)} (at most {most[(d, op)]} inputs)"
           for (d, op), f in ops.OPS.items()
           if (d, op) in most and f.shape_inputs and max(f.shape_inputs) >= most[(d, op)]]
    assert bad == []


def test_an_unlisted_op_is_plain_data():
    assert ops.facts("", "NotAnOp") == ops.OpFacts(ops.DATA, frozenset())
    assert ops.facts("ai.onnx", "Reshape") == ops.facts("", "Reshape")


def test_the_ir_and_the_frontends_do_not_import_the_cost_registry():
    import ast
    import pathlib

    root = pathlib.Path(ops.__file__).parent.parent
    for pkg in ("ir", "frontends"):
        for p in (root / pkg).rglob("*.py"):
            for n in ast.walk(ast.parse(p.read_text())):
                if isinstance(n, (ast.Import, ast.ImportFrom)):
                    names = [n.module or ""] if isinstance(n, ast.ImportFrom) else [a.name for a in n.names]
                    assert not any(x.startswith("analyzer.counting") for x in names), p
