"""XLA's GPU dot strength reduction and tree reduction in the ``xla`` plan of a GPU profile
(``analyzer/prediction/xla_gpu_rewrites.py``): kernel counts and closed-form bytes of the cases
measured on the lent H200 (bench/results/h200_xla_ops_2026-12-04.csv, kernels per case in
bench/results/h200_xla_kernels_2026-12-04.json.gz)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import analyzer
from analyzer.prediction import xla_gpu_rewrites as rw

F32 = jnp.float32


def _pred(fn, *shapes):
    rep = analyzer.analyze_jax(fn, *[jax.ShapeDtypeStruct(s, F32) for s in shapes], hw="h200")
    return rep.predictions[0]


def _dot(x, w):
    return x @ w


def test_strength_reduction_size_condition():
    # (m + n) k < 10^7 with m or n = 1 (IsMatrixMultiplicationTooSmallForRewriting)
    assert rw.strength_reduced(1, 1024, 1024)          # 1025 x 1024 = 1,049,600
    assert not rw.strength_reduced(1, 4096, 4096)      # 4097 x 4096 = 16,781,312
    assert rw.strength_reduced(1, 3161, 3162)          # 3162 x 3162 = 9,998,244
    assert not rw.strength_reduced(1, 3162, 3163)      # 3163 x 3163 = 10,004,569
    assert rw.strength_reduced(1, 1, 10**9)            # vector . vector: always
    assert not rw.strength_reduced(2, 4, 4)            # no vector operand


def test_vector_matrix_dot_256_is_one_reduce_kernel():
    # H200: one kernel, input_reduce_fusion (dot|f32|1x256x256)
    p = _pred(_dot, (1, 256), (256, 256))
    t = p.kernel_table
    assert p.launches == 1 and t.op_class == ("xla_reduce",)
    assert float(t.mac[0]) == 0.0
    assert float(t.vec[0]) == 2 * 256 * 256                     # 131,072 multiply-adds as vector FLOPs
    assert float(t.nbytes[0]) == 4 * (256 + 256 * 256 + 256)    # x, W, out: 264,192 B


def test_vector_matrix_dot_4096_stays_a_gemm():
    # 4097 x 4096 >= 10^7: a GEMM kernel.  (H200: gemm_fusion_dot_2 + loop_reduce_fusion, the split-K the
    # autotuner picked: not planned, so 1 here against its 2)
    p = _pred(_dot, (1, 4096), (4096, 4096))
    t = p.kernel_table
    assert p.launches == 1 and t.op_class == ("xla_gemm",)
    assert float(t.mac[0]) == 2 * 4096 * 4096
    assert float(t.nbytes[0]) == 4 * (4096 + 4096 * 4096 + 4096)


def test_split_params():
    assert rw.split_params(4194304, rw.ROW_BOUND, True) == (2048, 2048)
    assert rw.split_params(65536, rw.COLUMN_BOUND, False) == (256, 256)
    assert rw.split_params(262144, rw.ROW_BOUND, True) == (512, 512)


def test_stages():
    assert rw.stages(True, (1, 1, 16384)) == [1]                 # 16384 <= 1024 x 16: race free
    assert rw.stages(True, (1, 1, 4194304)) == [2048, 1]
    assert rw.stages(False, (1, 4096, 64)) == [64]               # 4096 <= 32 x 128
    assert rw.stages(False, (1, 65536, 64)) == [256 * 64, 64]
    # a row reduction of a batch above 8: R first ([16 x 4] written), then the batch (a column reduction)
    assert rw.stages(True, (16, 4, 64)) == [64, 4]
    assert rw.stages(True, (1, 1, 16)) == [1]                    # the emitter (32 % 16 == 0), race free


@pytest.mark.parametrize("n, launches", [(16384, 1), (262144, 2), (4194304, 2)])
def test_sum_kernel_counts(n, launches):
    # H200 (sum|f32|N): 1 kernel up to 16384 elements, input_reduce_fusion + input_reduce_fusion_1 above
    assert _pred(jnp.sum, (n,)).launches == launches


def test_sum_of_2_22_bytes():
    p = _pred(jnp.sum, (4194304,))
    t = p.kernel_table
    assert t.op_class == ("xla_reduce",)
    assert float(t.nbytes[0]) == 4 * 4194304 + 4 * 2048         # the input read, 2048 partials written: 16,785,408 B
    assert t.inserted[0] == (("reduce_sum", 4 * 2048 + 4),)      # the partials read, the sum written: 8,196 B


def _colmean(x):
    return jnp.mean(x, axis=0)


@pytest.mark.parametrize("shape, launches", [((64, 64), 2), ((4096, 64), 2), ((65536, 64), 3)])
def test_column_mean_kernel_counts(shape, launches):
    # H200 (colmean|f32|MxC): the reduction, its tree split above 4096 rows, and the mean's scale apart
    assert _pred(_colmean, shape).launches == launches


def test_column_mean_65536_bytes():
    t = _pred(_colmean, (65536, 64)).kernel_table
    k = t.op_class.index("xla_reduce")
    assert float(t.nbytes[k]) == 4 * 65536 * 64 + 4 * 256 * 64   # 16,842,752 B: the input, [256, 64] partials
    assert t.inserted[k] == (("reduce_sum", 4 * (256 * 64 + 64)),)   # 65,792 B


def _layernorm(x, g, b):     # bench/gpu/xla_cases.py's
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b


def test_one_row_layer_norm_is_three_kernels():
    # H200 (layernorm|f32|1xN): input_reduce_fusion_1, input_reduce_fusion, loop_add_fusion; 1 kernel from 64 rows
    p = _pred(_layernorm, (1, 512), (512,), (512,))
    t = p.kernel_table
    assert p.launches == 3
    assert sorted(why for _, why in t.apart.values()) == ["reduction epilogue", "reduction epilogue",
                                                          "reduction prologue"]
    # the mean's sum: x read 2,048 B, the sum written 4 B
    # the variance's sum: the sum 4 B and x 2,048 B read, the mean (read by the third) 4 B and the sum 4 B written
    # the normalisation: the variance's sum 4 B, x 2,048 B, the mean 4 B, g and b 2 x 2,048 B read, y 2,048 B written
    assert [float(b) for b in t.nbytes] == [2048 + 4, 4 + 2048 + 4 + 4, 4 + 2048 + 4 + 2 * 2048 + 2048]
    assert _pred(_layernorm, (64, 512), (512,), (512,)).launches == 1


def test_one_row_softmax_stays_one_kernel():
    # H200 (softmax|f32|1xN): one Triton kernel (no constant scale: its max(-inf, m) XLA removes)
    assert _pred(jax.nn.softmax, (1, 512)).launches == 1


def _onnx_cases():
    from onnx import helper
    from onnx_builders import graph
    import numpy as np
    rng = np.random.default_rng(0)
    mv = graph([helper.make_node("MatMul", ["x", "w"], ["y"])], {"x": [1, 256]}, ["y"],
               {"w": rng.standard_normal((256, 256)).astype(np.float32)})
    ln = graph([helper.make_node("ReduceMean", ["x"], ["m"], axes=[-1]), helper.make_node("Sub", ["x", "m"], ["d"]),
                helper.make_node("Mul", ["d", "d"], ["d2"]), helper.make_node("ReduceMean", ["d2"], ["v"], axes=[-1]),
                helper.make_node("Add", ["v", "eps"], ["ve"]), helper.make_node("Sqrt", ["ve"], ["s"]),
                helper.make_node("Div", ["d", "s"], ["y"])], {"x": [1, 512]}, ["y"],
               {"eps": np.asarray([1e-5], np.float32)}, opset=17)
    return mv, ln


def test_onnx_and_the_search_fast_path_agree():
    from onnx_builders import assert_search_scores_equal_analyze
    mv, ln = _onnx_cases()
    p = analyzer.analyze(mv, hw="h200", runtime="xla").predictions[0]
    assert p.launches == 1 and p.kernel_table.op_class == ("xla_reduce",)
    assert analyzer.analyze(ln, hw="h200", runtime="xla").predictions[0].launches == 3
    assert_search_scores_equal_analyze(mv, "h200", "xla")
    assert_search_scores_equal_analyze(ln, "h200", "xla")


def test_a_tree_split_leaves_the_fast_path_to_the_full_lowering():
    import numpy as np
    from onnx import helper
    from onnx_builders import graph
    m = graph([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], {"x": [262144]}, ["y"])
    cm = analyzer.CostModel("h200", runtime="xla")
    raw = m.SerializeToString()
    got = [cm.score([raw, raw]) for _ in range(3)]
    rep = analyzer.analyze(m, hw="h200", runtime="xla").predictions[0]
    assert rep.launches == 2
    np.testing.assert_allclose(np.asarray(got, np.float64).ravel(), rep.latency_s, rtol=1e-6)
    assert cm._rows.stats["mismatch"] == 0
