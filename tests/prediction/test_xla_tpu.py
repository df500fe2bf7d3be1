"""The ``xla`` runtime on TPU profiles (``analyzer/prediction/xla_tpu.py``): a jitted call's
host-timed wall-clock = the family's per-call launch + the kernels at the fitted MXU efficiency.

The constants (hardware_db/efficiency/google-tpu-v5e.json) are fitted by
``PYTHONPATH=$PWD python bench/check_tpu.py ../shared/measurements/accelerators --write`` on the
three public XLA bf16 matmuls of a v5e (copied below as data; in-sample: 3 rows, 2 constants).
Recorded: call launch 106.76 us, e_mat 0.9530; in-sample errors -0.19 / +1.52 / -1.37 %
(1024/4096/8192 cubed); leave-one-row-out 9.26 % MAPE (bench/results/check_tpu.md).
"""

from __future__ import annotations

import json
import os

import pytest
from onnx import TensorProto, helper

import analyzer
from analyzer.prediction import runtimes, xla_tpu
from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR, load_constants

BF16 = TensorProto.BFLOAT16
# tpu_ops.csv's XLA rows (jnp.matmul, bf16, mean of 100 host-timed calls, ms): the fit data
V5E_XLA_MS = {1024: 0.11943, 4096: 0.82729, 8192: 6.047148}
FLOOR_S = 1e-6          # the kind's assumed per-kernel figure, the family file's floor_s


def _matmul(m: int, k: int, n: int, relu: bool = False) -> bytes:
    nodes = [helper.make_node("MatMul", ["x", "y"], ["z" if relu else "out"], name="matmul")]
    if relu:
        nodes.append(helper.make_node("Relu", ["z"], ["out"], name="relu"))
    g = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("x", BF16, [m, k]),
                                        helper.make_tensor_value_info("y", BF16, [k, n])],
                          [helper.make_tensor_value_info("out", BF16, [m, n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _copy(n: int) -> bytes:
    """An HBM-bound op: Add of two bf16 vectors of n elements (reads 4n bytes, writes 2n)."""
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["c"], name="add")], "add",
                          [helper.make_tensor_value_info("a", BF16, [n]), helper.make_tensor_value_info("b", BF16, [n])],
                          [helper.make_tensor_value_info("c", BF16, [n])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _pred(model: bytes, hw: str, runtime: str | None = None):
    return analyzer.analyze(model, hw=hw, runtime=runtime).predictions[0]


def _v5e():
    c = load_constants("google-tpu-v5e")
    return c.arrays["run_fixed_s"], c.arrays["e_compute"][0]   # (launch s, gemm e_compute)


def test_fitted_constants_are_the_recorded_ones():
    launch, e = _v5e()
    assert launch == pytest.approx(106.76e-6, rel=1e-3)
    assert e == pytest.approx(0.9530, abs=1e-3)
    with open(os.path.join(EFFICIENCY_DIR, "google-tpu-v5e.json"), encoding="utf-8") as f:
        prov = json.load(f)["sets"]["gemm"]["provenance"]
    assert prov["kind"] == "fit" and prov["rows"] == 3 and prov["measurement_file"] == "tpu_ops.csv"
    assert prov["fit_error"]["max_ape"] <= 2.0 and prov["cv_leave_one_row_out"]["mape"] == pytest.approx(9.26, abs=0.01)


def test_matmul_4096_closed_form_on_v5e():
    launch, e = _v5e()
    p = _pred(_matmul(4096, 4096, 4096), "tpu-v5e")
    # launch + floor + 2 x 4096^3 / (e x 197e12): 106.76 us + 1 us + 137.4 GFLOP / 187.7 TFLOP/s = 0.8398 ms
    expect = launch + FLOOR_S + 2 * 4096 ** 3 / (e * 197e12)
    assert p.latency_s == pytest.approx(expect, rel=1e-6)
    assert p.latency_s == pytest.approx(0.8398e-3, rel=1e-3)
    assert p.run_overhead_s == pytest.approx(launch, rel=1e-12)
    assert p.runtime == "xla" and p.time_definition == xla_tpu.TIME_DEFINITION
    assert p.provenance == "architecture constants"


@pytest.mark.parametrize("n", sorted(V5E_XLA_MS))
def test_in_sample_rows_within_two_percent(n):
    """The fit rows themselves (in-sample, 1 degree of freedom): recorded max 1.52 %."""
    ms = _pred(_matmul(n, n, n), "tpu-v5e").latency_s * 1e3
    assert abs(ms / V5E_XLA_MS[n] - 1) <= 0.02, (n, ms)


def test_launch_is_paid_once_per_call_not_per_kernel():
    launch, _ = _v5e()
    one = _pred(_matmul(1024, 1024, 1024), "tpu-v5e")
    two = _pred(_matmul(1024, 1024, 1024, relu=True), "tpu-v5e")
    assert two.run_overhead_s == one.run_overhead_s == pytest.approx(launch)
    kernels = two.latency_s - two.run_overhead_s
    assert two.kernels == 1 or kernels >= 2 * FLOOR_S   # (a fused epilogue, or a second kernel's floor)
    assert sum(r.time_s for r in two.nodes) == pytest.approx(kernels, rel=1e-6)   # in no layer's row


def test_explain_shows_the_per_call_term_and_the_efficiency():
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze(_matmul(4096, 4096, 4096), hw="tpu-v5e")
    text = render_explain(rep, 0, width=400)
    assert "e_compute 0.953" in text
    assert "per call" in text and "107 µs" in text and "= layers" in text


def test_gpu_and_cpu_xla_have_no_call_launch():
    gpu = _pred(_matmul(1024, 1024, 1024), "a100", runtime="xla")
    assert gpu.run_overhead_s == 0.0 and gpu.time_definition == runtimes.RUNTIMES["xla"].time_definition
    cpu = _pred(_matmul(64, 64, 64), "epyc-9654", runtime="xla")
    assert cpu.run_overhead_s == 0.0 and cpu.time_definition == runtimes.XLA_CPU.time_definition


@pytest.mark.parametrize("pid", ["tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5p", "tpu-v6e", "tpu7x"])
def test_other_generations_inherit_the_v5e_fit(pid):
    import hardware_db

    launch, e = _v5e()
    c = load_constants(hardware_db.get(pid).family)
    assert c.arrays["run_fixed_s"] == launch and c.arrays["e_compute"][0] == e
    p = _pred(_matmul(1024, 1024, 1024), pid)
    assert p.provenance == "architecture constants" and p.run_overhead_s == pytest.approx(launch)


def test_tpu7x_call_runs_on_one_of_two_devices():
    """TPU7x: a jitted call runs on one chiplet (half of 2307 TFLOP/s, half of 7380 GB/s)."""
    launch, e = _v5e()
    p = _pred(_matmul(8192, 8192, 8192), "tpu7x")
    # 106.76 us + 1 us + 2 x 8192^3 / (0.953 x 1153.5e12) = 1.108 ms
    assert p.latency_s == pytest.approx(launch + FLOOR_S + 2 * 8192 ** 3 / (e * 2307e12 / 2), rel=1e-6)
    n = 1 << 22                                            # 4 Mi bf16 elements: 25.2 MB moved
    c = _pred(_copy(n), "tpu7x")
    assert c.latency_s == pytest.approx(launch + FLOOR_S + 6 * n / (7380e9 / 2), rel=1e-6)
    assert any("one of its 2 JAX devices" in x for x in p.notes)


# (older, newer): the newer better on every figure both state (the chips' datasheet figures; a
# TPU7x call sees half its chip, still better than a v6e on every figure)
PAIRS = [("tpu-v5e", "tpu-v6e"), ("tpu-v6e", "tpu7x"), ("tpu-v5e", "tpu-v5p"), ("tpu-v4", "tpu-v5p")]
OPS = {"matmul1024": _matmul(1024, 1024, 1024), "matmul4096": _matmul(4096, 4096, 4096),
       "matmul8192": _matmul(8192, 8192, 8192), "mlp4096": _matmul(4096, 4096, 4096, relu=True),
       "add_4Mi": _copy(1 << 22), "add_1Ki": _copy(1024)}


@pytest.mark.parametrize("old,new", PAIRS)
def test_newer_tpu_never_slower_on_single_ops(old, new):
    import hardware_db

    a, b = hardware_db.get(old), hardware_db.get(new)
    assert b.peak_flops("matrix", "bf16") >= a.peak_flops("matrix", "bf16") and b.mem_bw_gbs >= a.mem_bw_gbs
    for name, model in OPS.items():
        t_old, t_new = _pred(model, old).latency_s, _pred(model, new).latency_s
        assert t_new <= t_old, (name, old, t_old, new, t_new)


@pytest.mark.parametrize("model", ["torch/resnet18.onnx", "torch/bert.onnx"])
def test_tpu7x_never_slower_than_v6e_on_whole_models(model):
    from analyzer.prediction.predict import predict

    rep = analyzer.analyze(os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", model))
    v6e, v7 = predict(rep, ["tpu-v6e", "tpu7x"], precision="bf16")
    assert v7.latency_s <= v6e.latency_s, (model, v6e.latency_s, v7.latency_s)


# --------------------------------------------------------------------------- the MXU padding

MXU = {"tpu-v2": 128, "tpu-v3": 128, "tpu-v4": 128, "tpu-v5e": 128, "tpu-v5p": 128, "tpu-v6e": 256, "tpu7x": 256}


@pytest.mark.parametrize("pid", sorted(MXU))
def test_profiles_state_their_mxu_size_with_a_source(pid):
    """v2-v5p 128 x 128, v6e and TPU7x 256 x 256 (scaling book, GCP v6e page, JAX's TPU table)."""
    import hardware_db

    p = hardware_db.get(pid)
    assert p.mxu_dim == MXU[pid] and "mxu_column_size" in p.sources["compute.mxu_dim"]
    assert hardware_db.get("edge-tpu").mxu_dim is None     # not an MXU: unknown stays null


def _v6e_padded_closed_form(m, k, n):
    """launch + floor + 2 x m8 x k256 x n256 / (e x 918e12): the v6e call of a compute-bound product."""
    launch, e = _v5e()

    def up(v, d):
        return -(-v // d) * d
    return launch + FLOOR_S + 2 * up(m, 8) * up(k, 256) * up(n, 256) / (e * 918e12)


# (m, k, n) just past the MXU grid, compute-bound on v6e: one dimension pads 8320 -> 8448 (256s) or
# 8193 -> 8200 (8-row chunks); on v5e's 128-wide MXU 8320 is whole (65 x 128)
@pytest.mark.parametrize("m,k,n,pad_v6e,pad_v5e", [
    (8192, 8192, 8320, 8448 / 8320, 1.0),     # n to whole 256s
    (8192, 8320, 8192, 8448 / 8320, 1.0),     # k to whole 256s
    (8193, 8192, 8192, 8200 / 8193, 8200 / 8193),   # m to whole 8-row chunks
])
def test_matrix_work_pads_to_the_profile_mxu(m, k, n, pad_v6e, pad_v5e):
    p6, p5 = _pred(_matmul(m, k, n), "tpu-v6e"), _pred(_matmul(m, k, n), "tpu-v5e")
    assert p6.explain(0).pad == pytest.approx(pad_v6e, rel=1e-12)
    assert p5.explain(0).pad == pytest.approx(pad_v5e, rel=1e-12)
    assert p6.latency_s == pytest.approx(_v6e_padded_closed_form(m, k, n), rel=1e-6)


def test_small_operands_fill_a_quarter_of_the_256_mxu():
    """128 x 128 x 128 on v6e: k and n pad to 256 (4x the work), on v5e nothing pads."""
    assert _pred(_matmul(128, 128, 128), "tpu-v6e").explain(0).pad == 4.0
    assert _pred(_matmul(128, 128, 128), "tpu-v5e").explain(0).pad == 1.0
    assert _pred(_matmul(4096, 4096, 129), "tpu-v5e").explain(0).pad == pytest.approx(256 / 129)


def test_explain_prints_the_padding_factor_and_the_mxu():
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze(_matmul(8192, 8192, 8320), hw="tpu-v6e")
    text = render_explain(rep, 0, width=1000)
    assert "x padding 1.02 " in text                      # 8448 / 8320 = 1.0154
    assert "padded to the 256 x 256 MXU (mxu_dim): rows to whole 8s, k and n to whole 256s" in text


def test_a_tpu_without_mxu_size_keeps_the_family_tiles():
    """mxu_dim unknown: the family file's 128 x 128 output tiles (k unpadded), said in the detail."""
    import dataclasses

    import hardware_db
    from analyzer.prediction.predict import predict

    bare = dataclasses.replace(hardware_db.get("tpu-v6e"), mxu_dim=None)
    (p,) = predict(analyzer.analyze(_matmul(8192, 8320, 8192)), [bare], runtime="xla")
    assert p.explain(0).pad == 1.0                          # m, n whole 128s; k not padded
    assert "MXU size unknown" in p.explain(0).provenance_detail
    (q,) = predict(analyzer.analyze(_matmul(8192, 8192, 8320)), [bare], runtime="xla")
    assert q.explain(0).pad == 1.0                          # 8320 = 65 x 128


# bf16 [m,k] x [k,n] products: cubes 128..8192 and shapes off the MXU grid
SHAPES = [(s, s, s) for s in (128, 256, 512, 1024, 2048, 4096, 8192)] + [
    (1000, 1000, 1000), (4096, 4096, 129), (4096, 129, 4096), (129, 4096, 4096), (4096, 4096, 384),
    (384, 384, 384), (8, 4096, 4096), (8192, 8192, 8320), (8192, 136, 8192)]


@pytest.mark.parametrize("old,new", [("tpu-v5e", "tpu-v6e"), ("tpu-v6e", "tpu7x"), ("tpu-v5e", "tpu7x")])
def test_a_tpu_better_on_every_figure_is_never_slower_on_matmuls(old, new):
    """What a matmul needs, per JAX device: bf16 peak, HBM bandwidth, the same per-call launch.  A
    256-wide MXU pads a 128-deep product to 4x its work, less than v6e's 4.66x v5e's peak."""
    import hardware_db
    from analyzer.prediction.predict import predict

    a, b = hardware_db.get(old), hardware_db.get(new)
    na, nb = (xla_tpu.DEVICES_PER_CHIP.get(p.family, (1,))[0] for p in (a, b))
    assert b.peak_flops("matrix", "bf16") / nb >= a.peak_flops("matrix", "bf16") / na
    assert b.mem_bw_gbs / nb >= a.mem_bw_gbs / na
    for m, k, n in SHAPES:
        t_old, t_new = (x.latency_s for x in predict(analyzer.analyze(_matmul(m, k, n)), [old, new], runtime="xla"))
        assert t_new <= t_old, ((m, k, n), old, t_old, new, t_new)
