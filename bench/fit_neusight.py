"""Physical GPU constants fitted on NeuSight's fp32 PyTorch op rows, with leave-one-GPU-out scores.

Data: ``shared/measurements/gpu/neusight_ops.csv.gz`` (its README section ``neusight_ops.csv.gz``):
one eager PyTorch 2.1 call per value, CUDA events around it (host dispatch + launch + kernel; no
L2 flush; mean of the 5 fastest of 25), fp32, TF32 off, on A100 PCIe (40 GB; the conv rows on an
80 GB card), V100 PCIe, T4, P100 PCIe and P4.  The time definition is opcost's ``eager-op``.

Model (``efficiency.kernel_time`` with the shipped classes, per row)::

    latency = dispatch[device, class] + floor[class] + max(compute, memory)

- ``dispatch``: the host's cost of one eager call (PyTorch dispatch, launch, the event and the
  synchronize): a property of the measuring host's CPU and driver, not of the GPU.  The rows
  within ``FLOOR_X`` x the smallest latency of their device and class are kept out of the kernel
  fit (the README's advice); the dispatch is fitted per device and class as the median of
  ``latency - kernel`` over those within ``DISPATCH_X`` x it.
- the kernel: the FMA-unit matrix classes (``gemm_simt`` for nn.Linear, ``bgemm_simt`` for
  torch.bmm, its tile run whole (``whole_tile``), ``conv3_simt`` for the 3x3 stride-1 convolutions, ``conv_simt`` for the rows cuDNN
  ran without Winograd/FFT) on the vector fp32 peak, and the memory-bound classes (elementwise,
  activation, softmax, norm; ``softmax_block`` for rows longer than ``SOFTMAX_WARP_ROW``, the
  block-per-row kernel) in the per-SM form; the class floor is the pooled NVIDIA floor in
  cycles (``constants.floor_cycles``: not identified here, it sits inside the dispatch).
- a power-capped card (T4 70 W, P4 75 W) holds a sustained clock under FMA load below its boost
  clock: fitted per card (in-sample only), written to its profile as ``sustained_clock_ghz``.

Fits are POOLED over the GPUs (one set of constants per class for all of them), by least squares
on log(pred/measured) (soft L1), on a deterministic subsample (``CAP`` rows per op and device).
Leave-one-GPU-out: fit on four GPUs, score the fifth (the A100's two cards are one GPU), whose
sustained clock is then unknown (boost) and whose host dispatch is (a) its own near-floor rows'
(a host measurement) or (b) the median of the other four hosts'.  The held-out score is also
taken through the product (``analyzer.analyze`` on one-op ONNX models, ``precision="fp32"`` as
NeuSight ran them (TF32 off), ``runtime="kernel"`` plus
the fitted dispatch, and ``runtime="eager-op"`` as shipped) on ``PRODUCT_PER`` rows per op.

Writes: the pooled matrix sets into ``generic.json`` (``op_classes.POOLED_CLASSES``), the pooled
memory-bound sets into ``nvidia-volta.json``, ``nvidia-turing.json``, ``nvidia-pascal.json``, the
sustained clocks into the T4 and P4 profiles, and a markdown report (``--out``).

Usage: ``PYTHONPATH=$PWD python bench/fit_neusight.py [--data ../shared/measurements/gpu/neusight_ops.csv.gz]
[--out bench/results/fit_neusight.md] [--no-write]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from analyzer.prediction.efficiency import constants as fc  # noqa: E402
from analyzer.prediction.efficiency.kernel_time import (  # noqa: E402
    CLASS_CODE, SOFTMAX_WARP_ROW, kernel_time, with_clock)

DATA = os.path.join(ROOT, "..", "shared", "measurements", "gpu", "neusight_ops.csv.gz")
MEASUREMENT_FILE = "neusight_ops.csv.gz"
SCRIPT = "bench/fit_neusight.py"
COMMAND = "PYTHONPATH=$PWD python bench/fit_neusight.py"
FIT_DATE = "2026-12-02"
PROFILE = {"a100_pcie_40gb": "a100-40gb-pcie", "a100_pcie_80gb": "a100-80gb-pcie", "v100_pcie_32gb": "v100-pcie-32gb",
           "t4": "t4", "p100_pcie_16gb": "p100-pcie-16gb", "p4": "p4"}
GPU = {"a100_pcie_40gb": "A100", "a100_pcie_80gb": "A100", "v100_pcie_32gb": "V100", "t4": "T4",
       "p100_pcie_16gb": "P100", "p4": "P4"}
GPUS = ("A100", "V100", "T4", "P100", "P4")
CAPPED = ("t4", "p4")       # power-capped cards (70 W, 75 W): a fitted sustained clock
# NeuSight op -> the class opcost's lowering gives its one-op ONNX model (checked in --product)
OP_CLASS = {"add": "elementwise", "mul": "elementwise", "div": "elementwise", "addu": "elementwise",
            "mulu": "elementwise", "divu": "elementwise", "relu": "elementwise", "pow": "activation",
            "powu": "activation", "gelu": "activation", "tanh": "activation", "softmax": "softmax",
            "ln": "norm", "linear": "gemm_simt", "bmm": "bgemm_simt", "conv": "conv3_simt"}
MEMORY = ("elementwise", "activation", "softmax", "softmax_block", "norm")
MATRIX = ("gemm_simt", "bgemm_simt", "conv3_simt", "conv_simt")
FLOOR_X = 3.0     # rows within FLOOR_X x their device's and class's smallest latency: out of the kernel fit
DISPATCH_X = 1.5  # of those, the rows within DISPATCH_X x it fit the host dispatch (kernels of a few us)
CAP = 300         # rows per (op, device) in the fits (hash-ordered: deterministic)
AT_FLOOR_CAP = 60  # and rows at the floor (DISPATCH_X) per (op, device)
PRODUCT_PER = 6   # rows per (op, device) scored through analyzer.analyze
TILES = ((128.0, 128.0), (128.0, 64.0), (64.0, 64.0))
# torch.bmm's tile (rows x columns of the output), run whole (kernel_time's whole_tile): cuBLAS's batched
# sgemm ran one tile per GPU over every bmm row here (A100 128x128, P100 and P4 128x64 with the 128 on
# the output's columns, T4 64x64); the fit keeps the least cost of these
BGEMM_TILES = ((128.0, 128.0), (64.0, 128.0), (64.0, 64.0))
# bpc at most 64 bytes per SM-cycle: the L2 -> SM path of these GPUs (64 B per clock per SM on Volta and
# Ampere); with a higher bound the elementwise fit ran to it (the per-SM term off, L2-resident rows free)
MEM_FREE = {"e_bw": (0.8, 0.2, 1.0), "bpc": (20.0, 0.5, 64.0), "l2_hit": (0.3, 1e-3, 1.0),
            "b_half_bytes": (1e4, 1e2, 1e6)}   # (a ramp of at most 1 MB: a larger one was a host term)
# the matrix classes' memory side is held, not fitted: b_half at 0 (on a 320 GB/s card a fitted 4.5 MB
# ramp was a 50 us term that the near-floor rows' host dispatch belongs to) and e_bw at generic.json's
# tensor-core gemm set's (the same DRAM stream; NeuSight's rows lack most of the thin shapes that
# would identify it, and a fitted e_bw of 0.30 made an fp32 GEMV on an A100 twice as slow as the DRAM
# stream: it stood in for a compute effect)
MAT_FREE = {"e_compute": (0.8, 0.1, 1.0)}
WINO = {"mult_share": (0.44, 0.25, 1.0)}   # F(4x4,3x3) 36/144 .. direct
K_FILL = {"k_fill": (8.0, 0.1, 128.0)}   # a tile's prologue + epilogue in k-loop steps
FIT_K_FILL = True
WHOLE_BGEMM = True   # torch.bmm's tile whole (fit_bgemm_whole); False: the shared gemm tile with small-grid tiles


# ----------------------------------------------------------------------------- data

def load(path: str):
    """The rows with the kernel-model features of opcost's counts (the one-op ONNX models'
    counts, checked against the product in ``product_scores``), one-based ``row_id``."""
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
    ns["gpu"] = ns.device_system.map(GPU)
    # (the two softmax kernels: one host op, one floor)
    floor = ns.groupby([ns.device_system, ns.cls.replace({"softmax_block": "softmax"})]).t.transform("min")
    ns["near_floor"] = ns.t <= FLOOR_X * floor
    ns["at_floor"] = ns.t <= DISPATCH_X * floor
    return ns


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


# ----------------------------------------------------------------------------- the model

@dataclasses.dataclass
class Fit:
    """One fit: per class the constants that differ from the shipped set, the tile, the
    sustained-clock shares of the capped cards, the host dispatch per (device, class)."""
    sets: dict                                   # class -> {param: value}
    shares: dict = dataclasses.field(default_factory=dict)     # device -> sustained / boost
    dispatch: dict = dataclasses.field(default_factory=dict)   # (device, dispatch class) -> seconds


def dclass(cls: str) -> str:
    """The dispatch class of a kernel class (one host op: both conv classes are nn.Conv2d, both
    softmax classes torch.softmax)."""
    return {"conv_simt": "conv3_simt", "softmax_block": "softmax"}.get(cls, cls)


def arrays_of(sets: dict) -> dict:
    """The shipped generic constants with ``sets`` over them (every class of ``sets``)."""
    base = fc.load_constants("generic").arrays
    arr = {k: (np.array(v, dtype=float) if np.ndim(v) else v) for k, v in base.items()}
    for cls, vals in sets.items():
        i = CLASS_CODE[cls]
        for p in ("tile_m", "tile_n", "wave_alpha", "l2_gain", "mult_share", "bpc", "l2_hit", "whole_tile", "k_fill"):
            arr[p][i] = 0.0
        for p, v in vals.items():
            arr[p][i] = v
    return arr


def kernel_s(df, dev: str, arr: dict, share: float = 1.0) -> np.ndarray:
    """Kernel seconds of ``df``'s rows (one device) under ``arr``: ``kernel_time`` with the
    device's clock (per-SM term) and the pooled NVIDIA floor cycles over its clock."""
    hw = device_hw(dev, share)
    a = with_clock(arr, hw["clock_hz"])
    cyc = fc.floor_cycles()
    a["floor_s"] = np.where(np.isfinite(cyc), cyc / hw["clock_hz"], a["floor_s"])
    feats = {"op_class": df.cls.map(CLASS_CODE).to_numpy(), "mac_flops": df.mac.to_numpy(),
             "vec_flops": df.vec.to_numpy(), "trans_flops": df.trans.to_numpy(), "bytes": df.bytes.to_numpy(),
             "m": df.m.to_numpy(), "n": df.n.to_numpy(), "k": df.k.to_numpy(), "batch": df.batch.to_numpy(),
             "elem_bytes": np.full(len(df), 4.0)}
    return kernel_time(np, feats, hw, a)["time_s"]


def predict(df, fit: Fit, host: dict | None = None) -> np.ndarray:
    """Eager-op latency of ``df``'s rows: dispatch + kernel (``host``: a dispatch table to use
    instead of the fit's)."""
    arr = arrays_of(fit.sets)
    host = fit.dispatch if host is None else host
    out = np.zeros(len(df))
    for dev, part in df.groupby("device_system"):
        idx = df.index.get_indexer(part.index)
        d = np.array([host.get((dev, dclass(c)), 0.0) for c in part.cls])
        out[idx] = d + kernel_s(part, dev, arr, fit.shares.get(dev, 1.0))
    return out


def fit_dispatch(df, fit: Fit) -> dict:
    """Host dispatch per (device, class): median of latency - kernel over the rows within
    ``DISPATCH_X`` x their smallest latency (of the near-floor rows, those whose kernels are a few
    microseconds: the kernel model's own error barely moves the figure)."""
    arr = arrays_of(fit.sets)
    out = {}
    for (dev, dc), part in df[df.at_floor].assign(dc=df.cls.map(dclass)).groupby(["device_system", "dc"]):
        k = kernel_s(part, dev, arr, fit.shares.get(dev, 1.0))
        out[(dev, dc)] = float(max(np.median(part.t.to_numpy() - k), 0.0))
    return out


def _lsq(resid, free: dict):
    from scipy.optimize import least_squares

    names = list(free)
    lo, hi = np.log([free[n][1] for n in names]), np.log([free[n][2] for n in names])
    r = least_squares(resid, np.log([free[n][0] for n in names]), bounds=(lo, hi), loss="soft_l1",
                      f_scale=0.1, max_nfev=100, method="trf")
    return dict(zip(names, np.exp(r.x))), float(r.cost)


def fit_memory(df, fit: Fit, cls: str) -> None:
    """The per-SM set of a memory-bound class, pooled over ``df``'s devices (kernel rows only)."""
    rows = df[(df.cls == cls) & ~df.near_floor]
    lt = np.log(rows.t.to_numpy())
    fixed = {"e_compute": 0.5, "floor_s": 0.0}

    def resid(x):
        trial = Fit(dict(fit.sets, **{cls: dict(fixed, **dict(zip(MEM_FREE, np.exp(x))))}), fit.shares, fit.dispatch)
        return np.log(predict(rows, trial)) - lt

    vals, _ = _lsq(resid, MEM_FREE)
    fit.sets[cls] = dict(fixed, **vals)


def _mat_set(vals: dict, tile) -> dict:
    e_bw = float(fc.load_constants("generic").arrays["e_bw"][CLASS_CODE["gemm"]])
    return dict(vals, tile_m=tile[0], tile_n=tile[1], wave_alpha=1.0, floor_s=0.0, b_half_bytes=0.0, e_bw=e_bw)


def fit_matrix(df, fit: Fit, capped: list[str]) -> None:
    """``gemm_simt`` and ``bgemm_simt`` together with the sustained-clock shares of the capped
    cards in ``df`` (``capped``), for each tile of ``TILES`` (the least cost kept); then
    ``conv3_simt`` (with the Winograd multiply share) and ``conv_simt`` on that tile."""
    rows = df[df.cls.isin(["gemm_simt", "bgemm_simt"]) & ~df.near_floor]
    lt = np.log(rows.t.to_numpy())
    free = {f"{c}:{p}": v for c in ("gemm_simt", "bgemm_simt") for p, v in MAT_FREE.items()}
    free.update({f"share:{d}": (0.6, 0.2, 1.0) for d in capped})
    best = None
    for tile in TILES:
        def resid(x, tile=tile):
            v = dict(zip(free, np.exp(x)))
            sets = dict(fit.sets, **{c: _mat_set({p: v[f"{c}:{p}"] for p in MAT_FREE}, tile)
                                     for c in ("gemm_simt", "bgemm_simt")})
            return np.log(predict(rows, Fit(sets, {d: v[f"share:{d}"] for d in capped}, fit.dispatch))) - lt

        vals, cost = _lsq(resid, free)
        if best is None or cost < best[0]:
            best = (cost, vals, tile)
    _, vals, tile = best
    for c in ("gemm_simt", "bgemm_simt"):
        fit.sets[c] = _mat_set({p: vals[f"{c}:{p}"] for p in MAT_FREE}, tile)
    fit.shares = {d: vals[f"share:{d}"] for d in capped}
    if WHOLE_BGEMM:
        fit_bgemm_whole(df, fit)
    for cls, free_c in (("conv3_simt", dict(MAT_FREE, **WINO)), ("conv_simt", MAT_FREE)):
        rows = df[(df.cls == cls) & ~df.near_floor]
        lt = np.log(rows.t.to_numpy())

        def resid(x, cls=cls, free_c=free_c, rows=rows, lt=lt):
            trial = Fit(dict(fit.sets, **{cls: _mat_set(dict(zip(free_c, np.exp(x))), tile)}), fit.shares, fit.dispatch)
            return np.log(predict(rows, trial)) - lt

        fit.sets[cls] = _mat_set(_lsq(resid, free_c)[0], tile)


def fit_bgemm_whole(df, fit: Fit) -> None:
    """``bgemm_simt`` again with its tile run whole (``whole_tile``), for each of ``BGEMM_TILES``
    (the least cost kept): its e_compute free, the shares and the other sets held."""
    rows = df[(df.cls == "bgemm_simt") & ~df.near_floor]
    lt = np.log(rows.t.to_numpy())
    free = dict(MAT_FREE, **(K_FILL if FIT_K_FILL else {}))
    best = None
    for tile in BGEMM_TILES:
        def resid(x, tile=tile):
            s = dict(_mat_set(dict(zip(free, np.exp(x))), tile), whole_tile=1.0)
            return np.log(predict(rows, Fit(dict(fit.sets, bgemm_simt=s), fit.shares, fit.dispatch))) - lt

        vals, cost = _lsq(resid, free)
        if best is None or cost < best[0]:
            best = (cost, dict(_mat_set(vals, tile), whole_tile=1.0))
    fit.sets["bgemm_simt"] = best[1]


def fit_all(df) -> Fit:
    """The pooled fit over ``df``'s GPUs: dispatch and kernel constants in turn (two rounds;
    the first dispatch guess 0.9 x each device's and class's smallest latency)."""
    fit = Fit({})
    first = df.assign(dc=df.cls.map(dclass)).groupby(["device_system", "dc"]).t.min()
    fit.dispatch = {k: 0.9 * float(v) for k, v in first.items()}
    capped = [d for d in CAPPED if d in set(df.device_system)]
    for _ in range(2):
        for cls in MEMORY:
            fit_memory(df, fit, cls)
        fit_matrix(df, fit, capped)
        fit.dispatch = fit_dispatch(df, fit)
    return fit


def metrics(pred, meas) -> dict:
    rel = np.asarray(pred) / np.asarray(meas) - 1.0
    ape = np.abs(rel)
    if not len(ape):
        return {"rows": 0, "mape": float("nan"), "bias": float("nan"), "within10": float("nan")}
    return {"rows": int(len(ape)), "mape": float(100 * ape.mean()), "bias": float(100 * np.median(rel)),
            "within10": float(100 * (ape <= 0.10).mean())}


# ----------------------------------------------------------------------------- leave one GPU out

def host_median(dispatch: dict, gpus_devs) -> dict:
    """Per dispatch class, the median over the devices ``gpus_devs`` of their fitted dispatch."""
    per: dict = {}
    for (dev, dc), v in dispatch.items():
        if dev in gpus_devs:
            per.setdefault(dc, []).append(v)
    return {dc: float(np.median(v)) for dc, v in per.items()}


def logo(sub, full) -> dict:
    """gpu -> (fold fit, held-out rows with predictions: ``p_own`` (its own host's dispatch,
    fitted on its floor rows), ``p_pool`` (the other four hosts' median dispatch))."""
    out = {}
    for g in GPUS:
        fit = fit_all(sub[sub.gpu != g])
        test = full[full.gpu == g].copy()
        own = fit_dispatch(sub[sub.gpu == g], fit)
        others = host_median(fit.dispatch, set(sub[sub.gpu != g].device_system))
        pooled = {(dev, dc): v for dev in set(test.device_system) for dc, v in others.items()}
        held = Fit(fit.sets, {}, fit.dispatch)       # the held-out card's sustained clock: unknown
        test["p_own"] = predict(test, held, own)
        test["p_pool"] = predict(test, held, pooled)
        out[g] = (fit, test)
    return out


# ----------------------------------------------------------------------------- the product path

def onnx_of(r):
    """The one-op ONNX model of a NeuSight row (fp32; every tensor a graph input)."""
    from onnx import TensorProto, helper

    vi = helper.make_tensor_value_info
    T = TensorProto.FLOAT

    def model(op, ins, outs, opset=17, **attrs):
        n = helper.make_node(op, [a for a, _ in ins], [a for a, _ in outs], name=r.op, **attrs)
        g = helper.make_graph([n], r.op, [vi(a, T, s) for a, s in ins], [vi(a, T, s) for a, s in outs])
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)

    def num(x):
        return int(x) if x == x and x is not None else 0   # (NaN: the column does not apply)

    B, H = num(r.B), num(r.H)
    if r.op in ("add", "mul", "div", "pow", "addu", "mulu", "divu", "powu"):
        name = {"add": "Add", "mul": "Mul", "div": "Div", "pow": "Pow"}[r.op.rstrip("u")]
        other = ("c", []) if r.op.endswith("u") else ("b", [B, H])
        return model(name, [("a", [B, H]), other], [("y", [B, H])])
    if r.op in ("relu", "tanh"):
        return model(r.op.capitalize(), [("a", [B, H])], [("y", [B, H])])
    if r.op == "gelu":
        return model("Gelu", [("a", [B, H])], [("y", [B, H])], opset=20)
    if r.op == "softmax":
        return model("Softmax", [("a", [B, H])], [("y", [B, H])], axis=1)
    if r.op == "ln":
        return model("LayerNormalization", [("a", [B, H]), ("g", [H]), ("b", [H])], [("y", [B, H])], axis=-1,
                     epsilon=1e-5)
    M, N, K = num(r.M), num(r.N), num(r.K)
    if r.op == "bmm":
        return model("MatMul", [("a", [B, M, N]), ("b", [B, N, K])], [("y", [B, M, K])])
    if r.op == "linear":
        return model("Gemm", [("x", [B * M, N]), ("w", [K, N]), ("b", [K])], [("y", [B * M, K])], transB=1)
    ci, co, i, p = int(r.in_channels), int(r.out_channels), int(r.input_size), int(r.padding)
    k, s = int(r.kernel_size), int(r.stride)
    o = (i + 2 * p - k) // s + 1
    return model("Conv", [("x", [B, ci, i, i]), ("w", [co, ci, k, k])], [("y", [B, co, o, o])],
                 pads=[p] * 4, strides=[s, s])


def product_rows(full, per: int = PRODUCT_PER):
    """``per`` rows per (op, device) of the kernel rows (above ``FLOOR_X`` x the floor)."""
    return subsample(full[~full.near_floor], cap=per, salt="product").query("not at_floor")


def product_times(rows, fit: Fit, directory: str, runtime: str) -> np.ndarray:
    """``analyzer.analyze`` latencies of ``rows`` with the constants in ``directory`` (a copy of
    hardware_db/efficiency holding ``fit``'s sets) and ``fit``'s sustained clocks."""
    import analyzer
    import hardware_db
    from analyzer.prediction import hardware as hwmod

    saved = fc.EFFICIENCY_DIR
    fc.EFFICIENCY_DIR = hwmod.fc.EFFICIENCY_DIR = directory
    try:
        out = []
        for r in rows.itertuples():
            share = fit.shares.get(r.device_system)
            prof = hardware_db.get(PROFILE[r.device_system])
            prof = dataclasses.replace(prof, sustained_clock_ghz=prof.clock_ghz * share if share else None)
            # NeuSight ran with TF32 off (cudnn.allow_tf32 = False): precision fp32 says so
            out.append(analyzer.analyze(onnx_of(r), hw=[prof], runtime=runtime,
                                        precision="fp32").predictions[0].latency_s)
        return np.array(out)
    finally:
        fc.EFFICIENCY_DIR = hwmod.fc.EFFICIENCY_DIR = saved


# ----------------------------------------------------------------------------- writing

FAMILIES = {"nvidia-volta": ("NVIDIA Volta (V100)", ["v100-sxm2-32gb", "v100-pcie-32gb"]),
            "nvidia-turing": ("NVIDIA Turing (T4)", ["t4"]),
            "nvidia-pascal": ("NVIDIA Pascal (P100, P4, TITAN X Pascal)", ["titanx-pascal", "p100-pcie-16gb", "p4"])}
REF_CLOCK = 1.41e9   # the clock a written floor_s is stated at (floor cycles / REF_CLOCK; not a fitted floor)
TRANS_PRIOR = {"kind": "prior", "source": "XLA GPU op profile (xla/service/gpu/model/hlo_op_profiles_data.h): "
               "f32 exp 79 cycles vs add 7, per shared/reference/digest_latency_modeling.md; not fitted"}


def _round(v: float) -> float:
    return float(f"{v:.4g}")


def provenance(cls: str, sub, err: dict) -> dict:
    """A fitted set's provenance (the schema's required keys)."""
    rows = sub[sub.cls == cls]
    ops = sorted(set(rows.op))
    method = ("one least squares on log(pred/measured) (soft L1) pooled over the GPUs, latency = host dispatch "
              "+ kernel (eager-op), on rows above 3x their device's and class's smallest latency; ")
    if cls in MEMORY:
        method += ("e_bw (DRAM fraction), bpc (bytes per SM-cycle), l2_hit, b_half_bytes free; e_compute held at "
                   "0.5 (memory-bound)")
    else:
        method += ("e_compute (of the FMA fp32 peak, at a power-capped card's fitted sustained clock) free, e_bw held "
                   "at generic.json's gemm set's (the thin shapes that identify it are few here); "
                   "the tile chosen of 128x128, 128x64, 64x64 by the fit's cost, waves over the SMs with split-K "
                   "(kernel_time.wave_split), b_half 0")
        if cls == "conv3_simt":
            method += "; mult_share (Winograd/FFT multiplies per direct multiply) free in [0.25, 1]"
        if cls == "bgemm_simt" and WHOLE_BGEMM:
            method += (f"; then refitted alone (e_compute{' and k_fill' if FIT_K_FILL else ''} free, the sustained clocks "
                       "held) with its tile run whole "
                       "(whole_tile: no smaller library tile, a narrow output padded to the tile), the tile "
                       "(rows x columns) chosen of 128x128, 64x128, 64x64 by the fit's cost")
    method += ("; floor not identified (inside the host dispatch): the pooled NVIDIA floor cycles apply "
               "(constants.floor_cycles), floor_s here is that floor at 1.41 GHz")
    return {"kind": "fit", "measurement_file": MEASUREMENT_FILE,
            "device_system": ", ".join(sorted(set(rows.device_system))) + " (pooled)",
            "hardware": ", ".join(sorted({PROFILE[d] for d in set(rows.device_system)})),
            "filter": f"op in {{{', '.join(ops)}}}" + ("; conv rows whose kernels_launched name no winograd/fft"
                                                         if cls == "conv_simt" else "")
            + ("; conv rows running winograd or fft kernels and the rest" if cls == "conv3_simt" else "")
            + (f"; rows of at most {SOFTMAX_WARP_ROW} elements (the warp-per-row kernel)" if cls == "softmax" else "")
            + (f"; rows longer than {SOFTMAX_WARP_ROW} elements (the block-per-row kernel)" if cls == "softmax_block"
               else ""),
            "timing": "eager single call (CUDA events around one PyTorch 2.1 call, mean of the fastest 5 of 25; "
                      "host dispatch included, fitted apart)",
            "rows": int(len(rows)), "rows_used_in_fit": int((~rows.near_floor).sum()),
            "fit_method": method, "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND,
            "fit_error": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in err.items()}}


def constants_doc(cls: str, vals: dict) -> dict:
    cyc = fc.floor_cycles()[CLASS_CODE[cls]]
    c = {"e_compute": 0.5, "e_bw": 1.0, "b_half_bytes": 0.0, "floor_s": 0.0, "tile_m": 0.0, "tile_n": 0.0,
         "wave_alpha": 0.0, "l2_gain": 0.0, "bpc": 0.0, "l2_hit": 0.0}
    c.update({k: _round(float(v)) for k, v in vals.items()})
    c["floor_s"] = _round(float(cyc) / REF_CLOCK) if np.isfinite(cyc) else 2e-6
    return c


def write_constants(fit: Fit, sub, errs: dict, directory: str) -> None:
    """The pooled matrix sets into generic.json; the pooled memory-bound sets into the Volta,
    Turing and Pascal family files (new files; nothing else in the directory changes)."""
    path = os.path.join(directory, "generic.json")
    with open(path, encoding="utf-8") as f:
        gen = json.load(f)
    for cls in MATRIX:
        gen["sets"][cls] = {"constants": constants_doc(cls, fit.sets[cls]), "provenance": provenance(cls, sub, errs[cls])}
    _dump(gen, path)
    for fam, (what, devices) in FAMILIES.items():
        doc = {"schema_version": 1, "family": fam,
               "description": f"{what}: memory-bound classes (elementwise, activation, softmax and softmax_block by row length, norm) pooled over "
                              "NeuSight's five GPUs (A100 PCIe, V100 PCIe, T4, P100 PCIe, P4; fp32 PyTorch 2.1 "
                              "eager single calls, host dispatch fitted apart; bench/fit_neusight.py); the FMA-unit "
                              "matrix classes are generic.json's pooled sets; other classes generic.",
               "devices": devices, "scalars": {"trans_weight": 11.0, "provenance": TRANS_PRIOR},
               "sets": {cls: {"constants": constants_doc(cls, fit.sets[cls]), "provenance": provenance(cls, sub, errs[cls])}
                        for cls in MEMORY}}
        _dump(doc, os.path.join(directory, f"{fam}.json"))


def _dump(doc: dict, path: str) -> None:
    fc.validate(doc, path)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def write_sustained(shares: dict, profiles_dir: str) -> None:
    """``[power] sustained_clock_ghz`` (and its source) in the capped cards' profiles."""
    import hardware_db

    for dev, share in shares.items():
        prof = hardware_db.get(PROFILE[dev])
        path = os.path.join(profiles_dir, f"{prof.id}.toml")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        text = re.sub(r"\nsustained_clock_ghz = [^\n]*", "", text)
        text = re.sub(r'\n"power.sustained_clock_ghz" = [^\n]*', "", text)
        ghz = round(prof.clock_ghz * share, 3)
        text = re.sub(r"(\nclock_ghz = [^\n]*)", rf"\1\nsustained_clock_ghz = {ghz}", text, count=1)
        text = text.rstrip("\n") + (
            f'\n"power.sustained_clock_ghz" = "fitted (not a datasheet figure): {share:.3f} x the boost clock, the '
            f"FMA peak's share this card held over NeuSight's fp32 nn.Linear and torch.bmm rows "
            f"({MEASUREMENT_FILE}, device_system {dev}), fitted jointly with the gemm_simt/bgemm_simt constants "
            f"pooled over the five GPUs; {SCRIPT}, {COMMAND}\"\n")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


# ----------------------------------------------------------------------------- the report

def _fmt(m: dict) -> str:
    return f"{m['rows']:,} | {m['mape']:.1f} | {m['bias']:+.1f} | {m['within10']:.0f}"


def score_lines(test, col: str, title: str) -> list[str]:
    """Per GPU and class: MAPE, bias, within 10 % on every row and on the kernel rows."""
    out = [f"### {title}", "", "| GPU | class | rows | MAPE % | bias % | within 10 % | kernel rows | MAPE % | bias % "
           "| within 10 % |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (g, c), d in test.groupby(["gpu", "cls"]):
        k = d[~d.near_floor]
        out.append(f"| {g} | {c} | {_fmt(metrics(d[col], d.t))} | {_fmt(metrics(k[col], k.t))} |")
    out.append("")
    out += ["Per class over the five GPUs:", "", "| class | rows | MAPE % | bias % | within 10 % | kernel rows | "
            "MAPE % | bias % | within 10 % |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c, d in test.groupby("cls"):
        k = d[~d.near_floor]
        out.append(f"| {c} | {_fmt(metrics(d[col], d.t))} | {_fmt(metrics(k[col], k.t))} |")
    k = test[~test.near_floor]
    out.append(f"| all | {_fmt(metrics(test[col], test.t))} | {_fmt(metrics(k[col], k.t))} |")
    return out + [""]


def dispatch_lines(fit: Fit) -> list[str]:
    from analyzer.prediction import runtimes

    devs = sorted({d for d, _ in fit.dispatch})
    out = ["## Host dispatch per eager call (fitted, microseconds)", "",
           "A property of the host that measured (CPU, driver, PyTorch 2.1, CUDA events and synchronize), not "
           "of the GPU: NeuSight's five hosts differ. opcost's eager dispatch today "
           f"(runtimes.EAGER_DISPATCH_US, LLMCompass's A100 host): {runtimes.EAGER_DISPATCH_US['gemm']:g} us per "
           f"matrix op, {runtimes.EAGER_DISPATCH_DEFAULT_US:g} us per other op; every profile's launch_overhead_us "
           "is 1.5 us (a kernel floor, not a dispatch).", "",
           "| class | " + " | ".join(devs) + " | median | opcost today |", "|---|" + "---:|" * (len(devs) + 2)]
    for dc in sorted({c for _, c in fit.dispatch}):
        vals = [fit.dispatch.get((d, dc)) for d in devs]
        med = np.median([v for v in vals if v is not None])
        out.append(f"| {dc} | " + " | ".join("-" if v is None else f"{v * 1e6:.1f}" for v in vals)
                   + f" | {med * 1e6:.1f} | {runtimes.eager_dispatch_us(dc):g} |")
    return out + [""]


def tile_lines(ns, fit: Fit) -> list[str]:
    """The sgemm tiles cuBLAS ran (the recorded kernel names' ``sgemm_<m>x<n>``) per GPU, beside
    the fitted tile: the model's set tile is the largest it runs, smaller ``LIBRARY_TILES`` for
    grids that do not fill the SMs."""
    mm = ns[ns.cls.isin(["gemm_simt", "bgemm_simt"])]
    tile = mm.kernel_name.str.extract(r"sgemm_(\d+x\d+)")[0].fillna("other")
    share = (tile.groupby(mm.gpu).value_counts(normalize=True) * 100).round(0)
    tiles = sorted(set(tile))
    v = fit.sets["gemm_simt"]
    out = ["## sgemm tiles", "", f"The fit's tile (least cost of {', '.join(f'{a:g}x{b:g}' for a, b in TILES)}): "
           f"{v['tile_m']:g}x{v['tile_n']:g}. The tiles cuBLAS ran, % of the matmul rows of each GPU (its kernel "
           "names):", "", "| GPU | " + " | ".join(tiles) + " |", "|---|" + "---:|" * len(tiles)]
    for g in GPUS:
        out.append(f"| {g} | " + " | ".join(f"{share.get((g, t), 0):g}" for t in tiles) + " |")
    return out + [""]


def ampere_lines(ns, fit: Fit) -> list[str]:
    """The A100 PCIe 40GB's memory-bound rows with opcost's nvidia-ampere sets (fitted on vidur's
    A100 kernel sums, not on these rows) against the pooled sets fitted here, both with the fitted
    host dispatch: a check of the Ampere set on another A100 card and PyTorch release."""
    rows = ns[(ns.device_system == "a100_pcie_40gb") & ns.cls.isin(MEMORY)]
    amp = fc.load_constants("nvidia-ampere").arrays
    host = np.array([fit.dispatch.get(("a100_pcie_40gb", dclass(c)), 0.0) for c in rows.cls])
    rows = rows.assign(p_amp=host + kernel_s(rows, "a100_pcie_40gb", amp), p_pool=predict(rows, fit))
    out = ["## The Ampere set checked on the A100 PCIe rows", "", "| class | rows | nvidia-ampere MAPE % | bias % | "
           "within 10 % | pooled (in-sample) MAPE % | bias % |", "|---|---:|---:|---:|---:|---:|---:|"]
    for c, d in rows.groupby("cls"):
        k = d[~d.near_floor]
        a, b = metrics(k.p_amp, k.t), metrics(k.p_pool, k.t)
        out.append(f"| {c} (kernel rows) | {_fmt(a)} | {b['mape']:.1f} | {b['bias']:+.1f} |")
    return out + [""]


def constants_lines(fit: Fit) -> list[str]:
    keys = ("e_compute", "e_bw", "bpc", "l2_hit", "b_half_bytes", "tile_m", "tile_n", "mult_share")
    out = ["## Pooled constants (in-sample fit on the five GPUs)", "", "| class | " + " | ".join(keys) + " |",
           "|---|" + "---:|" * len(keys)]
    for c in MEMORY + MATRIX:
        v = fit.sets[c]
        out.append(f"| {c} | " + " | ".join(f"{v.get(k, 0.0):.4g}" for k in keys) + " |")
    out += ["", "Sustained clock of the power-capped cards (share of the boost clock the FMA peak is taken at):", ""]
    out += [f"- {PROFILE[d]}: {s:.3f} x boost" for d, s in sorted(fit.shares.items())]
    return out + [""]


def product_check(folds: dict) -> tuple[list, list[str]]:
    """Each fold's held-out rows (``product_rows``) through ``analyzer.analyze`` with the fold's
    constants: ``runtime="kernel"`` + the fold's dispatch of the held-out host (own floor rows),
    and ``runtime="eager-op"`` as opcost predicts it (its assumed dispatch); the feature path's
    prediction of the same rows beside them."""
    import pandas as pd

    parts = []
    for fit, test in folds.values():
        rows = product_rows(test)
        tmp = tempfile.mkdtemp(prefix="opcost-ns-")
        try:
            eff_dir = os.path.join(tmp, "efficiency")
            shutil.copytree(fc.EFFICIENCY_DIR, eff_dir)
            write_constants(fit, rows, {c: {} for c in MEMORY + MATRIX}, eff_dir)
            held = Fit(fit.sets, {}, fit.dispatch)
            own = fit_dispatch(test[test.at_floor], fit)
            host = np.array([own.get((d, dclass(c)), 0.0) for d, c in zip(rows.device_system, rows.cls)])
            rows = rows.assign(p_kernel=product_times(rows, held, eff_dir, "kernel") + host,
                               p_eager=product_times(rows, held, eff_dir, "eager-op"))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        parts.append(rows)
    rows = pd.concat(parts)
    agree = np.abs(rows.p_kernel / rows.p_own - 1.0)
    out = ["### Held out, through the product (analyzer.analyze on one-op ONNX models)", "",
           f"{PRODUCT_PER} kernel rows (above {FLOOR_X:g}x the floor) per op and device of each held-out GPU. "
           "`kernel + host`: runtime kernel plus the held-out host's fitted dispatch; `eager-op`: opcost's eager-op "
           "as shipped (its assumed dispatch, runtimes.EAGER_DISPATCH_US). The A100's memory-bound rows take "
           "opcost's nvidia-ampere sets (vidur-fitted), not the pooled ones: a check of the Ampere set. "
           f"Feature path vs product (kernel + host): median |diff| {100 * np.median(agree):.2f} %, "
           f"max {100 * agree.max():.2f} % (the A100 memory-bound rows differ by design).", "",
           "| GPU | class | rows | kernel + host MAPE % | bias % | within 10 % | eager-op (opcost's dispatch) MAPE % "
           "| bias % |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (g, c), d in rows.groupby(["gpu", "cls"]):
        a, b = metrics(d.p_kernel, d.t), metrics(d.p_eager, d.t)
        out.append(f"| {g} | {c} | {_fmt(a)} | {b['mape']:.1f} | {b['bias']:+.1f} |")
    a, b = metrics(rows.p_kernel, rows.t), metrics(rows.p_eager, rows.t)
    out.append(f"| all | all | {_fmt(a)} | {b['mape']:.1f} | {b['bias']:+.1f} |")
    return rows, out + [""]


def main(argv=None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "fit_neusight.md"))
    ap.add_argument("--no-write", action="store_true", help="report only: leave the constants files alone")
    ap.add_argument("--no-whole-bgemm", action="store_true",
                    help="the form before whole_tile: torch.bmm on the gemm tile with the small-grid library tiles")
    ap.add_argument("--no-k-fill", action="store_true", help="torch.bmm's whole tile without the per-tile k_fill")
    args = ap.parse_args(argv)
    global WHOLE_BGEMM, FIT_K_FILL
    WHOLE_BGEMM = not args.no_whole_bgemm
    FIT_K_FILL = not args.no_k_fill
    t0 = time.time()
    ns = load(args.data)
    sub = subsample(ns)
    fit = fit_all(sub)
    ns["p_in"] = predict(ns, fit)
    errs = {c: metrics(d.p_in[~d.near_floor], d.t[~d.near_floor]) for c, d in ns.groupby("cls")}
    folds = logo(sub, ns)
    test = pd.concat([t for _, t in folds.values()])
    _, prod = product_check(folds)
    if not args.no_write:
        write_constants(fit, ns, errs, fc.EFFICIENCY_DIR)
        write_sustained(fit.shares, os.path.join(ROOT, "hardware_db", "profiles"))
    lines = ["# NeuSight fp32 ops: pooled physical constants, leave-one-GPU-out", "",
             f"Command: `{COMMAND}` ({time.time() - t0:.0f} s on this machine). Data: `{MEASUREMENT_FILE}` "
             f"({len(ns):,} rows; fits on {len(sub):,}: at most {CAP} rows per op and device plus {AT_FLOOR_CAP} "
             "at the floor, hash-chosen). Time definition: eager-op (one PyTorch 2.1 call between CUDA events: "
             "host dispatch + kernel + synchronize). Scores below are on every row of the GPU (the kernel "
             f"columns: rows above {FLOOR_X:g}x their device's and class's smallest latency), by the fit's feature "
             "path (kernel_time on the counts of opcost's one-op models, the product's classes and peaks), the "
             "held-out product check further down.", ""]
    lines += constants_lines(fit) + tile_lines(ns, fit) + dispatch_lines(fit) + ampere_lines(ns, fit)
    lines += ["## Scores", ""] + score_lines(ns.assign(gpu=ns.device_system.map(GPU)), "p_in", "In-sample (fit on all five GPUs)")
    lines += score_lines(test, "p_own", "Leave one GPU out: fit on four, score the fifth (its own host's dispatch; "
                                        "boost clock)")
    lines += score_lines(test, "p_pool", "Leave one GPU out, the other four hosts' median dispatch")
    lines += prod
    lines += ["## Fold constants", "", "| held out | class | e_compute | e_bw | mult_share | tile |",
              "|---|---|---:|---:|---:|---|"]
    for g, (f, _) in folds.items():
        for c in MATRIX:
            v = f.sets[c]
            lines.append(f"| {g} | {c} | {v['e_compute']:.3f} | {v['e_bw']:.3f} | {v.get('mult_share', 0):.3f} | "
                         f"{v['tile_m']:g}x{v['tile_n']:g} |")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
