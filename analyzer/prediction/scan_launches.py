"""The launches an XLA backend adds to a ``scan`` beside its body's own kernels, one walk for the
``xla_cpu`` plan (``xla_cpu_fusion``) and the ``xla`` plan on a GPU (``xla_gpu_loops``); each
backend names its ops per trip and once a loop, and which readers take a scanned slice in.

Per trip, on the first kernel of the scan's body (``FusionPlan.extra_ops``: it launches once per
trip): a ``dynamic_slice`` per scanned input (``xs``) unless every node reading it takes the
slice in (``takes_slice``), moving the slice twice (read, write); a ``dynamic_update_slice`` per
stacked output (``ys``), charged its fixed cost (its bytes are the body result's, already
counted); the backend's counter ops.  Once a loop, on the first kernel at the scan's own level:
the backend's once ops (a scan with no kernel beside it at its level: not charged).
"""

from __future__ import annotations

import dataclasses


def launches(nodes, kernel_of, consumers, takes_slice, per_trip, once) -> list[tuple[int, str, int]]:
    """[(kernel, op, bytes it moves)] of every scan's launches (the module docstring);
    ``kernel_of``: node -> its kernel (-1: none); ``consumers``: (level, tensor) -> reader nodes;
    ``takes_slice[i]``: node ``i`` takes a scanned slice into its own kernel; ``per_trip`` /
    ``once``: the backend's counter ops."""
    out = []
    for nd in nodes:
        if not nd.loop_io:
            continue
        body = nd.name + "/"
        carrier = _first_kernel(nodes, kernel_of, body)
        if carrier < 0:
            continue
        xs, n_ys, _ = nd.loop_io
        for x in xs:
            readers = consumers.get((body, x), ())
            if readers and not all(takes_slice[u] for u in readers):
                b = nodes[readers[0]]
                out.append((carrier, "dynamic_slice", 2 * b.input_bytes[b.inputs.index(x)]))
        out.extend((carrier, "dynamic_update_slice", 0) for _ in range(n_ys))
        out.extend((carrier, op, 0) for op in per_trip)
        outer = _first_kernel(nodes, kernel_of, nd.level)
        if outer >= 0:
            out.extend((outer, op, 0) for op in once)
    return out


def _first_kernel(nodes, kernel_of, level: str) -> int:
    return next((kernel_of[j] for j, b in enumerate(nodes) if b.level == level and kernel_of[j] >= 0), -1)


def add_launches(p, extra):
    """Plan ``p`` (a ``fusion.FusionPlan``) with ``extra`` ([(kernel, op, bytes)]) added to its
    ``extra_ops`` / ``extra_bytes``; ``p`` itself when ``extra`` is empty."""
    if not extra:
        return p
    ops = [list(e) for e in p.extra_ops] or [[] for _ in range(p.kernels)]
    moved = [list(b) for b in p.extra_bytes] or [[0] * len(e) for e in ops]
    for k, op, nbytes in extra:
        ops[k].append(op)
        moved[k].append(nbytes)
    return dataclasses.replace(p, extra_ops=tuple(map(tuple, ops)), extra_bytes=tuple(map(tuple, moved)))
