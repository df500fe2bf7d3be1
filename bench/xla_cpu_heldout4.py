"""A fourth set of JAX programs for the XLA CPU accuracy bench (``bench/accuracy_xla_cpu.py
--programs heldout4``), written and committed before any of them was timed or predicted, after the
third set (``bench/xla_cpu_heldout3.py``) had been read once: architectures none of the earlier
sets has, half of them train steps (the third set's weakest part), to judge changes made after
that read.  Plain ``jax.numpy`` / ``lax``; weights closed over as numpy constants for inference,
passed as arguments for a train step (``jax.grad`` of a mean-square loss + SGD).

- ``effnet``: an EfficientNet-style block in NCHW (1x1 16 -> 64, swish, 5x5 depthwise, swish,
  squeeze-and-excitation 64 -> 8 -> 64, 1x1 64 -> 16, residual) at 24x24, inference and train
  step, batch 4;
- ``lstm``: an LSTM (input 32, hidden 96) scanned over 24 steps, a dense head on the last state,
  inference and train step, batch 16;
- ``wide_mlp``: a classifier 1024 -> 1024 -> 1024 -> 100 with ReLU, inference and train step,
  batch 128;
- ``vit_block``: a pre-LN transformer block (d 96, 6 heads of 16, 64 tokens, erf-GELU MLP 384),
  inference and train step, batch 4;
- ``resblock``: a ResNet basic block in NCHW (3x3 24 -> 24, ReLU, 3x3, residual, ReLU) at 20x20,
  inference and train step, batch 8 (first written at 32 channels and 16x16, a calibration row's
  layer; changed before any timing or prediction).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

import xla_cpu_sets as sets
from xla_cpu_sets import w

NCHW = ("NCHW", "OIHW", "NCHW")


def _conv(x, w, pad=0, groups=1):
    return lax.conv_general_dilated(x, w, (1, 1), [(pad, pad)] * 2, dimension_numbers=NCHW,
                                    feature_group_count=groups)


def effnet_params(rng):
    return {"e": w(rng, 64, 16, 1, 1), "dw": w(rng, 64, 1, 5, 5), "s1": w(rng, 64, 8), "s2": w(rng, 8, 64),
            "p": w(rng, 16, 64, 1, 1)}


def effnet(p, x):
    """x [B, 16, 24, 24] -> same."""
    y = jax.nn.swish(_conv(x, p["e"]))
    y = jax.nn.swish(_conv(y, p["dw"], pad=2, groups=64))
    s = jax.nn.sigmoid(jax.nn.swish(jnp.mean(y, (2, 3)) @ p["s1"]) @ p["s2"])
    return x + _conv(y * s[:, :, None, None], p["p"])


def lstm_params(rng):
    return {"wx": w(rng, 32, 384), "wh": w(rng, 96, 384), "d": w(rng, 96, 10)}


def lstm(p, xs):
    """xs [T, B, 32] -> [B, 10]."""
    def step(carry, x):
        h, c = carry
        i, f, g, o = jnp.split(x @ p["wx"] + h @ p["wh"], 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h = jax.nn.sigmoid(o) * jnp.tanh(c)
        return (h, c), None
    z = jnp.zeros((xs.shape[1], 96), xs.dtype)
    return lax.scan(step, (z, z), xs)[0][0] @ p["d"]


def wide_mlp_params(rng):
    return {"a": w(rng, 1024, 1024), "b": w(rng, 1024, 1024), "c": w(rng, 1024, 100)}


def wide_mlp(p, x):
    """x [B, 1024] -> [B, 100]."""
    return jax.nn.relu(jax.nn.relu(x @ p["a"]) @ p["b"]) @ p["c"]


def vit_block_params(rng):
    return {"qkv": w(rng, 96, 288), "o": w(rng, 96, 96), "a": w(rng, 96, 384), "b": w(rng, 384, 96)}


def vit_block(p, x):
    """x [B, 64, 96] -> same; 6 heads of 16, erf GELU."""
    return sets.attention_block(p, x, 6, causal=False, approximate=False)


def resblock_params(rng):
    return {"c1": w(rng, 24, 24, 3, 3), "c2": w(rng, 24, 24, 3, 3)}


def resblock(p, x):
    """x [B, 24, 20, 20] -> same."""
    y = jax.nn.relu(_conv(x, p["c1"], pad=1))
    return jax.nn.relu(x + _conv(y, p["c2"], pad=1))


NETS = {"effnet": (effnet, effnet_params, (4, 16, 24, 24)), "lstm": (lstm, lstm_params, (24, 16, 32)),
        "wide_mlp": (wide_mlp, wide_mlp_params, (128, 1024)), "vit_block": (vit_block, vit_block_params, (4, 64, 96)),
        "resblock": (resblock, resblock_params, (8, 24, 20, 20))}
TRAINED = tuple(NETS)


def programs():
    """``[(name, fn, example shapes, params_argnums or None)]`` as ``accuracy_xla_cpu.programs``
    (``xla_cpu_sets.programs``)."""
    return sets.programs(NETS, TRAINED, 13, lambda name, shape: f"b{shape[1] if name == 'lstm' else shape[0]}")
