"""The kernels eager PyTorch launches for one BatchNorm in training mode (rule ``bn-train`` of
``eager_rules.RULES``), with closed-form bytes: the forward of a training step
(``Runtime.train_forward``, ``training.step``).

In ``model.train()`` an ``nn.BatchNorm2d`` normalizes with the batch's statistics and updates its
running ones: ``num_batches_tracked.add_(1)`` (a Python-level op of the module's forward, its own
dispatch) and one ``F.batch_norm(training=True)`` call (one dispatch) that runs, by element size
``e`` of x [N, C, ...] (n elements; per-channel tensors of C; the running statistics, weight and
bias in the model's dtype, ``e`` bytes an element, the saved statistics fp32):

- fp16/bf16 (PyTorch's native kernels, ``native_batch_norm`` on NCHW), four launches:
  ``batch_norm_collect_statistics_kernel`` reads x, writes the batch mean and variance
  (``n e + 2 C 4`` bytes; op ``ReduceMean``: class reduce, one reduction per channel);
  ``batch_norm_update_stats_and_invert`` (a multi-output elementwise kernel) reads them and the
  running mean and variance, writes the running ones and the inverse std
  (``2 C 4 + 2 C e`` read, ``2 C e + C 4`` written; op ``Add``: class elementwise);
  ``batch_norm_transform_input_kernel`` reads x, the mean and inverse std, the weight and bias,
  writes y (``2 n e + 2 C 4 + 2 C e``; op ``BatchNormalization``: class norm, as the eval BN's
  transform); and the counter add (``CUDAFunctorOnSelf_add<long>``: one int64 read and written,
  8 + 8 bytes; op ``Add``).
- fp32 (TF32 or not: cuDNN's ``bn_fw_tr_1C11_singleread``, ``bn_fw_tr_1C11_kernel_NCHW`` on the
  largest maps), one kernel: reads x, the weight, bias and running statistics, writes y, the running
  statistics and the saved mean and inverse std (``2 n 4 + 8 C 4``; op ``BatchNormalization``),
  and the counter add.

The kernel names and counts are the H200 run's (torch 2.11 / cuDNN 9; docs/accuracy.md, Whole
models on the H200: the training rows of ResNet-50 and MobileNetV2, bf16 53 x 4 and 52 x 4 per
forward, fp32 and TF32 53 x 2 and 52 x 2).
Each launch takes its class's floor and rate (the classes chosen by the kernel's shape before any
comparison); the statistics kernel's serial loop (one block per channel over N x H x W:
``bn_stats``, fitted on the H200's ResNet-50 rows) is its time where longer than its bytes'
(``stats_loop``: the plan's ``extra_loops``).  Not planned: cuDNN's NHWC kernels (a channels-last
model) and the ``_kernel_NCHW`` variant's second read of x.  Each list is in issue order; the
ops with prefix ``cudnn_conv.ATEN`` run inside the ``batch_norm`` call (no dispatch of their own).
"""

from __future__ import annotations

from analyzer.prediction import bn_stats
from analyzer.prediction.cudnn_conv import ATEN

STATS = 4           # bytes of a saved statistic (fp32)
COUNTER = 8         # bytes of num_batches_tracked (int64)
NORM = "BatchNormalization"


def launches(channels: int, x_bytes: int, e: int) -> list[tuple[str, int]]:
    """(op, bytes) of every launch of one training-mode BatchNorm of ``channels`` channels over
    an x of ``x_bytes`` bytes (element size ``e``), the transform included (module docstring)."""
    c = channels
    if e == 2:
        return [("Add", 2 * COUNTER),
                (ATEN + "ReduceMean", x_bytes + 2 * c * STATS),
                (ATEN + "Add", 2 * c * STATS + 2 * c * e + 2 * c * e + c * STATS),
                (NORM, 2 * x_bytes + 2 * c * STATS + 2 * c * e)]
    return [("Add", 2 * COUNTER), (NORM, 2 * x_bytes + 8 * c * e)]


def stats_loop(e: int, dims) -> tuple[int, tuple[int, int]] | None:
    """(position in ``launches``' list, (blocks, serial steps): ``bn_stats.loop``) of the
    statistics kernel of an x of ``dims`` [N, C, ...] at element size ``e``; None where cuDNN
    runs the BatchNorm (fp32: no such kernel).  The position is the same in ``node_extras``."""
    return (1, bn_stats.loop(dims)) if e == 2 else None


def node_extras(channels: int, x_bytes: int, e: int) -> list[tuple[str, int]]:
    """The launches besides the node's own kernel (the transform: its counted bytes) of an
    exported BatchNormalization node in a training step: ``launches`` less its ``NORM`` one."""
    return [(op, b) for op, b in launches(channels, x_bytes, e) if op != NORM]
