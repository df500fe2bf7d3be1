"""The JAX-jitted cost kernel: the efficiency model over (profiles x kernels).

Per kernel ``k`` on profile ``p`` (``efficiency.kernel_time``, per launch)::

    compute = padded matrix work / (matrix_peak * e_compute) * wave + vector work / (vector_peak * e_compute)
    memory  = (bytes - onchip + onchip_cost * onchip + b_half) / (mem_bw * e_bw * cache),
              cache = 1 + l2_gain * s(bytes / l2_bytes)
    time    = runs * (fixed + max(compute, memory))     (overlap=True: compute and memory overlap)
    time    = runs * (fixed + compute + memory)         (overlap=False: seed 003's additive model)

``onchip`` is the bytes per launch an NPU runtime keeps on chip (``Lowered.onchip``: the ``qnn``
runtime's VTCM rule; 0 elsewhere), each at ``onchip_cost`` of a DRAM byte's time.  ``fixed`` is the per-launch cost: the class floor or the profile's launch figure, plus the
runtime's host dispatch (``lowering.py``).  ``bound`` is the largest of compute, memory and the
fixed cost.  A kernel with no FLOPs never divides 0 by 0.

Arrays are padded to power-of-two buckets so one compiled kernel serves every graph of similar
size (``TRACES`` counts compilations; tests check it).  The kernel is a pure jnp function of its
arrays: it vmaps over profiles (and candidates) and differentiates with ``jax.grad``.
"""

from __future__ import annotations

import numpy as np

from analyzer.prediction.efficiency import kernel_time as eff

TRACES = {"roofline": 0}
BOUNDS = ("compute", "memory", "overhead")
_MIN_BUCKET = 64
# the per-kernel features the kernel reads (``Lowered.feats``; the search API batches the same)
FEATS = ("op_class", "mac_flops", "vec_flops", "trans_flops", "bytes", "m", "n", "k", "batch", "elem_bytes",
         "reread_bytes", "row_bytes", "index_ids", "index_slice", "row_kind", "row_m", "row_n")


def bucket(n: int) -> int:
    """The padded size for ``n`` rows: the next power of two, at least 64."""
    b = _MIN_BUCKET
    while b < n:
        b *= 2
    return b


def kernel_terms(feats, runs, active, matrix_peak, vector_peak, mem_bw, units, l2_bytes, consts,
                 fixed, overlap, onchip=None):
    """Pure jnp: feats/runs/active [K]; peaks/fixed [P, K]; mem_bw/units/l2_bytes [P]; consts [P, C];
    ``onchip``: ([P, K] bytes per launch kept on chip, [P] their cost as a fraction of a DRAM
    byte's) (``Lowered.onchip``, ``Lowered.onchip_of``), or None: none."""
    import jax
    import jax.numpy as jnp

    def one(mp, vp, bw, u, l2, c, fx, kept=None, cost=None):
        hw = {"matrix_peak": mp, "vector_peak": vp, "mem_bw": bw, "units": u, "l2_bytes": l2}
        if kept is not None:
            hw.update(onchip_bytes=kept, onchip_cost=cost)
        t = eff.kernel_time(jnp, feats, hw, c)
        compute, memory = t["compute_s"] * active, t["memory_s"] * active
        ovh = (fx - t["l2_start_s"]) * active   # (the fixed cost less a warm start, plus a cold start: eff.kernel_time l2_start_s)
        body = jnp.where(overlap, jnp.maximum(compute, memory), compute + memory)
        time = runs * (ovh + body)
        bound = jnp.argmax(jnp.stack([compute, memory, ovh]), axis=0)
        return runs * compute, runs * memory, runs * ovh, time, bound

    args = (matrix_peak, vector_peak, mem_bw, units, l2_bytes, consts, fixed)
    return jax.vmap(one)(*args) if onchip is None else jax.vmap(one)(*args, *onchip)


_jitted = None


def _kernel():
    global _jitted
    if _jitted is None:
        import jax

        def traced(*args):
            TRACES["roofline"] += 1  # runs only while tracing, i.e. once per compilation
            return kernel_terms(*args)

        _jitted = jax.jit(traced)
    return _jitted


def run(lowered, overlap: bool = True):
    """Evaluate the kernel for a ``Lowered``; numpy arrays [P, K] (unpadded): compute, memory,
    overhead, time (seconds) and bound (index into ``BOUNDS``)."""
    K = len(lowered.kernel_names)
    P = lowered.mem_bw.shape[0]
    kb, pb = bucket(max(K, 1)), max(1, 1 << (P - 1).bit_length())

    def pad1(x, fill=0.0, dtype=np.float32):
        out = np.full(kb, fill, dtype)
        out[:K] = x
        return out

    def pad2(x, fill=1.0):
        out = np.full((pb, kb), fill, np.float32)
        out[:P, :K] = x
        return out

    def padp(x, fill):
        x = np.asarray(x)
        out = np.full((pb, *x.shape[1:]), fill, np.float32)
        out[:P] = x
        return out

    feats = {f: pad1(lowered.feats[f], dtype=np.int32 if f == "op_class" else np.float32)
             for f in FEATS}
    active = np.zeros(kb, np.float32)
    active[:K] = 1.0
    consts = {name: padp(v, 1.0) for name, v in lowered.consts.items()}
    res = _kernel()(feats, pad1(lowered.runs, 1.0), active, pad2(lowered.matrix_peak),
                    pad2(lowered.vector_peak), padp(lowered.mem_bw, 1.0), padp(lowered.units, 0.0),
                    padp(lowered.l2_bytes, 0.0),
                    consts, pad2(lowered.fixed, 0.0), np.bool_(overlap),
                    None if lowered.onchip is None else (pad2(lowered.onchip, 0.0),
                                                         padp(lowered.onchip_of[2], 0.0)))
    compute, memory, ovh, time, bound = (np.asarray(r)[:P, :K] for r in res)
    return (compute.astype(np.float64), memory.astype(np.float64), ovh.astype(np.float64),
            time.astype(np.float64), bound)
