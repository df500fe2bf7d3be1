"""The global batch of a JAX program's example args: which leaves are the batch, the program's
args at another batch, and the bytes of its parameter args (what a data-parallel step
all-reduces).

A JAX program has no batch dim of its own: it is whatever its example args say. The *batch
leaves* are the array leaves of every arg that is not a parameter (``params_argnums``) and of
the array kwargs, with at least one dim; their dim 0 is the batch, and they must agree on it
(an input with another leading dim, such as a fixed table, belongs among the parameters or
closed over). Scalars (a learning rate, a step counter) are not batched. ``jax`` is imported
only inside functions.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from analyzer.errors import Hint, InputSpecError
from analyzer.frontends.jaxpr.trace import params_indices


def _leaves(tree: Any) -> list:
    import jax

    return [x for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "shape") and hasattr(x, "dtype")]


def params_positions(fn: Any, args: Sequence[Any], params_argnums: Any) -> set[int]:
    """The positions of the parameter args (``params_argnums`` as ``analyze_jax`` reads it)."""
    return params_indices(fn, params_argnums, len(args))


def global_batch(args: Sequence[Any], kwargs: Mapping[str, Any] | None,
                 params: set[int]) -> int:
    """Dim 0 of the batch leaves (every array leaf with a dim outside the parameter args).
    Raises ``InputSpecError`` when there is none or they disagree (naming the leading dims)."""
    firsts: dict[int, int] = {}
    for i, a in enumerate(args):
        if i not in params:
            for x in _leaves(a):
                if len(x.shape):
                    firsts[int(x.shape[0])] = firsts.get(int(x.shape[0]), 0) + 1
    for v in (kwargs or {}).values():
        for x in _leaves(v):
            if len(x.shape):
                firsts[int(x.shape[0])] = firsts.get(int(x.shape[0]), 0) + 1
    if not firsts:
        raise InputSpecError("no batch: every array input with a dim is a parameter; data "
                             "parallel splits dim 0 of the others")
    if len(firsts) > 1:
        dims = ", ".join(f"{d} ({k} input(s))" for d, k in sorted(firsts.items()))
        raise InputSpecError(f"the inputs that are not parameters lead with different dims "
                             f"({dims}): dim 0 of each is the batch data parallel splits; name "
                             "the others among the parameters with {params_argnums}",
                             hints=(Hint("params_argnums"),))
    return next(iter(firsts))


def at_batch(args: Sequence[Any], kwargs: Mapping[str, Any] | None, params: set[int],
             batch: int) -> tuple[tuple, dict]:
    """The args and kwargs with dim 0 of every batch leaf set to ``batch``, as
    ``jax.ShapeDtypeStruct``s (parameter args and scalars unchanged)."""
    import jax

    def one(x):
        if not (hasattr(x, "shape") and hasattr(x, "dtype")) or not len(x.shape):
            return x
        return jax.ShapeDtypeStruct((batch, *x.shape[1:]), x.dtype)

    new_args = tuple(a if i in params else jax.tree_util.tree_map(one, a)
                     for i, a in enumerate(args))
    return new_args, {k: jax.tree_util.tree_map(one, v) for k, v in (kwargs or {}).items()}


def param_elements(args: Sequence[Any], params: set[int]) -> list[tuple[int, int]]:
    """(elements, bytes per element) of each array leaf of the parameter args (exact ints)."""
    import math

    import numpy as np

    return [(math.prod(int(d) for d in x.shape), np.dtype(x.dtype).itemsize)
            for i in sorted(params) for x in _leaves(args[i])]
