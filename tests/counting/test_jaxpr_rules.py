"""lax primitive rules (analyzer/rules/lax_*.py) against hand arithmetic, one program per rule.

Conventions (DESIGN.md "Cost semantics"): mac_flops = 2 x MACs of dot/conv; elementwise counts per
output element are the ONNX ones of rules/elementwise.py; literals are immediates (no bytes).
"""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import analyzer  # noqa: E402
from analyzer.counting.rules.onnx.elementwise import BINARY, UNARY  # noqa: E402
from analyzer.counting.rules.jax.elementwise import PER_ELEMENT, SAME_AS  # noqa: E402

f32 = jnp.float32


def S(*shape, dtype=f32):
    return jax.ShapeDtypeStruct(shape, dtype)


def only(report, op):
    """The one row of ``report`` whose op is ``op``."""
    rows = [n for n in report.nodes if n.op == op]
    assert len(rows) == 1, [n.name for n in report.nodes]
    return rows[0]


# ----------------------------------------------------------------------------- dot_general


def test_dot_general_batch_and_contracting_dims():
    # a [2,3,4,5] x b [2,3,5,6], batch dims (0,1), contract a3 with b2 -> out [2,3,4,6]
    def f(a, b):
        return lax.dot_general(a, b, (((3,), (2,)), ((0, 1), (0, 1))))

    r = analyzer.analyze_jax(f, S(2, 3, 4, 5), S(2, 3, 5, 6))
    n = only(r, "dot_general")
    assert n.outputs == ("float32[2,3,4,6]",)
    assert n.mac_flops == 2 * (2 * 3) * 4 * 6 * 5  # 2*batch*m*n*k = 2*6*4*6*5 = 1440
    assert n.activation_bytes_read == (120 + 180) * 4  # both operands: (2*3*4*5 + 2*3*5*6) * 4 = 1200
    assert n.activation_bytes_written == 144 * 4  # 576


def test_dot_general_multiple_contracting_dims():
    # einsum "ijk,jkl->il": contract j=3 and k=4 (K = 12); out [2,5]
    r = analyzer.analyze_jax(lambda a, b: jnp.einsum("ijk,jkl->il", a, b), S(2, 3, 4), S(3, 4, 5))
    assert r.totals.mac_flops == 2 * 2 * 5 * (3 * 4)  # = 240


def test_dot_general_int8_with_int32_accumulator():
    def f(a, b):
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)

    r = analyzer.analyze_jax(f, S(4, 8, dtype=jnp.int8), S(8, 2, dtype=jnp.int8))
    n = only(r, "dot_general")
    assert n.mac_flops == 2 * 4 * 2 * 8  # = 128
    assert n.mac_dtype == "int8"  # the MAC array runs int8; int32 is only the accumulator
    assert n.activation_bytes_read == 4 * 8 + 8 * 2  # int8: 1 byte each = 48
    assert n.activation_bytes_written == 4 * 2 * 4  # int32 out = 32


def test_bf16_bytes():
    r = analyzer.analyze_jax(lambda a, b: a @ b, S(16, 32, dtype=jnp.bfloat16), S(32, 8, dtype=jnp.bfloat16))
    n = only(r, "dot_general")
    assert n.mac_dtype == "bfloat16"
    assert n.activation_bytes_read == (16 * 32 + 32 * 8) * 2  # = 1536


# ----------------------------------------------------------------------------- conv_general_dilated


def test_grouped_dilated_strided_conv():
    # the same conv as tests/test_rules_linear.py's ONNX test: x [1,8,15,15], W [12, 8/2=4, 3, 3],
    # groups 2, dilation 2 (effective kernel 5), stride 2, pads (1,1) x (2,2):
    #   H = (15 + 2 - 5) // 2 + 1 = 7;  W = (15 + 4 - 5) // 2 + 1 = 8
    def f(x, w):
        return lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (2, 2)), rhs_dilation=(2, 2),
                                        feature_group_count=2)

    r = analyzer.analyze_jax(f, S(1, 8, 15, 15), S(12, 4, 3, 3), params_argnums=1)
    n = only(r, "conv_general_dilated")
    assert n.outputs == ("float32[1,12,7,8]",)
    assert n.mac_flops == 2 * 12 * 7 * 8 * (4 * 3 * 3)  # 2*M*Ho*Wo*(C/g*kh*kw) = 48384, as ONNX
    assert n.params == 12 * 4 * 3 * 3  # = 432 (the weight is an arg marked by params_argnums)
    assert n.weight_bytes == 432 * 4


def test_depthwise_conv_nhwc():
    # NHWC / HWIO layout, depthwise: x [2,8,8,6], W [3,3,1,6], groups 6, SAME -> [2,8,8,6]
    def f(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", feature_group_count=6,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))

    r = analyzer.analyze_jax(f, S(2, 8, 8, 6), S(3, 3, 1, 6))
    assert r.totals.mac_flops == 2 * 2 * 8 * 8 * 6 * (1 * 9)  # 2*N*H*W*C*(1*kh*kw) = 13824


def test_transposed_conv_counts_real_inputs_like_onnx_convtranspose():
    # conv_transpose of x [1,4,5,5] (NCHW) with a 3x3 kernel to 8 channels, stride 2 -> lhs_dilation 2.
    # Every real input element meets every tap: 2 * (N*C*H*W) * M * k*k (ONNX ConvTranspose's count)
    def f(x, w):
        return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))

    r = analyzer.analyze_jax(f, S(1, 4, 5, 5), S(8, 4, 3, 3))
    n = only(r, "conv_general_dilated")
    assert n.outputs == ("float32[1,8,10,10]",)
    assert n.mac_flops == 2 * (1 * 4 * 5 * 5) * 8 * 9  # = 14400


def test_conv_weight_gradient_with_batch_groups_equals_forward():
    # jax.grad of a grouped conv w.r.t. its weight is a conv with batch_group_count = groups; it
    # does as many MACs as the forward conv: 2 * N*Ho*Wo * M * (C/g)*kh*kw
    def loss(w, x):
        return lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=2).sum()

    r = analyzer.analyze_jax(jax.grad(loss), S(6, 2, 3, 3), S(2, 4, 7, 7))
    convs = [n for n in r.nodes if n.op == "conv_general_dilated"]
    # the weight gradient only: the forward conv's value is dead (the loss is linear in it)
    assert len(convs) == 1
    fwd = 2 * (2 * 5 * 5) * 6 * (2 * 3 * 3)  # = 10800
    assert [c.mac_flops for c in convs] == [fwd]
    assert any(c.outputs == ("float32[6,2,3,3]",) for c in convs)


# ----------------------------------------------------------------------------- elementwise


def test_elementwise_tables_reuse_the_onnx_numbers():
    for jax_op, onnx_op in SAME_AS.items():
        assert PER_ELEMENT[jax_op] == (UNARY.get(onnx_op) or BINARY[onnx_op])
    assert PER_ELEMENT["logistic"] == UNARY["Sigmoid"] == (2, 1)


def test_unary_and_binary_counts_and_literals_are_immediates():
    def f(x, y):
        return jnp.tanh(x) + jax.nn.sigmoid(y) * 2.0

    r = analyzer.analyze_jax(f, S(4, 8), S(4, 8))
    n = 32
    assert only(r, "tanh").transcendentals == n
    lg = only(r, "logistic")
    assert (lg.vector_flops, lg.transcendentals) == (2 * n, n)  # Sigmoid: exp, add, divide
    mul = only(r, "mul")
    assert mul.vector_flops == n
    assert mul.params == 0 and mul.weight_bytes == 0  # the literal 2.0 is an immediate
    assert mul.activation_bytes_read == n * 4  # only x's bytes: 128
    assert r.totals.params == 0


def test_rsqrt_and_integer_pow():
    r = analyzer.analyze_jax(lambda x: lax.rsqrt(x) + x ** 3 + lax.integer_pow(x, -2), S(10))
    rs = only(r, "rsqrt")
    assert (rs.vector_flops, rs.transcendentals) == (10, 10)  # Sqrt + Reciprocal
    pows = [n for n in r.nodes if n.op == "integer_pow"]
    # x**3 = x*x*x: 2 multiplies; x**-2: 1 multiply + 1 reciprocal
    assert sorted(p.vector_flops for p in pows) == [20, 20]


def test_select_clamp_convert():
    def f(x, y):
        return lax.clamp(0.0, jnp.where(x > 0, x, y), 1.0).astype(jnp.bfloat16)

    r = analyzer.analyze_jax(f, S(6), S(6))
    assert only(r, "select_n").vector_flops == 6
    assert only(r, "clamp").vector_flops == 2 * 6  # max and min
    cv = only(r, "convert_element_type")
    assert cv.flops == 0 and cv.activation_bytes_written == 6 * 2  # bf16 out


def test_random_bits_threefry():
    # threefry2x32: 112 integer ops per pair of 32-bit words = 56 per word
    r = analyzer.analyze_jax(lambda k: jax.random.bits(k, (4, 8)), jax.random.key(0))
    assert only(r, "random_bits").vector_flops == 56 * 32
    r = analyzer.analyze_jax(lambda k: jax.random.split(k, 3), jax.random.key(0))
    assert only(r, "random_split").vector_flops == 56 * 2 * 3  # 3 keys of 2 words


# ----------------------------------------------------------------------------- reductions, scans, sort


def test_reductions_and_argmax():
    r = analyzer.analyze_jax(lambda x: (x.sum(1), jnp.argmax(x, 0), x.max()), S(4, 6))
    assert only(r, "reduce_sum").vector_flops == 24 - 4  # N-1 adds per row: 20
    assert only(r, "argmax").vector_flops == 24 - 6  # 18
    assert only(r, "reduce_max").vector_flops == 23


def test_cumsum_along_axis():
    r = analyzer.analyze_jax(lambda x: jnp.cumsum(x, axis=1), S(4, 6))
    assert only(r, "cumsum").vector_flops == 4 * (6 - 1)  # one add per element but the first: 20


def test_max_pool_window():
    def f(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    r = analyzer.analyze_jax(f, S(1, 3, 4, 4))
    n = only(r, "reduce_window_max")
    assert n.vector_flops == (3 * 2 * 2) * (4 - 1)  # 12 outputs x 3 compares = 36 (as ONNX MaxPool)


def test_sort_and_top_k():
    r = analyzer.analyze_jax(lambda x: (jnp.sort(x, axis=1), lax.top_k(x, 2)), S(4, 8))
    assert only(r, "sort").vector_flops == 4 * 8 * 3  # 4 lanes x L*log2(L) = 8*3: 96
    assert only(r, "top_k").vector_flops == 4 * 8 * 2  # ceil(log2(k+1)) = 2 per element: 64


# ----------------------------------------------------------------------------- movement


def test_views_move_no_bytes_and_slices_read_what_they_keep():
    def f(x):
        return x.reshape(6, 4)[1:3].T

    r = analyzer.analyze_jax(f, S(4, 6))
    rs = only(r, "reshape")
    assert rs.cost.bytes_moved == 0
    sl = only(r, "slice")
    assert sl.activation_bytes_read == 2 * 4 * 4  # reads the 8 kept elements: 32
    assert only(r, "transpose").activation_bytes_written == 32


def test_dynamic_update_slice_and_scatter_add_are_in_place():
    def f(x, u, idx):
        y = lax.dynamic_update_slice(x, u, (2, 0))
        return y.at[idx].add(1.0)

    r = analyzer.analyze_jax(f, S(10, 4), S(3, 4), S(5, dtype=jnp.int32))
    dus = only(r, "dynamic_update_slice")
    assert dus.activation_bytes_read == 3 * 4 * 4 and dus.activation_bytes_written == 48
    sc = only(r, "scatter-add")
    assert sc.vector_flops == 5 * 4  # one add per updated element
    assert sc.activation_bytes_written == 5 * 4 * 4  # the 5 updated rows, not the whole [10,4]


# ----------------------------------------------------------------------------- control flow


def test_scan_of_a_matmul():
    # 5 steps of c [4,8] @ w [8,8]: 5 * 2*4*8*8 = 5 * 512 = 2560
    def f(w, c):
        return lax.scan(lambda c, _: (c @ w, None), c, None, length=5)[0]

    r = analyzer.analyze_jax(f, S(8, 8), S(4, 8), params_argnums=0)
    assert r.totals.mac_flops == 2560
    body = next(n for n in r.nodes if n.op == "dot_general")
    assert body.name == "scan/dot_general" and "x5" in body.note
    assert r.totals.params == 64  # the weight counts once, however often the loop reads it
    assert body.weight_bytes == 5 * 64 * 4  # ...but is read on every step: 1280


def test_fori_loop_with_constant_bounds_and_while_trip_count():
    def f(x):
        x = lax.fori_loop(0, 7, lambda i, c: c * 2.0, x)              # a scan of 7 steps
        return lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 3, jnp.sin(c[1])), (1, x))[1]

    r = analyzer.analyze_jax(f, S(16))
    assert only(r, "mul").vector_flops == 7 * 16
    # counter 1, 4, 7 pass the test, 10 does not: ceil((10 - 1) / 3) = 3 trips, 4 tests
    assert only(r, "sin").transcendentals == 3 * 16
    assert only(r, "lt").vector_flops == 4


def test_while_with_traced_bound_needs_loop_trips():
    def f(x, n):
        return lax.fori_loop(0, n, lambda i, c: c @ c, x)

    with pytest.raises(analyzer.ShapeError, match=r"node 'while'.*loop_trips"):
        analyzer.analyze_jax(f, S(8, 8), S(dtype=jnp.int32))
    r = analyzer.analyze_jax(f, S(8, 8), S(dtype=jnp.int32), loop_trips=4)
    assert r.totals.mac_flops == 4 * 2 * 8 * 8 * 8  # = 4096


def test_cond_costlier_branch_or_constant_index():
    def f(p, x):
        return lax.cond(p, lambda x: x @ x, lambda x: x + 1.0, x)

    r = analyzer.analyze_jax(f, S(dtype=jnp.bool_), S(8, 8))
    assert r.totals.mac_flops == 2 * 8 * 8 * 8  # the costlier branch: 1024
    assert "costlier branch 'branch1'" in only(r, "cond").note

    # lax.switch on a constant index runs that branch only (the index is constant-folded)
    def g(x):
        return lax.switch(0, [lambda x: x @ x, lambda x: x + 1.0], x)

    r = analyzer.analyze_jax(g, S(8, 8))
    assert r.totals.mac_flops == 1024
    r = analyzer.analyze_jax(lambda x: lax.switch(1, [lambda x: x @ x, lambda x: x + 1.0], x), S(8, 8))
    assert r.totals.mac_flops == 0 and r.totals.vector_flops == 64


# ------------------------------------------------ words a matrix rule names for the prediction

@pytest.mark.parametrize("precision,word", [
    (None, None), ("default", None), ("high", "precision=HIGH"), ("highest", "precision=HIGHEST"),
    (("high", "highest"), "precision=HIGHEST"), ((lax.Precision.DEFAULT, lax.Precision.HIGH), "precision=HIGH"),
    ("BF16_BF16_F32_X6", "precision=BF16_BF16_F32_X6"), ("F32_F32_F32", "precision=F32_F32_F32")])
def test_dot_names_the_precision_it_asks_for(precision, word):
    """The higher operand level (or the DotAlgorithmPreset's name) as the kernel's last word; the
    counts never change."""
    x = S(64, 32)
    n = only(analyzer.analyze_jax(lambda a, b: jnp.matmul(a, b, precision=precision), x, S(32, 16)), "dot_general")
    assert (n.kernel or None) == word and n.mac_flops == 2 * 64 * 32 * 16


def test_conv_names_its_output_feature_dim_and_depthwise():
    """NHWC: ``out_feature=3``; one input feature per group: ``depthwise``; dimension numbers
    other than NCHW / OIHW / NCHW: ``dn=`` (XLA GPU's layout transposes); NCHW: none of them (its
    ``relayout=0,1`` is XLA's CPU layout copies, the last word)."""
    x, w = S(2, 8, 8, 6), S(3, 3, 1, 6)
    nhwc = only(analyzer.analyze_jax(lambda a, b: lax.conv_general_dilated(
        a, b, (1, 1), "SAME", feature_group_count=6, dimension_numbers=("NHWC", "HWIO", "NHWC"),
        precision="highest"), x, w), "conv_general_dilated")
    # dn: NHWC lhs_spec (0, 3, 1, 2), HWIO rhs_spec (3, 2, 0, 1), NHWC out_spec (0, 3, 1, 2)
    assert nhwc.kernel == "depthwise out_feature=3 precision=HIGHEST dn=0,3,1,2,3,2,0,1,0,3,1,2"
    nchw = only(analyzer.analyze_jax(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME"),
                                     S(2, 6, 8, 8), S(4, 6, 3, 3)), "conv_general_dilated")
    assert nchw.kernel == "relayout=0,1"


@pytest.mark.parametrize("dn,x,w", [(("NHWC", "HWIO", "NHWC"), S(2, 8, 8, 6), S(1, 1, 6, 4)),
                                    (("NCHW", "OIHW", "NCHW"), S(2, 6, 8, 8), S(4, 6, 1, 1)),
                                    (("NHWC", "OIHW", "NHWC"), S(2, 8, 8, 6), S(4, 6, 1, 1))])
def test_conv_names_a_1x1_kernel_pointwise_in_any_layout(dn, x, w):
    """Every spatial kernel dim 1 (read through the dimension numbers) -> ``pointwise``, stride 2
    included; the counts never change: 2 * N * Ho * Wo * O * I = 2 * 2 * 4 * 4 * 4 * 6 = 1536."""
    n = only(analyzer.analyze_jax(lambda a, b: lax.conv_general_dilated(a, b, (2, 2), "SAME", dimension_numbers=dn),
                                  x, w), "conv_general_dilated")
    assert n.kernel.split()[0] == "pointwise" and n.mac_flops == 1536
