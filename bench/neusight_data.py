"""The rows ``bench/fit_neusight.py`` and the scripts built on it fit and score: NeuSight's fp32
PyTorch op table (``shared/measurements/gpu/neusight_ops.csv.gz``, its README section: one eager
call per value between CUDA events), each row with the kernel-model features of opcost's counts
of its one-op ONNX model and its kernel class (``load``), which rows sit at their device's and
class's floor, the deterministic subsample the fits use (``subsample``) and a device's profile
figures (``device_hw``).

Needs pandas (to load; these scripts only).
"""

from __future__ import annotations

import hashlib
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from analyzer.prediction.efficiency.kernel_time import SOFTMAX_WARP_ROW  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "measurements", "gpu", "neusight_ops.csv.gz")
MEASUREMENT_FILE = "neusight_ops.csv.gz"
PROFILE = {"a100_pcie_40gb": "a100-40gb-pcie", "a100_pcie_80gb": "a100-80gb-pcie", "v100_pcie_32gb": "v100-pcie-32gb",
           "t4": "t4", "p100_pcie_16gb": "p100-pcie-16gb", "p4": "p4"}
GPU = {"a100_pcie_40gb": "A100", "a100_pcie_80gb": "A100", "v100_pcie_32gb": "V100", "t4": "T4",
       "p100_pcie_16gb": "P100", "p4": "P4"}
GPUS = ("A100", "V100", "T4", "P100", "P4")
# NeuSight op -> the class opcost's lowering gives its one-op ONNX model (checked in --product)
OP_CLASS = {"add": "elementwise", "mul": "elementwise", "div": "elementwise", "addu": "elementwise",
            "mulu": "elementwise", "divu": "elementwise", "relu": "elementwise", "pow": "activation",
            "powu": "activation", "gelu": "activation", "tanh": "activation", "softmax": "softmax",
            "ln": "norm", "linear": "gemm_simt", "bmm": "bgemm_simt", "conv": "conv3_simt"}
FLOOR_X = 3.0     # rows within FLOOR_X x their device's and class's smallest latency: out of the kernel fit
DISPATCH_X = 1.5  # of those, the rows within DISPATCH_X x it fit the host dispatch (kernels of a few us)
CAP = 300         # rows per (op, device) in the fits (hash-ordered: deterministic)
AT_FLOOR_CAP = 60  # and rows at the floor (DISPATCH_X) per (op, device)
CUDNN_LAUNCHES = 3  # most launches cuDNN runs besides the main kernel (cudnn_conv: the non-fused Winograd)


def load(path: str):
    """The rows with the kernel-model features of opcost's counts (the one-op ONNX models'
    counts, checked against the product in ``neusight_report.product_check``), one-based ``row_id``."""
    import pandas as pd

    ns = pd.read_csv(path, low_memory=False)
    ns["row_id"] = np.arange(1, len(ns) + 1)
    ns["cls"] = ns.op.map(OP_CLASS)
    direct = ns.op.eq("conv") & ~ns.kernels_launched.fillna("").str.contains("winograd|fft", case=False)
    ns.loc[direct, "cls"] = "conv_simt"
    # a softmax row longer than the warp kernel takes runs the block kernel (op_classes.SOFTMAX_WARP_ROW)
    ns.loc[ns.op.eq("softmax") & (ns.H > SOFTMAX_WARP_ROW), "cls"] = "softmax_block"
    ns["t"] = ns.latency_us * 1e-6
    f = {k: np.zeros(len(ns)) for k in ("mac", "vec", "trans", "m", "n", "k", "batch")}
    B, H = ns.B.fillna(0).to_numpy(), ns.H.fillna(0).to_numpy()
    bh = B * H
    op = ns.op.to_numpy()
    f["vec"] = np.select([np.isin(op, ["add", "mul", "div", "addu", "mulu", "divu", "relu"]),
                          np.isin(op, ["gelu", "softmax"]), op == "ln"], [bh, 4 * bh, 7 * bh + 4 * B], 0.0)
    f["trans"] = np.select([np.isin(op, ["pow", "powu", "gelu", "tanh", "softmax"]), op == "ln"], [bh, B], 0.0)
    M, N, K = (ns[c].fillna(0).to_numpy() for c in ("M", "N", "K"))
    mm = np.isin(op, ["bmm", "linear"])
    f["mac"] = np.where(mm, 2 * B * M * N * K, 0.0)
    f["vec"] = np.where(op == "linear", B * M * K, f["vec"])       # the bias add
    f["m"] = np.where(mm, np.where(op == "linear", B * M, M), 0.0)
    f["n"], f["k"] = np.where(mm, K, 0.0), np.where(mm, N, 0.0)
    f["batch"] = np.where(op == "bmm", B, np.where(mm, 1.0, 0.0))
    cv = op == "conv"
    ci, co, ks, ins, st, pd_ = (ns[c].fillna(0).to_numpy() for c in ("in_channels", "out_channels", "kernel_size",
                                                                      "input_size", "stride", "padding"))
    o = np.floor((ins + 2 * pd_ - ks) / np.maximum(st, 1)) + 1
    f["mac"] = np.where(cv, 2 * B * co * o * o * ci * ks * ks, f["mac"])
    f["m"] = np.where(cv, B * o * o, f["m"])
    f["n"], f["k"] = np.where(cv, co, f["n"]), np.where(cv, ci * ks * ks, f["k"])
    f["batch"] = np.where(cv, 1.0, f["batch"])
    for k, v in f.items():
        ns[k] = v
    ns["bytes"] = ns.bytes_min.astype(float)
    for j, col in enumerate(cudnn_helpers(ns)):
        ns[f"cudnn_b{j}"] = col
    ns["gpu"] = ns.device_system.map(GPU)
    # (the two softmax kernels: one host op, one floor)
    floor = ns.groupby([ns.device_system, ns.cls.replace({"softmax_block": "softmax"})]).t.transform("min")
    ns["near_floor"] = ns.t <= FLOOR_X * floor
    ns["at_floor"] = ns.t <= DISPATCH_X * floor
    return ns


def cudnn_helpers(ns) -> list:
    """Per row, the bytes of each of cuDNN's launches besides the main kernel as opcost's eager
    plan predicts them (``cudnn_conv.fp32_launches``: every NeuSight convolution has the Winograd
    shape, fp32), the non-fused Winograd's with its transforms' bytes (``cudnn_conv.winograd_bytes``:
    the variant that charges them; ``fit_neusight.CUDNN_BYTES``): ``CUDNN_LAUNCHES`` columns, NaN
    where the row has no such launch."""
    from analyzer.prediction import cudnn_conv

    cols = [np.full(len(ns), np.nan) for _ in range(CUDNN_LAUNCHES)]
    conv = ns.op.eq("conv").to_numpy()
    shape = ns[["B", "in_channels", "out_channels", "input_size", "kernel_size", "stride", "padding"]].fillna(0)
    shape = shape.to_numpy()
    for r in np.flatnonzero(conv):
        b, ci, co, h, ks, st, pd_ = (int(v) for v in shape[r])
        o = (h + 2 * pd_ - ks) // max(st, 1) + 1
        launches = cudnn_conv.fp32_launches((b, ci, h, h), co, (b, co, o, o))
        moved = cudnn_conv.winograd_bytes((b, ci, h, h), co, (b, co, o, o), 4) if len(launches) == 3 else (0,)
        for j, nb in enumerate(moved):
            cols[j][r] = nb
    return cols


def subsample(ns, cap: int = CAP, salt: str = "fit"):
    """At most ``cap`` rows per (op, device) and ``AT_FLOOR_CAP`` more of its rows at the floor
    (``DISPATCH_X``: every group keeps some for the dispatch), chosen by a hash of the row id
    (deterministic)."""
    h = np.array([int(hashlib.sha256(f"opcost-ns|{salt}|{r}".encode()).hexdigest()[:12], 16) for r in ns.row_id])
    rank = ns.assign(h=h).groupby(["op", "device_system", "at_floor"]).h.rank(method="first").to_numpy()
    return ns[rank <= np.where(ns.at_floor, AT_FLOOR_CAP, cap)]


def device_hw(dev: str, share: float = 1.0) -> dict:
    """Kernel-model hardware terms of a NeuSight device's profile; ``share``: its sustained /
    boost clock (the FMA peak's share)."""
    import hardware_db

    p = hardware_db.get(PROFILE[dev])
    peak = p.vector_tflops["fp32"] * 1e12 * share
    return {"matrix_peak": peak, "vector_peak": peak, "mem_bw": p.mem_bw_gbs * 1e9, "units": float(p.units),
            "l2_bytes": p.onchip_mb * 1e6, "clock_hz": p.clock_ghz * 1e9, "profile": p.id}
