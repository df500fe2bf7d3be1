"""A second set of JAX programs for the XLA CPU accuracy bench (``bench/accuracy_xla_cpu.py
--programs heldout2``), written after the first set (``samples/jax_models.py``) had been read many
times: architectures none of opcost's XLA CPU work was decided on.  Plain ``jax.numpy`` / ``lax``;
weights closed over as numpy constants for inference, passed as arguments for a train step
(``jax.grad`` of a mean-square loss + SGD), as the first set does.

- ``gru``: a GRU cell scanned over 32 steps (hidden 128, input 64), inference, batch 8;
- ``conv1d``: three 1-D convolutions (k 5, 32 -> 64 -> 64 -> 64 channels, ReLU) over length 256, a
  global mean and a dense head, inference and train step, batch 8;
- ``mixer``: an MLP-Mixer block (layer norm, token-mixing MLP over 64 tokens, layer norm,
  channel-mixing MLP over 128 channels, GELU, residuals), inference and train step, batch 8;
- ``attn``: multi-head attention (d_model 256, 4 heads, sequence 64; Q/K/V and output
  projections, softmax), inference, batch 4;
- ``dwsep``: a depthwise-separable convolution block (3x3 depthwise over 32 channels, 1x1 to 64,
  ReLU, NCHW 32x32), inference, batch 8;
- ``resmlp``: two residual blocks of layer norm + dense 512 -> 2048 -> 512 with GELU, inference,
  batch 32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

import xla_cpu_sets as sets
from xla_cpu_sets import ln, w


def gru_params(rng):
    return {k: w(rng, *s) for k, s in (("wz", (64, 128)), ("uz", (128, 128)), ("wr", (64, 128)),
                                         ("ur", (128, 128)), ("wh", (64, 128)), ("uh", (128, 128)))}


def gru(p, xs):
    """xs [T, B, 64] -> the last hidden state [B, 128]."""
    def step(h, x):
        z = jax.nn.sigmoid(x @ p["wz"] + h @ p["uz"])
        r = jax.nn.sigmoid(x @ p["wr"] + h @ p["ur"])
        c = jnp.tanh(x @ p["wh"] + (r * h) @ p["uh"])
        h = (1 - z) * h + z * c
        return h, None
    return lax.scan(step, jnp.zeros((xs.shape[1], 128), xs.dtype), xs)[0]


def conv1d_params(rng):
    return {"c1": w(rng, 64, 32, 5), "c2": w(rng, 64, 64, 5), "c3": w(rng, 64, 64, 5), "d": w(rng, 64, 10)}


def conv1d(p, x):
    """x [B, 32, 256] -> [B, 10]."""
    dn = ("NCH", "OIH", "NCH")
    for k in ("c1", "c2", "c3"):
        x = jax.nn.relu(lax.conv_general_dilated(x, p[k], (1,), "SAME", dimension_numbers=dn))
    return jnp.mean(x, -1) @ p["d"]


def mixer_params(rng):
    return {"t1": w(rng, 64, 256), "t2": w(rng, 256, 64), "c1": w(rng, 128, 512), "c2": w(rng, 512, 128)}


def mixer(p, x):
    """x [B, 64 tokens, 128 channels] -> same."""
    y = jnp.swapaxes(ln(x), 1, 2)                       # [B, 128, 64]
    y = jax.nn.gelu(y @ p["t1"]) @ p["t2"]
    x = x + jnp.swapaxes(y, 1, 2)
    return x + jax.nn.gelu(ln(x) @ p["c1"]) @ p["c2"]


def attn_params(rng):
    return {k: w(rng, 256, 256) for k in ("q", "k", "v", "o")}


def attn(p, x):
    """x [B, 64, 256] -> same; 4 heads of 64."""
    b, s, _ = x.shape
    def heads(t):
        return t.reshape(b, s, 4, 64).transpose(0, 2, 1, 3)
    q, k, v = heads(x @ p["q"]), heads(x @ p["k"]), heads(x @ p["v"])
    a = jax.nn.softmax(q @ jnp.swapaxes(k, -1, -2) / 8.0, axis=-1)
    return (a @ v).transpose(0, 2, 1, 3).reshape(b, s, 256) @ p["o"]


def dwsep_params(rng):
    return {"dw": w(rng, 32, 1, 3, 3), "pw": w(rng, 64, 32, 1, 1)}


def dwsep(p, x):
    """x [B, 32, 32, 32] NCHW -> [B, 64, 32, 32]."""
    dn = ("NCHW", "OIHW", "NCHW")
    y = lax.conv_general_dilated(x, p["dw"], (1, 1), "SAME", dimension_numbers=dn, feature_group_count=32)
    return jax.nn.relu(lax.conv_general_dilated(jax.nn.relu(y), p["pw"], (1, 1), "SAME", dimension_numbers=dn))


def resmlp_params(rng):
    return {f"{k}{i}": w(rng, *s) for i in (1, 2) for k, s in (("a", (512, 2048)), ("b", (2048, 512)))}


def resmlp(p, x):
    """x [B, 512] -> same."""
    for i in (1, 2):
        x = x + jax.nn.gelu(ln(x) @ p[f"a{i}"]) @ p[f"b{i}"]
    return x


NETS = {"gru": (gru, gru_params, (32, 8, 64)), "conv1d": (conv1d, conv1d_params, (8, 32, 256)),
        "mixer": (mixer, mixer_params, (8, 64, 128)), "attn": (attn, attn_params, (4, 64, 256)),
        "dwsep": (dwsep, dwsep_params, (8, 32, 32, 32)), "resmlp": (resmlp, resmlp_params, (32, 512))}
TRAINED = ("conv1d", "mixer")


def programs():
    """``[(name, fn, example shapes, params_argnums or None)]`` as ``accuracy_xla_cpu.programs``
    (``xla_cpu_sets.programs``)."""
    return sets.programs(NETS, TRAINED, 7, lambda name, shape: f"b{shape[1] if name == 'gru' else shape[0]}")
