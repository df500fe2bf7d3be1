"""The NVIDIA families' norm, activation and softmax sets issue per element (``per_element = 1``):
PyTorch's LayerNorm, softmax and activation kernels compute in fp32 whatever the storage dtype, so
their per-SM term is charged by elements (bpc stated at 2 bytes an element), their DRAM term by
bytes. Closed forms on the shipped nvidia-ampere sets (docs/accuracy.md, "Per-element row
kernels")."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import analyzer
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

# a100-80gb-sxm profile: 108 SMs at 1.41 GHz
SMS, CLOCK = 108, 1.41e9
ROWS, N = 4096, 1024
DT = {"fp32": (np.float32, TensorProto.FLOAT), "fp16": (np.float16, TensorProto.FLOAT16)}


def _model(op: str, dtype: str):
    """One op over x[ROWS, N] of ``dtype``: LayerNormalization (scale and bias [N]), Softmax, Tanh."""
    np_t, onnx_t = DT[dtype]
    vi = helper.make_tensor_value_info
    inits, ins, attrs = [], ["x"], {"axis": -1} if op in ("LayerNormalization", "Softmax") else {}
    if op == "LayerNormalization":
        inits = [numpy_helper.from_array(np.ones(N, np_t), "g"), numpy_helper.from_array(np.zeros(N, np_t), "b")]
        ins = ["x", "g", "b"]
    g = helper.make_graph([helper.make_node(op, ins, ["y"], name="op", **attrs)], "g",
                          [vi("x", onnx_t, [ROWS, N])], [vi("y", onnx_t, [ROWS, N])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def _terms(op: str, dtype: str):
    rep = analyzer.analyze(_model(op, dtype), hw=["a100-80gb-sxm"], runtime="kernel")
    return rep.predictions[0].explain(0)


@pytest.mark.parametrize("op,cls,elements", [
    # x read, y written, scale and bias read: 2 * 4096 * 1024 + 2 * 1024 = 8,390,656 elements
    ("LayerNormalization", "norm", 2 * ROWS * N + 2 * N),
    # x read, y written: 8,388,608 elements
    ("Softmax", "softmax", 2 * ROWS * N),
    ("Tanh", "activation", 2 * ROWS * N)])
def test_fp32_and_fp16_row_kernels_pay_the_same_per_sm_term(op, cls, elements):
    fp32, fp16 = _terms(op, "fp32"), _terms(op, "fp16")
    assert fp32.op_class == fp16.op_class == cls
    assert fp32.bytes == 4 * elements and fp16.bytes == 2 * elements
    bpc = float(fc.load_constants("nvidia-ampere").arrays["bpc"][CLASS_CODE[cls]])
    # per element: elements x 2 bytes / (108 SMs x 1.41 GHz x bpc), the same for both dtypes;
    # LayerNorm (bpc 10.74): 16,781,312 B / 1.63547e12 B/s = 10.261 us (per byte, fp32 would pay 20.52 us)
    sm = elements * 2.0 / (SMS * CLOCK * bpc)
    assert fp32.sm_s == pytest.approx(sm, rel=1e-9) and fp16.sm_s == pytest.approx(sm, rel=1e-9)
    if cls == "norm":
        assert bpc == 10.74 and sm == pytest.approx(10.261e-6, rel=1e-4)
    # the DRAM term stays per byte: an fp32 kernel moves twice the bytes (cache step and ramp aside)
    assert fp32.dram_s > 1.5 * fp16.dram_s


def test_the_nvidia_families_row_kernel_sets_are_per_element_and_elementwise_per_byte():
    per_el = ("norm", "norm_fused", "activation", "swish", "softmax", "softmax_block")
    for fam in ("nvidia-ampere", "nvidia-ampere-ga10x", "nvidia-ada", "nvidia-hopper", "nvidia-blackwell",
                "nvidia-volta", "nvidia-turing", "nvidia-pascal"):
        arr = fc.load_constants(fam).arrays["per_element"]
        assert all(arr[CLASS_CODE[c]] == 1.0 for c in per_el), fam
        assert arr[CLASS_CODE["elementwise"]] == 0.0 and arr[CLASS_CODE["gather"]] == 0.0, fam
    # the pooled sets of generic.json (not an NVIDIA family file) stay per byte
    gen = fc.load_constants("generic").arrays["per_element"]
    assert all(gen[CLASS_CODE[c]] == 0.0 for c in per_el)
