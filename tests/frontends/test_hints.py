"""Hints that lead somewhere: an unbound-dim error names the graph's own input dims exactly as
``dims=`` accepts them (tf2onnx's ``unk__314``, paddle's dotted ``DynamicDimension.0``), never a
name shape inference made up (``unk__0``); binding a symbol through ``inputs=`` binds it in every
input; and every hint, applied literally from ``e.hints``, makes progress (the error changes or
the analysis succeeds)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.errors import AnalyzerError, UnboundDimError
from onnx_builders import graph, ints, weight

F32 = TensorProto.FLOAT


def _flatten_then_matmul(dim: str):
    # x [dim, 4] -> Reshape [-1, 2]: inference cannot name dim*2 and makes up 'unk__0'
    nodes = [helper.make_node("Reshape", ["x", "t"], ["r"], name="rs"),
             helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    return graph(nodes, {"x": [dim, 4]}, ["y"], {"t": ints(-1, 2), "w": weight(2, 3)})


def _two_inputs(dim: str):
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("MatMul", ["s", "w"], ["y"], name="mm")]
    return graph(nodes, {"a": [dim, 4], "b": [dim, 4]}, ["y"], {"w": weight(4, 3)})


@pytest.mark.parametrize("dim", ["DynamicDimension.0", "unk__314", "batch"])
def test_an_unknown_derived_dim_names_the_graphs_own_dims(dim):
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(_flatten_then_matmul(dim))
    msg = str(e.value)
    assert "unk__0" not in msg.split("; inputs (")[0], msg  # (the node's specs may show it)
    assert e.value.dim == dim
    assert [h.value for h in e.value.hints if h.option == "dims"] == [{dim: "VALUE"}]
    r = analyzer.analyze(_flatten_then_matmul(dim), dims={dim: 3})
    assert r.node("mm").out_specs[0].shape == (6, 3)


def test_a_symbol_bound_through_one_input_is_bound_in_the_others():
    r = analyzer.analyze(_two_inputs("batch"), inputs={"a": "5x4"})
    assert r.node("add").out_specs[0].shape == (5, 4)


def _apply(kwargs: dict, hints) -> dict | None:
    """The options of ``kwargs`` with every hint that has a value applied literally (a
    metavariable value becomes a small number or shape); None when no hint can be applied."""
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in kwargs.items()}
    applied = False
    for h in hints:
        if not isinstance(h.value, dict):
            continue
        for k, v in h.value.items():
            if h.option == "dims":
                out.setdefault("dims", {})[k] = 2 if not isinstance(v, int) else v
            elif h.option == "inputs":
                out.setdefault("inputs", {})[k] = v if not str(v).isupper() else None
            else:
                continue
            applied = True
    return out if applied else None


@pytest.mark.parametrize("model", [
    _flatten_then_matmul("DynamicDimension.0"), _flatten_then_matmul("unk__314"),
    _two_inputs("batch"),
    graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], {"x": ["b", "s", 4]}, ["y"],
          {"w": weight(4, 3)}),
])
def test_every_hint_followed_literally_makes_progress(model):
    kwargs: dict = {}
    seen = set()
    for _ in range(5):
        try:
            analyzer.analyze(model, **kwargs)
            return
        except AnalyzerError as e:
            msg = str(e)
            assert msg not in seen, f"the hint led back to the same error: {msg}"
            seen.add(msg)
            assert not isinstance(e, (AttributeError, KeyError, TypeError))
            nxt = _apply(kwargs, e.hints)
            assert nxt is not None, f"no hint to follow: {msg}"
            if any(v is None for v in nxt.get("inputs", {}).values()):
                return  # an input shape the user must choose: a real choice, not a circle
            kwargs = nxt
    pytest.fail(f"still failing after following the hints: {kwargs}")


def test_a_bare_run_names_a_dotted_input_dim_whole():
    # paddle's input [DynamicDimension.0, 3, DynamicDimension.1, DynamicDimension.2] into a
    # Conv: the hint names the three dims as the file spells them, never 'DynamicDimension'
    dd = [f"DynamicDimension.{i}" for i in range(3)]
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    m = graph([conv], {"x": [dd[0], 3, dd[1], dd[2]]}, ["y"],
              {"w": np.ones((4, 3, 3, 3), np.float32)})
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(m)
    assert e.value.dim == dd[0]
    assert "is unbound" in str(e.value) and "expression" not in str(e.value)
    assert [h.value for h in e.value.hints if h.option == "dims"] == [{d: "VALUE" for d in dd}]
    assert e.value.format("cli").endswith(
        "pass --dim DynamicDimension.0=VALUE,DynamicDimension.1=VALUE,DynamicDimension.2=VALUE")
    # followed literally: 2 x 3 x 5 x 7 -> 4 maps of 5 x 7, 2 * 4 * 35 * 27 MACs
    r = analyzer.analyze(m, dims={dd[0]: 2, dd[1]: 5, dd[2]: 7})
    assert r.node("conv").mac_flops == 2 * 2 * 4 * 5 * 7 * 27
