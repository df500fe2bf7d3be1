"""The MXU padding of a TPU profile's dense matrix products (``efficiency_constants``), and the
bf16 passes an fp32 product takes at the precision it asks for (``precision_passes``).

A TPU TensorCore runs its matrix products on MXUs: square weight-stationary systolic arrays of
``d x d`` multiply-accumulate cells, ``d`` the profile's ``[compute] mxu_dim`` (128 on v2-v5p,
256 on v6e and TPU7x).  XLA loads a ``d x d`` block of the right operand (``k`` rows by ``n``
columns) into the array and streams the left operand's rows through it in chunks of 8 (the
vector registers' 8 sublanes), so a product of ``[m, k] x [k, n]`` does the work of

    2 x ceil(m / 8) * 8 x ceil(k / d) * d x ceil(n / d) * d x batch      (FLOPs)

at the MXUs' rate: a ``k`` or ``n`` smaller than ``d`` pads to the whole of ``d``, so a 128-deep
product fills a quarter of a 256 x 256 MXU.  Sources: JAX scaling book, "How to Think About
TPUs" (https://jax-ml.github.io/scaling-book/tpus/): the MXU multiplies a bf16[8,128] chunk of
the left operand by a bf16[128,128] block of the right one, 256 x 256 on TPU v6e, 128 x 128
on every earlier generation, and weight matrices are padded to at least 128 (256 on v6e) in
all dimensions, smaller axes padded to 128; JAX's TPU hardware table (jax 0.10.2,
``jax/_src/pallas/mosaic/tpu_info.py``; https://docs.jax.dev/en/latest/pallas/tpu/hardware.html):
8 sublanes x 128 lanes on every generation, ``mxu_column_size`` 128 before v6e, 256 on v6e and
TPU7x.

In the kernel-time model's terms (``efficiency.tiles``) the dense MXU classes (``MXU_CLASSES``)
get ``tile_m`` 8, ``tile_n`` = ``k_block`` = ``d`` and ``whole_tile`` on (a dimension smaller
than its tile pads to the whole tile).  The grouped and depthwise convolutions keep their
family's tiles (how XLA lowers them on a TPU, MXU or vector unit, is not sourced here).  A
profile without ``mxu_dim`` keeps its family file's tiles (128 x 128 output tiles, k unpadded:
the v2-v5p MXU), and the returned phrase says so.
"""

from __future__ import annotations

from analyzer.prediction import engines
from analyzer.prediction.xla_precision import kernel_precisions
from analyzer.prediction.efficiency import kernel_time as eff

SUBLANES = 8.0   # rows of the left operand the MXU takes per step (a vector register's sublanes)
# the dense classes XLA runs on the MXUs (a product's GEMM view: m, k, n, batch)
MXU_CLASSES = ("gemm", "gemm_tn", "bgemm", "conv", "conv_1x1", "conv1d")


def mxu_tiles(profile, arrays: dict) -> str:
    """Set the MXU padding of ``MXU_CLASSES`` in ``arrays`` (one family's constants, changed in
    place) for a TPU ``profile`` that states ``mxu_dim``; returns the phrase the constants'
    detail carries ("" for another kind or a calibrated profile)."""
    if profile.kind != "tpu" or (profile.calibration and profile.calibration.get("tables")):
        return ""
    d = profile.mxu_dim
    if not d:
        return (f"; MXU size unknown ({profile.id} states no mxu_dim): matrix work padded to the family's "
                f"128 x 128 output tiles")
    for name in MXU_CLASSES:
        i = eff.CLASS_CODE[name]
        arrays["tile_m"][i], arrays["tile_n"][i], arrays["k_block"][i] = SUBLANES, float(d), float(d)
        arrays["whole_tile"][i] = 1.0
    return (f"; matrix work padded to the {d:g} x {d:g} MXU (mxu_dim): rows to whole {SUBLANES:g}s, k and n to "
            f"whole {d:g}s")


# bf16 MXU passes of an fp32 product per requested precision (the ``precision=NAME`` word of a
# dot's or convolution's rule): jax.lax.Precision on a TPU, DEFAULT "performs float32 computations
# in bfloat16" (1 pass), HIGH "in 3 bfloat16 passes", HIGHEST "in 6 bfloat16" passes; it "only has
# an effect on float32 computations" (JAX API docs, jax.lax.Precision:
# https://docs.jax.dev/en/latest/jax.lax.html#jax.lax.Precision); a DotAlgorithmPreset names its
# bf16 products (BF16_BF16_F32: 1, _X3: 3, _X6: 6, _X9: 9).  F32_F32_F32 is taken as HIGHEST's 6
# (Precision's alias "float32" names HIGHEST; the preset's TPU lowering is not documented).
PASSES = {"HIGH": 3, "HIGHEST": 6, "BF16_BF16_F32": 1, "BF16_BF16_F32_X3": 3, "BF16_BF16_F32_X6": 6,
          "BF16_BF16_F32_X9": 9, "F32_F32_F32": 6}


def precision_passes(prof, mpeak_row, dtypes, lowered: tuple, warn: set[str]) -> None:
    """Divide the matrix peak of each fp32 kernel a TPU runs on its MXU (``engines.mxu_bf16``) by
    the bf16 passes its precision asks for (``PASSES``; ``lowered`` = (nodes, fusion plan): the
    kernels' ``xla_precision.kernel_precisions``), in place, and say so in ``warn``.  The extra vector work splitting each fp32 operand into bf16
    parts is not counted; a bf16 (or narrower) product is unchanged (one pass whatever its
    precision); a name without a pass count keeps one pass, with a warning."""
    names = kernel_precisions(*lowered) if prof.kind == "tpu" else ()
    for k, (name, d) in enumerate(zip(names, dtypes)):
        if name is None or not engines.mxu_bf16(prof, d):
            continue
        n = PASSES.get(name)
        if n is None:
            warn.add(f"{prof.id}: precision {name} has no documented TPU pass count; priced as one bf16 MXU pass")
            continue
        mpeak_row[k] /= n
        warn.add(f"{prof.id}: fp32 products at precision {name} run as {n} bf16 MXU passes "
                 f"(jax.lax.Precision on a TPU), at 1/{n} of the bf16 peak")
