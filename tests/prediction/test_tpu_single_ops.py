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


# ----------------------------------------------------------------- JAX convolutions in NHWC

def _conv_report(layout, groups=1, n=8, hw=64, c=256, o=256, r=3):
    """A 3x3 SAME convolution of bf16 [8, 64, 64, 256] (NHWC / HWIO, or NCHW / OIHW)."""
    from jax import lax

    nhwc = layout == "NHWC"
    x = jax.ShapeDtypeStruct((n, hw, hw, c) if nhwc else (n, c, hw, hw), jnp.bfloat16)
    w = jax.ShapeDtypeStruct((r, r, c // groups, o) if nhwc else (o, c // groups, r, r), jnp.bfloat16)
    dn = ("NHWC", "HWIO", "NHWC") if nhwc else ("NCHW", "OIHW", "NCHW")
    return analyzer.analyze_jax(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME", feature_group_count=groups,
                                                                      dimension_numbers=dn), x, w)


@pytest.mark.parametrize("pid,peak", [("tpu-v5e", 197e12), ("tpu-v6e", 918e12)])
def test_nhwc_conv_pads_its_output_features_not_its_width(pid, peak):
    """The GEMM view of an NHWC convolution: n = the 256 output features (dim 3), m = 8 x 64 x 64
    rows; 256 is whole on both MXUs, so nothing pads.  Read as NCHW (n = dim 1, the 64-wide H) it
    padded 64 to 128 (v5e: 2x) or 256 (v6e: 4x): 519.6 / 284.5 us where the NCHW program of the
    same work is 313.7 / 151.9 us.  v6e: 106.76 + 1 + 2 x 8x64x64 x 256 x 2304 / (0.953 x 918e12)
    = 106.76 + 1 + 44.19 us = 151.95 us."""
    from analyzer.prediction.efficiency.constants import load_constants

    c = load_constants("google-tpu-v5e")
    launch, e = c.arrays["run_fixed_s"], c.arrays["e_compute"][0]
    (nhwc,), (nchw,) = predict(_conv_report("NHWC"), [pid]), predict(_conv_report("NCHW"), [pid])
    assert nhwc.explain(0).pad == 1.0
    expect = launch + 1e-6 + 2 * 8 * 64 * 64 * 256 * 256 * 9 / (e * peak)
    assert nhwc.latency_s == pytest.approx(expect, rel=1e-6)
    assert nchw.latency_s == pytest.approx(nhwc.latency_s, rel=1e-9)


def test_nhwc_depthwise_conv_is_a_depthwise_kernel():
    """A depthwise HWIO weight [3, 3, 1, 256] is told by its rule (groups = input features), as the
    OIHW one [256, 1, 3, 3] is by its shape: class ``conv_dw`` (the family's tiles), not a dense
    convolution whose 9-deep k pads to the 256-wide MXU (28.4x the work on v6e)."""
    for layout in ("NHWC", "NCHW"):
        (p,) = predict(_conv_report(layout, groups=256), ["tpu-v6e"])
        assert p.explain(0).op_class == "conv_dw" and p.explain(0).pad == 1.0, layout


# ------------------------------------------------------------- dot precision: bf16 MXU passes

def _launch_e():
    from analyzer.prediction.efficiency.constants import load_constants

    c = load_constants("google-tpu-v5e")
    return c.arrays["run_fixed_s"], c.arrays["e_compute"][0]


def _f32_matmul(precision, dtype=jnp.float32, n=4096):
    x = jax.ShapeDtypeStruct((n, n), dtype)
    return analyzer.analyze_jax(lambda a, b: jnp.matmul(a, b, precision=precision), x, x)


@pytest.mark.parametrize("precision,passes", [(None, 1), ("default", 1), (jax.lax.Precision.HIGH, 3),
                                              (jax.lax.Precision.HIGHEST, 6), (("high", "highest"), 6),
                                              ("BF16_BF16_F32_X3", 3), ("BF16_BF16_F32_X6", 6),
                                              ("BF16_BF16_F32_X9", 9)])
def test_f32_dot_precision_prices_its_bf16_passes_on_v6e(precision, passes):
    """jax.lax.Precision on a TPU: DEFAULT one bf16 MXU pass, HIGH 3, HIGHEST 6 (JAX API docs); a
    DotAlgorithmPreset names its count.  f32 4096^3 on v6e, compute-bound (201 MB / 1638 GB/s =
    123 us of HBM under 157 us of one pass): 106.76 + 1 + passes x 137.44 GFLOP / (0.953 x 918e12)
    = 264.9 / 579.1 / 1050.4 / 1521.7 us for 1 / 3 / 6 / 9 passes."""
    launch, e = _launch_e()
    (p,) = predict(_f32_matmul(precision), ["tpu-v6e"])
    assert p.latency_s == pytest.approx(launch + 1e-6 + passes * 2 * 4096 ** 3 / (e * 918e12), rel=1e-6)
    assert any(f"as {passes} bf16 MXU passes" in w for w in p.warnings) == (passes > 1)


def test_default_matmul_precision_context_is_priced_too():
    """``jax.default_matmul_precision("highest")`` puts HIGHEST in the dot's param: 6 passes."""
    x = jax.ShapeDtypeStruct((4096, 4096), jnp.float32)
    with jax.default_matmul_precision("highest"):
        rep = analyzer.analyze_jax(jnp.matmul, x, x)
    (ctx,), (explicit,) = predict(rep, ["tpu7x"]), predict(_f32_matmul("highest"), ["tpu7x"])
    assert ctx.latency_s == pytest.approx(explicit.latency_s, rel=1e-12)


def test_precision_leaves_bf16_dots_and_gpus_alone():
    """Precision "only has an effect on float32 computations": a bf16 dot at HIGHEST is the default
    one; an NVIDIA GPU's fp32 dot is not a TPU's passes: HIGHEST runs it in fp32 on the FMA units,
    the default in TF32 on the tensor cores (``xla_precision``; tests/prediction/test_xla_tf32.py)."""
    for pid in ("tpu-v5e", "tpu-v6e", "tpu7x"):
        (hi,), (lo,) = (predict(_f32_matmul(p, jnp.bfloat16), [pid]) for p in ("highest", None))
        assert hi.latency_s == lo.latency_s, pid
    (gpu_hi,), (gpu_lo,) = (predict(_f32_matmul(p), ["a100"]) for p in ("highest", None))
    (gpu_fp32,) = predict(_f32_matmul(None), ["a100"], precision="fp32")
    assert gpu_hi.latency_s == gpu_fp32.latency_s > gpu_lo.latency_s


def test_f32_conv_at_highest_precision_takes_six_passes():
    """A convolution's precision param too: the f32 NHWC conv of [8,64,64,256] (38.65 GFLOP) on v6e
    at HIGHEST: 106.76 + 1 + 6 x 44.19 us = 372.9 us."""
    from jax import lax

    launch, e = _launch_e()
    x, w = jax.ShapeDtypeStruct((8, 64, 64, 256), jnp.float32), jax.ShapeDtypeStruct((3, 3, 256, 256), jnp.float32)
    rep = analyzer.analyze_jax(lambda a, b: lax.conv_general_dilated(
        a, b, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=lax.Precision.HIGHEST), x, w)
    (p,) = predict(rep, ["tpu-v6e"])
    assert p.latency_s == pytest.approx(launch + 1e-6 + 6 * 2 * 8 * 64 * 64 * 256 * 256 * 9 / (e * 918e12), rel=1e-6)


def test_tpu7x_int8_matmul_at_its_bf16_rate_with_the_sources_said():
    """TPU7x lists no int8 rate (Google's table: BF16 and FP8; JAX's TPU table: int8 'Not
    Available', Mosaic takes no int8 operand on generation 7): an int8 4096^3 product is priced at
    the bf16 peak of its JAX device, 106.76 + 1 + 137.44 GFLOP / (0.953 x 1153.5e12) = 232.8 us,
    slower than v6e's int8 MXU (1836 TOPS: 186.3 us), with a warning that says why."""
    import hardware_db

    launch, e = _launch_e()
    assert not hardware_db.get("tpu7x").matrix_tflops.get("int8")
    v6e, v7 = predict(_matmul_report(jnp.int8), ["tpu-v6e", "tpu7x"])
    assert v7.latency_s == pytest.approx(launch + 1e-6 + 2 * 4096 ** 3 / (e * 2307e12 / 2), rel=1e-6)
    assert v7.latency_s > v6e.latency_s
    said = [w for w in v7.warnings if "no int8 MXU mode" in w]
    assert said and "int8_ops_per_second 0" in said[0] and "docs.cloud.google.com/tpu/docs/tpu7x" in said[0]
    assert not any("int8" in w for w in v6e.warnings)


def test_batched_f32_dot_of_matmul_flops_is_hbm_bound_on_v6e():
    """16 x [1024, 4096] x [4096, 1024] f32: the FLOPs of 4096^3 (137.4 G) but 537 MB of operands read
    and 67 MB written (the matmul: 201 MB), so on a v6e HBM sets it: 106.76 + 1 + 604 MB / 1638 GB/s
    = 476.5 us (MXU work 157.1 us); the 4096^3 matmul is compute-bound at 264.9 us.  No copy: batch
    dims lead and the operands contract over the lhs's last and the rhs's middle dim."""
    from jax import lax

    launch, _ = _launch_e()
    a, b = jax.ShapeDtypeStruct((16, 1024, 4096), jnp.float32), jax.ShapeDtypeStruct((16, 4096, 1024), jnp.float32)
    rep = analyzer.analyze_jax(lambda x, y: lax.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))), a, b)
    (p,) = predict(rep, ["tpu-v6e"])
    moved = 4 * 16 * (2 * 1024 * 4096 + 1024 * 1024)
    assert p.explain(0).bytes == moved and p.explain(0).bound == "memory"
    assert p.latency_s == pytest.approx(launch + 1e-6 + moved / 1638e9, rel=1e-6)


def _twins(r=1, **kw):
    """The NHWC / HWIO program and its NCHW / OIHW twin of one convolution (``_conv_report``)."""
    return _conv_report("NHWC", r=r, **kw), _conv_report("NCHW", r=r, **kw)


@pytest.mark.parametrize("pid,runtime", [("a100", "xla"), ("tpu-v6e", None)])
def test_nhwc_1x1_conv_is_a_pointwise_kernel_as_its_nchw_twin(pid, runtime):
    """An HWIO weight [1, 1, 1920, 1920] read as OIHW has one input channel: it was ``conv_dw``
    (unpadded on v6e's MXU: 176.8 us) where its OIHW twin [1920, 1920, 1, 1] is ``conv_1x1``; its
    rule names it ``pointwise`` in any layout.  Same class, GEMM view (m = 8 x 32 x 32, n = k =
    1920) and time.  v6e: k and n pad to 2048: 106.76 + 1 + 2 x 8192 x 2048 x 2048 /
    (0.953 x 918e12) = 106.76 + 1 + 78.55 us = 186.31 us."""
    from analyzer.prediction.efficiency.constants import load_constants
    from analyzer.prediction.node_shapes import gemm_view

    nhwc, nchw = _twins(n=8, hw=32, c=1920, o=1920)
    assert gemm_view(nhwc.nodes[0])[:4] == gemm_view(nchw.nodes[0])[:4] == (8 * 32 * 32, 1920, 1920, 1)
    (a,), (b,) = (predict(r, [pid], runtime=runtime) for r in (nhwc, nchw))
    assert a.explain(0).op_class == b.explain(0).op_class == "conv_1x1"
    # (under xla on the A100 cuDNN gets bf16 convolutions NHWC: the twins differ by their layout
    # transposes, ``xla_conv_layout``, HWIO -> OHWI of the one, x and the result of the other;
    # the convolution's own terms do not)
    for f in ("compute_s", "memory_s"):
        assert getattr(a.nodes[0], f) == pytest.approx(getattr(b.nodes[0], f), rel=1e-9)
    if pid == "tpu-v6e":
        assert a.latency_s == pytest.approx(b.latency_s, rel=1e-9)
        c = load_constants("google-tpu-v5e")
        launch, e = c.arrays["run_fixed_s"], c.arrays["e_compute"][0]
        assert a.latency_s == pytest.approx(launch + 1e-6 + 2 * 8192 * 2048 * 2048 / (e * 918e12), rel=1e-6)


@pytest.mark.parametrize("kw,cls", [(dict(groups=4), "conv_1x1"), (dict(r=3), "conv"), (dict(groups=256), "conv_dw")])
def test_conv_kind_is_the_same_in_both_layouts(kw, cls):
    """A grouped 1x1 convolution is ``conv_1x1`` as ONNX Conv's shape test makes it; a 3x3 is a
    dense ``conv``; a depthwise 1x1 is ``conv_dw`` (ONNX tests depthwise first); in both layouts."""
    for rep in _twins(**{"r": 1, **kw}):
        (p,) = predict(rep, ["tpu-v6e"])
        assert p.explain(0).op_class == cls, (kw, rep.nodes[0].kernel)


def test_hwio_3x1_conv_is_not_depthwise():
    """An HWIO [3, 1, 64, 64] kernel (kw = 1) read as OIHW has one input channel (depthwise); it is
    a dense convolution, as its OIHW twin [64, 64, 3, 1]."""
    from jax import lax

    x = jax.ShapeDtypeStruct((2, 16, 16, 64), jnp.bfloat16)
    w = jax.ShapeDtypeStruct((3, 1, 64, 64), jnp.bfloat16)
    rep = analyzer.analyze_jax(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                                     dimension_numbers=("NHWC", "HWIO", "NHWC")), x, w)
    (p,) = predict(rep, ["tpu-v6e"])
    assert p.explain(0).op_class == "conv" and rep.nodes[0].kernel == "out_feature=3 dn=0,3,1,2,3,2,0,1,0,3,1,2"
