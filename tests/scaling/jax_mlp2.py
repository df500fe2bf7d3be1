"""JAX programs for the data-parallel tests (library and command line): a 2-layer MLP training
step with flat parameter args, its forward pass, and a program that already runs over a mesh.

Parameters: w1 [64, 128], b1 [128], w2 [128, 10], b2 [10] (fp32):
64*128 + 128 + 128*10 + 10 = 8192 + 128 + 1280 + 10 = 9610 elements, 4 * 9610 = 38440 bytes.
"""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

D_IN, HIDDEN, D_OUT = 64, 128, 10
PARAMS = D_IN * HIDDEN + HIDDEN + HIDDEN * D_OUT + D_OUT   # 9610
SHAPES = {"w1": (D_IN, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, D_OUT), "b2": (D_OUT,)}


def forward(w1, b1, w2, b2, x):
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2


def _loss(p, x, y):
    return jnp.mean((forward(*p, x) - y) ** 2)


def step(w1, b1, w2, b2, x, y):
    """One SGD step: forward, backward (jax.grad) and the update."""
    p = (w1, b1, w2, b2)
    g = jax.grad(_loss)(p, x, y)
    return tuple(a - 0.01 * b for a, b in zip(p, g))


def specs(batch: int):
    """The example args of ``step`` at ``batch``: (w1, b1, w2, b2, x, y) as ShapeDtypeStructs."""
    s = jax.ShapeDtypeStruct
    return (*(s(v, jnp.float32) for v in SHAPES.values()), s((batch, D_IN), jnp.float32),
            s((batch, D_OUT), jnp.float32))


def _shard_map():
    try:
        from jax import shard_map
    except ImportError:  # older jax
        from jax.experimental.shard_map import shard_map
    return shard_map


def sharded(w1, x):
    """A program over a mesh of 8: a row-split matmul whose partial sums are psum'd (it runs
    on 8 devices only)."""
    mesh = jax.sharding.AbstractMesh((8,), ("x",))
    P = PartitionSpec
    return _shard_map()(lambda w, a: jax.lax.psum(a @ w, "x"), mesh=mesh,
                        in_specs=(P("x", None), P(None, "x")), out_specs=P())(w1, x)
