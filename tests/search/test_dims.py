"""score_dims (counts as polynomials in the dims, one jitted kernel over the assignments) equals
score's / analyze's latency at every assignment kind that can break it: chunk boundaries, GEMM
wave and tile regimes, a dim entering cubically, a calibrated profile's per-run overhead, and
several local devices."""

import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import HW, SAMPLES, reference

import search_space as ss
from analyzer.search.dims import evaluation, polynomial

ROOT = os.path.dirname(SAMPLES)


def exact(cm, model, names, assign):
    """score's latency (== analyze's, checked below) at each assignment, lowered exactly."""
    lows = [cm.lower(cm.count(model, replace(cm.options, dims=dict(zip(names, map(int, p))))))
            for p in assign]
    return cm._latency(lows)[0]


def test_counts_are_quadratic_and_kernels_deduplicated(cm):
    m = ss.symbolic_transformer()
    grid = {"batch": [1, 2, 4], "seq": [8, 16, 32, 64, 128], "width": [32, 64, 96, 128, 256]}
    names, assign, uniq = polynomial.assignments(grid, True)
    f = polynomial.fit(cm, m, names, assign, values=uniq)
    assert f.exact and f.exps.max() == 2 and len(f.exps) == 3 * 3 * 3   # quadratic grid
    a100 = next(g for g in f.groups if g.idx == [0])
    up = a100.low.kernel_names.index("up")
    # up: [b*s, w] x [w, w]: mac_flops = 2*b*s*w^2, the one monomial b^1 s^1 w^2
    mono = {tuple(e): c for e, c in zip(f.exps.tolist(), a100.coeffs[:, 0, up]) if c != 0}
    assert mono == {(1, 1, 2): 2.0}
    _, groups = evaluation.plan(f)
    # 15 kernels on a100, 8 distinct: ln1=ln2, q=k=v=o=up=down, res1=res2 (+ kt, scores,
    # softmax, attn, relu); padded to 8 with weight-0 copies
    g = groups[f.groups.index(a100)]
    assert sorted(g["weight"][:, 0].tolist()) == [1, 1, 1, 1, 1, 2, 2, 6]


@pytest.mark.parametrize("n", [7, 8, 9, 17])
def test_chunk_boundaries(cm, monkeypatch, n):
    monkeypatch.setattr(evaluation, "CHUNK", 8)   # n: below, at, just over, two chunks + 1
    m = ss.symbolic_transformer()
    seq = list(range(16, 16 * (n + 1), 16))
    lat, assign = cm.score_dims(m, {"batch": [2], "seq": seq, "width": [64]}, return_assignments=True)
    assert lat.shape == (n, 2)
    np.testing.assert_allclose(lat, exact(cm, m, ("batch", "seq", "width"), assign), rtol=1e-6)


def test_full_chunk_boundary(cm):
    m = ss.symbolic_transformer()
    grid = {"batch": [1, 2, 3, 4, 5], "seq": list(range(16, 16 * 30, 16)),
            "width": list(range(32, 32 * 114, 32))}
    lat, assign = cm.score_dims(m, grid, return_assignments=True)
    assert len(assign) == 5 * 29 * 113 == evaluation.CHUNK + 1
    rows = [0, evaluation.CHUNK - 1, evaluation.CHUNK]
    np.testing.assert_allclose(lat[rows], exact(cm, m, tuple(grid), assign[rows]), rtol=1e-6)
    np.testing.assert_allclose(lat[-1], reference(m, dims=dict(zip(grid, map(int, assign[-1])))),
                               rtol=1e-6)


def test_gemm_wave_and_tile_regimes(cm):
    # up/down/q...: m = batch*seq, n = width; the a100 (108 SMs) runs the family's tm x tm tiles
    # (64 x 64) or smaller library tiles. The chosen values cross m < tm (granule padding) /
    # m >= tm (tiles) and, at seq 1152, a whole number of waves of set tiles (18 x 24 = 432 = 4 x
    # 108) / one more (18 x 25 = 450)
    from analyzer.prediction.efficiency import kernel_time as eff
    from analyzer.prediction.efficiency.constants import load_constants

    c = load_constants("nvidia-ampere").arrays
    tm = c["tile_m"][eff.CLASS_CODE["gemm"]]
    assert tm == c["tile_n"][eff.CLASS_CODE["gemm"]] == 64
    m = ss.symbolic_transformer()
    grid = {"batch": [1], "seq": [36, 63, 64, 65, 1152], "width": [1408, 1536, 1537, 1664]}
    lat, assign = cm.score_dims(m, grid, return_assignments=True)
    tiles = {int(np.ceil(s / tm) * np.ceil(w / tm)) for _, s, w in assign if s >= tm and w >= tm}
    assert {432, 450} <= tiles and np.ceil(432 / 108) != np.ceil(450 / 108)
    want = exact(cm, m, tuple(grid), assign)
    np.testing.assert_allclose(lat, want, rtol=1e-6)
    for i in (1, 2, 17, 18):
        np.testing.assert_allclose(lat[i], reference(m, dims=dict(zip(grid, map(int, assign[i])))),
                                   rtol=1e-6)


def _volume():
    # Relu over x[b, d, d, d]: 8*b*d^3 bytes, cubic in d
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "d", "d", "d"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "d", "d", "d"])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g", [x], [y])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def test_a_cubic_dim_refits_cubic(cm):
    m = _volume()
    grid = {"b": [1, 2, 3], "d": [4, 8, 12, 16, 20, 24, 32]}
    names, assign, uniq = polynomial.assignments(grid, True)
    f = polynomial.fit(cm, m, names, assign, values=uniq)
    assert f.exact and f.exps[:, 1].max() == 3          # the quadratic fit failed its check
    lat = cm.score_dims(m, grid)
    np.testing.assert_allclose(lat, exact(cm, m, names, assign), rtol=1e-6)
    b = f.groups[0]
    mono = {tuple(e): c for e, c in zip(f.exps.tolist(), b.coeffs[:, 3, 0]) if c != 0}
    assert mono == {(1, 3): 8.0}                         # bytes = 4*b*d^3 read + 4*b*d^3 written


def test_failed_latency_check_falls_back_to_exact_points(cm, monkeypatch):
    monkeypatch.setattr(polynomial, "LAT_RTOL", -1.0)   # no batch result passes its check
    m = ss.symbolic_transformer()
    grid = {"batch": [1, 2], "seq": [16, 48], "width": [32, 96]}
    names, assign, _ = polynomial.assignments(grid, True)
    calls = []
    orig = cm.count
    monkeypatch.setattr(cm, "count", lambda *a, **k: calls.append(1) or orig(*a, **k))
    lat = cm.score_dims(m, grid)
    assert len(calls) == 2 * 2 * 2 + 8             # the 8 grid lowerings, then 8 exact points
    np.testing.assert_allclose(lat, exact(cm, m, names, assign), rtol=1e-12)


def test_compiles_once_per_graph_whatever_the_number_of_assignments(cm):
    m = ss.symbolic_transformer()
    cm.score_dims(m, {"batch": [1, 2], "seq": [16, 32, 48], "width": [64, 128, 192]})
    before = evaluation.TRACES["dims"]
    cm.score_dims(m, {"batch": [1, 2, 4], "seq": list(range(16, 1600, 16)), "width": [64, 320]})
    assert evaluation.TRACES["dims"] == before


def test_calibrated_profile_adds_its_run_overhead(tmp_path):
    import analyzer
    from analyzer.measure.calibrate import calibration_sources, write_profile

    from tests.profile_docs import gemm_table_doc

    doc = gemm_table_doc("calibrated-dims", run_overhead_us=3.0)
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    path = str(write_profile(doc, tmp_path / "cal.toml"))
    cm = analyzer.CostModel([path, "a100"])
    m = _volume()
    lat = cm.score_dims(m, {"b": [1, 2], "d": [4, 8, 12, 16]})
    for i, (b, d) in enumerate([(1, 4), (2, 16)]):
        want = reference(m, hw=[path, "a100"], dims={"b": b, "d": d})
        np.testing.assert_allclose(lat[[0, 7][i]], want, rtol=1e-6)
    r = analyzer.analyze(m, hw=path, dims={"b": 1, "d": 4})
    assert r.predictions[0].run_overhead_s == pytest.approx(3e-6)


@pytest.mark.machine
def test_sharded_over_two_devices_matches_analyze(tmp_path):
    out = tmp_path / "lat.npy"
    code = textwrap.dedent(f"""
        import sys, numpy as np, jax, analyzer
        sys.path.insert(0, {SAMPLES!r})
        import search_space as ss
        assert jax.local_device_count() == 2
        cm = analyzer.CostModel({HW!r})
        lat = cm.score_dims(ss.symbolic_transformer(),
                            {{"batch": [1, 3], "seq": [8, 64, 100, 128], "width": [32, 320, 512]}})
        np.save({str(out)!r}, lat)
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT, timeout=300)
    lat = np.load(out)
    assert lat.shape == (24, 2)
    for i, (b, s, w) in ((0, (1, 8, 32)), (17, (3, 64, 512)), (23, (3, 128, 512))):
        np.testing.assert_allclose(lat[i], reference(ss.symbolic_transformer(),
                                                     dims={"batch": b, "seq": s, "width": w}),
                                   rtol=1e-6)


def _one_node(op, shape):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="n")], "g", [x], [y])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


def test_no_dims_and_no_kernels(cm):
    relu = _one_node("Relu", (2, 3))
    lat, assign = cm.score_dims(relu, {}, return_assignments=True)   # product(): one, empty
    assert lat.shape == (1, 2) and assign.shape == (1, 0)
    np.testing.assert_allclose(lat[0], reference(relu), rtol=1e-12)
    import analyzer

    # launches nothing: no kernel time, as analyze says; only a per-call launch where the profile
    # has one (xla on a TPU: the jitted call is still dispatched)
    ident = _one_node("Identity", ("b", "d"))
    lat = cm.score_dims(ident, {"b": [1, 2, 3], "d": [4, 5]})
    call = np.array([p.run_overhead_s for p in analyzer.analyze(ident, hw=HW, dims={"b": 3, "d": 5}).predictions])
    assert lat.shape == (6, 2) and (lat == call).all()
    np.testing.assert_array_equal(reference(ident, dims={"b": 3, "d": 5}), call)


def test_a_small_term_beside_a_huge_one_is_kept(cm):
    # Mul(x[b, d, d, d], one fp32 scalar): bytes = 8*b*d^3 + 4; at d = 32768 the 4 is 1e-14 of
    # the feature, below the noise cut, yet at d = 1 it is a third of it: the column keeps its
    # raw coefficients and stays on the polynomial path
    from onnx import numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "d", "d", "d"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    s = numpy_helper.from_array(np.array([2.0], np.float32), "s")
    g = helper.make_graph([helper.make_node("Mul", ["x", "s"], ["y"], name="mul")], "g", [x], [y], [s])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    grid = {"b": [1, 2], "d": [1, 2, 3, 5, 8, 64, 1024, 32768]}
    names, assign, uniq = polynomial.assignments(grid, True)
    f = polynomial.fit(cm, m, names, assign, values=uniq)
    assert f.exact
    at_1_1 = f.groups[0].coeffs[:, 3, 0].sum()        # b = d = 1: every monomial is 1
    assert at_1_1 == pytest.approx(8 * 1 * 1 + 4, rel=1e-9)
    lat = cm.score_dims(m, grid)
    np.testing.assert_allclose(lat, exact(cm, m, names, assign), rtol=1e-6)
