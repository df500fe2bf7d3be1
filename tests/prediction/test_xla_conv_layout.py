"""XLA GPU's layout transposes around cuDNN convolutions in the ``xla`` plan
(``prediction.xla_conv_layout``): which tensors are transposed, their closed-form bytes, and the
kernel counts the lent H200 measured (jax 0.11.2; ``bench/results/h200_xla_ops_2026-12-04.csv``,
``h200_jax_models_2026-12-04.csv``, kernel names in ``h200_xla_kernels_2026-12-04.json.gz``)."""

from __future__ import annotations

import csv
import gzip
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import analyzer
import hardware_db
from analyzer.prediction import lowering, runtimes, xla_conv_layout
from samples import jax_models as M

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "bench", "results")
H200, A100 = "h200", "a100-80gb-sxm"
NCHW = ("NCHW", "OIHW", "NCHW")
NHWC = ("NHWC", "HWIO", "NHWC")
F32, BF16 = jnp.float32, jnp.bfloat16


def S(*shape, dt=F32):
    return jax.ShapeDtypeStruct(shape, dt)


def _conv(dn=NCHW):
    return lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=dn)


def _pred(fn, *args, hw=H200, **kw):
    return analyzer.analyze_jax(fn, *args, hw=hw, **kw).predictions[0]


def _plan(fn, *args, hw=H200, **kw):
    """The ``xla`` plan of ``fn`` on ``hw`` (``lowering.lower`` as ``predict`` calls it)."""
    rep = analyzer.analyze_jax(fn, *args, **kw)
    outs = frozenset(rep.model.get("outputs") or ())
    return lowering.lower(list(rep.nodes), [hardware_db.get(hw)], None, runtimes.get("xla"), graph_outputs=outs).plan


def _inserted(plan):
    return [(op, b) for ops, bs in zip(plan.extra_ops, plan.extra_bytes or [()] * len(plan.extra_ops))
            for op, b in zip(ops, bs)]


def test_a_single_nchw_conv_is_four_kernels_with_closed_form_bytes():
    # x [8, 16, 32, 32] f32 -> NHWC: 2 x 8*16*32*32*4 = 2 x 524,288 = 1,048,576 B (read + write);
    # w [16, 16, 3, 3] -> OHWI: 2 x 16*16*3*3*4 = 2 x 9,216 = 18,432 B; the result back to NCHW:
    # 1,048,576 B.  The H200's HLO: wrapped_transpose (x), wrapped_transpose.1 (w), the cuDNN
    # call (b01f_o01i->b01f), wrapped_transpose.2 (the result)
    plan = _plan(_conv(), S(8, 16, 32, 32), S(16, 16, 3, 3))
    assert sorted(_inserted(plan)) == sorted([("transpose", 1_048_576), ("transpose", 18_432),
                                              ("transpose", 1_048_576)])
    assert _pred(_conv(), S(8, 16, 32, 32), S(16, 16, 3, 3)).launches == 4


def _conv_rows():
    with open(os.path.join(RESULTS, "h200_xla_ops_2026-12-04.csv"), newline="") as f:
        return [r for r in csv.DictReader(f) if r["family"] == "conv"]


def _specs(args: str):
    out = []
    for a in args.split(";"):
        dt, dims = a[:-1].split("[")
        out.append(S(*(int(d) for d in dims.split(",")), dt={"f32": F32, "bf16": BF16}[dt]))
    return out


def test_every_h200_conv_row_has_the_kernels_measured():
    rows = _conv_rows()
    assert len(rows) == 9
    for r in rows:
        assert _pred(_conv(), *_specs(r["args"])).launches == int(r["n_kernels"]) == 4, r["key"]


def test_the_layout_follows_xla_heuristic_per_generation():
    # f32 on an A100 (Ampere, compute capability 8.0): NCHW for cuDNN, no transpose; bf16 there
    # and f32 / bf16 on Hopper: NHWC, 3 transposes
    x, w = S(8, 16, 32, 32), S(16, 16, 3, 3)
    xb, wb = S(8, 16, 32, 32, dt=BF16), S(16, 16, 3, 3, dt=BF16)
    assert _pred(_conv(), x, w, hw=A100).launches == 1
    assert _pred(_conv(), xb, wb, hw=A100).launches == 4
    assert _pred(_conv(), xb, wb).launches == 4
    assert xla_conv_layout.channels_last("hopper", "float64", 2) is False
    assert xla_conv_layout.channels_last("other", "int8", 2) is True
    assert xla_conv_layout.channels_last("volta", "float16", 3) is False


def test_an_nhwc_program_transposes_only_what_differs():
    # NHWC / HWIO on the H200: the input and result are cuDNN's order already, the filter
    # HWIO -> OHWI is one transpose (2 x 3*3*16*16*4 = 18,432 B): 2 kernels; on the A100 in f32
    # (NCHW for cuDNN) the input, filter and result: 4
    x, w = S(8, 32, 32, 16), S(3, 3, 16, 16)
    assert _inserted(_plan(_conv(NHWC), x, w)) == [("transpose", 18_432)]
    assert _pred(_conv(NHWC), x, w, hw=A100).launches == 4


def test_a_transpose_that_moves_only_size_one_dims_is_a_bitcast():
    # a 1x1 filter [16, 8, 1, 1] -> OHWI [16, 1, 1, 8]: same element order, no kernel (left: the
    # input and the result); one input channel, x [2, 1, 8, 8] -> NHWC [2, 8, 8, 1] and its
    # filter [16, 1, 3, 3] -> [16, 3, 3, 1]: neither (left: the result)
    assert _pred(_conv(), S(2, 8, 8, 8), S(16, 8, 1, 1)).launches == 1 + 2
    assert _pred(_conv(), S(2, 1, 8, 8), S(16, 1, 3, 3)).launches == 1 + 1


def test_a_closed_over_filter_is_transposed_at_compile_time():
    w = jnp.asarray(np.ones((16, 16, 3, 3), np.float32))
    assert _pred(lambda x: _conv()(x, w), S(8, 16, 32, 32)).launches == 1 + 2


def test_a_loop_fusion_writes_its_conv_operand_and_reads_its_result_in_cudnn_order():
    # relu(x) -> conv -> tanh: the relu writes NHWC and the tanh reads NHWC and writes NCHW (the
    # transposes fuse into them): [relu], w's transpose, the conv, [tanh] = 4
    def f(x, w):
        return jnp.tanh(_conv()(jax.nn.relu(x), w))
    plan = _plan(f, S(8, 16, 32, 32), S(16, 16, 3, 3))
    assert _inserted(plan) == [("transpose", 18_432)]
    assert _pred(f, S(8, 16, 32, 32), S(16, 16, 3, 3)).launches == 4


def test_an_input_read_by_two_convs_is_transposed_once():
    # conv(x, w1) + conv(x, w2): x once, w1, w2, the two convs, [add] (reads NHWC, writes the
    # NCHW result): 3 + 2 + 1 = 6
    def f(x, w1, w2):
        return _conv()(x, w1) + _conv()(x, w2)
    assert _pred(f, S(8, 16, 32, 32), S(16, 16, 3, 3), S(16, 16, 3, 3)).launches == 6


def _cnn(b: int, dt=F32):
    params = jax.tree_util.tree_map(lambda s: S(*s.shape, dt=dt), M.cnn_params(abstract=True))
    return M.cnn, params, S(b, 3, 32, 32, dt=dt)


def _measured(key: str) -> list[str]:
    with gzip.open(os.path.join(RESULTS, "h200_xla_kernels_2026-12-04.json.gz"), "rt") as f:
        return json.load(f)["run1:models_jax_kernels.json"][key]["names"]


def test_the_cnn_transposes_its_batch_and_each_filter_argument():
    # weights as jit arguments: the batch x [1, 3, 32, 32] (2 x 12,288 = 24,576 B) and the five
    # filters OIHW -> OHWI: conv1 [16, 3, 3, 3] 2 x 1,728 = 3,456; conv2, conv3 [16, 16, 3, 3]
    # 2 x 9,216 = 18,432 each; conv4 [32, 16, 3, 3] 2 x 18,432 = 36,864; conv5 (4 groups)
    # [32, 8, 3, 3] 18,432; the result [1, 10] comes from the Dense layer: none.  The H200 ran
    # 6 wrapped_transpose kernels, 17 in all at batch 1 (the plan's 11 + 6)
    fn, params, x = _cnn(1)
    plan = _plan(fn, params, x, params_argnums=0)
    assert sorted(b for _, b in _inserted(plan)) == sorted([24_576, 3_456, 18_432, 18_432, 36_864, 18_432])
    names = _measured("cnn|params_arg|f32|1")
    assert sum(n.startswith("wrapped_transpose") for n in names) == 6 == len(_inserted(plan))
    assert _pred(fn, params, x, params_argnums=0).launches == len(names) == 17


@pytest.mark.parametrize("b", [1, 8, 64])
def test_the_cnn_with_closed_over_weights_transposes_its_batch_only(b):
    # cnn_infer: the filters are constants (transposed at compile time); the H200 ran 9 kernels
    # (wrapped_transpose, 5 convolutions, 3 more) at every batch
    names = _measured(f"cnn|infer_const|f32|{b}")
    assert sum(n.startswith("wrapped_transpose") for n in names) == 1
    assert _pred(M.cnn_infer, S(b, 3, 32, 32)).launches == len(names) == 9


def test_the_cnn_at_batch_8_differs_by_the_dense_bias_only():
    # measured 16: the same 6 transposes, but XLA's Triton GEMM fusion takes the Dense layer's
    # bias add in at M = 8 (gemm_fusion_dot_general_1), which the plan keeps apart: 17
    fn, params, x = _cnn(8)
    names = _measured("cnn|params_arg|f32|8")
    assert sum(n.startswith("wrapped_transpose") for n in names) == 6
    assert "wrapped_add" not in names and len(names) == 16
    assert _pred(fn, params, x, params_argnums=0).launches == 17


def test_explain_shows_each_transpose():
    from analyzer.render.explain import render_explain

    rep = analyzer.analyze_jax(_conv(), S(8, 16, 32, 32), S(16, 16, 3, 3), hw=H200)
    i = next(k for k, n in enumerate(rep.nodes) if n.op == "conv_general_dilated")
    text = render_explain(rep, i, None)
    assert text.count("inserted launch transpose") == 3
    assert text.count("its 1.05 MB at its class's rate") == 2 and "its 18.4 KB at its class's rate" in text
