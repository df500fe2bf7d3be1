"""``analyzer.sensitivity`` (what to shrink, what hardware would help) and ``--sensitivity``.

The derivatives are checked against finite differences of ``analyze`` itself: a copy of the
A100 profile with its bandwidth (or every compute peak) scaled by 1 + h must predict
``latency + h * d_latency_d_log_X`` to first order."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper

import analyzer
from cli.main import main

A100 = Path(__file__).resolve().parents[2] / "hardware_db" / "profiles" / "a100-80gb-sxm.toml"


def _model(m: int, name_mm: str = "mm") -> onnx.ModelProto:
    """y = (x @ W) + b: a compute-bound GEMM (m x 4096 x 4096) and a memory-bound Add."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("W", TensorProto.FLOAT, [4096, 4096],
                           rng.standard_normal(4096 * 4096).astype(np.float32).tobytes(), raw=True)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"], name=name_mm),
             helper.make_node("Add", ["h", "r"], ["y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, 4096]),
                                       helper.make_tensor_value_info("r", TensorProto.FLOAT, [m, 4096])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, 4096])], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _scaled_a100(tmp_path: Path, bw: float = 1.0, peak: float = 1.0) -> str:
    """The A100 profile with its bandwidth and every compute peak multiplied (same id/family)."""
    text = A100.read_text()
    section = None
    out = []
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[] ")
        m = re.match(r"^(\w+) = ([0-9.]+)$", line)
        if m and section in ("matrix_tflops", "vector_tflops"):
            line = f"{m.group(1)} = {float(m.group(2)) * peak!r}"
        elif m and section == "memory" and m.group(1) == "mem_bw_gbs":
            line = f"mem_bw_gbs = {float(m.group(2)) * bw!r}"
        out.append(line)
    p = tmp_path / f"a100-bw{bw}-peak{peak}.toml"
    p.write_text("\n".join(out) + "\n")
    return str(p)


@pytest.mark.parametrize("m, precision", [(4096, None), (1, "bf16")])
def test_hardware_derivatives_match_finite_differences(tmp_path, m, precision):
    model = _model(m)
    base = analyzer.analyze(model, hw=_scaled_a100(tmp_path), runtime="kernel", precision=precision)
    w = analyzer.sensitivity(base, hw=[_scaled_a100(tmp_path)])
    p = w.profiles[0]
    assert p.latency_s == base.predictions[0].latency_s
    h = 1e-2
    for kw, d in (({"bw": 1 + h}, p.d_latency_d_log_bandwidth), ({"peak": 1 + h}, p.d_latency_d_log_peak)):
        moved = analyzer.analyze(model, hw=_scaled_a100(tmp_path, **kw), runtime="kernel",
                                 precision=precision)
        fd = (moved.predictions[0].latency_s - base.predictions[0].latency_s) / math.log(1 + h)
        # float32 kernel, 1% step: first order within 3% of the change (or 1 ns when tiny)
        assert d == pytest.approx(fd, rel=3e-2, abs=1e-9), kw
    # m = 4096 fp32: the GEMM (compute-bound: 2*4096^3 FLOPs) dominates, so peak helps far more
    # than bandwidth (only the Add uses it); m = 1 bf16 the reverse: a GEMV streams its 32 MB of
    # weights (16 us at 2 TB/s) and does 2*4096^2 FLOPs (0.1 us at 312 TFLOP/s)
    peak, bw = -p.d_latency_d_log_peak, -p.d_latency_d_log_bandwidth
    assert (peak > 10 * bw > 0) if m == 4096 else (bw > 10 * max(peak, 0.0))


def test_fixed_cost_derivative_is_the_fixed_time():
    """time = runs * (fixed + max(compute, memory)) per kernel: d time / d ln fixed is the sum
    of runs * fixed over the kernels (the prediction's own kernel table)."""
    rep = analyzer.analyze(_model(64), hw="a100", runtime="kernel")
    kt = rep.predictions[0].kernel_table
    fixed = float(np.sum(np.asarray(kt.runs) * np.asarray(kt.fixed).reshape(-1)[:len(kt.names)]))
    p = analyzer.sensitivity(rep).profiles[0]
    assert p.d_latency_d_log_fixed == pytest.approx(fixed, rel=1e-5)
    assert p.hardware_saving_s()["fixed_cost"] == pytest.approx(0.1 * fixed, rel=1e-5)


def test_what_to_shrink_names_the_bound():
    rep = analyzer.analyze(_model(4096), hw="a100", runtime="kernel")
    p = analyzer.sensitivity(rep).profiles[0]
    top = p.shrink()
    assert [r.name for r in top][0] == "mm"
    mm = top[0]
    f, b = mm.saving_s()
    assert f > 0 and b == 0            # compute-bound: fewer bytes save nothing
    add = next(r for r in p.layers if r.name == "add")
    assert add.saving_s()[0] == 0 and add.saving_s()[1] > 0   # memory-bound
    # first order: 10 % fewer FLOPs of a compute-bound GEMM saves about 10 % of its time
    t_mm = rep.predictions[0].node("mm").time_s
    assert 0.05 * t_mm < f <= 0.1 * t_mm * 1.0001


def test_no_predictions_is_an_input_error():
    rep = analyzer.analyze(_model(64))
    with pytest.raises(analyzer.InputSpecError, match="predictions"):
        analyzer.sensitivity(rep)


def test_cli_sensitivity_views_and_json(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(4096, name_mm="mm\x1b[31m|`evil"), str(path))
    r = CliRunner().invoke(main, [str(path), "--hw", "a100,h100", "--sensitivity"])
    assert r.exit_code == 0, r.output
    assert "what to shrink on a100-80gb-sxm" in r.output
    assert "what hardware would help on h100-sxm" in r.output
    assert "\x1b[31m" not in r.output and "mm\\x1b[31m" in r.output
    r = CliRunner().invoke(main, [str(path), "--hw", "a100", "--sensitivity", "--format", "markdown"])
    assert r.exit_code == 0 and "10% fewer FLOPs" in r.output and "\x1b" not in r.output
    html = tmp_path / "r.html"
    r = CliRunner().invoke(main, [str(path), "--hw", "a100", "--sensitivity", "-o", str(html)])
    assert r.exit_code == 0, r.output
    page = html.read_text()
    assert "what to shrink on a100-80gb-sxm" in page and "\x1b" not in page
    assert "mm\\x1b[31m|`evil" in page            # escaped, shown
    r = CliRunner().invoke(main, [str(path), "--hw", "a100", "--sensitivity", "--format", "json"])
    doc = json.loads(r.output)
    s = doc["sensitivity"]["profiles"][0]
    assert len(s["layers"]) == len(doc["nodes"]) == 2
    assert s["layers"][0]["saving_s_10pct_fewer_flops"] > 0
    assert s["saving_s_10pct"]["compute_peak"] > 0


@pytest.mark.parametrize("args, words", [
    ([], "--hw"), (["--hw", "a100", "--train"], "--train"),
    (["--hw", "a100", "--dim", "n=1,2"], "sweep")])
def test_cli_sensitivity_usage_errors(tmp_path, args, words):
    path = tmp_path / "m.onnx"
    onnx.save(_model(64), str(path))
    r = CliRunner().invoke(main, [str(path), "--sensitivity", *args])
    assert r.exit_code == 2 and words in r.output, r.output
