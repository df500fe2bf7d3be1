"""The analyzer's totals on samples/*.onnx against the closed forms in samples/make_samples.py."""

from __future__ import annotations

import importlib.util
import os

import pytest

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SAMPLES = os.path.join(_ROOT, "samples")


def _load_module(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_samples = _load_module("opcost_samples_make_samples", os.path.join(_SAMPLES, "make_samples.py"))
EXPECTED = make_samples.EXPECTED


def _path(name: str) -> str:
    return os.path.join(_SAMPLES, f"{name}.onnx")


def test_every_sample_file_has_expected_numbers():
    on_disk = {f[:-len(".onnx")] for f in os.listdir(_SAMPLES) if f.endswith(".onnx")}
    assert set(EXPECTED) <= on_disk, "run: python samples/make_samples.py"
    assert on_disk <= set(EXPECTED), f"samples without closed forms: {sorted(on_disk - set(EXPECTED))}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_totals_match_closed_form(name):
    import analyzer

    exp = EXPECTED[name]
    report = analyzer.analyze(_path(name), dims=exp.get("dims"))
    assert report.totals.params == exp["params"]
    assert report.totals.mac_flops == exp["mac_flops"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_flops_is_sum_of_classes(name):
    import analyzer

    t = analyzer.analyze(_path(name), dims=EXPECTED[name].get("dims")).totals
    assert t.flops == t.mac_flops + t.vector_flops + t.transcendentals
    assert t.vector_flops > 0  # every sample has bias adds / activations / softmax


def test_sample_node_records_sum_to_totals():
    import analyzer

    report = analyzer.analyze(_path("transformer"))
    assert sum(n.mac_flops for n in report.nodes) == report.totals.mac_flops
    by_name = {n.name: n for n in report.nodes}
    # Q.K^T per head: 2 * heads * seq * seq * head_dim = 2*4*16*16*16 = 32768
    assert by_name["attn.qk"].mac_flops == 32768
    # output projection: 2 * seq * d_model * d_model = 2*16*64*64 = 131072
    assert by_name["attn.out.matmul"].mac_flops == 131072


def test_transformer_has_transcendentals():
    import analyzer

    t = analyzer.analyze(_path("transformer")).totals
    # Softmax exp over 4*16*16 = 1024 scores and Erf over 16*256 = 4096 hidden units at least
    assert t.transcendentals >= 1024 + 4096


def test_dynamic_batch_scales_linearly():
    import analyzer

    per_element = EXPECTED["dynamic_batch"]["mac_flops"]  # 469504 at batch=1
    t8 = analyzer.analyze(_path("dynamic_batch"), dims={"batch": 8}).totals
    assert t8.mac_flops == 8 * per_element == 3_756_032  # 8 * 469504
    assert t8.params == EXPECTED["dynamic_batch"]["params"]  # weights do not scale with batch


def test_dynamic_batch_equals_static_mlp_at_batch_1():
    import analyzer

    dyn = analyzer.analyze(_path("dynamic_batch"), dims={"batch": 1}).totals
    static = analyzer.analyze(_path("mlp")).totals
    assert (dyn.params, dyn.mac_flops, dyn.vector_flops, dyn.transcendentals) == (
        static.params, static.mac_flops, static.vector_flops, static.transcendentals)


def test_dynamic_batch_unbound_dim_is_an_error_naming_it():
    import analyzer
    from analyzer.errors import UnboundDimError

    with pytest.raises(UnboundDimError) as info:
        analyzer.analyze(_path("dynamic_batch"))
    assert info.value.dim == "batch"
