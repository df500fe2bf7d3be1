"""One frozen ``analyzer.Options`` travels through the library; the old keywords build it.

Model: ``x[batch,512] -> fc (512x256 MatMul)``: mac_flops = 2*batch*512*256 = 262,144 * batch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer import Options
from analyzer.counting import engine
from analyzer.errors import InputSpecError

MAC_PER_ROW = 2 * 512 * 256   # 262,144


def _model():
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="fc")], "fc",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 512])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 256])],
        [numpy_helper.from_array(np.zeros((512, 256), np.float32), "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_keywords_and_an_options_object_give_the_same_report():
    by_kw = analyzer.analyze(_model(), "a100", dims={"batch": 4}, precision="fp16")
    by_opts = analyzer.analyze(_model(), "a100", options=Options(dims={"batch": 4}, precision="fp16"))
    assert by_kw.totals.mac_flops == by_opts.totals.mac_flops == 4 * MAC_PER_ROW
    assert by_kw.to_dict() == by_opts.to_dict()


def test_a_keyword_overrides_the_options_field():
    opts = Options(dims={"batch": 4})
    r = analyzer.analyze(_model(), options=opts, dims={"batch": 2})
    assert r.totals.mac_flops == 2 * MAC_PER_ROW
    assert opts.dims == {"batch": 4}   # the options given are not changed


def test_unknown_keyword_raises_type_error_naming_the_valid_ones():
    with pytest.raises(TypeError, match=r"'dim'; valid keywords: inputs, dims, values, precision"):
        analyzer.analyze(_model(), dim={"batch": 2})
    with pytest.raises(TypeError, match="'bogus'"):
        analyzer.sweep(_model(), {"batch": [1, 2]}, bogus=1)


def test_an_option_the_entry_point_does_not_use_is_refused_not_ignored():
    with pytest.raises(TypeError, match=r"does not use Options\.params_argnums"):
        analyzer.analyze(_model(), options=Options(params_argnums=0, dims={"batch": 1}))
    with pytest.raises(TypeError, match=r"analyzer\.Options"):
        analyzer.analyze(_model(), options={"dims": {"batch": 1}})


def test_options_is_frozen_copies_its_mappings_and_has_room_for_the_runtime():
    dims = {"batch": 4}
    opts = Options(dims=dims)
    dims["batch"] = 8
    assert opts.dims == {"batch": 4} and opts.runtime is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.precision = "bf16"
    analyzer.analyze(_model(), options=Options(dims={"batch": 1}, runtime="onnxruntime"))  # unused


def test_counting_gets_its_subset_as_the_engine_options():
    c = Options(loop_trips=3, causal=True).counting()
    assert isinstance(c, engine.Options) and (c.loop_trips, c.causal) == (3, True)


def test_sweep_takes_options_and_keeps_their_dims_at_every_point():
    sw = analyzer.sweep(_model(), {"batch": [1, 3]}, options=Options(precision="fp16"))
    assert [r.totals.mac_flops for _, r in sw.points] == [MAC_PER_ROW, 3 * MAC_PER_ROW]
    sw = analyzer.sweep(_model(), {"batch": [2]}, "a100", options=Options(dims={"batch": 9}))
    assert sw.points[0][1].totals.mac_flops == 2 * MAC_PER_ROW   # the swept value wins
    assert sw.points[0][1].predictions[0].precision == "fp32"


# ------------------------------------------------------------------------------ JAX

def test_analyze_jax_kwargs_reach_the_function_under_any_name():
    jax = pytest.importorskip("jax")
    seen = {}

    def f(x, *, hw, precision, causal, scale=1.0):
        seen.update(hw=hw, precision=precision, causal=causal)
        return x * scale if hw == 2 else x

    x = jax.ShapeDtypeStruct((4, 8), np.float32)
    r = analyzer.analyze_jax(f, x, hw="a100", precision="bf16", scale=3.0,
                             kwargs={"hw": 2, "precision": "mine", "causal": "also mine"})
    assert seen == {"hw": 2, "precision": "mine", "causal": "also mine"}
    assert r.totals.vector_flops == 4 * 8                      # x * scale: one mul per element
    assert r.predictions[0].precision == "bf16"                # analyze_jax's own precision
    with pytest.raises(TypeError, match="'scale' both in kwargs= and as a keyword"):
        analyzer.analyze_jax(f, x, scale=3.0, kwargs={"scale": 1.0, "hw": 1, "precision": 0,
                                                      "causal": 0})


def test_analyze_jax_takes_options_and_refuses_onnx_fields():
    jax = pytest.importorskip("jax")
    x = jax.ShapeDtypeStruct((4, 8), np.float32)
    r = analyzer.analyze_jax(lambda v: v + 1, x, options=Options(report_name="plus_one"))
    assert r.model["path"] == "plus_one"
    with pytest.raises(TypeError, match=r"does not use Options\.dims"):
        analyzer.analyze_jax(lambda v: v + 1, x, options=Options(dims={"batch": 1}))


def test_analyze_jax_refuses_the_eager_host_naming_it_and_why():
    # the host tables are eager PyTorch's: a usage error (exit 2 on the command line), not an
    # unused field's TypeError, and worded for each caller without the library naming a flag
    jax = pytest.importorskip("jax")
    x = jax.ShapeDtypeStruct((4, 8), np.float32)
    for runtime in (None, "eager"):
        with pytest.raises(InputSpecError) as e:
            analyzer.analyze_jax(lambda v: v + 1, x, hw="h200-sxm",
                                 options=Options(host="torch2.11-h200", runtime=runtime))
        assert str(e.value).startswith("host='torch2.11-h200' does not apply to a JAX program")
        assert "eager PyTorch" in str(e.value)
        assert e.value.format("cli").startswith("--host torch2.11-h200 does not apply")
