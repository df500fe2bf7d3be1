"""What the later XLA CPU program sets (``bench/xla_cpu_heldout.py``, ``xla_cpu_heldout3.py``,
``xla_cpu_heldout4.py``) share: weights drawn from one seeded generator, the layer norm and the
attention block they write, the train step (``jax.grad`` of a mean-square loss + SGD) and the
``programs()`` list ``bench/accuracy_xla_cpu.py`` scores. Each set's programs are unchanged by
living here: the same functions, the same weights drawn in the same order."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

F32 = jnp.float32


def w(rng, *shape, scale=0.05):
    """A weight of ``shape``: standard normal x ``scale``, float32."""
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def ln(x):
    """(x - mean) / sqrt(var + 1e-5) over the last axis (no scale or shift)."""
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5)


def attention_block(p, x, n_heads: int, causal: bool, approximate: bool):
    """A pre-LN transformer block over x [B, S, D]: fused QKV projection, ``n_heads`` heads of D /
    n_heads scaled by 0.25 (heads of 16), a causal mask where ``causal``, the output projection, a
    residual, then a GELU MLP (tanh form where ``approximate``) and a residual."""
    b, s, d = x.shape
    q, k, v = jnp.split(ln(x) @ p["qkv"], 3, axis=-1)

    def heads(t):
        return t.reshape(b, s, n_heads, d // n_heads).transpose(0, 2, 1, 3)
    q, k, v = heads(q), heads(k), heads(v)
    mask = jnp.tril(jnp.ones((s, s), bool)) if causal else None
    scores = q @ jnp.swapaxes(k, -1, -2) * 0.25
    if causal:
        scores = jnp.where(mask, scores, -1e9)
    a = jax.nn.softmax(scores, axis=-1)
    x = x + (a @ v).transpose(0, 2, 1, 3).reshape(b, s, d) @ p["o"]
    return x + jax.nn.gelu(ln(x) @ p["a"], approximate=approximate) @ p["b"]


def train_step(net):
    """One SGD step (lr 0.01) on the mean-square error of ``net(p, x)`` against y."""
    def loss(p, x, y):
        return jnp.mean(jnp.square(net(p, x) - y))

    def step(p, x, y):
        g = jax.grad(loss)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g)
    return step


def programs(nets: dict, trained, seed: int, tag: Callable[[str, tuple], str]) -> list:
    """``[(name, fn, example shapes, params_argnums or None)]`` as ``accuracy_xla_cpu.programs``:
    per net of ``nets`` (name -> (net, make params from the generator, input shape)), in order, its
    inference over closed-over weights and, for those in ``trained``, its train step over the
    weights as arguments; the weights drawn from ``np.random.default_rng(seed)`` net after net;
    ``tag(name, shape)`` ends each program's name (its batch)."""
    rng = np.random.default_rng(seed)
    out = []
    for name, (net, make, shape) in nets.items():
        params = make(rng)
        x = jax.ShapeDtypeStruct(shape, F32)
        t = tag(name, shape)
        out.append((f"{name}_infer_{t}", (lambda xx, net=net, params=params: net(params, xx)), (x,), None))
        if name in trained:
            ps = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(a.shape, F32), params)
            y = jax.eval_shape(lambda pp, xx, net=net: net(pp, xx), ps, x)
            out.append((f"{name}_train_{t}", train_step(net), (ps, x, y), 0))
    return out
