"""Recorded measurements: the shipped quantize-class constants of the Hopper, Blackwell and Ada
families (pooled over seven systems by bench/fit_aic_elementwise.py) predict aiconfigurator's
bf16 -> fp8 quantize kernel within the tolerances stated per row.

Each row is copied from ``shared/measurements/gpu/aic_elementwise.csv`` (source: ai-dynamo/
aiconfigurator at commit 095f58a5, ``<device_system>/quantize/<framework>/<version>/
scale_matrix_perf.parquet``, column ``latency_us``: CUDA-graph replay, mean of 30 back-to-back
executions on the same input).  Predicted the way a user would: the one-op ONNX model
``QuantizeLinear(x bf16 [m, k]) -> fp8`` through ``analyzer.analyze(..., runtime="kernel")``.
The tolerances are the recorded error at the fit (``pred/measured - 1``, in the comment) plus
about 5 points; the rows above 400 MB on profiles that state a clock are held to 15 %.
"""

from __future__ import annotations

import pytest
from onnx import TensorProto as TP
from onnx import helper

import analyzer

PROFILE = {"h200_sxm": "h200-sxm", "b200_sxm": "b200-hgx", "b300_sxm": "b300-sxm", "gb200": "gb200-gpu",
           "gb300": "gb300-gpu", "rtx_pro_6000_server": "rtx-pro-6000", "l40s": "l40s"}

# (device_system, framework, version, m, k, latency_us, tolerance)
ROWS = [
    ("h200_sxm", "vllm", "0.24.0", 32768, 65536, 1523.0368, 0.15),          # +4.6 %, 6.4 GB
    ("h200_sxm", "trtllm", "1.3.0rc20", 1024, 4096, 3.9381, 0.15),          # +10.0 %, 12.6 MB
    ("h200_sxm", "vllm", "0.24.0", 8192, 1024, 7.7931, 0.20),               # -14.7 %, 25.2 MB
    ("b200_sxm", "vllm", "0.24.0", 32768, 51200, 734.7083, 0.15),           # +12.7 %, 5.0 GB
    ("b200_sxm", "trtllm", "1.3.0rc20", 4096, 4096, 11.9829, 0.20),         # -14.2 %, 50 MB
    ("b200_sxm", "vllm", "0.24.0", 1, 32, 1.8037, 0.20),                    # +16.0 %, 99 bytes
    ("gb200", "vllm", "0.24.0", 16384, 16384, 113.7568, 0.42),              # +37.1 %, no clock in the profile
    ("b300_sxm", "trtllm", "1.3.0rc20", 2048, 7168, 10.352, 0.10),          # -5.3 %, 44 MB
    ("gb300", "vllm", "0.24.0", 32768, 8192, 113.2341, 0.33),               # +27.5 %, no clock in the profile
    ("rtx_pro_6000_server", "vllm", "0.24.0", 16384, 65536, 2167.9039, 0.15),  # -1.8 %, 3.2 GB
    ("rtx_pro_6000_server", "trtllm", "1.3.0rc20", 2048, 8192, 10.8907, 0.40),  # -34.1 %, 50 MB (L2)
    ("l40s", "vllm", "0.24.0", 32768, 16384, 2404.1814, 0.15),              # -8.1 %, 1.6 GB
    ("l40s", "trtllm", "1.3.0rc20", 1024, 4096, 3.7216, 0.10),              # +4.2 %, 12.6 MB
]


def quantize_model(m: int, k: int):
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])], "q",
        [helper.make_tensor_value_info("x", TP.BFLOAT16, [m, k])],
        [helper.make_tensor_value_info("y", TP.FLOAT8E4M3FN, [m, k])],
        [helper.make_tensor("s", TP.BFLOAT16, [], [1.0]), helper.make_tensor("zp", TP.FLOAT8E4M3FN, [], [0])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


@pytest.mark.parametrize("system, framework, version, m, k, latency_us, tol", ROWS)
def test_recorded_quantize_rows(system, framework, version, m, k, latency_us, tol):
    rep = analyzer.analyze(quantize_model(m, k), hw=[PROFILE[system]], runtime="kernel")
    pred_us = rep.predictions[0].latency_s * 1e6
    assert abs(pred_us / latency_us - 1.0) <= tol, (system, framework, version, m, k, pred_us, latency_us)


def test_the_families_carry_the_pooled_set():
    # one pooled set in the three families: the same e_bw, bpc, l2_hit, ramp and floor in cycles;
    # the overlap form (memory = max(DRAM term, per-SM term))
    from analyzer.prediction.efficiency.constants import load_constants
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    i = CLASS_CODE["quantize"]
    sets = [load_constants(f).arrays for f in ("nvidia-hopper", "nvidia-blackwell", "nvidia-ada")]
    for a in sets:
        assert a["sm_overlap"][i] == 1.0
        for p in ("e_bw", "bpc", "l2_hit", "b_half_bytes"):
            assert a[p][i] == sets[0][p][i]
        assert a["floor_s"][i] * a["floor_clock_hz"][i] == pytest.approx(
            sets[0]["floor_s"][i] * sets[0]["floor_clock_hz"][i], rel=1e-3)
