"""``calibrate --runtime xla`` (analyzer.measure.xla.calibrate, xla_rows): its rows, the
arithmetic that turns their wall-clocks into kernel times, a calibrated profile's prediction in
closed form, and one real (tiny) measurement in the worker process."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from analyzer import analyze_jax  # noqa: E402
from analyzer.measure.xla import calibrate as cx  # noqa: E402
from analyzer.measure.xla import fit as xla_fit  # noqa: E402
from analyzer.measure.xla import rows as xr  # noqa: E402
from analyzer.measure.xla import loop_scan  # noqa: E402
from analyzer.prediction.efficiency.op_classes import op_class_of  # noqa: E402
from profile_docs import calibrated_doc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def row_kernels():
    """{label: (group, kernels)} of every row (traced once for the module)."""
    out = {}
    for group, rows in xr.xla_rows().items():
        for label, build in rows:
            fn, args = build(cx._rng(label))
            out[label] = (group, cx.row_kernels(fn, args))
    return out


def test_every_row_lowers_to_costed_kernels_of_its_group(row_kernels):
    expect = {"dot": {"gemm", "gemm_tn"}, "batched dot": {"bgemm"}, "conv": {"conv", "conv_1x1", "conv_dw", "conv_grouped", "conv1d"},
              "conv gradients": {"conv", "conv_grouped", "conv_batch_grouped", "conv_dw"}, "pooling": {"pooling", "pool_grad"},
              "elementwise": {"elementwise"}, "transcendental": {"activation", "elementwise"},
              "row reductions": {"elementwise", "reduce"}, "gather": {"elementwise", "gather"},
              "transpose": {"movement"}}
    multi = []
    for label, (group, ks) in row_kernels.items():
        head = max(ks, key=lambda k: (k["mac"], k["vec"] + k["trans"], k["bytes"]))
        assert head["op_class"] in expect[group], (label, head)
        assert all(k["op_class"] != "other" for k in ks), label
        assert all(len(k["view"]) == 7 for k in ks), label
        if len(ks) > 1:
            multi.append(label)
    # only softmaxes (XLA's CPU kernels: a max, subtract-exp, a sum, the divide), layer norms (the
    # mean, the variance, the normalisation: each reduction's result is broadcast, so written),
    # tree reductions (their rounds), convolutions of NCHW arguments (the layout copies before
    # and after), convolution input gradients (the kernel flip), max pool gradients (XLA's
    # expansion), GEMVs of an argument (the vector's copy) are more than one kernel:
    # fold_multi takes the others off
    kinds = ("softmax", "layer norm", "row sum", "column sum", "conv", "grad pool", "dot 1x")
    assert multi and all(m.startswith(kinds) for m in multi), [m for m in multi if not m.startswith(kinds)]
    # a lone NCHW convolution of a closed-over weight: the input's copy and the result's copy
    # back, each moving its tensor twice (read, write): 1x3x24x24 and 1x8x24x24 floats
    ks = row_kernels["conv 1x3x24x24 -> 8 k3 s1"][1]
    assert [(k["op_class"], k["bytes"]) for k in ks[1:]] == [("movement", 2 * 4 * 3 * 24 * 24),
                                                            ("movement", 2 * 4 * 8 * 24 * 24)]


def _layers(fn, shapes, **kw):
    return {(n.op, tuple(tuple(s.shape) for s in n.in_specs if s is not None))
            for n in analyze_jax(fn, *shapes, **kw).nodes
            if n.op in ("dot_general", "conv_general_dilated", "reduce_window_max")}


def test_no_row_is_a_layer_of_the_programs_the_accuracy_bench_scores(row_kernels):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.path.insert(0, os.path.join(ROOT, "samples"))
    try:
        import accuracy_xla_cpu as bench
        scored = set()
        progs = bench.programs() + [p for which in bench.HELDOUT for p in bench.heldout_programs(which)]
        for _, fn, shapes, pa in progs:
            scored |= _layers(fn, shapes, **({} if pa is None else {"params_argnums": pa}))
    finally:
        while os.path.join(ROOT, "bench") in sys.path:
            sys.path.remove(os.path.join(ROOT, "bench"))
        sys.path.remove(os.path.join(ROOT, "samples"))
    assert len(scored) > 40
    rows = set()
    for label, (group, _) in row_kernels.items():
        build = dict(xr.xla_rows()[group])[label]
        fn, args = build(cx._rng(label))
        rows |= _layers(fn, tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args))
    assert rows and not rows & scored, sorted(rows & scored)


def test_link_and_own_result_are_the_chains_differences():
    # run overhead 4 us; a 1-link chain 4.5 us, a 200-link chain 4.5 + 199 x 0.1 us:
    # link 0.1 us, own result 4.5 - 4 - 0.1 = 0.4 us
    m = {"run_overhead_s": 4e-6, "chain_s": {"1": 4.5e-6, "200": 4.5e-6 + 199 * 0.1e-6}}
    assert xla_fit.link_s(m) == pytest.approx(0.1e-6)
    assert xla_fit.own_result_s(m) == pytest.approx(0.4e-6)
    # a chain link dearer than the lone kernel's own time: nothing to take off
    assert xla_fit.own_result_s({"run_overhead_s": 4e-6, "chain_s": {"1": 4.05e-6, "200": 4.05e-6 + 199e-6}}) == 0.0


def _kernel(cls, mac=0.0, vec=0.0, trans=0.0, nbytes=0.0):
    return {"op_class": cls, "mac": mac, "vec": vec, "trans": trans, "bytes": nbytes, "runs": 1.0,
            "view": [mac, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}


def test_class_rows_take_off_the_run_overhead_and_weigh_transcendentals():
    m = {"run_overhead_s": 4e-6, "chain_s": {"1": 4.5e-6, "200": 4.5e-6 + 199 * 0.1e-6},
         "rows": [{"label": "tanh", "seconds": 10e-6, "kernels": [_kernel("activation", vec=100, trans=1000, nbytes=8e3)]},
                  {"label": "softmax", "seconds": 9e-6, "kernels": [_kernel("reduce", vec=10, nbytes=1e3),
                                                                    _kernel("elementwise", vec=50, trans=10, nbytes=2e3)]}]}
    rows, multi = xla_fit.class_rows(m, trans_weight=4.0)
    (F, B, t, _), = rows["activation"]
    assert F == 100 + 4.0 * 1000 and B == 8e3
    assert t == pytest.approx(10e-6 - 4e-6 - 0.4e-6)   # less the run overhead and own result
    assert [r["label"] for r in multi] == ["softmax"]


def test_fold_multi_gives_the_heaviest_kernel_the_row_less_the_others_fitted_times():
    # the reduce kernel's fit: a 1 us floor and nothing else (e_c, e_bw huge): the softmax row's
    # 9 us less the 4 us base less 1 us goes to the elementwise class
    fit = {"floor_s": 1e-6, "e_c": 1e9, "e_bw": 1e9, "b_half": 0.0, "l2_gain": 0.0}
    multi = [{"label": "softmax", "seconds": 9e-6,
              "kernels": [_kernel("reduce", vec=10, nbytes=1e3), _kernel("elementwise", vec=50, trans=10, nbytes=2e3)]}]
    rows: dict = {}
    added = xla_fit.fold_multi(rows, multi, {"reduce": fit}, 2.0, 4e-6, 1e11, 1e10, 0.0)
    assert added == {"elementwise": ["softmax"]}
    (F, B, t, _), = rows["elementwise"]
    assert (F, B) == (50 + 2.0 * 10, 2e3) and t == pytest.approx(4e-6, rel=1e-6)
    # a row whose other kernel's class was not fitted is left out
    assert xla_fit.fold_multi({}, multi, {}, 2.0, 4e-6, 1e11, 1e10, 0.0) == {}


def _xla_profile(tmp_path):
    doc = calibrated_doc(threads=2)
    doc["id"] = "calibrated-test-xla"
    doc["default_runtime"] = "xla"
    cal = doc["calibration"]
    cal.update({"runtime": "xla", "trans_weight": 16.0, "run_overhead_us": 4.0})
    cal["tables"] = {"activation": {"floor_us": 0.5, "e_c": 0.25, "e_bw": 4.0, "b_half_bytes": 0.0,
                                    "l2_gain": 0.0, "rows": 3, "fit_mape": 1.0}}
    from hardware_db.write import calibration_sources, write_profile
    doc["sources"] = {k: v for k, v in doc["sources"].items() if not k.startswith("calibration.")}
    doc["sources"].update(calibration_sources(cal, "test"))
    return write_profile(doc, tmp_path / "xla.toml"), doc


def test_an_xla_calibrated_profile_weighs_transcendentals_and_adds_its_run_overhead(tmp_path):
    path, doc = _xla_profile(tmp_path)
    peak = doc["matrix_tflops"]["fp32"] * 1e12   # 250 GFLOP/s
    bw = doc["memory"]["mem_bw_gbs"] * 1e9       # 12.5 GB/s
    n = 65536
    r = analyze_jax(jax.numpy.tanh, jax.ShapeDtypeStruct((n,), np.float32), hw=path)
    p = r.predictions[0]
    assert p.runtime == "xla" and p.provenance == "calibrated"   # the profile's default runtime
    # one tanh per element, weighed 16: F = 16 x 65536 at 250 G x 0.25 = 16.78 us; bytes
    # 2 x 4 x 65536 = 524288 at 12.5 G x 4 = 10.49 us: the transcendentals decide (weighed 1
    # they would not: 1.05 us); XLA splits the 512 KiB loop fusion in two tasks on the profile's
    # 2 threads (prediction.cpu.xla_partition): half of it, 8.39 us; + 0.5 us floor + 4 us run overhead
    compute = 16 * n / (peak * 0.25)
    memory = 8 * n / (bw * 4.0)
    assert compute == pytest.approx(16.777216e-6) and memory == pytest.approx(10.48576e-6)
    assert p.latency_s == pytest.approx(4e-6 + 0.5e-6 + compute / 2, rel=1e-6)   # (float32 kernels)


def test_jax_pools_and_their_gradients_have_their_own_classes_that_fall_back_to_the_old_ones():
    from analyzer.prediction.efficiency import constants as fc
    from analyzer.prediction.efficiency.op_classes import CLASS_CODE

    assert op_class_of("", "reduce_window_max") == "pooling"
    assert op_class_of("", "select_and_scatter_add") == "pool_grad"
    # a GPU family without measurements of either predicts them as before (reduce)
    arrays = fc.load_constants("nvidia-ampere").arrays
    for name in ("e_compute", "e_bw", "floor_s"):
        assert arrays[name][CLASS_CODE["pooling"]] == arrays[name][CLASS_CODE["reduce"]]
        assert arrays[name][CLASS_CODE["pool_grad"]] == arrays[name][CLASS_CODE["reduce"]]


@pytest.mark.machine
def test_the_worker_times_rows_in_a_fresh_interpreter():
    seen = []
    out = cx.run_worker(0.5, 1, lambda f, s: seen.append((f, s)),
                        only=("dot 1x128x128 (weights constant)", "tanh 4096"))
    assert [r["label"] for r in out["rows"]] == ["dot 1x128x128 (weights constant)", "tanh 4096"]
    assert all(r["seconds"] > 0 and r["kernels"] for r in out["rows"])
    assert out["run_overhead_s"] > 0 and set(out["chain_s"]) == {"1", str(xr.TINY_CHAIN)}
    # what a refit elsewhere needs of this machine
    assert out["measured_on"] and out["cpu"] and "l2_core_bytes" in out
    assert seen and seen[-1][0] <= 1.0 and all(0 <= f <= 1 for f, _ in seen)
    # the chain of 200 kernels takes longer than one: a link costs something
    assert xla_fit.link_s(out) > 0 and math.isfinite(xla_fit.own_result_s(out))
    # the in-loop scans at both trip counts, and a positive in-loop launch figure
    assert set(out["scan_s"]) == {str(t) for t in xr.SCAN_TRIPS} and all(v > 0 for v in out["scan_s"].values())
    assert xla_fit.loop_launch_s(out, 7.0) > 0
    # the elementwise-only scans: every kernels/rows pair at each trip count
    assert set(out["ew_scan_s"]) == {f"{k}/{m}" for k in xr.EW_SCAN_KERNELS for m in xr.EW_SCAN_ROWS}
    assert all(set(d) == {str(t) for t in xr.EW_SCAN_TRIPS} and min(d.values()) > 0 for d in out["ew_scan_s"].values())


def test_passes_in_separate_processes_merge_to_each_rows_fastest_and_the_median_differences():
    from analyzer.errors import InternalError

    n = xr.TINY_CHAIN

    def run(overhead, lone, link, a, b):
        return {"run_overhead_s": overhead, "passes": 1, "q": 0.25, "cores": 2, "jax_version": "x",
                "chain_s": {"1": overhead + lone, str(n): overhead + lone + link * (n - 1)},
                "rows": [{"group": "dot", "label": "a", "seconds": a, "kernels": []},
                         {"group": "dot", "label": "b", "seconds": b, "kernels": []}]}
    runs = [run(4.0e-6, 0.2e-6, 0.10e-6, 30e-6, 9e-6), run(3.8e-6, 0.4e-6, 0.13e-6, 20e-6, 11e-6),
            run(4.4e-6, 0.3e-6, 0.11e-6, 25e-6, 10e-6)]
    m = cx.merge_passes(runs)
    assert [r["seconds"] for r in m["rows"]] == [20e-6, 9e-6]      # each row's fastest worker
    assert m["run_overhead_s"] == 3.8e-6 and m["passes"] == 3
    # lone dot over the overhead: median(0.2, 0.4, 0.3) = 0.3 us; a link: median(0.10, 0.13, 0.11)
    assert xla_fit.link_s(m) == pytest.approx(0.11e-6, rel=1e-9)
    assert m["chain_s"]["1"] == pytest.approx(3.8e-6 + 0.3e-6, rel=1e-12)
    assert xla_fit.own_result_s(m) == pytest.approx(0.3e-6 - 0.11e-6, rel=1e-9)
    runs[1]["rows"][1]["label"] = "c"
    with pytest.raises(InternalError):
        cx.merge_passes(runs)


def test_a_refit_keeps_the_day_cpu_and_cache_of_the_machine_that_timed_the_rows():
    from analyzer.prediction.cpu.host import l2_cache_bytes

    # rows saved before the worker recorded their machine: this one's cache, today, said to be a refit
    day, _, l2 = cx.timed_on({}, refit=True)
    assert day.endswith("(refitted; measured earlier)") and l2 == l2_cache_bytes()
    assert not cx.timed_on({}, refit=False)[0].endswith(")")     # a calibration's own rows: today
    rec = {"measured_on": "2026-01-02", "cpu": "Test CPU 9000", "l2_core_bytes": 768 * 1024}
    assert cx.timed_on(rec, refit=True) == ("2026-01-02", "Test CPU 9000", 768 * 1024)


def test_a_product_with_its_lhs_contracted_over_leading_dims_is_gemm_tn(row_kernels):
    from jax import lax

    from analyzer import analyze
    from analyzer.prediction.node_shapes import node_op_class

    sds = jax.ShapeDtypeStruct

    def dot(lc, rc, lb=(), rb=()):
        return lambda a, b: lax.dot_general(a, b, ((lc, rc), (lb, rb)))

    def cls(fn, *shapes):
        r = analyze_jax(fn, *shapes)
        return [(n.kernel, node_op_class(n)) for n in r.nodes if n.op == "dot_general"]
    a, b = sds((64, 32), np.float32), sds((64, 48), np.float32)
    # x^T g (lhs contracted over dim 0): the weight gradient jax.grad writes, an Eigen dot on XLA CPU
    assert cls(dot((0,), (0,)), a, b) == [("lhs_transposed", "gemm_tn")]
    assert cls(dot((0,), (1,)), a, sds((48, 64), np.float32)) == [("lhs_transposed", "gemm_tn")]
    # a sequence model's weight gradient contracts batch and time: [B, T, D] x [B, T, F] -> [D, F]
    assert cls(dot((0, 1), (0, 1)), sds((4, 16, 32), np.float32), sds((4, 16, 48), np.float32)) \
        == [("lhs_transposed", "gemm_tn")]
    # the lhs contracted over its last dim (x @ w, g w^T, [B, T, D] @ [D, F]): YNNPACK, gemm
    assert cls(dot((1,), (0,)), sds((32, 64), np.float32), b) == [(None, "gemm")]
    assert cls(dot((1,), (1,)), sds((32, 64), np.float32), sds((48, 64), np.float32)) == [(None, "gemm")]
    assert cls(dot((2,), (0,)), sds((4, 16, 64), np.float32), b) == [(None, "gemm")]
    # batch dims: a batched product (bgemm) whatever its contraction
    assert cls(dot((1,), (1,), (0,), (0,)), sds((4, 64, 32), np.float32), sds((4, 64, 48), np.float32)) \
        == [(None, "bgemm")]
    # the calibration's x^T g rows are the class's rows, every other dot row is gemm (a GEMV of
    # an argument also carries its vector's copies: movement kernels)
    for label, (group, ks) in row_kernels.items():
        if group == "dot":
            assert [k["op_class"] for k in ks if k["op_class"] != "movement"] == \
                ["gemm_tn" if "x^T g" in label else "gemm"], label
    # a profile without the class predicts it with its gemm constants: on the A100 the same product
    # written x^T g or x @ w costs the same, to the last bit
    tn = analyze_jax(dot((0,), (0,)), a, b, hw="a100").predictions[0].latency_s
    nn = analyze_jax(dot((1,), (0,)), sds((32, 64), np.float32), b, hw="a100").predictions[0].latency_s
    assert tn == nn
    # no ONNX op is ever gemm_tn (its MatMul has no contraction dims to read)
    from onnx_builders import one_node, weight
    assert [node_op_class(n) for n in analyze(one_node("MatMul", (64, 32), weight(32, 48))).nodes] == ["gemm"]


def test_grouped_convolutions_and_their_weight_gradients_have_their_own_classes():
    from jax import lax

    from analyzer import analyze
    from analyzer.prediction.efficiency import constants as fc
    from analyzer.prediction.node_shapes import node_op_class
    from analyzer.measure.onnx_build import Builder
    from analyzer.prediction.efficiency.op_classes import CLASS_CODE

    def conv(groups):
        return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), feature_group_count=groups,
                                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))

    def classes(fn, *shapes):
        return [node_op_class(n) for n in analyze_jax(fn, *shapes).nodes if n.op == "conv_general_dilated"]
    sds = jax.ShapeDtypeStruct
    x, w4 = sds((2, 32, 16, 16), np.float32), sds((32, 8, 3, 3), np.float32)
    g = sds((2, 32, 16, 16), np.float32)
    assert classes(conv(4), x, w4) == ["conv_grouped"]
    # its weight gradient is a convolution with batch_group_count 4 (XLA CPU: 0.7 GFLOP/s)
    wgrad = lambda x, w, g: jax.vjp(lambda w: conv(4)(x, w), w)[1](g)[0]  # noqa: E731
    assert classes(wgrad, x, w4, g) == ["conv_batch_grouped"]
    # the input gradient of an ungrouped 8 -> 16 conv passes its kernel as [I, O, k, k]: read as
    # OIHW it would look like 2 groups; the rule's kernel says it is not grouped
    x8, w = sds((2, 8, 16, 16), np.float32), sds((16, 8, 3, 3), np.float32)
    dgrad = lambda x, w, g: jax.vjp(lambda x: conv(1)(x, w), x)[1](g)[0]  # noqa: E731
    assert classes(dgrad, x8, w, sds((2, 16, 16, 16), np.float32)) == ["conv"]
    # an ONNX Conv's shapes say it: [N, 32, ...] by [32, 8, ...] is 4 groups
    b = Builder(1)
    b.add("Conv", [(1, 32, 8, 8)], weights=[(32, 8, 3, 3)], attrs={"group": 4, "pads": [1, 1, 1, 1]})
    assert [node_op_class(n) for n in analyze(b.model()).nodes if n.op == "Conv"] == ["conv_grouped"]
    # a ConvTranspose's weight is [C, M/group, k...]: 64 -> 32 channels, ungrouped, is not grouped
    b = Builder(2)
    b.add("ConvTranspose", [(1, 64, 8, 8)], weights=[(64, 32, 3, 3)])
    assert [node_op_class(n) for n in analyze(b.model()).nodes if n.op == "ConvTranspose"] == ["conv"]
    # a family or calibration without the classes predicts them with its conv constants, as before
    arrays = fc.load_constants("nvidia-ampere").arrays
    for name in ("e_compute", "e_bw", "floor_s", "tile_n"):
        for cls in ("conv_grouped", "conv_batch_grouped"):
            assert arrays[name][CLASS_CODE[cls]] == arrays[name][CLASS_CODE["conv"]]


def test_the_in_loop_launch_is_the_scans_time_per_trip_over_its_planned_launches():
    lo, hi = xr.SCAN_TRIPS                      # 8 and 264 trips
    # 8 trips 7.5 us, each further trip 0.07 us: 256 x 0.07 = 17.92 us more; 7 launches a trip
    m = {"scan_s": {str(lo): 7.5e-6, str(hi): 7.5e-6 + (hi - lo) * 0.07e-6}}
    assert xla_fit.loop_launch_s(m, 7.0) == pytest.approx(0.01e-6, rel=1e-9)   # 0.07 / 7
    assert xla_fit.loop_launch_s(m, 1.0) == pytest.approx(0.07e-6, rel=1e-9)
    # a longer scan no slower than the shorter (noise): held at 1 ns, never <= 0
    assert xla_fit.loop_launch_s({"scan_s": {str(lo): 8e-6, str(hi): 7e-6}}, 7.0) == 1e-9


def test_passes_merge_the_scans_per_trip_difference_as_a_median():
    lo, hi = xr.SCAN_TRIPS
    n = xr.TINY_CHAIN

    def run(t_lo, per_trip):
        return {"run_overhead_s": 4e-6, "passes": 1, "q": 0.25, "cores": 2, "jax_version": "x",
                "chain_s": {"1": 4.2e-6, str(n): 4.2e-6 + 0.1e-6 * (n - 1)},
                "scan_s": {str(lo): t_lo, str(hi): t_lo + per_trip * (hi - lo)},
                "rows": [{"group": "dot", "label": "a", "seconds": 9e-6, "kernels": []}]}
    m = cx.merge_passes([run(7.3e-6, 0.052e-6), run(11.4e-6, 0.066e-6), run(11.5e-6, 0.065e-6)])
    # shorter scan: median(7.3, 11.4, 11.5) = 11.4 us; per trip: median(0.052, 0.066, 0.065) = 0.065 us
    assert m["scan_s"][str(lo)] == pytest.approx(11.4e-6, rel=1e-12)
    assert (m["scan_s"][str(hi)] - m["scan_s"][str(lo)]) / (hi - lo) == pytest.approx(0.065e-6, rel=1e-9)
    # passes without the scans (rows saved before the suite had them): none merged
    old = [run(7.3e-6, 0.05e-6), run(7.4e-6, 0.05e-6)]
    for r in old:
        r.pop("scan_s")
    assert "scan_s" not in cx.merge_passes(old)


def test_the_scan_program_plans_seven_launches_a_trip():
    # per trip: the 1x8 @ 8x8 dot, the fused add + tanh, the scanned input's dynamic-slice (a dot
    # reads it), the stacked output's dynamic-update-slice, the counter's copy, add and compare
    assert loop_scan.launches_per_trip() == 7.0


def test_the_program_launch_is_the_chains_slope_over_its_planned_launches_a_link():
    # synthetic rows of the model: run overhead 4 us, a per-call excess 0.3 us, 2 launches a link
    # at 0.06 us each: chain(n) = 4 + 0.3 + n x 2 x 0.06 us
    n = xr.TINY_CHAIN
    m = {"run_overhead_s": 4e-6, "chain_s": {str(c): (4.3 + c * 0.12) * 1e-6 for c in (1, n)}}
    assert xla_fit.program_launch_s(m, 2.0) == pytest.approx(0.06e-6, rel=1e-9)   # 0.12 / 2
    assert xla_fit.program_launch_s(m, 1.0) == pytest.approx(0.12e-6, rel=1e-9)


def test_the_chain_plans_two_launches_a_link():
    # per link: the 1x8 @ 8x8 dot's thunk and the tanh's loop fusion
    assert loop_scan.launches_per_link() == 2.0
