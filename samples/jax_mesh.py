"""JAX programs that already run over a device mesh (``jax.shard_map`` over an
``AbstractMesh``: no devices are needed to trace them), for ``--devices N`` with N the mesh's
size (the product of its axis sizes):

    analyze samples/jax_mesh.py:tensor_parallel_mlp --input w1=f32[1024,4096] \\
        --input w2=f32[4096,1024] --input x=f32[64,1024] --hw h100 --devices 8
    analyze samples/jax_mesh.py:row_parallel_matmul --input w=f32[1024,1024] \\
        --input x=f32[256,1024] --hw h100 --devices 4

Each device runs the ``shard_map`` body at its per-device shapes; each collective (``psum``,
``all_gather``, ``psum_scatter``, ``ppermute``, ``all_to_all``) is priced by the collectives
model over the devices its named axes span (``analyzer.scaling.mesh_program``).
"""

import jax
from jax.sharding import AbstractMesh, PartitionSpec as P

try:
    from jax import shard_map
except ImportError:  # an older jax
    from jax.experimental.shard_map import shard_map


def row_parallel_matmul(w, x):
    """``x @ w`` over a mesh of 4 (axis ``model``): each device holds a quarter of the rows of
    ``w`` and of the columns of ``x``, multiplies them, and the partial sums are all-reduced
    (one ``psum`` of the per-device ``[batch, n]`` output)."""
    mesh = AbstractMesh((4,), ("model",))
    return shard_map(lambda w_, x_: jax.lax.psum(x_ @ w_, "model"), mesh=mesh,
                     in_specs=(P("model", None), P(None, "model")), out_specs=P())(w, x)


def _mlp_body(w1, w2, x):
    h = jax.nn.relu(jax.lax.all_gather(x, "model", axis=1, tiled=True) @ w1)
    return jax.lax.psum_scatter(h @ w2, "model", scatter_dimension=1, tiled=True)


def tensor_parallel_mlp(w1, w2, x):
    """A Megatron-style MLP over a 2 x 4 mesh (``data`` x ``model``): the batch split over
    ``data``, ``w1``'s columns and ``w2``'s rows over ``model``. Each device all-gathers its
    activation over ``model`` (a group of 4), runs both matmuls on its shard, and
    reduce-scatters the output back over ``model``."""
    mesh = AbstractMesh((2, 4), ("data", "model"))
    return shard_map(_mlp_body, mesh=mesh,
                     in_specs=(P(None, "model"), P("model", None), P("data", "model")),
                     out_specs=P("data", "model"), check_vma=False)(w1, w2, x)
