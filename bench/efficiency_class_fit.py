"""The fit of one op class's kernel-time constants over measured rows (``bench/fit_efficiency.py``
fits every family's classes with it): the free constants and their bounds per class kind, the
matrix classes' one least squares over every free constant and the tile grid (``fit_class``), the
memory-bound classes' per-SM forms (``MEM_FORMS``, ``fit_memory_class``), the provenance line of a
fitted set (``fit_method``) and the fits' loss (``_loss``). Deterministic (scipy least squares on
log(pred/measured), soft L1 at scale 0.1, hash-subsampled rows).
"""

from __future__ import annotations

import numpy as np

from efficiency_data import TRANS_WEIGHT, _hash_order, metrics, predict  # (puts the repository root on sys.path first)
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE, CLASS_PARAMS, OP_CLASSES


# free parameters per class kind: name -> (initial, low, high); fitted in log space
GEMM_FREE = {"e_compute": (0.8, 0.1, 1.0), "e_bw": (0.7, 0.05, 1.5), "b_half_bytes": (1e6, 1e3, 1e9),
             "floor_s": (3e-6, 2e-7, 3e-5)}
# the tiled classes' waves (kernel_time.wave_split): on (wave_alpha is a switch), not fitted: the
# tiles' waves over the device's SMs with the split-K a library picks, not a fitted exponent
WAVES_ON = 1.0
# GEMM is fitted without and with the cache term; the term is kept only where it clearly helps:
# in-device MAPE at least GEMM_L2_MIN_GAIN points lower (GEMV-like rows with small weights beat the
# DRAM roofline on the 48 MB-L2 L40S: 23.7% -> 19.3%; on A40 a gain of 3.4 bought 0.2 points and
# cost 0.6 points A40 -> A100, so it stays 0 there)
GEMM_L2 = {"l2_gain": (0.1, 1e-3, 5.0)}
GEMM_L2_MIN_GAIN = 1.0
L2_GAIN_ZERO = 1e-2  # a fitted gain below this is written as 0 (no cache effect resolved)
ATT_FREE = {"e_compute": (0.5, 0.02, 1.0), "e_bw": (0.7, 0.05, 1.5), "b_half_bytes": (1e6, 1e3, 1e9),
            "floor_s": (5e-6, 2e-7, 5e-5)}
TILES = ((64, 64), (128, 64), (128, 128), (256, 128))
MATRIX_FIT = ("gemm", "bgemm", "conv", "attention")  # one global least squares; the rest: staged
FIT_CAP = 12000  # rows per (source, class) used in a fit (hash-subsampled)


def base_set(cls: str) -> dict:
    return {"e_compute": 0.5, "e_bw": 0.6, "b_half_bytes": 0.0, "floor_s": 2e-6,
            "tile_m": 0.0, "tile_n": 0.0, "wave_alpha": 0.0, "l2_gain": 0.0, "bpc": 0.0, "l2_hit": 0.0}


def _arrays_with(cls: str, values: dict) -> dict:
    arr = {p: np.zeros(len(OP_CLASSES)) for p in CLASS_PARAMS}
    for p in base_set(cls):
        arr[p][:] = base_set(cls)[p]
    i = CLASS_CODE[cls]
    for p, x in values.items():
        arr[p][i] = x
    arr["trans_weight"] = TRANS_WEIGHT
    return arr


def _capped(datasets: list) -> list:
    data = []
    for df, hw in datasets:
        if len(df) > FIT_CAP:
            df = df.iloc[np.sort(_hash_order(df.key)[:FIT_CAP])]
        data.append((df, hw, np.log(df.t.to_numpy())))
    return data


def _error(cls: str, consts: dict, data: list) -> dict:
    arr = _arrays_with(cls, consts)
    pred = np.concatenate([predict(df, hw, arr) for df, hw, _ in data])
    meas = np.concatenate([df.t.to_numpy() for df, _, _ in data])
    return metrics(pred, meas)


def fit_class(cls: str, datasets: list, per_element: bool = False,
              hold: dict | None = None) -> tuple[dict, dict]:
    """Constants of one class over ``datasets`` [(df, hw)]; returns (constants, error).

    Memory-bound classes: ``fit_memory_class`` (staged). GEMM and attention: one least squares
    on log(pred/measured) over every free constant (and the tile grid for GEMM; GEMM once more
    with ``l2_gain`` free, kept when it lowers the MAPE by ``GEMM_L2_MIN_GAIN`` points).
    ``hold`` (constant -> value, e.g. floor_s in seconds): constants held, the rest fitted."""
    if cls not in MATRIX_FIT:
        return fit_memory_class(cls, datasets, per_element, hold=hold)
    if cls in ("gemm", "bgemm", "conv"):
        plain = _fit_global(cls, datasets, GEMM_FREE, hold)
        cached = _fit_global(cls, datasets, dict(GEMM_FREE, **GEMM_L2), hold)
        return cached if cached[1]["mape"] <= plain[1]["mape"] - GEMM_L2_MIN_GAIN else plain
    return _fit_global(cls, datasets, ATT_FREE, hold)


def _fit_global(cls: str, datasets: list, free: dict, hold: dict | None = None) -> tuple[dict, dict]:
    from scipy.optimize import least_squares

    held = {k: float(v) for k, v in (hold or {}).items()}
    free = {n: v for n, v in free.items() if n not in held}
    names = list(free)
    x0 = np.log([free[n][0] for n in names])
    lo = np.log([free[n][1] for n in names])
    hi = np.log([free[n][2] for n in names])
    data = _capped(datasets)
    tile_grid = TILES if cls in ("gemm", "bgemm", "conv") else ((0, 0),)
    best = None
    for tm, tn in tile_grid:
        def resid(x):
            vals = dict(zip(names, np.exp(x)), **held)
            vals.update(tile_m=float(tm), tile_n=float(tn), wave_alpha=WAVES_ON if tm else 0.0)
            arr = _arrays_with(cls, vals)
            return np.concatenate([np.log(predict(df, hw, arr)) - lt for df, hw, lt in data])

        r = least_squares(resid, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.1, x_scale=1.0,
                          max_nfev=300, method="trf")
        if best is None or r.cost < best[0]:
            vals = dict(zip(names, np.exp(r.x)), **held)
            vals.update(tile_m=float(tm), tile_n=float(tn), wave_alpha=WAVES_ON if tm else 0.0)
            best = (r.cost, vals)
    consts = base_set(cls)
    consts.update({k: float(v) for k, v in best[1].items()})
    if consts["l2_gain"] < L2_GAIN_ZERO:
        consts["l2_gain"] = 0.0
    return consts, _error(cls, consts, data)


# per-SM fit of the memory-bound classes (fit_memory_class)
MEM_E_BW = 1.0      # DRAM side at the datasheet rate; what a kernel loses is its per-SM term (bpc)
MEM_E_COMPUTE = 0.5  # not identified: every measured row of these classes is memory-bound at 0.5
MEM_FREE = {"floor_s": (2e-6, 2e-7, 3e-5), "b_half_bytes": (1e5, 1e2, 1e9), "bpc": (5.0, 0.05, 500.0),
            "l2_hit": (0.5, 1e-3, 1.0)}


# the memory-bound forms (fit_memory_class): constants held, constants free, starting values of bpc
# (the best of the starts kept: in the max form a start on the DRAM side has no gradient in bpc)
MEM_FORMS = {
    # memory = DRAM term + per-SM term (sm_overlap 0), every MEM_FREE constant free
    "sum": ({}, tuple(MEM_FREE), (MEM_FREE["bpc"][0],)),
    # memory = max(DRAM term, per-SM term), every MEM_FREE constant free
    "max": ({"sm_overlap": 1.0}, tuple(MEM_FREE), (0.5, 1.0, 2.0, 5.0)),
    # an SM-bound kernel: memory = max(DRAM term, per-SM term) with the DRAM term's ramp and cache
    # share held at 0 (not identified where the per-SM term is the larger: they would only carry a
    # fit's artefacts to a device of another bandwidth); free: floor_s and bpc
    "sm_bound": ({"sm_overlap": 1.0, "b_half_bytes": 0.0, "l2_hit": 0.0}, ("floor_s", "bpc"), (0.5, 1.0, 2.0, 5.0)),
}
# classes fitted in a form other than "sum": PyTorch's 2024 index_select gather (vidur's embedding rows)
# moves about 2 bytes per SM-cycle on the A100 and the A40 alike, 0.15 and 0.48 of their DRAM
# bandwidths: its form is chosen by the leave-one-device-out score on those rows (bench/gather_lodo.py)
CLASS_FORM = {"gather": "sm_bound"}


def fit_memory_class(cls: str, datasets: list, per_element: bool = False, form: str | None = None,
                     floor_clock_hz: float = 0.0, hold: dict | None = None) -> tuple[dict, dict]:
    """Fit of a memory-bound class (elementwise, activation, norm, gather) in the per-SM form.

    ``e_bw`` is held at ``MEM_E_BW`` (a fixed part of the form, chosen on the cross-device score
    A100 <-> A40: mean cross-device MAPE 24.8% at 1.0, 27.8% at 0.9, 31.9% at 0.85); the free
    constants of ``form`` (``MEM_FORMS``; default ``CLASS_FORM``'s, else "sum": ``floor_s``,
    ``b_half_bytes``, ``bpc`` (bytes per SM-cycle) and ``l2_hit`` (0..1)) by one least squares on
    log(pred/measured) (soft L1, deterministic).  With one device the DRAM and per-SM shares of the large-size rate
    cannot both be fitted; fixing the DRAM side makes ``bpc`` carry the kernel's own limit, the
    part that transfers with a device's SM count and clock.  ``per_element``: the set's per-SM
    term is charged per element (``per_element = 1``; bpc at 2 bytes an element, which on these
    16-bit rows is the same fit).  ``floor_clock_hz`` (0: seconds): the floor is a number of cycles
    of that clock during the fit (a fit pooled over devices of different clocks).  ``hold``
    (constant -> value): constants held, the form's other free constants fitted."""
    from scipy.optimize import least_squares

    data = _capped(datasets)
    held, names, starts = MEM_FORMS[form or CLASS_FORM.get(cls, "sum")]
    if hold:
        held, names = dict(held, **hold), tuple(n for n in names if n not in hold)
    consts = base_set(cls)
    consts.update(e_compute=MEM_E_COMPUTE, e_bw=MEM_E_BW, l2_gain=0.0, **({"per_element": 1.0} if per_element else {}),
                  **held, **({"floor_clock_hz": floor_clock_hz} if floor_clock_hz else {}))

    def resid(x):
        arr = _arrays_with(cls, dict(consts, **dict(zip(names, np.exp(x)))))
        return np.concatenate([np.log(predict(df, hw, arr)) - lt for df, hw, lt in data])

    best = None
    for b0 in starts:
        x0 = [b0 if n == "bpc" else MEM_FREE[n][0] for n in names]
        r = least_squares(resid, np.log(x0), bounds=(np.log([MEM_FREE[n][1] for n in names]),
                                                     np.log([MEM_FREE[n][2] for n in names])),
                          loss="soft_l1", f_scale=0.1, max_nfev=300, method="trf")
        best = r if best is None or r.cost < best.cost else best
    consts.update({n: float(v) for n, v in zip(names, np.exp(best.x))})
    return consts, _error(cls, consts, data)


def fit_method(cls: str, consts: dict) -> str:
    """One line for a set's provenance: how its constants were fitted."""
    if cls not in MATRIX_FIT:
        per = ("; per element, per_element = 1: bpc stated at 2 bytes an element, fitted on 16-bit rows, a kernel of "
               "another dtype charged by its elements, not its bytes" if consts.get("per_element", 0) > 0 else "")
        if CLASS_FORM.get(cls) == "sm_bound":
            return (f"SM-bound form (fit_memory_class, form sm_bound): memory time = max(DRAM term, per-SM term) "
                    f"(sm_overlap 1), the DRAM term at e_bw {MEM_E_BW:g} with b_half_bytes and l2_hit held at 0; "
                    f"floor_s and bpc (bytes per SM-cycle, scaled by the device's units and clock{per}) by one least "
                    "squares on log(pred/measured); the form chosen by leave-one-device-out MAPE A100 <-> A40 "
                    f"(bench/gather_lodo.py); e_compute held at {MEM_E_COMPUTE} (not identified)")
        return (f"per-SM form (fit_memory_class): e_bw held at {MEM_E_BW:g} (the form, chosen on the cross-device "
                "score A100 <-> A40); floor_s, b_half_bytes, bpc (bytes per SM-cycle, scaled by the device's units "
                f"and clock{per}) and l2_hit by one least squares on log(pred/measured); e_compute held at "
                f"{MEM_E_COMPUTE} (not identified)")
    if cls == "attention":
        return "one least squares on log(pred/measured) over e_compute, e_bw, b_half_bytes, floor_s"
    return ("one least squares on log(pred/measured) per tile shape (best kept) over e_compute, e_bw, "
            "b_half_bytes, floor_s (waves over the SMs with split-K, not fitted); l2_gain " + ("fitted and kept: it lowered the MAPE by at least "
            f"{GEMM_L2_MIN_GAIN:g} point" if consts.get("l2_gain", 0.0) > 0 else
            f"0: fitting it lowered the MAPE by less than {GEMM_L2_MIN_GAIN:g} point"))


def _loss(cls: str, consts: dict, datasets: list) -> float:
    """The fits' loss of ``consts`` on ``datasets`` (capped as in a fit): the sum over rows of
    soft-L1 of the log residual at scale 0.1 (what ``least_squares(loss="soft_l1", f_scale=0.1)``
    minimises, times 2)."""
    arr = _arrays_with(cls, consts)
    r = np.concatenate([np.log(predict(df, hw, arr)) - lt for df, hw, lt in _capped(datasets)])
    return float(np.sum(2 * 0.01 * (np.sqrt(1 + (r / 0.1) ** 2) - 1)))
