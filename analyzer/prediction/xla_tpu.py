"""The ``xla`` runtime on a TPU profile: what one jitted call costs as JAX times it from the host.

Time predicted (``TIME_DEFINITION``): the wall-clock of one call of a jitted function as
``jax.block_until_ready(f(x))`` measures it from the host after the first (compiling) call, the
usual TPU timing (the jax Pallas TPU notebook's ``timeit`` of it, the mean of 100 calls):

    t_call = call_launch + sum over kernels (runs x (floor + max(compute, memory)))
    compute = FLOPs / (peak x e_compute)      memory = bytes / (bandwidth x e_bw)

- ``call_launch`` (seconds, once per call): the host's dispatch of the compiled program (Python,
  jit's argument handling, the PJRT execute call) and the program's launch on the chip, up to the
  result being ready on the host side.  It is the ``run_fixed_s`` scalar of the profile's family
  file (``hardware_db/efficiency/google-tpu-*.json``), the same per-call slot the ``qnn``
  runtime's graph-execute cost uses, shown as ``Prediction.run_overhead_s`` and in no layer's row
  (``--explain`` prints it: ``per call``).  Mostly a property of the host and the software stack,
  not of the chip: a faster host or a newer jax moves it, a faster TPU does not.
- Kernels: one per XLA fusion (the ``xla`` fusion policy); ``floor`` is the family's per-kernel
  fixed cost (a fusion's start inside a running program, the kind's assumed 1 us), ``e_compute``
  of the matrix classes the MXU's fitted fraction of the datasheet bf16 peak.

A chip JAX exposes as several devices (``DEVICES_PER_CHIP``: TPU7x, two chiplets, each its own
device; v2 and v3, each TensorCore its own device) runs a jitted call on one of them: the call
sees that device's share of the chip's peaks, HBM bandwidth and TensorCores (the profile states
the chip's), ``per_device``.

The constants are fitted on three public XLA bf16 matmuls of a v5e (``bench/check_tpu.py``); the
other TPU generations inherit them (``inherits`` in their family files), so a v6e or TPU7x
prediction is the v5e's efficiencies on that chip's datasheet figures plus the v5e host's call
launch.  The v6e and TPU7x predictions are checked, not fitted, against public timings of those
chips (``bench/tpu_public.py``, ``bench/data/tpu``).
"""

from __future__ import annotations

import dataclasses

TIME_DEFINITION = ("a jitted call's wall-clock from the host as jax.block_until_ready(f(x)) times it "
                   "after compilation: one program launch per call (host dispatch + launch, the "
                   "family's fitted figure, once) plus the device's kernels: one launch per fusion, "
                   "loop bodies once per trip")


def call_launch_s(runtime_name: str, kind: str, arrays: dict, profile_id: str, note: list[str] | None = None) -> float:
    """Seconds the ``xla`` runtime adds once per call on a TPU profile: its family's
    ``run_fixed_s`` (0 where the family has none: a datasheet profile); 0 for another runtime or
    kind.  A non-zero one is stated in ``note`` (it is in the latency, in no layer's row)."""
    if runtime_name != "xla" or kind != "tpu":
        return 0.0
    s = float(arrays.get("run_fixed_s", 0.0))
    if s > 0 and note is not None:
        note.append(f"xla on {profile_id}: {s * 1e6:.3g} µs per call (host dispatch + program launch, once, in "
                    f"the latency, in no layer), fitted on tpu-v5e's host-timed jnp.matmul calls; a property "
                    f"of the host and jax release more than of the chip")
    return s


# TPU families whose chip JAX exposes as several devices, a jitted call running on one: family ->
# (devices per chip, source).  TPU v4 and v5p join their two TensorCores into one device (MegaCore).
_JAX_TABLE = ("JAX's TPU table (jax 0.10.2, jax/_src/pallas/mosaic/tpu_info.py; "
              "https://docs.jax.dev/en/latest/pallas/tpu/hardware.html): {v} has 2 physical TensorCores per chip "
              "and no Megacore support, so each logical device is one TensorCore, its HBM bandwidth and peaks "
              "the chip's divided by 2")
_SEPARATE = ("the project reference shared/reference/hardware_specs.md, entry google_tpu_{v}: 'Cores are separate "
             "devices' (pre-MegaCore: each TensorCore with its own HBM is one device); ")
DEVICES_PER_CHIP: dict[str, tuple[int, str]] = {
    "google-tpu-v2": (2, _SEPARATE.format(v="v2") + _JAX_TABLE.format(v="TPU_V2")),
    "google-tpu-v3": (2, _SEPARATE.format(v="v3") + _JAX_TABLE.format(v="TPU_V3")),
    "google-tpu-v7": (2, "Google Cloud, TPU7x (Ironwood) system architecture: two TensorCores per chip "
                         "(https://docs.cloud.google.com/tpu/docs/tpu7x); " + _JAX_TABLE.format(v="TPU_7X")),
}


def per_device(prof, runtime_name: str, mem_bw: float, units: float, note: list[str] | None = None):
    """(profile, bandwidth B/s, units) one jitted call sees under ``xla`` on a TPU: for a family of
    ``DEVICES_PER_CHIP`` the chip's peaks, ``mem_bw`` and TensorCores ``units`` divided by its
    devices per chip (said in ``note``); else all unchanged."""
    hit = DEVICES_PER_CHIP.get(prof.family or "") if runtime_name == "xla" and prof.kind == "tpu" else None
    if hit is None:
        return prof, mem_bw, units
    n, why = hit
    if note is not None:
        note.append(f"xla on {prof.id}: one of its {n} JAX devices per chip, so 1/{n} of the chip's peaks and "
                    f"HBM bandwidth ({why})")
    return dataclasses.replace(prof, matrix_tflops={k: v / n for k, v in prof.matrix_tflops.items()},
                               vector_tflops={k: v / n for k, v in prof.vector_tflops.items()}), mem_bw / n, units / n


# TPU families whose MXU has no int8 mode: family -> source.  An int8 product there runs at the
# chip's bf16 peak (``engines.peak``), on the assumption that XLA converts the int8 operands to bf16
# (exact: bf16 holds every int8 value) and runs the bf16 product; its operands still move at 1 byte.
NO_INT8_MXU: dict[str, str] = {
    "google-tpu-v7": ("Google Cloud's TPU7x table lists BF16 (2307) and FP8 (4614 TFLOPs) per chip and no "
                      "int8 rate (https://docs.cloud.google.com/tpu/docs/tpu7x); JAX's TPU table (jax/_src/pallas/"
                      "mosaic/tpu_info.py) gives TPU7x int8_ops_per_second 0 ('Not Available') and its Mosaic "
                      "matmul check accepts f32, bf16 and fp8 operands only on generation 7"),
}


def no_int8_note(prof) -> str | None:
    """The warning of an int8 product on a TPU whose MXU has no int8 mode (``NO_INT8_MXU``), None
    for any other profile."""
    why = NO_INT8_MXU.get(prof.family or "") if prof.kind == "tpu" else None
    if why is None:
        return None
    return (f"{prof.id} has no int8 MXU mode ({why}): an int8 product is priced at its bf16 peak, as if XLA "
            f"converted the operands to bf16 (exact for int8 values; the operands still read at 1 byte); an "
            f"int8 matmul can be slower than on a v6e, whose MXU runs int8 at twice its bf16 rate")
