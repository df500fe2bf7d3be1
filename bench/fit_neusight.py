"""Physical GPU constants fitted on NeuSight's fp32 PyTorch op rows, with leave-one-GPU-out scores.

Data (``neusight_data``: the rows, their counts and classes, the subsample, the devices' figures):
``shared/measurements/gpu/neusight_ops.csv.gz`` (its README section ``neusight_ops.csv.gz``):
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

Writes (``neusight_report``: the product path, the files, the report's tables): the pooled matrix sets into ``generic.json`` (``op_classes.POOLED_CLASSES``), the pooled
memory-bound sets into ``nvidia-volta.json``, ``nvidia-turing.json``, ``nvidia-pascal.json``, the
sustained clocks into the T4 and P4 profiles, and a markdown report (``--out``; it ends with the
leave-one-host-out check of ``eager-op``'s per-call host table, ``neusight_calls``).

Usage: ``PYTHONPATH=$PWD python bench/fit_neusight.py [--data ../shared/measurements/gpu/neusight_ops.csv.gz]
[--out bench/results/fit_neusight.md] [--no-write]``; the variants compared and not kept (docs/accuracy.md):
``--gemm-k-fill`` (a fitted ``k_fill`` for ``gemm_simt`` too), ``--host-share p100_pcie_16gb`` (a
device's FMA share fitted in-sample as its measuring host's, never written to its profile).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np

from neusight_data import (  # (puts the repository root on sys.path first)
    AT_FLOOR_CAP, CAP, CUDNN_LAUNCHES, DATA, FLOOR_X, GPU, GPUS, MEASUREMENT_FILE, PROFILE, ROOT, device_hw, load, subsample)
from efficiency_data import PER_ELEMENT
from analyzer.prediction.efficiency import constants as fc
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE, kernel_time, with_clock
from report_lines import emit

SCRIPT = "bench/fit_neusight.py"
COMMAND = "PYTHONPATH=$PWD python bench/fit_neusight.py"
FIT_DATE = "2026-12-02"
CAPPED = ("t4", "p4")       # power-capped cards (70 W, 75 W): a fitted sustained clock
MEMORY = ("elementwise", "activation", "softmax", "softmax_block", "norm")
MATRIX = ("gemm_simt", "bgemm_simt", "conv3_simt", "conv_simt")
CUDNN_HELPERS = True   # cuDNN's launches besides a convolution's main kernel (``helpers_s``); --no-cudnn-helpers: off
CUDNN_BYTES = False    # the non-fused Winograd's transforms' bytes too (the variant not kept: bench/cudnn_kernels.py)
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
GEMM_K_FILL = False  # nn.Linear's tile with a fitted k_fill too (its prologue/epilogue in k-loop steps)
PER_ELEMENT_ON: list = list(PER_ELEMENT)   # memory-bound sets with per_element = 1 (``--per-byte``: none)
HOST_SHARES: tuple = ()   # devices whose FMA share is fitted in-sample as the measuring host's (not written)


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


def kernel_inputs(df, dev: str, arr: dict, share: float = 1.0) -> tuple[dict, dict, dict]:
    """(features, hardware, arrays) ``kernel_time`` takes for ``df``'s rows (one device) under
    ``arr``: the device's clock (per-SM term), the pooled NVIDIA floor cycles over it, fp32."""
    hw = device_hw(dev, share)
    a = with_clock(arr, hw["clock_hz"])
    cyc = fc.floor_cycles()
    a["floor_s"] = np.where(np.isfinite(cyc), cyc / hw["clock_hz"], a["floor_s"])
    feats = {"op_class": df.cls.map(CLASS_CODE).to_numpy(), "mac_flops": df.mac.to_numpy(),
             "vec_flops": df.vec.to_numpy(), "trans_flops": df.trans.to_numpy(), "bytes": df.bytes.to_numpy(),
             "m": df.m.to_numpy(), "n": df.n.to_numpy(), "k": df.k.to_numpy(), "batch": df.batch.to_numpy(),
             "elem_bytes": np.full(len(df), 4.0)}
    return feats, hw, a


def kernel_s(df, dev: str, arr: dict, share: float = 1.0) -> np.ndarray:
    """Kernel seconds of ``df``'s rows (one device) under ``arr`` (``kernel_inputs``)."""
    feats, hw, a = kernel_inputs(df, dev, arr, share)
    t = kernel_time(np, feats, hw, a)["time_s"]
    return t + helpers_s(df, hw, a) if CUDNN_HELPERS else t


def helpers_s(df, hw: dict, a: dict) -> np.ndarray:
    """Seconds of cuDNN's launches besides a convolution's main kernel (``neusight_data``'s
    ``cudnn_b*`` columns: the eager plan's ``cudnn_conv`` launches, no dispatch of their own): each its
    floor at the elementwise class (the copy class, ``movement``, falls back to it in the NVIDIA
    family sets, as in the product), and with ``CUDNN_BYTES`` its bytes at that class's rate."""
    out = np.zeros(len(df))
    code = CLASS_CODE["elementwise"]
    for j in range(CUDNN_LAUNCHES):
        nb = df[f"cudnn_b{j}"].to_numpy()
        has = np.isfinite(nb)
        if not has.any():
            continue
        feats = {"op_class": np.full(int(has.sum()), code), "bytes": nb[has] * float(CUDNN_BYTES),
                 **{k: np.zeros(int(has.sum())) for k in ("mac_flops", "vec_flops", "trans_flops", "m", "n", "k",
                                                           "batch")}, "elem_bytes": np.full(int(has.sum()), 4.0)}
        out[has] += kernel_time(np, feats, hw, a)["time_s"]
    return out


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


def fit_dispatch(df, fit: Fit, arrays: dict | None = None) -> dict:
    """Host dispatch per (device, class): median of latency - kernel over the rows within
    ``DISPATCH_X`` x their smallest latency (of the near-floor rows, those whose kernels are a few
    microseconds: the kernel model's own error barely moves the figure).  The kernel is ``fit``'s
    sets', or ``arrays[device]``'s where given (the constants a prediction of that device uses)."""
    arr = arrays_of(fit.sets)
    out = {}
    for (dev, dc), part in df[df.at_floor].assign(dc=df.cls.map(dclass)).groupby(["device_system", "dc"]):
        k = kernel_s(part, dev, (arrays or {}).get(dev, arr), fit.shares.get(dev, 1.0))
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
    """The per-SM set of a memory-bound class, pooled over ``df``'s devices (kernel rows only);
    per element (``per_element = 1``, bpc at 2 bytes an element) for a class of ``PER_ELEMENT_ON``."""
    rows = df[(df.cls == cls) & ~df.near_floor]
    lt = np.log(rows.t.to_numpy())
    fixed = {"e_compute": 0.5, "floor_s": 0.0, **({"per_element": 1.0} if cls in PER_ELEMENT_ON else {})}

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
    gfree = {"gemm_simt": dict(MAT_FREE, **(K_FILL if GEMM_K_FILL else {})), "bgemm_simt": MAT_FREE}
    free = {f"{c}:{p}": v for c in ("gemm_simt", "bgemm_simt") for p, v in gfree[c].items()}
    free.update({f"share:{d}": (0.6, 0.2, 1.0) for d in capped})
    best = None
    for tile in TILES:
        def resid(x, tile=tile):
            v = dict(zip(free, np.exp(x)))
            sets = dict(fit.sets, **{c: _mat_set({p: v[f"{c}:{p}"] for p in gfree[c]}, tile)
                                     for c in ("gemm_simt", "bgemm_simt")})
            return np.log(predict(rows, Fit(sets, {d: v[f"share:{d}"] for d in capped}, fit.dispatch))) - lt

        vals, cost = _lsq(resid, free)
        if best is None or cost < best[0]:
            best = (cost, vals, tile)
    _, vals, tile = best
    for c in ("gemm_simt", "bgemm_simt"):
        fit.sets[c] = _mat_set({p: vals[f"{c}:{p}"] for p in gfree[c]}, tile)
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
    capped = [d for d in CAPPED + HOST_SHARES if d in set(df.device_system)]
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


def main(argv=None) -> int:
    import pandas as pd

    from neusight_calls import call_lines, product_columns
    from neusight_report import (ampere_lines, constants_lines, dispatch_lines, product_check, score_lines,
                                 tile_lines, write_constants, write_sustained)

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "fit_neusight.md"))
    ap.add_argument("--no-write", action="store_true", help="report only: leave the constants files alone")
    ap.add_argument("--no-whole-bgemm", action="store_true",
                    help="the form before whole_tile: torch.bmm on the gemm tile with the small-grid library tiles")
    ap.add_argument("--no-k-fill", action="store_true", help="torch.bmm's whole tile without the per-tile k_fill")
    ap.add_argument("--no-cudnn-helpers", action="store_true",
                    help="the form before cudnn_conv: a convolution's main kernel alone (its helpers unplanned)")
    ap.add_argument("--gemm-k-fill", action="store_true", help="nn.Linear's tile with a fitted k_fill too")
    ap.add_argument("--host-share", action="append", default=[], choices=sorted(PROFILE),
                    help="a device whose FMA share is fitted in-sample as its measuring host's (not written)")
    ap.add_argument("--per-byte", action="store_true", help="the memory-bound sets' per-SM term per byte (the form before)")
    args = ap.parse_args(argv)
    if args.per_byte:
        PER_ELEMENT_ON.clear()
    global WHOLE_BGEMM, FIT_K_FILL, GEMM_K_FILL, HOST_SHARES, CUDNN_HELPERS
    CUDNN_HELPERS = not args.no_cudnn_helpers
    WHOLE_BGEMM = not args.no_whole_bgemm
    FIT_K_FILL = not args.no_k_fill
    GEMM_K_FILL = args.gemm_k_fill
    HOST_SHARES = tuple(args.host_share)
    t0 = time.time()
    ns = load(args.data)
    sub = subsample(ns)
    fit = fit_all(sub)
    ns["p_in"] = predict(ns, fit)
    errs = {c: metrics(d.p_in[~d.near_floor], d.t[~d.near_floor]) for c, d in ns.groupby("cls")}
    folds = logo(sub, ns)
    test = pd.concat([t for _, t in folds.values()])
    prod_rows, prod = product_check(folds, extra=product_columns)
    if not args.no_write:
        write_constants(fit, ns, errs, fc.EFFICIENCY_DIR)
        write_sustained({d: v for d, v in fit.shares.items() if d in CAPPED}, os.path.join(ROOT, "hardware_db", "profiles"))
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
    lines += prod + call_lines(fit, folds, prod_rows)
    lines += ["## Fold constants", "", "| held out | class | e_compute | e_bw | mult_share | tile |",
              "|---|---|---:|---:|---:|---|"]
    for g, (f, _) in folds.items():
        for c in MATRIX:
            v = f.sets[c]
            lines.append(f"| {g} | {c} | {v['e_compute']:.3f} | {v['e_bw']:.3f} | {v.get('mult_share', 0):.3f} | "
                         f"{v['tile_m']:g}x{v['tile_n']:g} |")
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    # run the importable module's main, so that neusight_report (which imports fit_neusight) reads
    # the switches main sets (WHOLE_BGEMM, FIT_K_FILL) on the same module
    import fit_neusight

    sys.exit(fit_neusight.main())
