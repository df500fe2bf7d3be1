"""The fits of an XLA calibration (``calibrate_xla``): its measured rows -> per-class kernel times
(net of the run overhead and a program's own-result cost; rows of more than one kernel folded into
their heaviest kernel's class), the transcendental weight, and ``cpu_model.fit_class`` per class
with the options below. Pure arithmetic on ``calibrate_xla.measure``'s output: a saved calibration
(the ``*_rows_*.json`` files of ``bench/accuracy_xla_cpu.py``'s run) refits with the current code
(``bench/accuracy_xla_cpu.py --rows``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.measure.xla.rows import TINY_CHAIN

TRANS_WEIGHTS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
# no class is fitted with the thread-split step (cpu_model.fit_class's fork/join cost above a size
# in bytes): XLA runs a small dot inline and a large one through a threaded library call, a switch
# the step did not place (0.6-0.9 us on 9-16 KB GEMVs that ran in 0.1-0.3 us: a scan RNN 2.6x
# over), and the elementwise class's step landed at 12 KB in one calibration and 0.7 KB in the next
# (their predictions of the 7 us scan RNN 33 % apart). Refitting three scratch pairs of
# calibrations from their saved rows, the largest difference between a pair's predictions of the
# 16 programs bench/accuracy_xla_cpu.py scores: 33.2, 4.3 and 12.2 % with the step on the
# elementwise classes, 2.8, 8.2 and 12.1 % without.
#
# classes fitted without the tiled matrix view (cpu_model.fit_class's tile of output columns): tiled
# fits of the same rows' classes landed in different optima in two calibrations minutes apart (a CNN
# at batch 32 predicted at 7.7 and 5.2 ms, an MLP train step 17 % apart). The largest difference
# between two calibrations' predictions of the 16 programs bench/accuracy_xla_cpu.py scores, over
# three pairs of calibrations refitted from their saved rows (two scratch pairs, and the pair of
# the rows saved by the XLA accuracy bench of commit f0791ec): every matrix class
# tiled 32.6 and 14.8 % (the scratch pairs), only conv untiled 9.0, 7.1 and 17.1 %, conv and gemm
# untiled 12.2, 4.3 and 5.0 %
UNTILED = ("conv", "gemm", "gemm_tn")
# classes fitted with a cost per call of a dot that is not a matrix-vector product
# (cpu_model.fit_class's ``dot_call``): XLA's CPU backend runs ``x @ w`` and ``g w^T`` (the gemm
# class) as a YNNPACK fusion, whose call packs the operands and hands the output's tiles to the
# thread pool, and a matrix-vector product (``x[1, K] @ W``) in Eigen; the class's floor is held
# by its smallest rows (the GEMVs) and replaced by the launch figures inside programs, the call's
# cost is not (inside a loop body the dot pays dot_trip_us and dot_loop_us instead:
# prediction.cpu.ynn_dot, dot_scans). Their matrix view goes into the fit for the count only (untiled: UNTILED)
DOT_CALL_CLASSES = ("gemm",)
# classes fitted with a cost per output element (cpu_model.fit_class's ``per_output``): XLA's CPU
# backend runs a depthwise convolution as a YNNPACK fusion whose time is about 19 ns an output
# plus 0.9 ns an output and tap on the calibration VM (its rows at 3x3, 5x5, 7x7, stride 1 and 2,
# batch 1-8): the class's MACs carry the second, ``out_s`` the first
PER_OUTPUT_CLASSES = ("conv_dw",)


def core_bw_shares(threads: int) -> tuple[float, ...]:
    """The candidate ``core_bw_share`` values of a calibration on ``threads`` cores
    (``xla_partition.memory_share``'s ``s``): 6 evenly spaced from ``1 / threads`` (each core
    streams at its own share: a split kernel's bytes over its parts) to 1 (one core streams at the
    machine's rate); none on one core (no kernel split: unknown)."""
    if threads <= 1:
        return ()
    lo = 1.0 / threads
    return tuple(round(lo + (1.0 - lo) * i / 5, 4) for i in range(6))


def _features(kernel: dict, trans_weight: float, share: float | None = None) -> tuple[float, float, list[float]]:
    """(F, B, view) of a row's kernel; a kernel XLA splits into ``parts`` parts
    (``prediction.cpu.xla_partition``; absent: 1) is fitted as the predictions price it: F over
    ``parts``, B times ``memory_share(parts, share)`` (``share``: the calibration's
    ``core_bw_share``; None: ``1 / parts``), its fixed cost paid once."""
    from analyzer.prediction.cpu.xla_partition import memory_share

    k = kernel
    p = max(float(k.get("parts", 1)), 1.0)
    m = float(memory_share(p, share))
    return (k["mac"] + k["vec"] + trans_weight * k["trans"]) / p, k["bytes"] * m, k["view"]


def link_s(measured: dict[str, Any]) -> float:
    """Seconds per link of the chain of ``TINY_CHAIN`` 1x8x8 dots: a small kernel inside a program."""
    chain = measured["chain_s"]
    return max((chain[str(TINY_CHAIN)] - chain["1"]) / (TINY_CHAIN - 1), 1e-9)


def program_launch_s(measured: dict[str, Any], launches_per_link: float, work_s: float = 0.0) -> float:
    """Seconds of one more kernel in a program (outside a loop): the chain's time per link
    (``link_s``: the slope of the chain's time over its links, from its two lengths 1 and
    ``TINY_CHAIN``) less ``work_s`` (the link's predicted work, ``loop_scan.launch_work_s``) over
    the launches opcost plans a link (``loop_scan.launches_per_link``); at least 1 ns."""
    return max((link_s(measured) - work_s) / max(launches_per_link, 1.0), 1e-9)


def loop_launch_s(measured: dict[str, Any], launches_per_trip: float, work_s: float = 0.0) -> float:
    """Seconds of one launch inside a loop body: the scan's time per trip (``scan_s`` at the
    two trip counts of ``rows.SCAN_TRIPS``) less ``work_s`` (the trip's predicted work,
    ``loop_scan.launch_work_s``) over ``launches_per_trip`` (the launches opcost plans a trip of
    that body); at least 1 ns."""
    scan = measured["scan_s"]
    lo, hi = sorted(scan, key=int)
    per_trip = (scan[hi] - scan[lo]) / (int(hi) - int(lo))
    return max((per_trip - work_s) / max(launches_per_trip, 1.0), 1e-9)


def own_result_s(measured: dict[str, Any]) -> float:
    """What a kernel costs more as a program's own result than inside a program (its output
    is the program's result buffer): a 1x8x8 dot's time alone (net of the run overhead) less its
    time per link of the chain; 0 where the link costs more."""
    return max(measured["chain_s"]["1"] - measured["run_overhead_s"] - link_s(measured), 0.0)


def class_rows(measured: dict[str, Any], trans_weight: float,
               share: float | None = None) -> tuple[dict[str, list], list[dict]]:
    """``{class: [(F, B, seconds net of the run overhead, view)]}`` of the one-kernel rows
    (``_features`` at ``share``), and the rows of more kernels (for ``fold_multi``)."""
    base = measured["run_overhead_s"] + own_result_s(measured)
    by: dict[str, list] = {}
    multi = []
    for r in measured["rows"]:
        ks = r["kernels"]
        if len(ks) != 1:
            multi.append(r)
            continue
        F, B, V = _features(ks[0], trans_weight, share)
        by.setdefault(ks[0]["op_class"], []).append((F, B, max(r["seconds"] - base, 1e-8), V))
    return by, multi


def _arrays(rows: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    F, B, t, V = zip(*rows)
    return (np.array(F, np.float64), np.array(B, np.float64), np.array(t, np.float64),
            np.array(V, np.float64).T)


def _time(fit: dict, F: float, B: float, V: list[float], peak: float, bw: float, l2_bytes: float) -> float:
    from analyzer.measure.fit import class_fit as cpu_model

    view = np.array(V, np.float64).reshape(7, 1)
    return float(cpu_model.kernel_time(
        F, B, fit["floor_s"], fit["e_c"], fit["e_bw"], fit["b_half"], peak, bw, fit["l2_gain"], l2_bytes,
        view=view, tile_n=fit.get("tile_n", 0.0), n_half=fit.get("n_half", 0.0), par_s=fit.get("par_s", 0.0),
        b_par=fit.get("b_par", 0.0), piece_s=fit.get("piece_s", 0.0), im2col_s=fit.get("im2col_s", 0.0),
        im2col_stride_s=fit.get("im2col_stride_s", 0.0), serial_s=fit.get("serial_s", 0.0),
        k_block=fit.get("k_block", 0.0), dot_call_s=fit.get("dot_call_s", 0.0), out_s=fit.get("out_s", 0.0))[0])


def fold_multi(rows: dict, multi: list[dict], fits: dict, trans_weight: float, base: float,
               peak: float, bw: float, l2_bytes: float, share: float | None = None) -> dict[str, list[str]]:
    """Add each row of more kernels to its heaviest kernel's class, less its other kernels'
    times under ``fits`` (``_features`` at ``share``); returns ``{class: [labels added]}`` (rows
    whose other kernels' classes were not fitted are left out)."""
    added: dict[str, list[str]] = {}
    for r in multi:
        ks = sorted(r["kernels"], key=lambda k: -(k["mac"] + k["vec"] + k["trans"] + 1e-3 * k["bytes"]))
        head, rest = ks[0], ks[1:]
        if any(k["op_class"] not in fits for k in rest):
            continue
        others = sum(_time(fits[k["op_class"]], *_features(k, trans_weight, share), peak, bw, l2_bytes) for k in rest)
        t = r["seconds"] - base - others
        if t <= 0:
            continue
        F, B, V = _features(head, trans_weight, share)
        rows.setdefault(head["op_class"], []).append((F, B, t, V))
        added.setdefault(head["op_class"], []).append(r["label"])
    return added


def fit_tables(measured: dict[str, Any], l2_bytes: float
               ) -> tuple[dict[str, dict], dict[str, Any]]:
    """(``{class: fit_class result}``, machine figures) from ``measure``'s output."""
    from analyzer.measure.fit import options as calibration_fit
    from analyzer.measure.fit import worker as fit_worker

    base = measured["run_overhead_s"] + own_result_s(measured)   # (as class_rows takes it off)
    link = link_s(measured)
    rows0, _ = class_rows(measured, 1.0)
    F, _, t, _ = _arrays(rows0["gemm"])
    peak = float(np.max(F / t))
    adds = sorted((r for r in measured["rows"] if r["label"].startswith("add ")),
                  key=lambda r: -r["kernels"][0]["bytes"])[:3]
    bw = float(np.median([r["kernels"][0]["bytes"] / max(r["seconds"] - base, 1e-9) for r in adds]))

    def job(cls, rows):
        F, B, t, V = _arrays(rows)
        args, kw = calibration_fit.fit_job(cls, F, B, t, None if cls in UNTILED else V, peak, bw, l2_bytes, 1, False)
        if cls in DOT_CALL_CLASSES:   # the view for the dot count, no tiles
            args = args[:6] + (V, ())
            kw["dot_call"] = True
        kw["per_output"] = cls in PER_OUTPUT_CLASSES
        # rows under a chain link's time (a small kernel inside a program: 0.1 us here) are fitted
        # as it: onnxruntime's 0.25 us noise floor is above it, and rows near 0 (a tiny row less
        # the run overhead and own_result_s) swung the log-error fits between calibrations
        kw["noise_floor_s"] = link
        # the whole fixed cost in floor_s (no positive b_half): loop_launch replaces a kernel's
        # floor by the chain's or the scan's launch cost, and a fixed part left in the memory term
        # stayed on every kernel (a fit's 7.8 KB activation b_half at e_bw 0.33: 0.42 us a 32-byte
        # tanh; its 200-link chain predicted 141 us, 55 us measured)
        kw["ramp_fixed"] = False
        return args, kw

    # the transcendental weight: the best fit of the elementwise class over TRANS_WEIGHTS (a split
    # row's bytes at core_bw_share 1: its memory term as the unsplit kernel's)
    trial = fit_worker.fit_classes({f"elementwise@{w:g}": job("elementwise", class_rows(measured, w, 1.0)[0]["elementwise"])
                                    for w in TRANS_WEIGHTS})
    trans_weight = min(TRANS_WEIGHTS, key=lambda w: trial[f"elementwise@{w:g}"]["fit_mape"])
    share, split_fits, losses = fit_share(measured, trans_weight, job)
    rows, multi = class_rows(measured, trans_weight, share)
    fits = {**fit_worker.fit_classes({c: job(c, r) for c, r in rows.items() if c not in split_fits}), **split_fits}
    added = fold_multi(rows, multi, fits, trans_weight, base, peak, bw, l2_bytes, share)
    if added:
        fits.update(fit_worker.fit_classes({c: job(c, rows[c]) for c in added}))
    return fits, {"peak": peak, "bw": bw, "trans_weight": trans_weight, "per_kernel_s": link,
                  "run_overhead_s": measured["run_overhead_s"], "own_result_s": own_result_s(measured),
                  "rows": {c: len(r) for c, r in rows.items()}, "core_bw_share": share,
                  "share_losses": losses, "split_classes": sorted(split_fits)}


def fit_share(measured: dict[str, Any], trans_weight: float, job) -> tuple[float | None, dict, dict]:
    """``core_bw_share`` fitted: of ``core_bw_shares(cores)``, the one whose fits (``job(cls,
    rows)``'s) of the classes with a split one-kernel row (``parts`` > 1) have the lowest error
    over their rows (each class's ``fit_mape`` x its rows, summed). Returns (the share, or None
    where no row is split; those classes' fits at it; ``{share: that error sum}``)."""
    from analyzer.measure.fit import worker as fit_worker

    split = sorted({r["kernels"][0]["op_class"] for r in measured["rows"]
                    if len(r["kernels"]) == 1 and float(r["kernels"][0].get("parts", 1)) > 1})
    shares = core_bw_shares(int(measured.get("cores") or 1)) if split else ()
    if not shares:
        return None, {}, {}
    jobs = {}
    for s in shares:
        by = class_rows(measured, trans_weight, s)[0]
        jobs.update({f"{c}@{s:g}": job(c, by[c]) for c in split})
    trial = fit_worker.fit_classes(jobs)
    losses = {s: sum(trial[f"{c}@{s:g}"]["fit_mape"] * trial[f"{c}@{s:g}"]["rows"] for c in split) for s in shares}
    best = min(shares, key=lambda s: losses[s])
    return best, {c: trial[f"{c}@{best:g}"] for c in split}, losses
