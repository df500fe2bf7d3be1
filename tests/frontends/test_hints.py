"""Hints that lead somewhere: an unbound-dim error names the graph's own input dims exactly as
``dims=`` accepts them (tf2onnx's ``unk__314``, paddle's dotted ``DynamicDimension.0``), never a
name shape inference made up (``unk__0``); binding a symbol through ``inputs=`` binds it in every
input; and every hint, applied literally from ``e.hints``, makes progress (the error changes or
the analysis succeeds)."""

from __future__ import annotations

import os
import pickle

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


BERT_DYNAMIC = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "torch", "bert_dynamic.onnx")


def test_an_unbound_dim_error_is_one_short_line_and_keeps_the_specs():
    # BERT's TorchScript export with dynamic batch and seq: the position-ids Slice's output is
    # [unk__0, unk__1]. The line names the node, its op, the dims to bind and the option; the
    # node's input and output specs (some 300 characters) stay on the exception
    with pytest.raises(UnboundDimError) as e:
        analyzer.analyze(BERT_DYNAMIC)
    err = e.value
    lib, cli = str(err), err.format("cli")
    assert lib == ("node '/model/embeddings/Slice' (Slice): a dim derived from the unbound input dims "
                   "('batch', 'seq') is unknown; pass dims={'batch': ..., 'seq': ...}")
    assert cli.endswith("is unknown; pass --dim batch=VALUE,seq=VALUE")
    assert "\n" not in cli and len(cli) < 160 and "inputs (" not in cli
    assert (err.node, err.op, err.dim) == ("/model/embeddings/Slice", "Slice", "batch")
    assert err.specs.startswith("inputs (onnx::Slice_47: int64[1,64], ")
    assert err.specs.endswith("outputs (/model/embeddings/Slice_output_0: int64[unk__0,unk__1])")
    # the attributes survive a pickle (a worker process's error reaches the caller whole)
    back = pickle.loads(pickle.dumps(err))
    assert (back.node, back.specs, str(back)) == (err.node, err.specs, lib)
    # followed literally, the hint makes the model analyse
    assert analyzer.analyze(BERT_DYNAMIC, dims={"batch": 1, "seq": 8}).totals.mac_flops > 0


def test_a_name_in_the_short_line_reaches_the_terminal_escaped(save, run_cli):
    # a control character in the node's name: the CLI prints it as text, on one line
    m = graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm\x1b[2J\nx")], {"x": ["batch", 4]},
              ["y"], {"w": weight(4, 3)})
    res = run_cli(save(m))
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert "\n" not in line and "\x1b" not in line, line
    assert line.startswith("error: node 'mm") and "(MatMul): symbolic dim 'batch' is unbound" in line, line
    assert line.endswith("pass --dim batch=VALUE") and len(line) < 200, line
