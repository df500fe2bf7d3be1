"""The rows ``bench/fit_aic_elementwise.py`` fits: aiconfigurator's quantize-kernel table
(``aic_elementwise.csv``), which systems and tables it uses, opcost's closed-form counts of each
row's one-op ONNX model (``counts``; ``verify_counts`` checks them against ``analyzer.analyze``),
each system's figures as the library resolves its profile (``hw_of``) and each row's size regime
on its device (``regime``).

Needs pandas (to load; these scripts only).
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

FIT_DATE = "2026-12-02"
SCRIPT = "bench/fit_aic_elementwise.py"
COMMAND = "PYTHONPATH=$PWD python bench/fit_aic_elementwise.py ../shared/measurements/gpu"
FILE = "aic_elementwise.csv"
RESULTS = os.path.join(ROOT, "bench", "results", "aic_elementwise_fit")
# aiconfigurator system -> (opcost profile, family)
SYSTEMS = {
    "h200_sxm": ("h200-sxm", "nvidia-hopper"),
    "b200_sxm": ("b200-hgx", "nvidia-blackwell"),
    "b300_sxm": ("b300-sxm", "nvidia-blackwell"),
    "gb200": ("gb200-gpu", "nvidia-blackwell"),
    "gb300": ("gb300-gpu", "nvidia-blackwell"),
    "rtx_pro_6000_server": ("rtx-pro-6000", "nvidia-blackwell"),
    "l40s": ("l40s", "nvidia-ada"),
}
FAMILIES = ("nvidia-hopper", "nvidia-blackwell", "nvidia-ada")
# the tables fitted on: the newest unflagged version of each framework, on every system
FIT_TABLES = {"vllm": "0.24.0", "trtllm": "1.3.0rc20"}
KERNELS = {"vllm": "vLLM static_scaled_fp8_quant", "trtllm": "TensorRT-LLM static_quantize_e4m3_per_tensor"}
L2_RESIDENT = 0.5  # rows whose bytes are below this x the device's L2 are "L2-resident" in the report
DRAM_X = 4.0       # rows above this x the L2 (or above 403 MB where the L2 size is unknown) stream from DRAM


def counts(m, k) -> dict:
    """opcost's counts of ``QuantizeLinear(x bf16 [m, k], scale bf16 [], zero point fp8 []) -> fp8``:
    2 m k bytes read + m k written + the 3 bytes of scale and zero point; 5 vector FLOPs per element."""
    m, k = np.asarray(m, np.float64), np.asarray(k, np.float64)
    return {"bytes": 3.0 * m * k + 3.0, "vec": 5.0 * m * k}


def verify_counts(shapes=((1, 32), (64, 4096), (4353, 7168))) -> list[str]:
    """The closed form of ``counts`` against ``analyzer.analyze`` on one-op ONNX models."""
    from onnx import TensorProto as TP
    from onnx import helper

    import analyzer

    lines = []
    for m, k in shapes:
        g = helper.make_graph(
            [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"])], "q",
            [helper.make_tensor_value_info("x", TP.BFLOAT16, [m, k])],
            [helper.make_tensor_value_info("y", TP.FLOAT8E4M3FN, [m, k])],
            [helper.make_tensor("s", TP.BFLOAT16, [], [1.0]), helper.make_tensor("zp", TP.FLOAT8E4M3FN, [], [0])])
        (node,) = analyzer.analyze(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])).nodes
        c = node.cost
        got = (c.mac_flops, c.vector_flops, c.weight_bytes + c.activation_bytes_read + c.activation_bytes_written)
        want = counts(m, k)
        ok = got == (0, want["vec"], want["bytes"])
        lines.append(f"{'ok ' if ok else 'BAD'} QuantizeLinear m={m} k={k}: closed (0, {want['vec']:.0f}, "
                     f"{want['bytes']:.0f}) analyze {got}")
    return lines


def load(meas_dir: str):
    """The unflagged rows of ``aic_elementwise.csv`` with counts, t (s) and ``fit`` (in FIT_TABLES)."""
    import pandas as pd

    q = pd.read_csv(os.path.join(meas_dir, FILE), dtype={"version": str, "version_recorded": str})
    q = q[q.flag.isna() & q.device_system.isin(list(SYSTEMS))].copy()
    c = counts(q.m.to_numpy(), q.k.to_numpy())
    q["bytes"], q["vec"], q["t"] = c["bytes"], c["vec"], q.latency_us.to_numpy() * 1e-6
    q["fit"] = [FIT_TABLES.get(f) == v for f, v in zip(q.framework, q.version)]
    q["table"] = q.device_system + "/" + q.framework + "/" + q.version
    return q.reset_index(drop=True)


def hw_of(system: str) -> dict:
    """The figures opcost predicts a system with (``analyzer.prediction.hardware``'s own resolution):
    DRAM bandwidth, SMs, L2 bytes, the per-SM clock (the median GPU clock where the profile has
    none) and whether the clock is the profile's own (floors scale with it only then)."""
    import hardware_db

    from analyzer.prediction import hardware as H
    from analyzer.prediction.efficiency.constants import units_of

    p = hardware_db.get(SYSTEMS[system][0])
    return {"profile": p.id, "mem_bw": p.mem_bw_gbs * 1e9, "units": float(p.units or units_of(p) or 0),
            "l2_bytes": H.cache_bytes(p), "clock_hz": H.clock_hz(p), "own_clock": bool(p.clock_ghz),
            "matrix_peak": p.peak_flops("matrix", "bf16") or p.peak_flops("matrix", "fp16") or 1e15,
            "vector_peak": p.peak_flops("vector", "fp32") or 1e14}


def regime(df) -> np.ndarray:
    """Each row's size regime on its device: tiny (< 1 MB: floor and ramp), L2-resident (below
    ``L2_RESIDENT`` x L2), transition, DRAM (above ``DRAM_X`` x L2; above 403 MB where the L2
    size is unknown)."""
    l2 = np.array([hw_of(s)["l2_bytes"] for s in df.device_system])
    b = df.bytes.to_numpy()
    big = np.where(l2 > 0, DRAM_X * l2, 403e6)
    return np.where(b < 1e6, "tiny", np.where((l2 > 0) & (b < L2_RESIDENT * l2), "L2-resident",
                                              np.where(b > big, "DRAM", "transition")))

