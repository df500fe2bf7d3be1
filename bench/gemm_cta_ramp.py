"""A ``gemm_simt`` form with a CTA-per-SM efficiency ramp, scored against the shipped form by
``bench/family_simt.py``'s two-fold cross-validation (tried, not kept: ``docs/accuracy.md``).

Form: the shipped ``kernel_time`` with the ``gemm_simt`` compute term divided by
``c / (c + c_half)``, ``c = padded m x padded n x batch x split / (tile_m x tile_n x SMs)`` (the
output tiles per SM in units of the set's tile, of the tile and split-K factor
``tiles._tile_choice`` takes): an SM with few resident CTAs hides less of its latency, so a small
grid runs below the large-grid rate beyond the wave quantisation.  ``c_half`` (in [1e-3, 16]) and
e_compute free, the tile chosen of three, per family, by ``family_simt``'s method (its hash
subsample, soft-L1 least squares on log(pred/measured), two rounds with the host dispatch), on the
``nn.Linear`` rows only (the other classes do not enter ``gemm_simt``'s fit).  No H100 row, no
whole-model latency, no public torch.mm row is read.

Rule (written down before any candidate score was computed): the form is adopted for a family
iff (a) the two-fold CV median bias of its rows with GEMM FLOPs >= 1e12 falls in |.| by >= 5
points, (b) the |bias| of its rows >= 1e11 does not rise, (c) its two-fold CV MAPE rises by at
most 0.5 points.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import family_simt as fs  # noqa: E402
import fit_neusight as fns  # noqa: E402
import neusight_data as nd  # noqa: E402
from analyzer.prediction.efficiency import tiles  # noqa: E402
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE, kernel_time  # noqa: E402

GEMM = CLASS_CODE["gemm_simt"]
C_HALF = (0.5, 1e-3, 16.0)    # start, lower and upper bound of c_half (tiles per SM)
LARGE = (1e11, 1e12)          # the rule's FLOPs buckets
_ARRAYS_OF, _KERNEL_S = fns.arrays_of, fns.kernel_s


def arrays_of(sets: dict) -> dict:
    """``fit_neusight.arrays_of`` with a ``c_half`` array (0: no ramp) from the sets' values."""
    arr = _ARRAYS_OF({c: {p: x for p, x in v.items() if p != "c_half"} for c, v in sets.items()})
    arr["c_half"] = np.zeros(len(arr["e_compute"]))
    for c, v in sets.items():
        arr["c_half"][CLASS_CODE[c]] = v.get("c_half", 0.0)
    return arr


def tiles_per_sm(feats: dict, hw: dict, a: dict) -> np.ndarray:
    """c: padded output x batch x split over the set's tile area and the SMs."""
    tm, tn = float(a["tile_m"][GEMM]), float(a["tile_n"][GEMM])
    m, n, k, b = feats["m"], feats["n"], feats["k"], np.maximum(feats["batch"], 1.0)
    units = np.full(len(m), hw["units"])
    mp, np_, _, split = tiles._tile_choice(np, m, n, k, np.full(len(m), tm), np.full(len(m), tn), b, units,
                                           np.ones(len(m), bool))
    return mp * np_ * b * split / (tm * tn * units)


def kernel_s(df, dev: str, arr: dict, share: float = 1.0) -> np.ndarray:
    """``fit_neusight.kernel_s`` with ``gemm_simt``'s compute term over ``c / (c + c_half)``."""
    t = _KERNEL_S(df, dev, arr, share)
    ch = float(arr["c_half"][GEMM]) if "c_half" in arr else 0.0
    g = (df.cls == "gemm_simt").to_numpy()
    if ch <= 0 or not g.any():
        return t
    feats, hw, a = fns.kernel_inputs(df[g], dev, arr, share)
    kt = kernel_time(np, feats, hw, a)
    out = t.copy()
    out[g] = kt["floor_s"] + np.maximum(kt["compute_s"] * (1.0 + ch / tiles_per_sm(feats, hw, a)), kt["memory_s"])
    return out


@contextlib.contextmanager
def ramp(on: bool):
    """The ramp form in ``fit_neusight``'s and ``family_simt``'s fit while inside (``on``)."""
    if on:
        fns.arrays_of, fns.kernel_s = arrays_of, kernel_s
        fs.FREE["gemm_simt"] = dict(fns.MAT_FREE, c_half=C_HALF)
    try:
        yield
    finally:
        fns.arrays_of, fns.kernel_s = _ARRAYS_OF, _KERNEL_S
        fs.FREE["gemm_simt"] = fns.MAT_FREE


def fit_gemm(rows, sh: dict) -> fns.Fit:
    """``gemm_simt`` on ``rows`` (its hash subsample), the dispatch refitted in turn (two rounds)."""
    rows = nd.subsample(rows)
    fit = fns.Fit({}, dict(sh), {})
    fit.dispatch = fns.fit_dispatch(rows, fit)
    for _ in range(2):
        fs.fit_tiled(rows, fit, "gemm_simt")
        fit.dispatch = fns.fit_dispatch(rows, fit)
    return fit


def median_bias(d) -> float:
    return float(100 * np.median(d.p / d.t - 1)) if len(d) else float("nan")


def cross_validate(ns, family: str, on: bool) -> dict:
    """The family's ``gemm_simt`` two-fold CV (``family_simt.halves``) and full fit, shipped form or ramp."""
    import pandas as pd

    with ramp(on):
        rows = fs.family_rows(ns, family)
        rows = rows[rows.cls == "gemm_simt"]
        sh = fs.shares(fs.FAMILY_DEVICES[family])
        full = fit_gemm(rows, sh)
        a, b = fs.halves(rows)
        cv = pd.concat([fs.scored(te, fit_gemm(tr, sh)) for tr, te in ((a, b), (b, a))])
        m = fns.metrics(cv.p, cv.t)
    return {"mape": m["mape"], "bias": m["bias"], "rows": m["rows"], "set": full.sets["gemm_simt"],
            **{f"b{lo:.0e}": median_bias(cv[cv.mac >= lo]) for lo in LARGE}}


def adopt(base: dict, cand: dict) -> bool:
    """The rule fixed beforehand (module docstring)."""
    b11, b12 = (f"b{lo:.0e}" for lo in LARGE)
    return (abs(base[b12]) - abs(cand[b12]) >= 5.0 and abs(cand[b11]) <= abs(base[b11])
            and cand["mape"] - base["mape"] <= 0.5)


def ramp_lines(ns) -> list[str]:
    """The report's table: per family, shipped form and ramp, and the rule's verdict."""
    out = ["| family (rows) | form | CV MAPE / bias | bias >= 1e11 FLOPs | bias >= 1e12 FLOPs | e_compute, tile, c_half | adopted |",
           "|---|---|---|---:|---:|---|---|"]
    for fam in fs.FAMILY_DEVICES:
        base, cand = cross_validate(ns, fam, False), cross_validate(ns, fam, True)
        for name, r in (("current form", base), ("CTA ramp", cand)):
            s = r["set"]
            out.append(f"| {fam} ({r['rows']}) | {name} | {r['mape']:.2f} % / {r['bias']:+.1f} % | {r['b1e+11']:+.1f} % "
                       f"| {r['b1e+12']:+.1f} % | {s['e_compute']:.3f}, {s['tile_m']:.0f}x{s['tile_n']:.0f}, "
                       f"{s.get('c_half', 0.0):.3f} | {('yes' if adopt(base, cand) else 'no') if r is cand else ''} |")
    return out
