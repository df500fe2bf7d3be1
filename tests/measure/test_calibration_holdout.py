"""The CPU calibration never measures a layer of a model the CPU accuracy bench evaluates.

Issue #10's CPU target is on models "never calibrated on": a calibration row with the same op,
input and weight shapes, strides and group as a layer of an evaluated model would be
calibration on that model. This test lists every such coincidence (none allowed)."""

from __future__ import annotations

import os
import sys

import onnx
import pytest
from onnx import shape_inference


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS = {"Conv", "FusedConv", "MatMul", "Gemm", "FusedMatMul", "Attention", "QuickGelu", "Sigmoid",
       "LayerNormalization", "SkipLayerNormalization", "MaxPool", "AveragePool",
       "GlobalAveragePool", "LSTM", "GRU", "Softmax", "Gather", "Transpose"}


def _layers(model) -> set[tuple]:
    """(op kind, shapes of the first two inputs, strides, group, kernel) of each compute node."""
    g = shape_inference.infer_shapes(model).graph
    shape = {t.name: tuple(t.dims) for t in g.initializer}
    for v in [*g.input, *g.value_info, *g.output]:
        t = v.type.tensor_type
        if t.HasField("shape"):
            shape[v.name] = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim)
    out = set()
    for n in g.node:
        if n.op_type not in OPS:
            continue
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        kind = "Conv" if n.op_type == "FusedConv" else n.op_type
        out.add((kind, tuple(shape.get(i) for i in n.input[:2]),
                 tuple(a.get("strides", [1, 1])), a.get("group", 1),
                 tuple(a.get("kernel_shape", ())), tuple(a.get("perm", ()))))
    return out


def test_no_calibration_row_is_a_layer_of_an_evaluated_model(calibration_model_set):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import accuracy_cpu

    rows = {}
    for cls, m in calibration_model_set.items():
        for key in _layers(m):
            rows[key] = cls
    evaluated = accuracy_cpu.models()
    assert len(evaluated) >= 15          # the bench's models are here to check against
    hits = []
    for path in evaluated:
        for key in _layers(onnx.load(path, load_external_data=False)) & rows.keys():
            hits.append(f"{rows[key]} row {key} is a layer of {os.path.basename(path)}")
    assert not hits, "\n".join(hits)


def test_the_bench_table_shows_the_row_passes_thread_range(tmp_path):
    # bench/accuracy_cpu.py reads the probe's range over the row passes from the profile and
    # shows it beside the probe taken before the calibration (which alone said "slow" in run s)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import accuracy_cpu
    finally:
        sys.path.pop(0)
    p = tmp_path / "p.toml"
    p.write_text("[calibration]\nrow_passes = 5\nthread_speedup_passes_min = 0.86\n"
                 "thread_speedup_passes_max = 1.59\n")
    rp = accuracy_cpu.calibration_passes(str(p))
    assert rp == {"passes": 5, "min": 0.86, "max": 1.59}
    q = tmp_path / "q.toml"
    q.write_text("[calibration]\nrow_passes = 5\n")   # 1 thread: no probe
    assert accuracy_cpu.calibration_passes(str(q)) is None
    summ = {"models": 1, "mape_pct": 1.0, "within_10_pct": 100.0, "within_20_pct": 100.0, "bias_pct": 1.0,
            "median_node_spearman": 1.0}
    res = {"date": "d", "calibrated_on": "x", "calibration_seconds": {}, "quantile": 0.5, "predictor": "p",
           "machine": "m", "loadavg_before": (0, 0, 0), "loadavg_after": (0, 0, 0),
           "configs": [{"level": "default", "threads": 2, "summary": summ, "rows": [], "row_passes": rp,
                        "thread_modes": {k: {"mode": "slow", "speedup": 0.88} for k in
                                         ("calibration", "measurement_start", "measurement_end")}}]}
    assert "slow (0.88x) [5 row passes: 0.86-1.59x] / slow (0.88x) / slow" in accuracy_cpu.markdown(res, "cmd")
    res["configs"][0]["thread_modes"]["passes"] = [{"mode": "slow", "speedup": 0.9},
                                                   {"mode": "fast", "speedup": 1.55}]
    assert "/ slow (0.88x) [1 passes, probed between: 0.90-1.55x] /" in accuracy_cpu.markdown(res, "cmd")


# probes before pass 1, between passes and after the last: passes are added (up to 3 + EXTRA_PASSES)
# until one ran between two fast probes
@pytest.mark.parametrize("states, n_passes", [(["fast", "fast", "slow", "slow"], 3),   # pass 1 fast
                                              # run y's: fast, then slow: passes 1-3 unbracketed
                                              (["fast", "slow", "slow", "slow", "fast", "fast"], 5),
                                              (["slow"] * 9, 6)])            # 3 + EXTRA_PASSES
def test_the_bench_adds_passes_until_one_ran_between_two_fast_probes(states, n_passes):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import accuracy_cpu
    finally:
        sys.path.pop(0)
    it = iter(states[1:])
    rows = [{"model": "m", "measured_passes_ms": [5.0]}]
    speed = {"fast": 1.5, "slow": 0.9}   # (thread_state.state: fast from 1.0 up)
    probes = accuracy_cpu.more_passes(rows, 3, {"mode": states[0], "speedup": speed[states[0]]},
                                      lambda: (lambda m: {"mode": m, "speedup": speed[m]})(next(it)),
                                      lambda m: 4.0)
    assert len(rows[0]["measured_passes_ms"]) == len(probes) - 1 == n_passes
    # one thread: no probe, exactly the passes asked for
    rows = [{"model": "m", "measured_passes_ms": [5.0]}]
    assert accuracy_cpu.more_passes(rows, 3, None, None, lambda m: 4.0) == []
    assert len(rows[0]["measured_passes_ms"]) == 3


def test_the_bench_profiles_again_only_after_a_slow_first_pass_and_in_the_fast_state():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import accuracy_cpu
    finally:
        sys.path.pop(0)
    fast, slow = {"mode": "fast"}, {"mode": "slow"}
    assert accuracy_cpu.reprofile([slow, slow, fast], fast)
    assert not accuracy_cpu.reprofile([slow, slow, fast], slow)      # slow again now: no use
    assert not accuracy_cpu.reprofile([fast, slow, slow], fast)      # the first pass was fast
    assert not accuracy_cpu.reprofile([slow, slow, slow], fast)      # no pass reached it
    assert not accuracy_cpu.reprofile([], fast)                      # 1 thread
