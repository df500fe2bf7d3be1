"""Small JAX programs for opcost, in plain ``jax.numpy``/``lax`` with ``jax.named_scope`` layer names.

The MLP, CNN and transformer block are the *same networks* as ``samples/mlp.onnx``,
``samples/cnn.onnx`` and ``samples/transformer.onnx`` (see ``samples/make_samples.py``): same
layers, shapes and weights (as a params pytree), so ``analyze_jax(f, params, x,
params_argnums=0)`` gives the same ``mac_flops`` and ``params`` as ``analyze("samples/*.onnx")``:

    mlp          params 235146   mac_flops 469504
    cnn          params  12538   mac_flops 13861504
    transformer  params  49988   mac_flops 1638400

The ONNX transformer stores four scalars as initializers (the attention divisor sqrt(16) and the
Gelu constants sqrt(2), 1 and 0.5); here they are leaves of the params pytree too, so both count
them.  (Written as Python literals instead, JAX would inline them as immediates: not params.)

Also here: a train step for each (loss, ``jax.grad``, SGD update) and a ``lax.scan`` RNN.
Every function takes arrays or ``jax.ShapeDtypeStruct``s; ``*_params(abstract=True)`` gives the
params pytree as ShapeDtypeStructs (no data), ``abstract=False`` numpy weights.

Command line: the ``*_infer`` entry points close over numpy weights (constants, so they count as
params) and take only the input:

    analyze samples/jax_models.py:mlp_infer --input x=f32[1,784]
    analyze samples/jax_models.py:cnn_infer --input x=f32[1,3,32,32]
    analyze samples/jax_models.py:transformer_infer --input x=f32[1,16,64] --group-depth 2
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

# ----------------------------------------------------------------------------- params


def _make(spec: dict, abstract: bool, rng=None) -> dict:
    """Build a params pytree from ``{name: shape | [shape, constant value] | nested dict}``:
    ShapeDtypeStructs, or numpy float32 weights from ``numpy.random.default_rng(0)`` (numpy, so
    that building them is never traced: closed over, they are the program's constants)."""
    import numpy as np

    if rng is None and not abstract:
        rng = np.random.default_rng(0)
    out = {}
    for name, s in spec.items():
        if isinstance(s, dict):
            out[name] = _make(s, abstract, rng)
            continue
        shape, value = (tuple(s[0]), s[1]) if isinstance(s, list) else (tuple(s), None)
        if abstract:
            out[name] = jax.ShapeDtypeStruct(shape, jnp.float32)
        elif value is not None:
            out[name] = np.full(shape, value, np.float32)
        else:
            out[name] = (0.05 * rng.standard_normal(shape)).astype(np.float32)
    return out


# ----------------------------------------------------------------------------- MLP (= mlp.onnx)

MLP_SPEC = {
    "fc1": {"w": (784, 256), "b": (256,)},
    "fc2": {"w": (256, 128), "b": (128,)},
    "fc3": {"w": (128, 10), "b": (10,)},
}


def mlp_params(abstract: bool = True) -> dict:
    return _make(MLP_SPEC, abstract)


def _dense(p, x):
    return x @ p["w"] + p["b"]


def mlp(params, x):
    """784-256-128-10 MLP: Dense+relu, Dense+relu, Dense, softmax. x [batch, 784]."""
    with jax.named_scope("fc1"):
        h = jax.nn.relu(_dense(params["fc1"], x))
    with jax.named_scope("fc2"):
        h = jax.nn.relu(_dense(params["fc2"], h))
    with jax.named_scope("fc3"):
        h = _dense(params["fc3"], h)
    with jax.named_scope("softmax"):
        return jax.nn.softmax(h, axis=-1)


def _xent(probs, labels):
    return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, probs.shape[-1]) * jnp.log(probs + 1e-9), -1))


def mlp_loss(params, x, labels):
    return _xent(mlp(params, x), labels)


def _sgd(params, grads, lr: float = 0.01):
    with jax.named_scope("sgd"):
        return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def mlp_train_step(params, x, labels):
    """One SGD step: forward, backward (jax.grad) and the update."""
    return _sgd(params, jax.grad(mlp_loss)(params, x, labels))


_WEIGHTS: dict[str, dict] = {}


def _weights(name: str) -> dict:
    """numpy weights of one network, built once (closed over by the ``*_infer`` functions)."""
    if name not in _WEIGHTS:
        _WEIGHTS[name] = globals()[f"{name}_params"](abstract=False)
    return _WEIGHTS[name]


def mlp_infer(x):
    """The MLP over closed-over weights (for the command line: only x is an input)."""
    return mlp(_weights("mlp"), x)


# ----------------------------------------------------------------------------- CNN (= cnn.onnx)

def _bn_spec(c):
    return {"scale": (c,), "bias": (c,), "mean": (c,), "var": [(c,), 1.0]}


CNN_SPEC = {
    "conv1": {"w": (16, 3, 3, 3)}, "bn1": _bn_spec(16),
    "res": {"conv2": {"w": (16, 16, 3, 3)}, "bn2": _bn_spec(16),
            "conv3": {"w": (16, 16, 3, 3)}, "bn3": _bn_spec(16)},
    "conv4": {"w": (32, 16, 3, 3), "b": (32,)},
    "conv5": {"w": (32, 32 // 4, 3, 3), "b": (32,)},
    "fc": {"w": (10, 32), "b": (10,)},
}


def cnn_params(abstract: bool = True) -> dict:
    return _make(CNN_SPEC, abstract)


def _conv(p, x, *, stride=1, pad=1, dilation=1, groups=1):
    y = lax.conv_general_dilated(x, p["w"], (stride, stride), ((pad, pad), (pad, pad)),
                                 rhs_dilation=(dilation, dilation), feature_group_count=groups,
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))
    if "b" in p:
        y = y + p["b"][None, :, None, None]
    return y


def _bn(p, x, eps: float = 1e-5):
    """Inference BatchNorm with running statistics, per channel of NCHW."""
    def c(v):
        return v[None, :, None, None]
    return (x - c(p["mean"])) / jnp.sqrt(c(p["var"]) + eps) * c(p["scale"]) + c(p["bias"])


def cnn(params, x):
    """conv+BN+relu, a residual block, a strided conv, a grouped dilated conv, max pool, global
    average pool and a Dense layer. x [batch, 3, 32, 32] (NCHW, as the ONNX file)."""
    with jax.named_scope("conv1"):
        h = _conv(params["conv1"], x)
    with jax.named_scope("bn1"):
        block_in = jax.nn.relu(_bn(params["bn1"], h))
    r = params["res"]
    with jax.named_scope("res"):
        with jax.named_scope("conv2"):
            h = _conv(r["conv2"], block_in)
        with jax.named_scope("bn2"):
            h = jax.nn.relu(_bn(r["bn2"], h))
        with jax.named_scope("conv3"):
            h = _conv(r["conv3"], h)
        with jax.named_scope("bn3"):
            h = _bn(r["bn3"], h)
        h = jax.nn.relu(h + block_in)
    with jax.named_scope("conv4"):
        h = jax.nn.relu(_conv(params["conv4"], h, stride=2))            # 32x32 -> 16x16
    with jax.named_scope("conv5"):
        h = _conv(params["conv5"], h, pad=2, dilation=2, groups=4)      # keeps 16x16
    with jax.named_scope("maxpool"):
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")  # -> 8x8
    with jax.named_scope("gap"):
        h = jnp.mean(h, axis=(2, 3))                                    # -> [batch, 32]
    with jax.named_scope("fc"):
        return h @ params["fc"]["w"].T + params["fc"]["b"]


def cnn_loss(params, x, labels):
    return _xent(jax.nn.softmax(cnn(params, x)), labels)


def cnn_train_step(params, x, labels):
    return _sgd(params, jax.grad(cnn_loss)(params, x, labels))


def cnn_infer(x):
    return cnn(_weights("cnn"), x)


# ----------------------------------------------------------------------------- transformer block

S, D, H = 16, 64, 4
DH = D // H


def _linear_spec(din, dout):
    return {"weight": (din, dout), "bias": (dout,)}


TRANSFORMER_SPEC = {
    "ln1": {"scale": [(D,), 1.0], "bias": (D,)},
    "attn": {"q": _linear_spec(D, D), "k": _linear_spec(D, D), "v": _linear_spec(D, D),
             "scale": [(), math.sqrt(DH)], "out": _linear_spec(D, D)},
    "ln2": {"scale": [(D,), 1.0], "bias": (D,)},
    "mlp": {"up": _linear_spec(D, 4 * D), "down": _linear_spec(4 * D, D),
            "gelu": {"sqrt2": [(), math.sqrt(2.0)], "one": [(), 1.0], "half": [(), 0.5]}},
}


def transformer_params(abstract: bool = True) -> dict:
    return _make(TRANSFORMER_SPEC, abstract)


def _layernorm(p, x, eps: float = 1e-5):
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), -1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + eps) * p["scale"] + p["bias"]


def _linear(p, x):
    return x @ p["weight"] + p["bias"]


def transformer(params, x):
    """One pre-LN encoder block: d_model 64, 4 heads of 16, MLP 256 with erf Gelu. x [b, 16, 64]."""
    b = x.shape[0]
    a = params["attn"]
    with jax.named_scope("ln1"):
        h = _layernorm(params["ln1"], x)
    with jax.named_scope("attn"):
        heads = {}
        for name in ("q", "k", "v"):
            with jax.named_scope(name):
                heads[name] = _linear(a[name], h).reshape(b, S, H, DH).transpose(0, 2, 1, 3)
        with jax.named_scope("qk"):
            scores = jnp.einsum("bhqd,bhkd->bhqk", heads["q"], heads["k"]) / a["scale"]
        with jax.named_scope("softmax"):
            probs = jax.nn.softmax(scores, axis=-1)
        with jax.named_scope("pv"):
            ctx = jnp.einsum("bhqk,bhkd->bhqd", probs, heads["v"])
        ctx = ctx.transpose(0, 2, 1, 3).reshape(b, S, D)
        with jax.named_scope("out"):
            attn = _linear(a["out"], ctx)
    x = x + attn
    m = params["mlp"]
    with jax.named_scope("ln2"):
        h = _layernorm(params["ln2"], x)
    with jax.named_scope("mlp"):
        with jax.named_scope("up"):
            h = _linear(m["up"], h)
        with jax.named_scope("gelu"):
            g = m["gelu"]
            h = h * (lax.erf(h / g["sqrt2"]) + g["one"]) * g["half"]
        with jax.named_scope("down"):
            h = _linear(m["down"], h)
    return x + h


def transformer_loss(params, x, target):
    return jnp.mean(jnp.square(transformer(params, x) - target))


def transformer_train_step(params, x, target):
    return _sgd(params, jax.grad(transformer_loss)(params, x, target))


def transformer_infer(x):
    return transformer(_weights("transformer"), x)


# ----------------------------------------------------------------------------- scan RNN

RNN_SPEC = {"cell": {"wx": (32, 64), "wh": (64, 64), "b": (64,)}, "head": {"w": (64, 10), "b": (10,)}}


def rnn_params(abstract: bool = True) -> dict:
    return _make(RNN_SPEC, abstract)


def rnn(params, xs, *, unroll: int | bool = 1):
    """An Elman RNN over xs [T, batch, 32] with ``lax.scan`` (h = tanh(x Wx + h Wh + b)), then a
    Dense head on the last state. ``unroll=True`` is the same math with the loop unrolled."""
    c = params["cell"]

    def cell(h, x):
        with jax.named_scope("cell"):
            h = jnp.tanh(x @ c["wx"] + h @ c["wh"] + c["b"])
        return h, None

    with jax.named_scope("rnn"):
        h, _ = lax.scan(cell, jnp.zeros((xs.shape[1], 64), xs.dtype), xs, unroll=unroll)
    with jax.named_scope("head"):
        return h @ params["head"]["w"] + params["head"]["b"]


def rnn_loss(params, xs, labels):
    return _xent(jax.nn.softmax(rnn(params, xs)), labels)


def rnn_train_step(params, xs, labels):
    return _sgd(params, jax.grad(rnn_loss)(params, xs, labels))


def rnn_infer(xs):
    return rnn(_weights("rnn"), xs)


# ----------------------------------------------------------------------------- example inputs

def example_inputs(name: str, batch: int = 1) -> tuple:
    """(params, x[, labels]) ShapeDtypeStructs matching the ONNX samples (batch 1)."""
    f32, i32 = jnp.float32, jnp.int32
    sds = jax.ShapeDtypeStruct
    if name == "mlp":
        return mlp_params(), sds((batch, 784), f32), sds((batch,), i32)
    if name == "cnn":
        return cnn_params(), sds((batch, 3, 32, 32), f32), sds((batch,), i32)
    if name == "transformer":
        return transformer_params(), sds((batch, S, D), f32), sds((batch, S, D), f32)
    if name == "rnn":
        return rnn_params(), sds((12, batch, 32), f32), sds((batch,), i32)
    raise KeyError(name)
