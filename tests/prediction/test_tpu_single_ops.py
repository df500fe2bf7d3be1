"""Single JAX ops on the TPU profiles under ``xla`` where a profile's extra figure once changed
which engine ran them (bench/accel_single_ops.py finds these across the whole grid)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import analyzer
from analyzer.prediction.predict import predict


def _matmul_report(dtype, m=4096, k=4096, n=4096):
    return analyzer.analyze_jax(jnp.matmul, jax.ShapeDtypeStruct((m, k), dtype), jax.ShapeDtypeStruct((k, n), dtype))


def test_f32_matmul_runs_on_the_mxu_in_one_bf16_pass_on_v5p():
    """v5p states a vector fp32 figure (14 TFLOP/s, the VPU); XLA's default precision still runs
    an f32 dot on the MXU in one bf16 pass: compute-bound 4096^3 at the bf16 peak, as the bf16 dot
    (before: 10.4 ms at the VPU figure against 0.42 ms in bf16, and slower than a v4)."""
    (f32,) = predict(_matmul_report(jnp.float32), ["tpu-v5p"])
    (bf16,) = predict(_matmul_report(jnp.bfloat16), ["tpu-v5p"])
    assert f32.latency_s == pytest.approx(bf16.latency_s, rel=0.02)
    assert any("one bf16 pass" in w for w in f32.warnings)


@pytest.mark.parametrize("old", ["tpu-v4", "tpu-v5e"])
def test_f32_matmul_on_v5p_never_slower_than_older_tpus(old):
    for shape in ((4096, 4096, 4096), (1000, 129, 1000), (128, 128, 128)):
        t_old, t_new = (p.latency_s for p in predict(_matmul_report(jnp.float32, *shape), [old, "tpu-v5p"]))
        assert t_new <= t_old, (shape, old, t_old, t_new)
