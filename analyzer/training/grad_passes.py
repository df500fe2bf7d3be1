"""The passes over the gradients that Megatron-LM's training step runs besides the update
(megatron/core/optimizer/clip_grads.py ``clip_grad_norm_fp32``; the DDP wrapper's
``zero_grad_buffer``), priced per device like the backward plan's kernels.

With ``E`` the gradient elements one device holds and ``w`` bytes per gradient element (the
prediction's precision; 4 in fp32):

- zero: ``zero_grad_buffer`` at the start of each iteration zeroes the contiguous gradient
  buffer (``grad_data.zero_()``): one fill kernel writing ``w E`` bytes;
- norm (``clip_grad`` > 0): the global L2 norm, ``multi_tensor_l2norm`` over the gradients:
  reads ``w E`` bytes, 2 FLOPs per element (square, add); then the square of the norm (one fp32
  word, 4 B) is all-reduced over the model-parallel group (tensor x pipeline ranks) and read
  back to the host (``.item()``);
- scale: ``multi_tensor_scale`` by ``clip_coeff = clip_grad / (norm + 1e-6)``: reads and
  writes ``w E`` bytes, 1 FLOP per element. Megatron core r0.5 launches it only when
  ``clip_coeff < 1`` (the norm above ``clip_grad``; the norm depends on the data and weights, not
  known here); newer Megatron with TransformerEngine's ``multi_tensor_scale_tensor`` always
  launches it with ``min(1, clip_coeff)``. It is priced whenever clipping is on: the step when
  the norm exceeds ``clip_grad``; below it, r0.5's step is this pass shorter.

- divide: before its all-reduce each bucket of the buffer is divided by the data-parallel size
  (megatron/core/distributed/grad_buffer.py, ``Bucket.start_grad_sync``: ``data /=
  data_parallel_world_size``), also at a data-parallel size of 1 (``finalize_model_grads`` runs
  ``finish_grad_sync`` on every model chunk): one elementwise kernel reading and writing ``w E``
  bytes, 1 FLOP per element (one bucket without ``overlap_grad_reduce``; more buckets are not
  counted as more launches).

A multi-tensor pass (apex ``multi_tensor_applier``, chunks of 2048 x 32 = 65,536 elements, at
most 320 blocks of one chunk each per launch: apex csrc/multi_tensor_apply.cuh
``depth_to_max_blocks``) launches ``ceil(E / (65,536 x 320))`` kernels, each priced as one
kernel over its share of the elements; the per-launch cap of 110 (norm) or 64 (scale) tensors
and each tensor's chunk rounding are not counted (a lower bound on the launches), nor the norm's
second, one-block reduction kernel.

Megatron's defaults (``--clip-grad`` 1.0, the buffer zeroed every iteration, the divide pass and
Megatron's own step kernels: ``training.megatron_step``) apply on its paths (``resolve``):
``data_parallel="megatron"`` and tensor, pipeline and hybrid parallel; plain data parallel
(PyTorch's ``optimizer.step()``) has none of them unless asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.errors import InputSpecError
from analyzer.ir.graph import TensorSpec
from analyzer.training.grad_kernel import BwdKernel

MEGATRON_CLIP_GRAD = 1.0      # Megatron-LM arguments.py: --clip-grad default
CHUNK = 2048 * 32             # apex multi_tensor_applier = MultiTensorApply(2048 * 32)
MAX_BLOCKS = 320              # apex depth_to_max_blocks: chunks per launch
NORM_BYTES = 4                # the norm's square: one fp32 word all-reduced
DTYPE_OF_BYTES = {4: "float32", 2: "float16", 8: "float64", 1: "int8"}


@dataclass(frozen=True)
class GradPasses:
    """Which passes run: ``clip_grad`` the max norm (None: no clipping: no norm, no scale),
    ``zero_grad`` the buffer zeroed each iteration, ``megatron`` Megatron's step as it runs
    (the divide pass; the main-grad hook's adds and the fused kernels of
    ``training.megatron_step``)."""

    clip_grad: float | None = None
    zero_grad: bool = False
    megatron: bool = False

    @property
    def on(self) -> bool:
        return self.clip_grad is not None or self.zero_grad or self.megatron

    def to_dict(self) -> dict:
        d = {"clip_grad": self.clip_grad, "zero_grad": self.zero_grad}
        return d | {"megatron_step": True} if self.megatron else d


OFF = GradPasses()


def resolve(parallel: str, data_parallel: str, clip_grad="auto", zero_grad=None,
            megatron_step=None) -> GradPasses:
    """The passes of a run: ``clip_grad`` "auto" is Megatron's 1.0 on its paths (module
    docstring) and none elsewhere, a number > 0 clips at that norm, None or 0 none;
    ``zero_grad`` and ``megatron_step`` None follow the path, True / False force them."""
    megatron = parallel != "data" or data_parallel == "megatron"
    if clip_grad == "auto":
        clip = MEGATRON_CLIP_GRAD if megatron else None
    elif clip_grad is None or clip_grad == 0:
        clip = None
    elif isinstance(clip_grad, (int, float)) and not isinstance(clip_grad, bool) and clip_grad > 0:
        clip = float(clip_grad)
    else:
        raise InputSpecError(f"clip_grad must be a number > 0 (the max gradient norm), 0 or "
                             f"None (no clipping), or 'auto'; got {clip_grad!r}")
    for name, val in (("zero_grad", zero_grad), ("megatron_step", megatron_step)):
        if val is not None and not isinstance(val, bool):
            raise InputSpecError(f"{name} must be True, False or None; got {val!r}")
    return GradPasses(clip, megatron if zero_grad is None else zero_grad,
                      megatron if megatron_step is None else megatron_step)


def launches(elements: int) -> int:
    """Kernels of one multi-tensor pass over ``elements`` (module docstring)."""
    return max(1, -(-int(elements) // (CHUNK * MAX_BLOCKS)))


def _split(elements: int, parts: int) -> list[int]:
    base, extra = divmod(int(elements), parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def kernels(elements: int, elem_bytes: int, passes: GradPasses) -> dict[str, list[BwdKernel]]:
    """Per pass (zero, norm, scale, divide) its kernels over ``elements`` gradient elements of
    ``elem_bytes`` bytes (module docstring); passes that do not run are absent."""
    dt = DTYPE_OF_BYTES.get(elem_bytes, "float32")
    out: dict[str, list[BwdKernel]] = {}

    def k(name, kind, op, n, read, written, vec, out_n):
        return BwdKernel(-1, name, kind, op, (TensorSpec((n,), dt),),
                         (TensorSpec((out_n,), dt),), vector_flops=vec,
                         bytes_read=read * elem_bytes, bytes_written=written * elem_bytes)

    if elements <= 0:
        return out
    if passes.zero_grad:
        out["zero"] = [k("zero_grad_buffer", "zero", "Mul", elements, 0, elements, 0, elements)]
    if passes.clip_grad is not None:
        parts = _split(elements, launches(elements))
        out["norm"] = [k(f"multi_tensor_l2norm/{i}", "reduce", "ReduceSum", n, n, 0, 2 * n, 1)
                       for i, n in enumerate(parts)]
        out["scale"] = [k(f"multi_tensor_scale/{i}", "grad", "Mul", n, n, n, n, n)
                        for i, n in enumerate(parts)]
    if passes.megatron:
        out["divide"] = [k("grad_data_divide", "grad", "Div", elements, elements, elements,
                           elements, elements)]
    return out


def seconds(pred, profile, elements: int, elem_bytes: int, passes: GradPasses) -> dict[str, float]:
    """Seconds of each pass (keys zero, norm, scale, divide; 0 when it does not run) of one device
    holding ``elements`` gradient elements, priced like the backward plan's kernels under
    ``pred``'s runtime on ``profile`` (``backward_time.seconds_of``: the sum of their times)."""
    from analyzer.training.backward_time import seconds_of

    ks = kernels(elements, elem_bytes, passes)
    return {name: seconds_of(ks.get(name, []), pred, profile, False)
            for name in ("zero", "norm", "scale", "divide")}

