"""XLA's f32 default on an NVIDIA GPU (``prediction.xla_precision``): a jitted JAX program's f32
dots and convolutions run in TF32 on the tensor cores (jax.lax.Precision.DEFAULT / HIGH), HIGHEST
and precision fp32 on the FMA units, a GPU without TF32 in fp32; m = 1 dots and depthwise
convolutions stay on the FMA units; bf16 and the PyTorch runtimes unchanged."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax import lax

import analyzer
import hardware_db
from analyzer.prediction import engines

S = jax.ShapeDtypeStruct
N = 4096


def _dot(fn=lambda a, b: a @ b, m=N, dtype=jnp.float32, hw="h200", **kw):
    """(the dot's KernelTerms, the prediction) of ``fn`` on [m, N] x [N, N] operands."""
    rep = analyzer.analyze_jax(fn, S((m, N), dtype), S((N, N), dtype), hw=hw, **kw)
    (p,) = rep.predictions
    i = next(k for k, n in enumerate(rep.nodes) if n.op == "dot_general")
    return p.explain(i), p


def _fma(hw):
    """The FMA-unit fp32 matrix peak of ``hw`` (FLOP/s): vector fp32 x sustained clock x datapath."""
    prof = hardware_db.get(hw)
    return prof.peak_flops("vector", "fp32") * engines.clock_share(prof) * engines.datapath_factor(prof)


def test_a_jitted_f32_dot_runs_at_the_tf32_peak_on_an_h200():
    t, p = _dot()
    prof = hardware_db.get("h200")
    tf32 = prof.peak_flops("matrix", "tf32") * engines.clock_share(prof)
    assert tf32 == pytest.approx(494.7e12)      # the profile's TF32 tensor-core figure (dense)
    assert t.matrix_peak == pytest.approx(tf32) and t.op_class == "xla_gemm"
    # closed form: 2 M N K FLOPs over the TF32 peak x the gemm class's efficiency (the tiles' factors)
    assert t.mac_flops == 2 * N ** 3
    assert t.matrix_s == pytest.approx(2 * N ** 3 * t.pad * t.wave * t.algo * t.narrow * t.clock
                                       / (494.7e12 * t.e_compute), rel=1e-9)
    assert any("XLA's default assumed: f32 dots and convolutions run in TF32 on the tensor cores (494.7 TFLOP/s"
               in n for n in p.notes)
    assert not any("datapath_factor" in n for n in p.notes)   # nothing left on the FMA units


def test_highest_and_precision_fp32_stay_on_the_fma_units():
    highest, p = _dot(lambda a, b: jnp.dot(a, b, precision=lax.Precision.HIGHEST))
    assert highest.matrix_peak == pytest.approx(_fma("h200")) and highest.op_class == "xla_gemm"
    assert any("asking for jax.lax.Precision.HIGHEST run on the FMA units" in n for n in p.notes)
    assert not any("run in TF32 on the tensor cores (" in n for n in p.notes)
    fp32, q = _dot(precision="fp32")
    assert fp32.matrix_peak == pytest.approx(_fma("h200"))
    assert any(n.startswith("precision fp32: every f32 dot and convolution runs on the FMA units") for n in q.notes)
    default, _ = _dot()
    assert fp32.time_s > 5 * default.time_s   # 57 vs 495 TFLOP/s on a compute-bound product


def test_tf32_puts_the_dot_on_the_tensor_cores_as_before():
    t, p = _dot(precision="tf32")
    assert t.matrix_peak == pytest.approx(494.7e12)
    assert not any("XLA's default assumed" in n for n in p.notes)


@pytest.mark.parametrize("hw", ["t4", "v100"])
def test_a_gpu_without_tf32_keeps_fp32(hw):
    t, p = _dot(hw=hw)
    assert t.matrix_peak == pytest.approx(_fma(hw))
    assert not any("TF32" in n for n in p.notes)


def test_bf16_is_unchanged():
    t, p = _dot(dtype=jnp.bfloat16)
    prof = hardware_db.get("h200")
    assert t.matrix_peak == pytest.approx(prof.peak_flops("matrix", "bf16") * engines.clock_share(prof))
    assert not any("XLA's default" in n for n in p.notes)


def test_dot_algorithms_run_as_passes():
    prof = hardware_db.get("h200")
    x3, p = _dot(lambda a, b: jnp.dot(a, b, precision="TF32_TF32_F32_X3"))
    assert x3.matrix_peak == pytest.approx(494.7e12 / 3)
    assert any("TF32_TF32_F32_X3: 3 tf32 passes" in n for n in p.notes)
    x6, _ = _dot(lambda a, b: jnp.dot(a, b, precision="BF16_BF16_F32_X6"))
    assert x6.matrix_peak == pytest.approx(prof.peak_flops("matrix", "bf16") / 6)
    f32, _ = _dot(lambda a, b: jnp.dot(a, b, precision="F32_F32_F32"))
    assert f32.matrix_peak == pytest.approx(_fma("h200"))


def test_a_matrix_vector_dot_stays_on_the_fma_units():
    # XLA rewrites an m = 1 dot into a reduction fusion (measured: input_reduce_fusion on the H200)
    t, p = _dot(m=1)
    assert t.matrix_peak == pytest.approx(_fma("h200"))
    assert any("m = 1 or n = 1 run as reductions on the FMA units" in n for n in p.notes)


def _conv(groups, hw="h200"):
    c = 64
    fn = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=groups)  # noqa: E731
    rep = analyzer.analyze_jax(fn, S((8, c, 32, 32), jnp.float32), S((c, c // groups, 3, 3), jnp.float32), hw=hw)
    (p,) = rep.predictions
    i = next(k for k, n in enumerate(rep.nodes) if n.op == "conv_general_dilated")
    return p.explain(i)


def test_convolutions_run_in_tf32_but_depthwise_ones():
    assert _conv(1).matrix_peak == pytest.approx(494.7e12)
    dw = _conv(64)
    assert dw.op_class == "conv_dw" and dw.matrix_peak == pytest.approx(_fma("h200"))
    assert _conv(1, hw="t4").matrix_peak == pytest.approx(_fma("t4"))
