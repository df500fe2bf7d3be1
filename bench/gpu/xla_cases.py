"""Single-op JAX programs for measuring XLA's GPU kernels one at a time (pure JAX, no GPU needed).

Each case is one small jitted program whose compiled form is one kernel or a few: a loop fusion
(elementwise), a row reduction (layer norm, softmax), a column or full reduction, a dot (cuBLAS or
a Triton GEMM, chosen by XLA's autotuner), a dot with its bias + ReLU, a batched dot, a
convolution (cuDNN) and a ``lax.scan`` with a small body.  ``measure_xla.py`` times them on a GPU;
``xla_ops_check.py`` predicts the same programs with ``analyzer.analyze_jax`` and scores them.

A case is a dict: ``key`` (unique, stable), ``family``, ``dtype`` ("f32"/"bf16"), ``fn`` (a
plain function), ``args`` (a list of ``(shape, dtype)``), ``tier`` (0 first: a run cut by its
budget loses the later tiers) and ``elems`` (the output's elements, for reading the rows).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16}


def _add(x, y):
    return x + y


def _tanh(x):
    return jnp.tanh(x)


def _gelu(x):
    return jax.nn.gelu(x)          # the tanh form, jax's default


def _affine_relu(x, a, b):
    return jnp.maximum(x * a + b, 0)


def _layernorm(x, g, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5) * g + b


def _softmax(x):
    return jax.nn.softmax(x, axis=-1)


def _colmean(x):
    return jnp.mean(x, axis=0)


def _sum(x):
    return jnp.sum(x)


def _dot(x, w):
    return x @ w


def _dot_bias_relu(x, w, b):
    return jax.nn.relu(x @ w + b)


def _bdot(q, k):
    return jnp.einsum("bhqd,bhkd->bhqk", q, k)


def _conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))


def _transpose(x):
    return x.T


def _scan(h0, xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h
    return lax.scan(step, h0, xs)[1]


def _flat_shape(n: int) -> tuple[int, ...]:
    return (n // 1024, 1024) if n >= 1024 else (1, n)


def _elementwise(dt):
    for e in (8, 12, 14, 16, 18, 20, 22, 24, 26):
        n = 1 << e
        s = _flat_shape(n)
        c = s[1]
        tier = 0 if e in (8, 14, 20, 24) else 1
        yield dict(key=f"add|{dt}|{n}", family="add", fn=_add, args=[(s, dt), (s, dt)], tier=tier, elems=n)
        yield dict(key=f"tanh|{dt}|{n}", family="tanh", fn=_tanh, args=[(s, dt)], tier=tier, elems=n)
        yield dict(key=f"gelu|{dt}|{n}", family="gelu", fn=_gelu, args=[(s, dt)], tier=tier, elems=n)
        yield dict(key=f"affine_relu|{dt}|{n}", family="affine_relu", fn=_affine_relu,
                   args=[(s, dt), ((c,), dt), ((c,), dt)], tier=tier + 1, elems=n)


def _rows(dt):
    for n in (64, 512, 4096):
        for m in (1, 64, 1024, 16384):
            tier = 0 if m in (1, 1024) else 1
            yield dict(key=f"layernorm|{dt}|{m}x{n}", family="layernorm", fn=_layernorm,
                       args=[((m, n), dt), ((n,), dt), ((n,), dt)], tier=tier, elems=m * n)
            yield dict(key=f"softmax|{dt}|{m}x{n}", family="softmax", fn=_softmax, args=[((m, n), dt)],
                       tier=tier, elems=m * n)


def _reductions():
    for m in (64, 4096, 65536):
        for c in (64, 256):
            yield dict(key=f"colmean|f32|{m}x{c}", family="colmean", fn=_colmean, args=[((m, c), "f32")],
                       tier=1, elems=c)
    for e in (10, 14, 18, 22, 26):
        n = 1 << e
        yield dict(key=f"sum|f32|{n}", family="sum", fn=_sum, args=[(_flat_shape(n), "f32")], tier=1, elems=1)


def _dots(dt):
    for k in (64, 256, 1024, 4096):
        for m in (1, 16, 256, 4096):
            tier = 0 if m in (1, 256) and k in (256, 4096) else 2
            yield dict(key=f"dot|{dt}|{m}x{k}x{k}", family="dot", fn=_dot, args=[((m, k), dt), ((k, k), dt)],
                       tier=tier, elems=m * k)
    for m, k, n in ((1, 784, 256), (64, 784, 256), (512, 256, 1024)):
        yield dict(key=f"dot_bias_relu|{dt}|{m}x{k}x{n}", family="dot_bias_relu", fn=_dot_bias_relu,
                   args=[((m, k), dt), ((k, n), dt), ((n,), dt)], tier=1, elems=m * n)
    for bh in (8, 96):
        for s in (16, 128, 512):
            yield dict(key=f"bdot|{dt}|{bh}x{s}x{s}x64", family="bdot", fn=_bdot,
                       args=[((1, bh, s, 64), dt), ((1, bh, s, 64), dt)], tier=1, elems=bh * s * s)


def _convs():
    for b in (1, 8, 64):
        for cin, cout, hw in ((3, 16, 32), (16, 16, 32), (32, 64, 16)):
            yield dict(key=f"conv|f32|{b}x{cin}x{hw}x{hw}->{cout}", family="conv", fn=_conv,
                       args=[((b, cin, hw, hw), "f32"), ((cout, cin, 3, 3), "f32")], tier=1,
                       elems=b * cout * hw * hw)


def _others():
    for n in (1 << 12, 1 << 18, 1 << 24):
        yield dict(key=f"transpose|f32|{n}", family="transpose", fn=_transpose, args=[(_flat_shape(n), "f32")],
                   tier=2, elems=n)
    for b in (1, 64):
        for t in (8, 32, 128):
            yield dict(key=f"scan|f32|b{b}xT{t}x64", family="scan", fn=_scan,
                       args=[((b, 64), "f32"), ((t, b, 64), "f32"), ((64, 64), "f32")], tier=1, elems=t * b * 64)


def cases() -> list[dict]:
    """Every case, in tier order (a stable order inside a tier), each with its ``dtype``."""
    out = []
    for dt in ("f32", "bf16"):
        for c in (*_elementwise(dt), *_rows(dt), *_dots(dt)):
            out.append(dict(c, dtype=dt))
    for c in (*_reductions(), *_convs(), *_others()):
        out.append(dict(c, dtype="f32"))
    keys = [c["key"] for c in out]
    assert len(keys) == len(set(keys)), "case keys must be unique"
    return sorted(out, key=lambda c: c["tier"])


def abstract_args(case: dict) -> list:
    """The case's arguments as ``jax.ShapeDtypeStruct``s (what ``analyze_jax`` takes)."""
    return [jax.ShapeDtypeStruct(s, DTYPES[d]) for s, d in case["args"]]
