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

from analyzer.prediction import scan_launches

# per trip of a scan: the counter's add
COUNTER_OPS = ("add",)
# once a loop: the loop state's copy
ONCE_OPS = ("copy",)


def launches(nodes, kernel_of, consumers, fusible) -> list[tuple[int, str, int]]:
    """[(kernel, op, bytes it moves)] of every scan's launches (the module docstring:
    ``scan_launches.launches`` with these ops; a reader takes the slice in where it is fusible or
    an M = 1 dot); ``fusible[i]``: node ``i`` joins a loop fusion."""
    takes = [f or nd.gemv for f, nd in zip(fusible, nodes)]
    return scan_launches.launches(nodes, kernel_of, consumers, takes, COUNTER_OPS, ONCE_OPS)


def with_launches(p, nodes, consumers, fusible):
    """Plan ``p`` (a ``fusion.FusionPlan``) with the scans' launches (``launches``) added to its
    ``extra_ops`` / ``extra_bytes``; ``p`` itself when ``nodes`` hold no scan."""
    return scan_launches.add_launches(p, launches(nodes, p.kernel_of, consumers, fusible))
