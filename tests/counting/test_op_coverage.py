"""Every operator of the standard domains that the installed onnx knows is covered (issue 4).

Walks ``onnx.defs.get_all_schemas_with_history()`` (ai.onnx, ai.onnx.ml, ai.onnx.preview,
ai.onnx.preview.training; every opset version) and requires each schema version to have one of:
a cost rule (``analyzer.cost.RULES``), a function body that the frontend decomposes, an entry in
``rules/onnx/views.py``'s FREE table, a control-flow rule (If, Loop, Scan, SequenceMap), or an entry with
a reason in ``rules/onnx/uncosted.py``'s UNCOSTED table (ops no rule can count from shapes).
"""

from __future__ import annotations

import onnx.defs

import analyzer.counting.rules  # noqa: F401  (fills the registry)
from analyzer.counting.cost import RULES, canonical_domain
from analyzer.ir.ops import facts
from analyzer.counting.rules.onnx.uncosted import UNCOSTED
from analyzer.counting.rules.onnx.views import FREE

# Control-flow ops registered as io="control" rules (analyzer/rules/control.py); SequenceMap
# also has a function body, but its rule runs the body once per element it can follow.
CONTROL = frozenset(op for (dom, op) in RULES if facts(dom, op).io == "control" and dom == "")


def _has_body(schema) -> bool:
    return bool(schema.has_function or schema.has_context_dependent_function)


def uncovered(rules=RULES, free=FREE, control=CONTROL, uncosted=UNCOSTED) -> list[str]:
    """'domain::op (opsets v1, v2)' for every schema version that nothing covers."""
    missing: dict[tuple[str, str], list[int]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        dom = canonical_domain(s.domain)
        key = (dom, s.name)
        if key in rules or key in uncosted or _has_body(s):
            continue
        if dom == "" and (s.name in free or s.name in control):
            continue
        missing.setdefault(key, []).append(s.since_version)
    return [f"{d or 'ai.onnx'}::{op} (opsets {', '.join(map(str, sorted(v)))})"
            for (d, op), v in sorted(missing.items())]


def test_every_standard_op_is_covered():
    assert uncovered() == []


def test_the_check_names_an_op_whose_rule_is_missing():
    rules = dict(RULES)
    del rules[("", "TopK")]
    del rules[("ai.onnx.ml", "Scaler")]
    assert uncovered(rules) == ["ai.onnx::TopK (opsets 1, 10, 11, 24)", "ai.onnx.ml::Scaler (opsets 1)"]


def test_the_check_reports_only_versions_without_a_function_body():
    # Clip has a function body from opset 13 only: without its rule, versions 1..12 are uncovered
    rules = dict(RULES)
    del rules[("", "Clip")]
    assert uncovered(rules) == ["ai.onnx::Clip (opsets 1, 6, 11, 12)"]


def test_function_body_and_control_ops_count_as_covered():
    rules = dict(RULES)
    del rules[("", "Attention")]  # a function op (opset 23+): its body covers it
    assert uncovered(rules) == []
    assert CONTROL == {"If", "Loop", "Scan", "SequenceMap"}
    no_control = {k: v for k, v in RULES.items() if facts(*k).io != "control"}
    assert "ai.onnx::Loop (opsets 1, 11, 13, 16, 19, 21, 23, 24, 25)" in uncovered(
        no_control, control=frozenset())


def test_free_and_uncosted_entries_have_reasons():
    for op, reason in FREE.items():
        assert reason and len(reason) > 20, op
        assert ("", op) in RULES, op
        assert facts("", op).io == "view", op  # free ops move no bytes
    for key, reason in UNCOSTED.items():
        assert reason and len(reason) > 20, key
        assert key not in RULES, key  # they stay uncosted in reports, never a silent zero


def test_the_preview_training_ops_are_covered():
    for op in ("Adagrad", "Adam", "Momentum"):
        assert ("ai.onnx.preview.training", op) in RULES
    # Gradient: 2 x the forward work of the nodes it differentiates (rules/control.py)
    assert facts("ai.onnx.preview.training", "Gradient").io == "control"
