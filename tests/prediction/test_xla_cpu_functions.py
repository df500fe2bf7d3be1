"""Transcendentals priced by function on an XLA CPU calibration (``prediction.cpu.xla_functions``):
a function the profile's ``trans_ns`` prices costs its time an element on one core in place of
``trans_weight`` vector FLOPs at its class's rate; the others keep the class's price."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.prediction.cpu import xla_functions as xf


def _profile(tmp_path, trans_ns=None):
    from hardware_db.write import calibration_sources, write_profile
    from profile_docs import calibrated_doc

    doc = calibrated_doc(threads=1)
    doc["id"] = f"calibrated-test-xla-fn{'' if trans_ns is None else '-priced'}"
    doc["default_runtime"] = "xla"
    cal = doc["calibration"]
    cal.update({"runtime": "xla", "trans_weight": 1.0, "run_overhead_us": 4.0})
    if trans_ns is not None:
        cal["trans_ns"] = trans_ns
    table = {"floor_us": 0.5, "e_c": 0.25, "e_bw": 100.0, "b_half_bytes": 0.0, "l2_gain": 0.0, "rows": 3,
             "fit_mape": 1.0}
    cal["tables"] = {"elementwise": table, "activation": table}
    doc["sources"] = {k: v for k, v in doc["sources"].items() if not k.startswith("calibration.")}
    doc["sources"].update(calibration_sources(cal, "test"))
    return write_profile(doc, tmp_path / f"{doc['id']}.toml")


def test_a_priced_function_costs_its_time_an_element_and_the_others_their_class_rate(tmp_path):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from analyzer import analyze_jax

    s = jax.ShapeDtypeStruct((4096,), np.float32)
    plain, priced = _profile(tmp_path), _profile(tmp_path, {"tanh": 2.0})

    def latency(fn, prof):
        return analyze_jax(fn, s, hw=prof, runtime="xla").predictions[0]

    # 4,096 tanh at 1 vector FLOP each at 0.25 TFLOP/s x e_c 0.25: 65.5 ns of compute (the
    # 32 KiB at 12.5 GB/s x 100: 26 ns, under it); priced at 2 ns each: 8,192 ns
    a, b = latency(jnp.tanh, plain), latency(jnp.tanh, priced)
    assert b.latency_s - a.latency_s == pytest.approx(4096 * 2e-9 - 4096 / 62.5e9, rel=1e-6)
    assert any("priced by function" in n for n in b.notes), b.notes
    # a logistic is not priced by this profile: the same either way
    assert latency(jax.nn.sigmoid, priced).latency_s == pytest.approx(latency(jax.nn.sigmoid, plain).latency_s,
                                                                      rel=1e-12)


def test_kernel_functions_are_per_launch_and_the_terms_sum_the_priced_ones():
    class N:
        def __init__(self, fns):
            self.functions = fns

    class Plan:
        members = ((0, 1), (2,))

    # kernel 0: a loop body's tanh (40 over 10 launches) and exp (30); kernel 1: 7 unnamed
    nodes = [N((("tanh", 40),)), N((("exp", 30),)), N((("unnamed", 7),))]
    k = xf.kernel_functions(nodes, Plan(), [10, 1])
    assert k == [{"tanh": 4.0, "exp": 3.0}, {"unnamed": 7.0}]
    T, N_ = xf.function_terms(k, {"tanh": 1e-9})
    assert T.tolist() == pytest.approx([4e-9, 0.0]) and N_.tolist() == [4.0, 0.0]
    assert xf.priced({"trans_ns": {"tanh": 0.5, "exp": 0.0}}) == {"tanh": 0.5e-9}
