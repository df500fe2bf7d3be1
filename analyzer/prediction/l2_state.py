"""The L2 state a GPU kernel starts in: part of the time definition (``Options.l2``).

- ``warm`` (the default, ``None``): a kernel finds in the L2 what the kernel before it left
  there: inside a model it reads its producer's output, and a benchmark that re-runs one op
  back to back (a CUDA-graph replay, a profiler's kernel sum over repeated calls) re-reads its
  own inputs.  The efficiency model's cache step applies (``efficiency.kernel_time``:
  ``s = s(bytes / l2_bytes)``, cache share ``l2_hit * s``, cache gain ``1 + l2_gain * s``).
- ``cold``: the L2 is flushed before each kernel, as a single-op benchmark with a flush times
  it (Triton's ``do_bench``, nvbench's default): every byte of a GPU kernel crosses DRAM.
  The cache step is 0 for reads and writes alike: cache share 0 (no ``l2_hit``), cache gain 1
  (no ``l2_gain``); the lowering gives each GPU kernel an L2 of 0 bytes, ``l2_step``'s off
  switch.  Writes are charged too: a flush that overwrites a buffer larger than the L2 (do_bench
  zeroes 256 MB, nvbench memsets one, the H100 check rows write 256 MiB) leaves the L2 full of
  dirty lines, so each line the kernel allocates, read or written, evicts one to DRAM (those
  write-backs are not charged on top: the model has one byte stream per kernel).  The per-SM
  issue term, the DRAM ramp (``b_half``), the floor and the compute terms are the kernel's own
  and do not change.  Derived from the warm model's own terms; nothing is fitted.

Other kinds keep their own terms under ``cold``, with a warning: a TPU's on-chip memories are
managed by XLA's compiled program, a CPU profile's cache step is its calibration's (timed warm,
re-running each kernel), and an NPU or DSP runtime's on-chip bytes (``onchip_bytes``: the
``qnn`` runtime's VTCM) are its own scratch memory, not a cache a benchmark flushes.
"""

from __future__ import annotations

from analyzer.options import L2_STATES as STATES  # noqa: F401  (re-exported)
from analyzer.options import check_l2
# what a cold prediction adds to its runtime's time definition (``Prediction.time_definition``)
COLD_DEFINITION = "L2 cold: the L2 flushed before each kernel, every byte from DRAM"
COLD_NOTE = ("L2 cold: every kernel's inputs and outputs cross DRAM (the L2 flushed before each "
             "kernel, as a single-op benchmark with a flush times it): cache share 0, cache gain 1")


def check(state: str | None) -> str:
    """``state`` as one of ``STATES`` (None: "warm"); ``InputSpecError`` naming them for anything else."""
    return check_l2(state)


def applies(prof, state: str | None) -> bool:
    """Whether ``prof``'s kernels start with the L2 flushed: ``state`` cold and ``prof`` a GPU."""
    return check(state) == "cold" and getattr(prof, "kind", "") == "gpu"


def cache_bytes(prof, l2_bytes: float, state: str | None, warn: set[str], note: list[str]) -> float:
    """The L2 bytes a kernel of ``prof`` may find its working set in: ``l2_bytes`` under warm
    (``state`` None or "warm"), and under cold for a profile that is not a GPU (a warning added to
    ``warn``); 0 for a GPU under cold (``COLD_NOTE`` added to ``note``).  Raises
    ``InputSpecError`` for a ``state`` not in ``STATES``."""
    if check(state) != "cold":
        return l2_bytes
    if not applies(prof, state):
        warn.add(f"L2 state 'cold' applies to GPU kernels only: {prof.id} is a {prof.kind}, predicted "
                 "with its own cache terms (as warm)")
        return l2_bytes
    note.append(COLD_NOTE)
    return 0.0


def time_definition(definition: str, cold: bool) -> str:
    """A runtime's time definition with the L2 state it was predicted under where that is cold."""
    return f"{definition}; {COLD_DEFINITION}" if cold else definition
