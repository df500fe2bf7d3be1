"""Step time of one model over N devices: data, tensor and pipeline parallelism (pure functions
of single-device times and byte counts; ``curve`` feeds them from Reports).

Data parallel (seed 002): each device runs the local batch B/N, then the gradients (``grad_bytes``)
are all-reduced. Without overlap the whole all-reduce follows the step. With ``overlap`` the
gradients go out in ``buckets`` equal buckets as the backward pass produces them (bucket k ready
at ``k/buckets`` of the backward pass, buckets sent one after another): only what is still
running when backward ends is exposed (``exposed``: ``data_parallel="allreduce"``). Buckets by
the layers that produce them (PyTorch DDP, Megatron-LM) and ZeRO / FSDP sharding are
``analyzer.scaling.data_parallel``.

Tensor parallel: ``analyzer.scaling.tensor`` (Megatron's column/row pairs); where none is
recognised, every MAC node is split N ways, other nodes are replicated, and every second weight
GEMM all-reduces its output in forward and its input gradient in backward.

Pipeline parallel and its composition with tensor and data parallel: ``analyzer.scaling.hybrid``
(stages from the per-layer times). ``pipeline`` here is the closed form of p equal stages, m
micro-batches: GPipe and 1F1B take ``(m + p - 1)`` micro-batch stage times, of which the bubble
is the fraction ``(p-1)/(m+p-1)``; interleaved 1F1B with v chunks per device ``(m + (p-1)/v)``,
the bubble ``(p-1)/(v m + p - 1)`` of the step (Megatron's ``(p-1)/(v m)`` of the ideal time).

Speed-up ``S = step(1) / step(N)``, efficiency ``S/N``, and the serial fraction Amdahl's law
implies, ``s = (N/S - 1) / (N - 1)`` (seed 000 Eq. 3 with s = 1 - alpha).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PARALLEL = ("data", "tensor", "pipeline", "hybrid")
SCHEDULES = ("gpipe", "1f1b", "interleaved")
# the parts of a pipeline / hybrid step (``analyzer.scaling.hybrid``), seconds, summing to it
PARTS = ("compute", "tensor_comm", "bubble", "p2p", "data_parallel_exposed",
         "embedding_allreduce", "grad_norm_allreduce")
# Megatron's passes over the gradients (``analyzer.training.grad_passes``) and its own step
# kernels (``analyzer.training.megatron_step``: the main-grad adds, the fused kernels' change,
# <= 0, Megatron's loss over the graph's: ``analyzer.training.megatron_loss``), seconds on the device that spends the most on the passes: all inside compute but the
# norm's all-reduce, inside the exposed communication
GRAD_PASSES = ("zero", "norm", "scale", "norm_allreduce", "divide", "accumulate", "fused",
               "vocab_parallel")
UPDATE_PASSES = ("zero", "norm", "scale", "divide")   # in the update, after backward
STEP_TERMS = ("accumulate", "fused", "vocab_parallel")   # in backward and forward
# the collective kinds of a program over a device mesh (``analyzer.scaling.mesh_program``)
COMM_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "p2p")


@dataclass(frozen=True, kw_only=True)
class Point:
    """One device count on one profile (seconds)."""

    hardware: str
    devices: int
    step_s: float
    compute_s: float
    communication_s: float       # the whole communication of a step
    exposed_communication_s: float   # what the step waits for (after overlap)
    bubble_s: float
    speedup: float | None        # None where there is no one-device run (a mesh program)
    efficiency: float | None
    serial_fraction: float | None
    bandwidth_s: float = 0.0     # per-byte part of communication_s
    latency_s: float = 0.0       # per-message part
    collective_calls: int | None = None   # collectives / sends of one step (None: not counted)
    # bytes per device (weights, gradients, optimizer_state, activations, total); None where
    # the mode does not model it
    memory: dict | None = None
    # seconds per part of ``PARTS`` (pipeline / hybrid; None where the mode does not split them)
    parts: dict | None = None
    # seconds of communication per kind of ``COMM_KINDS`` (a mesh program; None elsewhere)
    comm_kinds: dict | None = None
    # seconds per pass of ``GRAD_PASSES`` (None: none runs)
    grad_passes: dict | None = None

    @property
    def bubble_share(self) -> float:
        """The bubble's share of the step."""
        return self.bubble_s / self.step_s if self.step_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "devices": self.devices, "step_s": self.step_s,
                "compute_s": self.compute_s, "communication_s": self.communication_s,
                "exposed_communication_s": self.exposed_communication_s,
                "bubble_s": self.bubble_s, "speedup": self.speedup,
                "efficiency": self.efficiency, "serial_fraction": self.serial_fraction,
                "communication_bandwidth_s": self.bandwidth_s,
                "communication_latency_s": self.latency_s,
                "bubble_share": self.bubble_share, "collective_calls": self.collective_calls,
                **{f"memory_{k}_bytes": (self.memory or {}).get(k) for k in _MEMORY},
                **{f"part_{k}_s": (self.parts or {}).get(k) for k in PARTS},
                **{f"comm_{k}_s": (self.comm_kinds or {}).get(k) for k in COMM_KINDS},
                **{f"grad_{k}_s": (self.grad_passes or {}).get(k) for k in GRAD_PASSES}}


_MEMORY = ("weights", "gradients", "optimizer_state", "activations", "total")


def amdahl_speedup(n: int, serial: float) -> float:
    """``N / (N s + 1 - s)`` (= N / (N(1-alpha) + alpha), alpha = 1 - s)."""
    return n / (n * serial + 1 - serial)


def serial_fraction(n: int, speedup: float) -> float | None:
    """Amdahl's serial share implied by a speed-up at ``n`` devices (None for one device)."""
    if n <= 1 or speedup <= 0:
        return None
    return (n / speedup - 1) / (n - 1)


def exposed(comm_of, grad_bytes: float, backward_s: float, overlap: bool, buckets: int = 1):
    """(total communication Comm, exposed seconds) of a gradient all-reduce.
    ``comm_of(nbytes) -> Comm``."""
    from analyzer.scaling.collectives import ZERO

    if buckets < 1:
        raise ValueError("buckets must be >= 1")
    per = comm_of(grad_bytes / buckets)
    total = ZERO
    for _ in range(buckets):
        total = total + per
    if not overlap:
        return total, total.total
    finish = 0.0
    for k in range(1, buckets + 1):
        ready = backward_s * k / buckets
        finish = max(finish, ready) + per.total
    return total, max(0.0, finish - backward_s)


def point(hardware: str, n: int, compute_s: float, comm, exposed_s: float, bubble_s: float,
          step1_s: float, *, calls: int | None = None, memory: dict | None = None,
          parts: dict | None = None, grad_passes: dict | None = None) -> Point:
    """``step = compute + exposed communication + bubble``; speed-up against ``step1_s``."""
    step = compute_s + exposed_s + bubble_s
    s = step1_s / step if step > 0 else float("inf")
    return Point(hardware=hardware, devices=n, step_s=step, compute_s=compute_s,
                 communication_s=comm.total, exposed_communication_s=exposed_s, bubble_s=bubble_s,
                 speedup=s, efficiency=s / n, serial_fraction=serial_fraction(n, s),
                 bandwidth_s=comm.bandwidth_s, latency_s=comm.latency_s,
                 collective_calls=calls, memory=memory, parts=parts, grad_passes=grad_passes)


def pipeline(compute_s: float, p: int, microbatches: int, boundary_bytes: float, p2p,
             train: bool = True, v: int = 1):
    """(compute per device, bubble, Comm on the critical path) of ``p`` equal stages (the
    closed form; ``scale`` uses ``analyzer.scaling.hybrid``). ``p2p(nbytes) -> Comm``;
    ``boundary_bytes``: a whole batch's activation at a cut; the first micro-batch's trip
    over each of the ``p v - 1`` chunk boundaries (and back when training) is counted. ``v``:
    model chunks per device (interleaved 1F1B), bubble ``(p-1)/v`` micro-batch stage times."""
    from analyzer.scaling.collectives import ZERO

    if p == 1:
        return compute_s, 0.0, ZERO
    t_mb = compute_s / p / microbatches
    bubble = (p - 1) * t_mb / v
    trips = 2 if train else 1
    comm = ZERO
    one = p2p(boundary_bytes / microbatches)
    for _ in range(trips * (p * v - 1)):
        comm = comm + one
    return compute_s / p, bubble, comm


def bubble_fraction(p: int, m: int, v: int = 1) -> float:
    """The bubble's share of the step, ``(p-1)/(v m + p - 1)`` (``(p-1)/(m+p-1)`` at v = 1)."""
    return (p - 1) / (v * m + p - 1)
