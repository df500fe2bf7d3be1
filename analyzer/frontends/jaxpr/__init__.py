"""The JAX frontend: a function and example specs -> ``ir.Graph``, one node per jaxpr equation.

``inputs``: program targets and ``--input`` specs; ``trace``: ``jax.make_jaxpr`` with module
paths for names; ``load``: equations -> nodes (inlining ``jit``/``custom_*``/``checkpoint``,
sub-graphs for ``scan``/``while``/``cond``); ``loops``: static trip counts of ``while``;
``batch``: the example args at another batch and the parameter args' bytes (data parallel).
"""
