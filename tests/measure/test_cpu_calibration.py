"""CPU side of "predictions users can trust": onnxruntime's fused graph, the CPU kernel form,
its fit, the profile writer and measurement. No wall-clock assertions."""

from __future__ import annotations


import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from analyzer.measure.fit import class_fit as cpu_model
from analyzer.measure.calibrate import calibration_sources, to_toml, write_profile

ort = pytest.importorskip("onnxruntime")


def _conv_bn_relu():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(np.ones(8, np.float32), "s"),
             numpy_helper.from_array(np.zeros(8, np.float32), "b"),
             numpy_helper.from_array(np.zeros(8, np.float32), "m"),
             numpy_helper.from_array(np.ones(8, np.float32), "v")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    return _conv_model(nodes, inits, 8)


def _conv_model(nodes, inits, out_channels):
    """A model of ``nodes`` from x [1, 3, 16, 16] to y [1, out_channels, 16, 16]."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, out_channels, 16, 16])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_fused_graph_folds_bn_and_fuses_relu_and_maps_back():
    from analyzer import analyze
    from analyzer.prediction.onnxruntime.graph import fused_graph, fusion_map

    m = _conv_bn_relu()
    f = fused_graph(m, "default", threads=1)
    kernels = [n for n in f.graph.node]
    assert len(kernels) == 1 and kernels[0].op_type in ("Conv", "FusedConv")
    fmap = fusion_map(m, f)
    assert fmap == {kernels[0].name: ["conv", "bn", "relu"]}
    rep = analyze(f)
    assert [n.status for n in rep.nodes] == ["costed"]


def test_fused_graph_off_keeps_every_node():
    from analyzer.prediction.onnxruntime.graph import fused_graph, fusion_map

    m = _conv_bn_relu()
    f = fused_graph(m, "off", threads=1)
    assert [n.op_type for n in f.graph.node] == ["Conv", "BatchNormalization", "Relu"]
    assert fusion_map(m, f) == {"conv": ["conv"], "bn": ["bn"], "relu": ["relu"]}


def test_kernel_time_closed_form():
    # compute: 2e9 / (1e12 * 0.5) = 4e-3 s; memory: (1e6 + 1e5) / (1e10 * 0.5) = 2.2e-4 s
    t = cpu_model.kernel_time(2e9, 1e6, 1e-6, 0.5, 0.5, 1e5, 1e12, 1e10)
    assert t == pytest.approx(1e-6 + 4e-3)
    # memory-bound: F=0: 1e-6 + (1e6 + 1e5) / 5e9 = 1e-6 + 2.2e-4
    t = cpu_model.kernel_time(0, 1e6, 1e-6, 0.5, 0.5, 1e5, 1e12, 1e10)
    assert t == pytest.approx(1e-6 + 2.2e-4)


def test_fit_recovers_known_constants():
    peak, bw = 5e11, 4e10
    true = dict(floor_s=3e-6, e_c=0.6, e_bw=0.7, b_half=2e4)
    F = np.geomspace(1e4, 1e10, 25)
    B = np.geomspace(1e3, 1e8, 25)[::-1] * np.linspace(1, 3, 25)
    F = np.concatenate([F, np.zeros(8)])
    B = np.concatenate([B, np.geomspace(4e3, 2e8, 8)])
    t = cpu_model.kernel_time(F, B, true["floor_s"], true["e_c"], true["e_bw"], true["b_half"], peak, bw)
    fit = cpu_model.fit_class(F, B, t, peak, bw)
    assert fit["fit_mape"] < 0.5
    assert fit["e_c"] == pytest.approx(0.6, rel=0.02)
    assert fit["e_bw"] == pytest.approx(0.7, rel=0.02)
    assert fit["floor_s"] == pytest.approx(3e-6, rel=0.1)


def test_op_class_of_conv_variants_and_fallbacks():
    from analyzer.prediction.efficiency import kernel_time as eff

    assert eff.op_class_of("", "Conv", conv_input=(1, 32, 8, 8), conv_weight=(32, 1, 3, 3)) == "conv_dw"
    assert eff.op_class_of("", "FusedConv", conv_input=(1, 32, 8, 8), conv_weight=(64, 32, 1, 1)) == "conv_1x1"
    assert eff.op_class_of("", "Conv", conv_input=(1, 3, 8, 8), conv_weight=(16, 3, 3, 3)) == "conv"
    assert eff.op_class_of("", "Conv") == "conv"
    assert eff.op_class_of("", "MaxPool") == "pooling" and eff.op_class_of("", "Reshape") == "view"
    assert eff.op_class_of("", "LSTM") == "rnn"
    # every CPU class falls back to a class every constants file has
    for cls in ("conv_dw", "conv_1x1", "pooling", "view", "rnn", "norm_fused"):
        assert eff.class_chain(cls)[-1] in eff.OP_CLASSES[:12], cls


def test_gpu_family_files_load_new_classes_from_their_fallbacks():
    from analyzer.prediction.efficiency import kernel_time as eff
    from analyzer.prediction.efficiency.constants import load_constants

    import json
    import os

    from analyzer.prediction.efficiency.constants import DATASHEET_SETS, EFFICIENCY_DIR, POOLED_CLASSES

    for fam in ("nvidia-hopper", "nvidia-ampere", "generic", "datasheet"):
        fc = load_constants(fam)
        own, name = set(), fam
        while name:   # a class the file or a family it inherits measured (hopper's quantize,
            # ampere's softmax for hopper)
            with open(os.path.join(EFFICIENCY_DIR, f"{name}.json"), encoding="utf-8") as f:
                doc = json.load(f)
            own |= set(doc["sets"])
            name = doc.get("inherits")
        for cls, fb in eff.CLASS_FALLBACK.items():
            if cls in own or (cls in POOLED_CLASSES and fam not in DATASHEET_SETS):
                continue   # measured by the file or its ancestors, or a pooled set of generic.json's first
            i, j = eff.CLASS_CODE[cls], eff.CLASS_CODE[fb]
            for p in eff.CLASS_PARAMS:   # (a cold start is its own kernels': never carried by a fallback)
                want = 0.0 if p == "cold_start_s" else fc.arrays[p][j]
                assert fc.arrays[p][i] == want, (fam, cls, p)
            # named as its fallback, or (a fallback that itself falls back) as the same class
            assert fb in fc.describe(cls) or fc.describe(cls) == fc.describe(fb), (fam, cls)


def _profile_doc():
    from tests.profile_docs import gemm_table_doc

    return gemm_table_doc(rows={"gemm": [("MatMul", 1.0, 2.0, 3.0)]})


def test_to_toml_round_trips_with_tomllib():
    import tomllib

    doc = _profile_doc()
    back = tomllib.loads(to_toml(doc))
    assert "_rows" not in back
    assert back["calibration"]["tables"]["gemm"]["b_half_bytes"] == -100.0
    assert back["matrix_tflops"]["fp32"] == 0.5 and back["family"] == "x86-cpu"


def _calibrated_doc():
    from analyzer.measure.calibrate import calibration_sources

    doc = _profile_doc()
    doc["calibration"]["run_overhead_us"] = 3.0
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    return doc


def test_write_profile_loads_with_hardware_db(tmp_path):
    import hardware_db

    p = write_profile(_calibrated_doc(), tmp_path / "cal.toml")
    prof = hardware_db.load_file(p)
    assert prof.kind == "cpu" and prof.default_runtime == "onnxruntime"
    assert prof.calibration["tables"]["gemm"]["e_c"] == 0.9


def test_calibration_numbers_need_sources(tmp_path):
    import hardware_db
    from analyzer.errors import HardwareError

    doc = _calibrated_doc()
    del doc["sources"]["calibration.tables.gemm.e_c"]
    with pytest.raises(HardwareError, match=r"calibration\.tables\.gemm\.e_c"):
        hardware_db.load_file(write_profile(doc, tmp_path / "cal.toml"))


def _matmul(m=4, k=64, n=32):
    w = numpy_helper.from_array(np.ones((k, n), np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], [w])
    mo = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    mo.ir_version = 8
    return mo


@pytest.mark.parametrize("b_half", [-100.0, 5e5])
def test_analyze_on_calibrated_profile_is_the_closed_form(tmp_path, b_half):
    from analyzer import analyze

    doc = _calibrated_doc()
    doc["calibration"]["tables"]["gemm"]["b_half_bytes"] = b_half
    p = write_profile(doc, tmp_path / "cal.toml")
    rep = analyze(_matmul(), hw=p)
    pred = rep.predictions[0]
    assert pred.runtime == "onnxruntime" and pred.provenance == "calibrated"
    c = rep.nodes[0].cost
    F, B = c.mac_flops + c.vector_flops + c.transcendentals, c.bytes_moved
    t = doc["calibration"]["tables"]["gemm"]
    kernel = 0.2e-6 + t["floor_us"] * 1e-6 + max(F / (0.5e12 * t["e_c"]),
                                                  max(B + b_half, 0) / (38e9 * t["e_bw"]))
    assert pred.run_overhead_s == pytest.approx(3e-6)
    assert pred.latency_s == pytest.approx(3e-6 + kernel, rel=1e-5)
    assert pred.nodes[0].time_s == pytest.approx(kernel, rel=1e-5)


@pytest.mark.parametrize("b_par", [1e4, 4e4])
def test_thread_split_step_adds_fork_join_to_the_fixed_cost(tmp_path, b_par):
    # a 2-thread calibration's gemm table with a split step: par 0.8 us stepping in at b_par
    # bytes. The MatMul moves B = 4 * (4*64 + 64*32 + 4*32) = 9,728 bytes: p(B / b_par) =
    # x^4 / (1 + x^4) = 0.8956 / 1.8956 = 0.47245 at b_par 1e4 (x = 0.9728), 0.003498 / 1.003498
    # = 0.003486 at 4e4 (x = 0.2432)
    from analyzer import analyze

    doc = _calibrated_doc()
    base = analyze(_matmul(), hw=write_profile(doc, tmp_path / "a.toml")).predictions[0]
    doc["calibration"]["tables"]["gemm"].update({"par_us": 0.8, "b_par_bytes": b_par})
    doc["sources"].update({f"calibration.tables.gemm.{k}": "test" for k in ("par_us", "b_par_bytes")})
    split = analyze(_matmul(), hw=write_profile(doc, tmp_path / "b.toml")).predictions[0]
    x = 9728 / b_par
    assert analyze(_matmul()).nodes[0].cost.bytes_moved == 9728
    assert split.latency_s - base.latency_s == pytest.approx(0.8e-6 * x ** 4 / (1 + x ** 4), rel=1e-6)
    assert (split.latency_s - base.latency_s) / 0.8e-6 == pytest.approx(0.47245 if b_par == 1e4 else 0.003486,
                                                                        rel=1e-3)


def test_fit_finds_a_thread_split_step():
    # rows with a 0.8 us fork/join above ~5 KB: the parallel fit recovers it (and fits the rows),
    # the 1-thread fit (parallel=False) does not add one
    peak, bw = 5e11, 6e10
    B = np.geomspace(256, 4e6, 24)
    F = B / 4
    t = cpu_model.kernel_time(F, B, 0.3e-6, 0.5, 1.0, 0.0, peak, bw, par_s=0.8e-6, b_par=5e3)
    fit = cpu_model.fit_class(F, B, t, peak, bw, parallel=True)
    assert fit["par_s"] == pytest.approx(0.8e-6, rel=0.05)
    assert fit["b_par"] == pytest.approx(5e3, rel=0.1)
    assert fit["fit_mape"] < 1.0
    flat = cpu_model.fit_class(F, B, t, peak, bw)
    assert flat["par_s"] == 0.0 and flat["fit_mape"] > 5.0


def test_onnxruntime_record_gives_one_kernel_for_conv_bn_relu(tmp_path):
    from analyzer import analyze
    from analyzer.prediction.onnxruntime.record import fusion_record

    rec = fusion_record(_conv_bn_relu())
    assert [k[2] for k in rec.kernels] == [("conv", "bn", "relu")]
    p = write_profile(_calibrated_doc(), tmp_path / "cal.toml")
    pred = analyze(_conv_bn_relu(), hw=p).predictions[0]
    # one kernel for the three nodes, plus the one NCHWc ReorderOutput onnxruntime runs to hand
    # the blocked conv's output back as the NCHW graph output (3 input channels: no ReorderInput)
    assert rec.reorders == (("conv", "ReorderOutput", "y"),)
    assert pred.kernels == 2 and pred.launches == 2 and {n.kernel for n in pred.nodes} == {"conv"}
    assert any("onnxruntime's fused graph (level extended) and its 1 NCHWc layout reorders" in n
               for n in pred.notes)


def _two_convs():
    """conv1 (3 -> 16 channels) -> conv2 (16 -> 16) -> y: a blocked chain, 16x16 pixels."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "W1"),
             numpy_helper.from_array(rng.standard_normal((16, 16, 3, 3)).astype(np.float32), "W2")]
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["c", "W2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    return _conv_model(nodes, inits, 16)


def test_a_blocked_chain_reorders_only_where_it_leaves_the_layout():
    from analyzer.prediction.onnxruntime.record import fusion_record

    rec = fusion_record(_two_convs())
    # conv1's output stays blocked for conv2: no reorder between them, one at the graph output
    assert rec.reorders == (("conv2", "ReorderOutput", "y"),)
    assert fusion_record(_two_convs(), "extended").reorders == ()   # no layout level, none


def test_a_reorder_costs_a_launch_and_its_tensor_at_the_reorder_class_rate(tmp_path, monkeypatch):
    import analyzer.api as api
    from analyzer import analyze
    from analyzer.prediction.fusion import FusionRecord

    doc = _calibrated_doc()
    doc["calibration"]["tables"]["reorder"] = {"floor_us": 1.0, "e_c": 1.0, "e_bw": 0.5,
                                               "b_half_bytes": 0.0, "rows": 4, "fit_mape": 1.0}
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    p = write_profile(doc, tmp_path / "cal.toml")
    kernels = (("conv1", "Conv", ("conv1",)), ("conv2", "Conv", ("conv2",)))
    plain = FusionRecord("test record", kernels)
    moved = FusionRecord("test record", kernels, reorders=(("conv2", "ReorderOutput", "y"),))
    monkeypatch.setattr(api, "onnxruntime_record", lambda *a: plain)
    before = analyze(_two_convs(), hw=p).predictions[0]
    monkeypatch.setattr(api, "onnxruntime_record", lambda *a: moved)
    after = analyze(_two_convs(), hw=p).predictions[0]
    y = 16 * 16 * 16 * 4                       # bytes of y, read and written by the reorder
    reorder = 0.2e-6 + 1.0e-6 + 2 * y / (38e9 * 0.5)   # dispatch + floor + 2y / (bw e_bw)
    assert after.latency_s - before.latency_s == pytest.approx(reorder, rel=1e-6)
    assert after.kernels == before.kernels + 1 and after.launches == before.launches + 1
    t1 = {n.name: n.time_s for n in before.nodes}
    t2 = {n.name: n.time_s for n in after.nodes}
    assert t2["conv1"] == pytest.approx(t1["conv1"], rel=1e-9)       # charged to conv2 only
    assert t2["conv2"] - t1["conv2"] == pytest.approx(reorder, rel=1e-6)


def test_without_onnxruntime_the_patterns_are_used(tmp_path, request):
    from analyzer import analyze

    p = write_profile(_calibrated_doc(), tmp_path / "cal.toml")
    request.getfixturevalue("no_onnxruntime")   # from here on, onnxruntime cannot be imported
    pred = analyze(_conv_bn_relu(), hw=p).predictions[0]
    assert pred.kernels == 1   # the Conv+BN+activation pattern
    assert any("fusion patterns" in n for n in pred.notes)


@pytest.mark.machine
def test_measure_tiny_model_one_entry_per_node():
    from analyzer.measure.onnxruntime import measure

    m = _conv_bn_relu()
    r = measure(m, threads=1, level="off", runs=3, min_time_s=0.0)
    assert set(r.by_fused) == {"conv", "bn", "relu"}
    assert r.latency_s > 0
    assert all(v > 0 for v in r.by_fused.values())


def test_missing_onnxruntime_is_an_analyzer_error(no_onnxruntime):
    from analyzer.errors import AnalyzerError
    from analyzer.prediction.onnxruntime import graph as ort_graph

    with pytest.raises(AnalyzerError, match="pip install"):
        ort_graph.import_ort()


def test_time_rows_keeps_each_rows_fastest_pass_less_the_baselines_fastest_pass_median():
    from analyzer.measure.calibrate import time_rows

    # scripted wall-clocks (us) per model, one value per pass: another process only adds time
    script = {"base": [3.0, 9.0, 4.0, 3.5, 5.0, 6.0], "a0": [13.0, 9.0, 20.0], "a1": [50.0, 60.0, 45.0],
              "b0": [7.0, 8.0, 5.5]}
    calls = []

    def timer(model, min_s):
        calls.append(model)
        return script[model][sum(1 for c in calls if c == model) - 1] * 1e-6

    best = time_rows({"a": {"k0": "a0", "k1": "a1"}, "b": {"k0": "b0"}}, timer, "base", passes=3)
    # baseline: timed before each of 2 classes per pass; pass medians (3+9)/2 = 6,
    # (4+3.5)/2 = 3.75, (5+6)/2 = 5.5 -> fastest 3.75 (not the single fastest timing, 3)
    # a0: min(13, 9, 20) - 3.75 = 5.25; a1: 45 - 3.75 = 41.25; b0: 5.5 - 3.75 = 1.75
    assert best["a"]["k0"] * 1e6 == pytest.approx(5.25)
    assert best["a"]["k1"] * 1e6 == pytest.approx(41.25)
    assert best["b"]["k0"] * 1e6 == pytest.approx(1.75)
    assert calls.count("base") == 6
    # classes alternate order between passes: a, b | b, a | a, b
    order = [c for c in calls if c != "base"]
    assert order == ["a0", "a1", "b0", "b0", "a0", "a1", "a0", "a1", "b0"]


@pytest.mark.machine
def test_profiled_reorders_of_a_depthwise_row_are_its_input_and_output_moved_twice():
    from analyzer import analyze
    from analyzer.measure.onnxruntime import profiled_reorders

    w = numpy_helper.from_array(np.ones((16, 1, 3, 3), np.float32), "W")
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="dw", group=16, pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 16, 16])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    got = profiled_reorders(m, analyze(m).nodes[0], 1, "default", runs=3)
    # a blocked depthwise conv between NCHW graph tensors: ReorderInput of x, ReorderOutput of
    # y, each charged its 16*16*16 fp32 tensor read and written
    assert [b for b, _ in got] == [2 * 16 * 16 * 16 * 4] * 2
    assert all(s > 0 for _, s in got)


@pytest.mark.parametrize("speedups, n_passes", [([1.5, 1.6, 1.4], 3), ([0.9, 0.8, 0.9, 1.5, 1.6], 5),
                                                ([0.9] * 6, 6), ([0.9, 1.5, 1.4], 3),
                                                ([0.9, 1.5, 0.9, 0.9, 0.9, 0.9], 6)])
def test_time_rows_adds_passes_until_one_runs_in_the_fast_thread_state(speedups, n_passes):
    # the probe before each pass reads ``speedups`` in turn; 3 passes planned, up to 3 more while
    # no pass ran between two fast probes (speed-up >= 1; the next pass's probe is the one after):
    # all fast -> 3; slow x 3, then fast, fast -> 5 (pass 4 between them); never fast -> 6; pass 2
    # between fast probes -> 3; one fast probe alone -> 6. A row keeps its fastest pass
    from analyzer.measure.calibrate import time_rows

    probes = iter(speedups)
    seen: list = []
    wall = {"base": 1e-6}
    count = {"a0": 0}

    def timer(model, min_s):
        if model == "a0":
            count["a0"] += 1
            return (10e-6 if seen[-1] >= 1.0 else 25e-6)   # 2.5x slower in the slow state
        return wall[model]

    best = time_rows({"a": {"k0": "a0"}}, timer, "base", passes=3, state=lambda: next(probes),
                     extra_passes=3, seen=seen)
    assert count["a0"] == n_passes and seen == speedups[:n_passes]
    fast = any(s >= 1.0 for s in seen)
    assert best["a"]["k0"] == pytest.approx((10e-6 if fast else 25e-6) - 1e-6)


def test_a_calibration_whose_row_passes_were_all_slow_warns():
    from analyzer.prediction.cpu import thread_notes as thread_mode

    cal = {"threads": 2, "thread_speedup_start": 1.6, "thread_speedup_end": 1.6, "row_passes": 8,
           "thread_speedup_passes_min": 0.87, "thread_speedup_passes_max": 0.92}
    w = thread_mode.notes(cal)
    assert len(w) == 1 and "every row pass" in w[0] and "0.87-0.92" in w[0] and "8 passes" in w[0]
    assert thread_mode.notes(dict(cal, thread_speedup_passes_max=1.5)) == []


def test_the_pass_speedups_have_sources_and_load(tmp_path):
    import hardware_db
    from analyzer.measure.calibrate import calibration_sources, write_profile
    from tests.profile_docs import calibrated_doc

    doc = calibrated_doc(threads=2)
    doc["calibration"].update({"thread_speedup_start": 1.5, "thread_speedup_end": 1.6, "row_passes": 6,
                               "thread_speedup_passes_min": 0.9, "thread_speedup_passes_max": 1.5})
    doc["sources"].update(calibration_sources(doc["calibration"], "test"))
    assert "the largest speed-up of the thread_mode probe" in doc["sources"]["calibration.thread_speedup_passes_max"]
    assert "at the end of the calibration" in doc["sources"]["calibration.thread_speedup_end"]
    prof = hardware_db.get(str(write_profile(doc, tmp_path / "p.toml")))
    assert (prof.calibration["row_passes"], prof.calibration["thread_speedup_passes_min"]) == (6, 0.9)


def test_time_rows_starts_no_extra_pass_after_its_deadline():
    # every probe slow: 3 planned passes, and the extra ones only before the deadline (here past)
    from analyzer.measure.calibrate import time_rows

    seen: list = []
    time_rows({"a": {"k0": "a0"}}, lambda m, s: 1e-6, "base", passes=3, state=lambda: 0.9,
              extra_passes=3, seen=seen, deadline=0.0)
    assert len(seen) == 3


def test_a_slow_end_with_fast_row_passes_warns_only_of_the_change():
    # probe 1.53 at the start, 0.89 at the end, but the row passes saw 0.83-1.58: the rows kept
    # fast passes, so only the change is worth a warning
    from analyzer.prediction.cpu import thread_notes as thread_mode

    cal = {"threads": 2, "thread_speedup_start": 1.53, "thread_speedup_end": 0.89, "row_passes": 5,
           "thread_speedup_passes_min": 0.83, "thread_speedup_passes_max": 1.58}
    w = thread_mode.notes(cal)
    assert len(w) == 1 and "changed during the calibration" in w[0]
    # a profile without the pass figures keeps the start/end warning
    old = {k: cal[k] for k in ("threads", "thread_speedup_start", "thread_speedup_end")}
    assert len(thread_mode.notes(old)) == 2


def test_rows_are_taken_out_their_reorders_and_a_row_that_was_all_reorders_leaves_the_fit():
    from analyzer.measure.fit.reorders import REORDER_KEEP, without_reorders

    # a reorder fit of 1 us floor, nothing per byte (e_bw huge), 0.2 us dispatch a node: each
    # reorder takes 1.2 us out of its row. 8 rows of 10 us with one reorder each (8.8 us left),
    # and one of 2 us with one (0.8 us left: 40 %, kept) and one of 1.3 us with one (0.1 us:
    # under REORDER_KEEP = 10 % of it, a row that was all reorders: dropped, with its view column)
    fit = {"floor_s": 1e-6, "e_c": 1.0, "e_bw": 1e12, "b_half": 0.0, "l2_gain": 0.0}
    t = np.array([10e-6] * 8 + [2e-6, 1.3e-6])
    F, B = np.arange(10.0), np.full(10, 1000.0)
    ops = [f"k{i}" for i in range(10)]
    view = np.vstack([np.arange(10.0)] * 7)
    per_row = [[(1000, 3e-6)]] * 10
    (F2, _, t2, ops2), v2 = without_reorders((F, B, t, ops), view, per_row, fit, 0.2e-6, 1e9, 1e9, 0.0)
    assert REORDER_KEEP == 0.1
    assert ops2 == ops[:9] and list(F2) == list(range(9)) and v2.shape == (7, 9)
    assert t2 == pytest.approx([8.8e-6] * 8 + [0.8e-6])
    # with fewer than 6 rows left every row is kept, the all-reorder ones at 10 % of their time
    (F3, _, t3, _), v3 = without_reorders((F[7:], B[7:], t[7:], ops[7:]), view[:, 7:], per_row[7:], fit,
                                          0.2e-6, 1e9, 1e9, 0.0)
    assert len(F3) == 3 and v3.shape == (7, 3) and t3[-1] == pytest.approx(0.13e-6)


def test_the_broadcast_span_and_op_rate_figures_land_in_the_profile():
    # calibrate's [calibration] table carries the per-element and per-call span figures and Div's
    # and Clip's per-element figures (ns), each with its source
    from analyzer.measure import calibrate as calibrate_mod

    cal = calibrate_mod._calibration("1.0", 1, "default", 0.5, 1.0, 3e-6, 1 << 20, 0, {},
                                     (0.1e-9, 9e-9, 11e-9, {"divide_ns": 0.12e-9, "clip_ns": 0.02e-9}), {},
                                     {"passes": [], "reorders": [], "cache": ()})
    assert cal["scalar_span_ns"] == pytest.approx(9.0)
    assert cal["channel_span_ns"] == pytest.approx(11.0)
    assert (cal["divide_ns"], cal["clip_ns"]) == pytest.approx((0.12, 0.02))
    src = calibrate_mod.calibration_sources(cal, "test")
    assert "channel_pair_models" in src["calibration.channel_span_ns"]
    assert "cpu_op_rates.pair_models" in src["calibration.divide_ns"]
    assert "cpu_op_rates.pair_models" in src["calibration.clip_ns"]
