"""Plausible by construction (issue 32): on kernels of every class, a bigger NVIDIA GPU is never
predicted slower: b200 <= h100 <= a100 <= t4 and h100 <= l4, within 5 %, at fp16 and fp32, under
the kernel runtime. Each model is one op; sizes are small (one wave or less on the big GPUs) and
large. The whole-model sweep is ``bench/plausibility.py``."""

from __future__ import annotations

import pytest

import analyzer
from tests.onnx_builders import one_node, weight

HW = ("b200-hgx", "h100-sxm", "a100-80gb-sxm", "l4", "t4")
ORDER = (("b200-hgx", "h100-sxm"), ("h100-sxm", "a100-80gb-sxm"), ("a100-80gb-sxm", "t4"),
         ("h100-sxm", "l4"))
TOLERANCE = 0.05

CASES = {
    # GEMM at small M (a decode step: 8 rows, a 4096 x 4096 weight) and at large M
    "gemm M=8": lambda: one_node("MatMul", (8, 4096), weight(4096, 4096)),
    "gemm M=49 K=4608": lambda: one_node("MatMul", (49, 4608), weight(4608, 512)),
    "gemm M=4096": lambda: one_node("MatMul", (4096, 1024), weight(1024, 4096)),
    # ResNet-50's last 3x3 convolution (M = 7 x 7 = 49) and an early one
    "conv 7x7x512": lambda: one_node("Conv", (1, 512, 7, 7), weight(512, 512, 3, 3), pads=[1, 1, 1, 1]),
    "conv 56x56x64": lambda: one_node("Conv", (8, 64, 56, 56), weight(64, 64, 3, 3), pads=[1, 1, 1, 1]),
    "elementwise add 16M": lambda: one_node("Add", (4096, 4096), (4096, 4096)),
    "elementwise add 256K": lambda: one_node("Add", (512, 512), (512, 512)),
    "layer norm 8192x1024": lambda: one_node("LayerNormalization", (8192, 1024), weight(1024), weight(1024),
                                             axis=-1),
    "softmax 64x128x128": lambda: one_node("Softmax", (64, 128, 128), axis=-1),
}


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_bigger_gpu_is_never_predicted_slower_on_one_kernel(case, precision):
    preds = analyzer.analyze(CASES[case](), hw=list(HW), precision=precision, runtime="kernel").predictions
    t = {p.hardware: p.latency_s for p in preds}
    for fast, slow in ORDER:
        assert t[fast] <= t[slow] * (1 + TOLERANCE), (case, precision, fast, t[fast], slow, t[slow])
