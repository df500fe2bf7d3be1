"""JAX data movement (domain ``"jax"``): no arithmetic, only bytes; the conventions of
``rules/movement.py``.

- views (``analyzer.ir.ops``: io "view"): a relabel with no bytes moved (reshape, squeeze, bitcasts, stop_gradient,
  sharding constraints and other compiler annotations).
- copies read what they copy and write their outputs (transpose, broadcast_in_dim, concatenate,
  pad, rev, copy); partial reads say so (slice, dynamic_slice, gather read only what they keep).
- ``dynamic_update_slice`` and ``scatter*`` update their operand in place (as XLA does): they read
  and write only the updated region (combining scatters also read it to combine).
- scalar index operands (dynamic_slice starts, pad's value) are shape-like (``analyzer.ir.ops``):
  never params.
"""

from __future__ import annotations

from analyzer.counting.cost import Work, register

D = "jax"


def _nothing(ins, outs, ctx):
    return Work()


register("reshape", "squeeze", "expand_dims", "bitcast_convert_type", "stop_gradient",
         "optimization_barrier", "sharding_constraint", "reshard", "layout_constraint", "name",
         "device_put", "mesh_cast", "pvary", "create_token", "after_all", "empty", "empty2",
         domain=D)(_nothing)
register("platform_index", domain=D)(_nothing)
register("transpose", "broadcast_in_dim", "concatenate", "rev", "tile", "split", "stack", "unstack",
         "copy", "copy_p", "zeros_like", domain=D)(_nothing)
register("pad", domain=D)(_nothing)


@register("iota", "iota_2x32_shape", domain=D)
def iota(ins, outs, ctx):
    # one index computation per element, like ONNX Range (iota_2x32_shape: the two 32-bit halves
    # of a 64-bit counter, for threefry)
    return Work(vector_flops=sum(o.numel() for o in outs if o is not None))


@register("slice", domain=D)
def slice_(ins, outs, ctx):
    return Work(reads={0: outs[0].nbytes()})  # a strided copy reads exactly what it keeps


@register("dynamic_slice", domain=D)
def dynamic_slice(ins, outs, ctx):
    return Work(reads={0: outs[0].nbytes()})


@register("dynamic_update_slice", domain=D)
def dynamic_update_slice(ins, outs, ctx):
    # in place: the update is read and written over the operand's region
    nbytes = ins[1].nbytes()
    return Work(reads={0: 0, 1: nbytes}, writes=nbytes)


@register("gather", domain=D)
def gather(ins, outs, ctx):
    return Work(reads={0: outs[0].nbytes()})  # the gathered slices and the indices


def _scatter(combines: bool):
    def rule(ins, outs, ctx):
        n = ins[2].numel() if ins[2] is not None else 1   # a literal update is one scalar
        region = n * outs[0].nbytes() // max(outs[0].numel(), 1)  # in the operand's dtype
        # in place: read the updates (and the region, to combine), write the region
        return Work(vector_flops=n if combines else 0,
                    reads={0: region if combines else 0}, writes=region)
    return rule


register("scatter", domain=D)(_scatter(False))
register("scatter-add", "scatter_add", "scatter-sub", "scatter_sub", "scatter-mul", "scatter_mul",
         "scatter-min", "scatter_min", "scatter-max", "scatter_max", domain=D)(_scatter(True))
