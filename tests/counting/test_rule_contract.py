"""The rule contract (``analyzer/counting/cost.py``): every rule is ``fn(ins, outs, ctx, *, attrs)``
with no ``**kwargs`` catch-all, and every attribute it declares is one its op really has.

The engine passes a rule only the node attributes it declares, so a misspelled name
(``kernal_shape``) would silently take its default forever; here it fails instead:

- standard domains (``""``, ``ai.onnx.ml``, ``ai.onnx.preview.training``): the attribute exists in
  the op's ONNX schema at some version (``onnx.defs.get_all_schemas_with_history()``), or, for the
  few onnxruntime ops that live in the default domain, in onnxruntime's schema;
- ``com.microsoft``: onnxruntime's schemas, when onnxruntime is importable (skipped otherwise);
- ``jax``: the params the frontend gives the primitive's nodes (its eqn params plus the few the
  frontend adds, e.g. ``trip_count``) when tracing ``samples/jax_models.py``; a primitive those
  programs do not use is only checked for its signature.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import replace

import onnx.defs
import pytest

import analyzer.counting.rules  # noqa: F401  (fills the registry)
from analyzer.counting.cost import RULES, Work, canonical_domain, has_rule, register, rule_attributes

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDARD = ("", "ai.onnx.ml", "ai.onnx.preview.training")
MS = "com.microsoft"

# ops registered under a domain whose schemas do not define them there: (domain, op) -> the schema
# that defines the same op (some exporters write it in the other domain)
SAME_AS = {(MS, "SimplifiedLayerNormalization"): ("", "SimplifiedLayerNormalization")}


def _onnx_schema_attrs() -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        out.setdefault((canonical_domain(s.domain), s.name), set()).update(s.attributes)
    return out


def _ort_schema_attrs() -> dict[tuple[str, str], set[str]] | None:
    try:
        from onnxruntime.capi.onnxruntime_pybind11_state import get_all_operator_schema
    except ImportError:
        return None
    out: dict[tuple[str, str], set[str]] = {}
    for s in get_all_operator_schema():
        out.setdefault((canonical_domain(s.domain), s.name), set()).update(s.attributes)
    return out


def misdeclared(rules, schemas: dict[tuple[str, str], set[str]], domains) -> list[str]:
    """'domain::op: name, ...' for every rule of ``domains`` that declares an attribute its op's
    schema does not have (or whose op no schema defines)."""
    bad = []
    for (dom, op), rule in sorted(rules.items()):
        if dom not in domains:
            continue
        key = SAME_AS.get((dom, op), (dom, op))
        known = schemas.get(key)
        if known is None:
            if key not in schemas:  # present with None: its schema lives in onnxruntime
                bad.append(f"{dom or 'ai.onnx'}::{op}: no schema defines this op")
            continue
        extra = sorted(rule.attrs - known)
        if extra:
            bad.append(f"{dom or 'ai.onnx'}::{op}: {', '.join(extra)} not in its schema")
    return bad


def test_every_rule_follows_the_signature_contract():
    for (dom, op), rule in RULES.items():
        assert rule_attributes(rule.fn) == rule.attrs, (dom, op)  # raises on a bad signature


def test_a_catch_all_or_a_missing_context_is_refused_at_registration():
    def catch_all(ins, outs, ctx, *, axis=0, **_):
        return Work()

    def no_ctx(ins, outs, *, axis=0):
        return Work()

    def positional_attr(ins, outs, ctx, axis=0):
        return Work()

    for fn in (catch_all, no_ctx, positional_attr):
        with pytest.raises(TypeError, match="cost rule"):
            register("NotAnOp", domain="test.contract")(fn)
    assert ("test.contract", "NotAnOp") not in RULES


def _standard_schemas() -> dict[tuple[str, str], set[str]]:
    schemas = _onnx_schema_attrs()
    ort = _ort_schema_attrs()
    if ort is None:
        # onnxruntime defines a few ops in the default domain (SimplifiedLayerNormalization);
        # without it their schemas are unknown here: checked only where onnxruntime is installed
        from analyzer.frontends.onnx.surrogates.emit import ORT_DEFAULT_DOMAIN

        return {**schemas, **{("", op): None for op in ORT_DEFAULT_DOMAIN}}
    for key, names in ort.items():  # onnxruntime ops in the default domain (SimplifiedLayerNorm)
        if key[0] == "" and key not in schemas:
            schemas[key] = names
    return schemas


def test_standard_rules_declare_only_schema_attributes():
    assert misdeclared(RULES, _standard_schemas(), STANDARD) == []


def test_onnxruntime_rules_declare_only_schema_attributes():
    ort = _ort_schema_attrs()
    if ort is None:
        pytest.skip("onnxruntime is not importable: its com.microsoft schemas are unknown here")
    assert misdeclared(RULES, {**_standard_schemas(), **ort}, (MS,)) == []


def test_a_misspelled_attribute_is_caught():
    def conv(ins, outs, ctx, *, kernal_shape=None):  # sic
        return Work()

    planted = dict(RULES)
    planted[("", "Conv")] = replace(RULES[("", "Conv")], fn=conv, attrs=rule_attributes(conv))
    assert misdeclared(planted, _standard_schemas(), STANDARD) == [
        "ai.onnx::Conv: kernal_shape not in its schema"]


# ----------------------------------------------------------------------------- jax


def _traced_params() -> dict[str, set[str]]:
    """primitive -> the attribute names its nodes carry, over the sample programs."""
    pytest.importorskip("jax")
    from analyzer.frontends.jaxpr import load as jaxpr_frontend

    spec = importlib.util.spec_from_file_location(
        "opcost_samples_jax_models_contract", os.path.join(ROOT, "samples", "jax_models.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seen: dict[str, set[str]] = {}

    def walk(g):
        for n in g.nodes:
            seen.setdefault(n.op, set()).update(n.attrs)
            for sub in n.subgraphs.values():
                walk(sub)

    for name in ("mlp", "cnn", "transformer", "rnn"):
        params, x, y = mod.example_inputs(name)
        walk(jaxpr_frontend.load(getattr(mod, name), (params, x), counted=has_rule)[0])
        walk(jaxpr_frontend.load(getattr(mod, f"{name}_train_step"), (params, x, y),
                                 counted=has_rule)[0])
    return seen


def test_jax_rules_declare_only_params_their_primitives_carry():
    seen = _traced_params()
    jax_rules = {op: r for (dom, op), r in RULES.items() if dom == "jax"}
    exercised = {op: r for op, r in jax_rules.items() if op in seen}
    assert len(exercised) >= 20, sorted(seen)  # the samples reach a good share of the rules
    bad = [f"jax::{op}: {', '.join(sorted(r.attrs - seen[op]))}"
           for op, r in sorted(exercised.items()) if r.attrs - seen[op]]
    assert bad == []
