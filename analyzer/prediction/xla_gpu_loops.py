"""The launches XLA's GPU compiler adds to a ``scan`` (``FusionNode.loop_io``), which the ``xla``
plan on a GPU profile carries (``fusion.plan`` with ``fold_transposes``).

A scan compiles to a ``while`` with a known trip count; XLA's GPU ``WhileThunk`` then runs the
body that many times and never the condition (``xla/backends/gpu/runtime/while_thunk.cc``,
``ExecuteOnStream``), so the condition's compare kernel the compiled program holds does not
launch.  Every trip XLA's GPU program launches, besides the body's own kernels (read from the
deviceless A100 compile of ``samples/jax_models.py``'s scan RNN and its train step,
``bench/xla_gpu_hlo.py``'s loop control rows):

- the trip counter's ``add`` (a ``kLoop`` fusion of the body);
- a ``dynamic_slice`` per scanned input (``xs``) unless each node reading it is fusible (the
  slice fuses into the reader's loop fusion) or an M = 1 dot (``gemv``: a reduction fusion,
  which takes the slice in as its operand prologue); it moves the slice twice (read, write);
- a ``dynamic_update_slice`` per stacked output (``ys``, and the residuals ``jax.grad``
  stacks), charged its fixed cost (the slice it writes is the body result's bytes, already
  counted).

They are carried by the body's first kernel (``FusionPlan.extra_ops``), so they launch once per
trip.  Once a loop: the copy of the loop state XLA makes before the loop, carried by the first
kernel at the scan's own level (a scan with no kernel beside it at its level: not charged).
"""

from __future__ import annotations

import dataclasses

# per trip of a scan: the counter's add
COUNTER_OPS = ("add",)
# once a loop: the loop state's copy
ONCE_OPS = ("copy",)


def launches(nodes, kernel_of, consumers, fusible) -> list[tuple[int, str, int]]:
    """[(kernel, op, bytes it moves)] of every scan's launches (the module docstring);
    ``kernel_of``: node -> its kernel (-1: none); ``consumers``: (level, tensor) -> reader
    nodes; ``fusible[i]``: node ``i`` joins a loop fusion."""
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
            if readers and not all(fusible[u] or nodes[u].gemv for u in readers):
                b = nodes[readers[0]]
                out.append((carrier, "dynamic_slice", 2 * b.input_bytes[b.inputs.index(x)]))
        out.extend((carrier, "dynamic_update_slice", 0) for _ in range(n_ys))
        out.extend((carrier, op, 0) for op in COUNTER_OPS)
        outer = _first_kernel(nodes, kernel_of, nd.level)
        if outer >= 0:
            out.extend((outer, op, 0) for op in ONCE_OPS)
    return out


def _first_kernel(nodes, kernel_of, level: str) -> int:
    return next((kernel_of[j] for j, b in enumerate(nodes) if b.level == level and kernel_of[j] >= 0), -1)


def with_launches(p, nodes, consumers, fusible):
    """Plan ``p`` (a ``fusion.FusionPlan``) with the scans' launches (``launches``) added to its
    ``extra_ops`` / ``extra_bytes``; ``p`` itself when ``nodes`` hold no scan."""
    extra = launches(nodes, p.kernel_of, consumers, fusible)
    if not extra:
        return p
    ops = [list(e) for e in p.extra_ops] or [[] for _ in range(p.kernels)]
    moved = [list(b) for b in p.extra_bytes] or [[0] * len(e) for e in ops]
    for k, op, nbytes in extra:
        ops[k].append(op)
        moved[k].append(nbytes)
    return dataclasses.replace(p, extra_ops=tuple(map(tuple, ops)), extra_bytes=tuple(map(tuple, moved)))
