"""A third set of JAX programs for the XLA CPU accuracy bench (``bench/accuracy_xla_cpu.py
--programs heldout3``), written and committed before any of them was timed or predicted, after the
second set (``bench/xla_cpu_heldout.py``) had been read twice: architectures neither earlier set
has, so that a change made on what the second set showed is judged on programs it was not made
on.  Plain ``jax.numpy`` / ``lax``; weights closed over as numpy constants for inference, passed
as arguments for a train step (``jax.grad`` of a mean-square loss + SGD), as the other sets do.

- ``tcn``: a temporal convolution stack, three causal 1-D convolutions (k 3, dilations 1, 2, 4,
  48 channels, ReLU, residuals) over length 128 and a dense head on the last step, inference and
  train step, batch 4;
- ``convnext``: a ConvNeXt block in NHWC (7x7 depthwise over 48 channels at 16x16, layer norm over
  channels, 48 -> 192 -> 48 pointwise MLP with GELU, residual), inference and train step, batch 4;
- ``invres``: a MobileNetV2 inverted residual in NCHW (1x1 24 -> 96, ReLU6, 3x3 depthwise
  stride 2, ReLU6, 1x1 96 -> 32) at 28x28, inference, batch 8;
- ``decoder``: a pre-LN causal self-attention block (d_model 128, 8 heads of 16, sequence 128,
  tanh-GELU MLP 512), inference and train step, batch 2;
- ``autoenc``: an MLP autoencoder 784-512-64-512-784 (ReLU, sigmoid output), inference and
  train step, batch 64;
- ``unet``: a two-level U-Net piece in NCHW (3x3 16 -> 32, 2x2 max pool, 3x3 32 -> 32, nearest
  upsampling, concatenation with the skip, 3x3 64 -> 16) at 32x32, inference, batch 2;
- ``gcn``: a two-layer graph convolution over a dense normalised adjacency of 256 nodes
  (A X W, 64 -> 128 -> 16 features), inference;
- ``patchify``: a ViT stem (4x4 stride-4 convolution 3 -> 96 over 64x64, tokens, layer norm,
  position embedding), inference, batch 8.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import xla_cpu_sets as sets
from xla_cpu_sets import ln, w


def tcn_params(rng):
    return {"c1": w(rng, 48, 48, 3), "c2": w(rng, 48, 48, 3), "c3": w(rng, 48, 48, 3), "d": w(rng, 48, 10)}


def tcn(p, x):
    """x [B, 48, 128] -> [B, 10]; causal: each convolution pads (k - 1) x dilation on the left."""
    dn = ("NCH", "OIH", "NCH")
    for k, d in (("c1", 1), ("c2", 2), ("c3", 4)):
        y = lax.conv_general_dilated(x, p[k], (1,), [(2 * d, 0)], rhs_dilation=(d,), dimension_numbers=dn)
        x = x + jax.nn.relu(y)
    return x[:, :, -1] @ p["d"]


def convnext_params(rng):
    return {"dw": w(rng, 7, 7, 1, 48), "a": w(rng, 48, 192), "b": w(rng, 192, 48)}


def convnext(p, x):
    """x [B, 16, 16, 48] NHWC -> same."""
    y = lax.conv_general_dilated(x, p["dw"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                 feature_group_count=48)
    return x + jax.nn.gelu(ln(y) @ p["a"], approximate=False) @ p["b"]


def invres_params(rng):
    return {"e": w(rng, 96, 24, 1, 1), "dw": w(rng, 96, 1, 3, 3), "p": w(rng, 32, 96, 1, 1)}


def invres(p, x):
    """x [B, 24, 28, 28] NCHW -> [B, 32, 14, 14]."""
    dn = ("NCHW", "OIHW", "NCHW")
    relu6 = lambda t: jnp.clip(t, 0.0, 6.0)   # noqa: E731
    y = relu6(lax.conv_general_dilated(x, p["e"], (1, 1), "VALID", dimension_numbers=dn))
    y = relu6(lax.conv_general_dilated(y, p["dw"], (2, 2), [(1, 1), (1, 1)], dimension_numbers=dn,
                                       feature_group_count=96))
    return lax.conv_general_dilated(y, p["p"], (1, 1), "VALID", dimension_numbers=dn)


def decoder_params(rng):
    return {"qkv": w(rng, 128, 384), "o": w(rng, 128, 128), "a": w(rng, 128, 512), "b": w(rng, 512, 128)}


def decoder(p, x):
    """x [B, 128, 128] -> same; 8 heads of 16, causal, tanh GELU."""
    return sets.attention_block(p, x, 8, causal=True, approximate=True)


def autoenc_params(rng):
    return {"e1": w(rng, 784, 512), "e2": w(rng, 512, 64), "d1": w(rng, 64, 512), "d2": w(rng, 512, 784)}


def autoenc(p, x):
    """x [B, 784] -> same."""
    h = jax.nn.relu(jax.nn.relu(x @ p["e1"]) @ p["e2"])
    return jax.nn.sigmoid(jax.nn.relu(h @ p["d1"]) @ p["d2"])


def unet_params(rng):
    return {"c1": w(rng, 32, 16, 3, 3), "c2": w(rng, 32, 32, 3, 3), "c3": w(rng, 16, 64, 3, 3)}


def unet(p, x):
    """x [B, 16, 32, 32] NCHW -> same."""
    dn = ("NCHW", "OIHW", "NCHW")
    def conv(t, w):
        return lax.conv_general_dilated(t, w, (1, 1), "SAME", dimension_numbers=dn)
    s = jax.nn.relu(conv(x, p["c1"]))
    d = lax.reduce_window(s, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    d = jax.nn.relu(conv(d, p["c2"]))
    u = jnp.repeat(jnp.repeat(d, 2, axis=2), 2, axis=3)
    return conv(jnp.concatenate([s, u], axis=1), p["c3"])


def gcn_params(rng):
    a = (rng.random((256, 256)) < 0.05).astype(np.float32) + np.eye(256, dtype=np.float32)
    a = np.maximum(a, a.T)
    deg = a.sum(1)
    return {"adj": (a / np.sqrt(np.outer(deg, deg))).astype(np.float32), "w1": w(rng, 64, 128), "w2": w(rng, 128, 16)}


def gcn(p, x):
    """x [256 nodes, 64] -> [256, 16]."""
    h = jax.nn.relu(p["adj"] @ (x @ p["w1"]))
    return p["adj"] @ (h @ p["w2"])


def patchify_params(rng):
    return {"w": w(rng, 96, 3, 4, 4), "pos": w(rng, 256, 96)}


def patchify(p, x):
    """x [B, 3, 64, 64] NCHW -> tokens [B, 256, 96]."""
    y = lax.conv_general_dilated(x, p["w"], (4, 4), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    t = y.reshape(y.shape[0], 96, 256).transpose(0, 2, 1)
    return ln(t) + p["pos"]


NETS = {"tcn": (tcn, tcn_params, (4, 48, 128)), "convnext": (convnext, convnext_params, (4, 16, 16, 48)),
        "invres": (invres, invres_params, (8, 24, 28, 28)), "decoder": (decoder, decoder_params, (2, 128, 128)),
        "autoenc": (autoenc, autoenc_params, (64, 784)), "unet": (unet, unet_params, (2, 16, 32, 32)),
        "gcn": (gcn, gcn_params, (256, 64)), "patchify": (patchify, patchify_params, (8, 3, 64, 64))}
TRAINED = ("tcn", "convnext", "decoder", "autoenc")


def programs():
    """``[(name, fn, example shapes, params_argnums or None)]`` as ``accuracy_xla_cpu.programs``
    (``xla_cpu_sets.programs``)."""
    return sets.programs(NETS, TRAINED, 11, lambda name, shape: f"n{shape[0]}" if name == "gcn" else f"b{shape[0]}")
