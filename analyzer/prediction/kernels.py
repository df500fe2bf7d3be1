"""The JAX-jitted cost kernels: a roofline over (profiles x nodes).

``compute_s = mac_flops / matrix_peak + vector_flops / vector_peak``
``memory_s  = bytes / bandwidth``
``time_s    = max(compute_s, memory_s) + overhead_s``  (``overlap=True``: compute and
memory transfers overlap, as on GPUs/TPUs with asynchronous copies), or
``time_s    = compute_s + memory_s + overhead_s``       (``overlap=False``: seed 003's
additive model, time = communication + computation).
``bound`` is the largest of the three terms.  A node with no FLOPs never divides 0
by 0: its compute term is 0 by construction.

Arrays are padded to power-of-two buckets so one compiled kernel serves every graph
of similar size (``TRACES`` counts compilations; tests check it).  The kernel is a
pure jnp function: it vmaps over candidates and differentiates with ``jax.grad``.
"""

from __future__ import annotations

import numpy as np

TRACES = {"roofline": 0}
BOUNDS = ("compute", "memory", "overhead")
_MIN_BUCKET = 64


def bucket(n: int) -> int:
    """The padded size for ``n`` rows: the next power of two, at least 64."""
    b = _MIN_BUCKET
    while b < n:
        b *= 2
    return b


def roofline_terms(mac, vec, nbytes, active, matrix_peak, vector_peak, mem_bw, overhead, overlap):
    """Pure jnp roofline. Shapes: mac/vec/nbytes/active [N]; peaks [P, N]; mem_bw/overhead [P]."""
    import jax.numpy as jnp

    compute = mac[None, :] / matrix_peak + vec[None, :] / vector_peak
    memory = nbytes[None, :] / mem_bw[:, None]
    ovh = active[None, :] * overhead[:, None]
    time = jnp.where(overlap, jnp.maximum(compute, memory), compute + memory) + ovh
    bound = jnp.argmax(jnp.stack([compute, memory, ovh]), axis=0)
    return compute, memory, ovh, time, bound


_jitted = None


def _kernel():
    global _jitted
    if _jitted is None:
        import jax

        def traced(*args):
            TRACES["roofline"] += 1  # runs only while tracing, i.e. once per compilation
            return roofline_terms(*args)

        _jitted = jax.jit(traced)
    return _jitted


def run(lowered, overlap: bool = True):
    """Evaluate the roofline for a ``Lowered``; returns numpy arrays [P, N] (unpadded)."""
    N = len(lowered.names)
    P = lowered.mem_bw.shape[0]
    nb, pb = bucket(max(N, 1)), max(1, 1 << (P - 1).bit_length())

    def pad1(x, fill=0.0):
        out = np.full(nb, fill, np.float32)
        out[:N] = x
        return out

    def pad2(x):
        out = np.ones((pb, nb), np.float32)
        out[:P, :N] = x
        return out

    def padp(x, fill):
        out = np.full(pb, fill, np.float32)
        out[:P] = x
        return out

    active = np.zeros(nb, np.float32)
    active[:N] = 1.0
    res = _kernel()(pad1(lowered.mac_flops), pad1(lowered.vec_flops), pad1(lowered.bytes), active,
                    pad2(lowered.matrix_peak), pad2(lowered.vector_peak),
                    padp(lowered.mem_bw, 1.0), padp(lowered.overhead, 0.0), np.bool_(overlap))
    compute, memory, ovh, time, bound = (np.asarray(r)[:P, :N] for r in res)
    return compute.astype(np.float64), memory.astype(np.float64), ovh.astype(np.float64), \
        time.astype(np.float64), bound
