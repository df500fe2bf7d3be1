"""XLA's GPU fusions into matrix kernels in the ``xla`` plan (``xla_gpu_joins``): a convolution
takes in its inference batch norm, bias, side input and ReLU (cuDNN's convBiasActivationForward,
``CudnnFusedConvRewriter``), an M = 1 dot takes in its elementwise producer kernel (a reduction
fusion's prologue); a GPU profile only, the TPU's (and the XLA CPU's) plans unchanged.

Programs (f32, weights closed over: constants), kernels and bytes in closed form beside each case:

- MLP at batch 1: x [1, 32] -> Dense 32x64 + bias + ReLU -> Dense 64x16 + bias + ReLU -> Dense 16x8
  + bias.  Apart: 3 dots + 3 bias(+ReLU) loop fusions = 6 kernels.  Joined: fc1 | bias1, ReLU, fc2 |
  bias2, ReLU, fc3 | bias3 = 4.  The fc2 kernel reads fc1's result 1*64*4 = 256 B, bias1 64*4 =
  256 B and w2 64*16*4 = 4,096 B and writes 1*16*4 = 64 B: 4,672 B (apart: the dot's 256 + 4,096 +
  64 = 4,416 B and the loop fusion's 256 + 256 + 256 = 768 B, 5,184 B in two launches).
- At batch 8 no dot has M = 1: the same 6 kernels as without the rule.
- Conv + inference batch norm + ReLU: x [1, 3, 8, 8], w [4, 3, 3, 3], BN mean/var/scale/shift [4]
  each: one kernel reading x 3*8*8*4 = 768 B, w 4*3*3*3*4 = 432 B, the four per-channel constants
  4*4*4 = 64 B and writing [1, 4, 8, 8] 1,024 B: 2,288 B.  With the batch norm's statistics as
  program inputs (a training graph) it stays a kernel apart: 2 kernels.
- The same with the filter and the batch norm's four vectors passed as jit arguments
  (``params_argnums=0``: runtime inputs XLA cannot fold into the filter, as XLA's compile of
  bench/xla_gpu_hlo.py ``--params-arg`` shows): the convolution alone reads x 768 B and w 432 B
  and writes 1,024 B (2,224 B); the batch norm + ReLU kernel reads that 1,024 B and the four
  vectors 64 B and writes 1,024 B (2,112 B): 2 kernels.  A bias passed as an argument with a
  ReLU is cuDNN's epilogue: one kernel of 768 + 432 + 16 + 1,024 = 2,240 B.
- A one-token transformer block (D = 32, a 4-row key/value cache; layer norms, GELU MLP): 12 kernels
  (10 before each one-row layer norm became XLA's three kernels, ``xla_gpu_reduce``: the mean's
  reduction; the variance's, with the centring as its prologue; the normalisation, which the next
  M = 1 dot takes in as its prologue): the q bias joins the scores dot (K_cache @ q, N = 1) and
  the up bias + GELU join the down-projection (M = 1); the softmax (its reductions) and a dot fed
  by a dot stay apart.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from onnx import helper
from onnx_builders import assert_search_scores_equal_analyze, graph

import analyzer

GPU, TPU = "a100", "tpu-v5e"
F32 = jnp.float32
RNG = np.random.default_rng(0)
W1, B1 = RNG.standard_normal((32, 64)).astype(np.float32), RNG.standard_normal(64).astype(np.float32)
W2, B2 = RNG.standard_normal((64, 16)).astype(np.float32), RNG.standard_normal(16).astype(np.float32)
W3, B3 = RNG.standard_normal((16, 8)).astype(np.float32), RNG.standard_normal(8).astype(np.float32)


def mlp(x):
    h = jax.nn.relu(x @ W1 + B1)
    h = jax.nn.relu(h @ W2 + B2)
    return h @ W3 + B3


def _kernels(fn, *args, hw=GPU, **kw):
    """{kernel name: (member names, bytes per launch)} of ``fn``'s ``xla`` plan on ``hw``."""
    rep = analyzer.analyze_jax(fn, *args, hw=hw, runtime="xla", **kw)
    p = rep.predictions[0]
    out: dict[str, tuple[list[str], float]] = {}
    for i, nd in enumerate(rep.nodes):
        t = p.explain(i)
        if t is not None:
            out.setdefault(t.kernel, ([], t.bytes))[0].append(nd.name)
    return out


def _holding(kernels, name):
    return next(v for v in kernels.values() if any(m.endswith(name) for m in v[0]))


def test_mlp_at_batch_1_dots_take_their_bias_and_relu():
    ks = _kernels(mlp, jax.ShapeDtypeStruct((1, 32), F32))
    assert len(ks) == 4
    members, nbytes = _holding(ks, "dot_general#2")   # fc2: bias1, ReLU, dot
    assert len(members) == 4 and nbytes == 256 + 256 + 4_096 + 64
    # on the TPU profile (no such rule) the 6 kernels stand
    assert len(_kernels(mlp, jax.ShapeDtypeStruct((1, 32), F32), hw=TPU)) == 6


def test_mlp_at_batch_8_is_unchanged():
    ks = _kernels(mlp, jax.ShapeDtypeStruct((8, 32), F32))
    assert len(ks) == 6
    assert all(len(m) == 1 for m, _ in ks.values() if any("dot_general" in x for x in m))


CW = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
MEAN, VAR, SCALE, SHIFT = (RNG.random(4).astype(np.float32) + 0.5 for _ in range(4))


def _conv(x):
    return jax.lax.conv_general_dilated(x, CW, (1, 1), ((1, 1), (1, 1)),
                                        dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _bn(y, mean, var, scale, shift):
    def c(v):
        return v[None, :, None, None]
    return (y - c(mean)) / jnp.sqrt(c(var) + 1e-5) * c(scale) + c(shift)


def test_conv_takes_its_inference_batch_norm_and_relu():
    ks = _kernels(lambda x: jax.nn.relu(_bn(_conv(x), MEAN, VAR, SCALE, SHIFT)),
                  jax.ShapeDtypeStruct((1, 3, 8, 8), F32))
    assert len(ks) == 1
    (members, nbytes), = ks.values()
    assert len(members) == 7   # conv, sub, sqrt, div, mul, add, max
    assert nbytes == 768 + 432 + 64 + 1_024
    assert len(_kernels(lambda x: jax.nn.relu(_bn(_conv(x), MEAN, VAR, SCALE, SHIFT)),
                        jax.ShapeDtypeStruct((1, 3, 8, 8), F32), hw=TPU)) == 2


def test_batch_norm_of_program_inputs_stays_apart():
    v = jax.ShapeDtypeStruct((4,), F32)
    ks = _kernels(lambda x, m, s, g, b: jax.nn.relu(_bn(_conv(x), m, s, g, b)),
                  jax.ShapeDtypeStruct((1, 3, 8, 8), F32), v, v, v, v)
    convs = [m for m, _ in ks.values() if any("conv_general_dilated" in x for x in m)]
    assert convs == [[next(x for x in convs[0] if "conv_general_dilated" in x)]]


def _conv_of(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)), dimension_numbers=("NCHW", "OIHW", "NCHW"))


V4 = jax.ShapeDtypeStruct((4,), F32)
PARAMS = {"w": jax.ShapeDtypeStruct((4, 3, 3, 3), F32), "mean": V4, "var": V4, "scale": V4, "shift": V4, "b": V4}
X = jax.ShapeDtypeStruct((1, 3, 8, 8), F32)


def test_batch_norm_of_weights_passed_as_arguments_stays_apart():
    ks = _kernels(lambda p, x: jax.nn.relu(_bn(_conv_of(x, p["w"]), p["mean"], p["var"], p["scale"], p["shift"])),
                  PARAMS, X, params_argnums=0)
    assert len(ks) == 2
    conv, = (v for v in ks.values() if any("conv_general_dilated" in m for m in v[0]))
    assert conv == (["conv_general_dilated"], 768 + 432 + 1_024)
    (members, nbytes), = (v for v in ks.values() if v is not conv)
    assert len(members) == 11 and nbytes == 1_024 + 64 + 1_024   # 4 broadcasts, sub, add, sqrt, div, mul, add, max


def test_bias_passed_as_an_argument_joins_the_convolution():
    ks = _kernels(lambda p, x: jax.nn.relu(_conv_of(x, p["w"]) + p["b"][None, :, None, None]),
                  PARAMS, X, params_argnums=0)
    (members, nbytes), = ks.values()
    assert len(members) == 4 and nbytes == 768 + 432 + 16 + 1_024   # conv, broadcast, add, max


D, T = 32, 4
WQ, BQ = RNG.standard_normal((D, D)).astype(np.float32), RNG.standard_normal(D).astype(np.float32)
KC, VC = RNG.standard_normal((T, D)).astype(np.float32), RNG.standard_normal((T, D)).astype(np.float32)
WO, BO = RNG.standard_normal((D, D)).astype(np.float32), RNG.standard_normal(D).astype(np.float32)
WU, BU = RNG.standard_normal((D, 4 * D)).astype(np.float32), RNG.standard_normal(4 * D).astype(np.float32)
WD, BD = RNG.standard_normal((4 * D, D)).astype(np.float32), RNG.standard_normal(D).astype(np.float32)


def _ln(x):
    m = x.mean(-1, keepdims=True)
    return (x - m) * jax.lax.rsqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)


def decode_block(x):
    """One token x [D] against a key/value cache of T rows."""
    q = _ln(x) @ WQ + BQ
    p = jax.nn.softmax((KC @ q) / np.sqrt(D))
    x = x + (p @ VC) @ WO + BO
    return x + jax.nn.gelu(_ln(x) @ WU + BU, approximate=False) @ WD + BD


def test_one_token_transformer_block():
    x = jax.ShapeDtypeStruct((D,), F32)
    assert len(_kernels(decode_block, x, hw=TPU)) == 12
    ks = _kernels(decode_block, x)
    assert len(ks) == 12
    scores, nbytes = _holding(ks, "dot_general#2")   # K_cache @ q with q's bias add
    assert sorted(scores) == ["add#2", "dot_general#2"]
    # reads the q dot's result D*4 = 128 B, its bias 128 B and K_cache T*D*4 = 512 B; writes T*4 = 16 B
    assert nbytes == 128 + 128 + 512 + 16
    down, nbytes = _holding(ks, "dot_general#6")   # the up bias, GELU, the down projection
    assert any("erf" in m for m in down)   # (jax.nn.gelu's erfc)
    # reads the up dot's result 4D*4 = 512 B, its bias 512 B and WD 4D*D*4 = 16,384 B;
    # writes D*4 = 128 B
    assert nbytes == 512 + 512 + 16_384 + 128


def _onnx_conv_relu():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["y", "skip"], ["s"]),
             helper.make_node("Relu", ["s"], ["z"]),
             helper.make_node("Conv", ["z", "w2"], ["y2"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["y2"], ["out"])]
    return graph(nodes, {"x": [1, 4, 8, 8], "skip": [1, 4, 8, 8]}, ["out"],
                 {"w": RNG.standard_normal((4, 4, 3, 3)).astype(np.float32), "b": np.zeros(4, np.float32),
                  "w2": RNG.standard_normal((4, 4, 3, 3)).astype(np.float32)})


def test_onnx_conv_side_input_relu_and_search_agree():
    # Conv+bias (in the node) + skip Add + Relu: one kernel; the second conv's Sigmoid is no
    # cuDNN epilogue: 3 kernels (5 nodes apart: 4)
    m = _onnx_conv_relu()
    assert analyzer.analyze(m, hw=GPU, runtime="xla").predictions[0].launches == 3
    assert analyzer.analyze(m, hw=TPU, runtime="xla").predictions[0].launches == 4
    assert_search_scores_equal_analyze(m, GPU, "xla")


def test_onnx_matrix_vector_prologue_and_search_agree():
    # x [1, 16] @ w1 -> + b -> Relu -> @ w2: the second MatMul (M = 1) takes the Add and Relu:
    # 2 kernels (apart: 3)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["out"])]
    m = graph(nodes, {"x": [1, 16]}, ["out"], {"w1": RNG.standard_normal((16, 16)).astype(np.float32),
                                               "b": np.zeros(16, np.float32),
                                               "w2": RNG.standard_normal((16, 8)).astype(np.float32)})
    assert analyzer.analyze(m, hw=GPU, runtime="xla").predictions[0].launches == 2
    assert analyzer.analyze(m, hw=TPU, runtime="xla").predictions[0].launches == 3
    assert_search_scores_equal_analyze(m, GPU, "xla")
