"""XLA CPU's layout copies around channels-first convolutions, its constant folding and its
YNNPACK reductions in the ``xla_cpu`` plan (``xla_cpu_fusion``): closed-form launch counts of
small programs, each beside the thunks XLA 0.10.2 compiles for them (``bench/xla_hlo.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import analyzer
from analyzer.counting.rules.jax.linear import conv_relayout

CPU = "epyc-9654"
NCHW = ("NCHW", "OIHW", "NCHW")
NHWC = ("NHWC", "HWIO", "NHWC")


def _launches(fn, *shapes, **kw):
    return analyzer.analyze_jax(fn, *shapes, hw=CPU, runtime="xla", **kw).predictions[0].launches


def _conv(x, w, dn):
    return jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=dn)


def test_conv_relayout_names_the_operands_not_channels_last():
    # lhs_spec (batch, feature, spatial...), rhs_spec (out feature, in feature, spatial...):
    # NCHW (0, 1, 2, 3) -> b01f order (0, 2, 3, 1): not row-major; OIHW -> 01io (2, 3, 1, 0): not
    assert conv_relayout((0, 1, 2, 3), (0, 1, 2, 3)) == "0,1"
    # NHWC: lhs_spec (0, 3, 1, 2) -> (0, 1, 2, 3); HWIO: rhs_spec (3, 2, 0, 1) -> (0, 1, 2, 3)
    assert conv_relayout((0, 3, 1, 2), (3, 2, 0, 1)) == ""
    assert conv_relayout((0, 1, 2, 3), (3, 2, 0, 1)) == "0"


def test_a_channels_first_conv_of_two_inputs_copies_both_first_and_its_result_after():
    # planned: transpose x, transpose w, convolution, the result's copy back to NCHW (a program
    # output) = 4 (XLA: 4 thunks); NHWC/HWIO: the convolution alone
    x, w = jax.ShapeDtypeStruct((2, 8, 16, 16), jnp.float32), jax.ShapeDtypeStruct((8, 8, 3, 3), jnp.float32)
    assert _launches(lambda x, w: _conv(x, w, NCHW), x, w) == 1 + 2 + 1
    xh, wh = jax.ShapeDtypeStruct((2, 16, 16, 8), jnp.float32), jax.ShapeDtypeStruct((3, 3, 8, 8), jnp.float32)
    assert _launches(lambda x, w: _conv(x, w, NHWC), xh, wh) == 1


def test_a_closed_over_weight_is_transposed_at_compile_time():
    # the weight a constant of the program: x is copied, the convolution, the result copied
    # back: 3 planned (XLA: 4 thunks, the 4th a broadcast XLA makes of the all-ones constant)
    w = jnp.asarray(np.ones((8, 8, 3, 3), np.float32))
    x = jax.ShapeDtypeStruct((2, 8, 16, 16), jnp.float32)
    assert _launches(lambda x: _conv(x, w, NCHW), x) == 1 + 1 + 1


def test_an_intermediate_read_by_the_conv_alone_is_written_in_its_order():
    # relu(x) read only by the convolution: the relu writes channels-last (no copy of it):
    # [relu], the weight's copy, the convolution, the result's copy back to NCHW (XLA: 4 thunks)
    x, w = jax.ShapeDtypeStruct((2, 8, 16, 16), jnp.float32), jax.ShapeDtypeStruct((8, 8, 3, 3), jnp.float32)
    assert _launches(lambda x, w: _conv(jax.nn.relu(x), w, NCHW), x, w) == 1 + 1 + 1 + 1


def test_a_conv_result_read_by_loop_fusions_and_reductions_is_not_copied_back():
    # relu(conv(x)) the program output: x's copy, the convolution, [relu] transposing as it
    # writes = 3 (XLA: 3 thunks); three 1-D convolutions with relus after them and a mean over
    # length: x's copy, 3 convolutions, 3 relus, the mean's sum (a YNNPACK reduction of 8 x 64 x
    # 64 elements: it reads the last relu's channels-last result) and its divide = 9, no copy
    # back (XLA 0.10.2 on bench/xla_cpu_heldout.py's conv1d program: one transpose, before the
    # first; 9 thunks here too: its YNNPACK fusion takes the last relu in, and it adds a
    # broadcast of the sum's initial value)
    w = jnp.asarray(np.full((8, 8, 3, 3), 0.5, np.float32))
    x = jax.ShapeDtypeStruct((2, 8, 16, 16), jnp.float32)
    assert _launches(lambda x: jax.nn.relu(_conv(x, w, NCHW)), x) == 1 + 1 + 1
    w1 = jnp.asarray(np.full((64, 64, 5), 0.5, np.float32))

    def stack(x):
        for _ in range(3):
            x = jax.nn.relu(jax.lax.conv_general_dilated(x, w1, (1,), "SAME", dimension_numbers=("NCH", "OIH", "NCH")))
        return jnp.mean(x, -1)
    assert _launches(stack, jax.ShapeDtypeStruct((8, 64, 64), jnp.float32)) == 1 + 3 + 3 + 2


def test_an_elementwise_op_of_constants_only_is_folded():
    # a batch norm's 1 / sqrt(var + eps) of a closed-over running variance: no launch; x * it + 1
    # is the program's one kernel
    var = jnp.asarray(np.full((64,), 2.0, np.float32))
    x = jax.ShapeDtypeStruct((8, 64), jnp.float32)
    assert _launches(lambda x: x / jnp.sqrt(var + 1e-5) + 1.0, x) == 1


def test_a_reduction_of_4096_elements_or_more_is_a_kernel_of_its_own():
    # YNNPACK reductions (XLA's kMinElements = 4096): sum(x * 2) / 3 over 64 x 64 is planned
    # [x * 2], [sum], [/ 3]: 3 (XLA: 2 thunks, its YNNPACK fusion takes the multiply in); over
    # 8 x 32 (256 elements, rows no longer than the tree reduction's window) one loop fusion, 1
    # (XLA: 1)
    assert _launches(lambda x: jnp.sum(x * 2.0, axis=1) / 3.0, jax.ShapeDtypeStruct((64, 64), jnp.float32)) == 3
    assert _launches(lambda x: jnp.sum(x * 2.0, axis=1) / 3.0, jax.ShapeDtypeStruct((8, 32), jnp.float32)) == 1


def test_a_producer_of_a_ynnpack_reduction_is_written():
    # y = x - 1 read by the 4096-element sum and by the output's product: [x - 1], [sum],
    # [y * sum] (3; XLA: 1 YNNPACK fusion); over 8 x 32 the sum is a loop-fusion reduction the
    # subtract (cheap) is duplicated into: [sum(x - 1)], [(x - 1) * sum] (2; XLA: 2)
    def f(x):
        y = x - 1.0
        return y * jnp.sum(y, axis=1, keepdims=True)
    assert _launches(f, jax.ShapeDtypeStruct((64, 64), jnp.float32)) == 3
    assert _launches(f, jax.ShapeDtypeStruct((8, 32), jnp.float32)) == 2


def test_a_conv_input_its_elementwise_readers_share_is_not_copied():
    # relu(x) read by the convolution and by the add after it: the relu writes channels-last,
    # the add reads it so: [relu], the weight's copy, the convolution, [conv + relu] = 4 (XLA: 4
    # thunks, 3 loop fusions and the convolution)
    x, w = jax.ShapeDtypeStruct((2, 8, 16, 16), jnp.float32), jax.ShapeDtypeStruct((8, 8, 3, 3), jnp.float32)

    def f(x, w):
        h = jax.nn.relu(x)
        return _conv(h, w, NCHW) + h
    assert _launches(f, x, w) == 1 + 1 + 1 + 1
