"""A boost window for the power-capped cards (T4 70 W, P4 75 W) on NeuSight's fp32 single-op rows,
against the shipped single sustained clock (in-sample rows; the rule is fixed in the report).

Form (one time constant ``tau`` per card): the card runs a matrix kernel at its boost clock ``b``
for the first ``tau`` seconds of busy time, then at its sustained clock ``s`` (the profile's
``sustained_clock_ghz``), so the effective clock over a kernel of busy time ``T`` is
``s + (b - s) min(1, tau / T)``.  With ``M`` the matrix part of the compute term at ``s``
(``kernel_time``'s ``matrix_s``; ``N = M s`` cycles): ``T = N / b`` where ``N / b <= tau``, else
``T = tau + (N - b tau) / s = M - tau (b - s) / s``.  The kernel time becomes ``fixed + max(compute
- M + T, memory)``; vector work, memory and the sets (family files) stay as shipped.

Data and harness: ``bench/family_simt.py``'s (``neusight_ops.csv.gz``: fp32, TF32 off, one eager
PyTorch 2.1 call between CUDA events, host dispatch + kernel); every GEMM and convolution class
(``family_simt.CLASSES``) of the capped cards, the host dispatch refitted per tau on the card's own
floor rows (``fit_neusight.fit_dispatch``'s median), kernel rows (above 3x the floor) scored.
``tau`` fitted per card by grid (0 and ``TAUS``), minimising the MAPE of the card's GEMM kernel
rows (``gemm_simt`` + ``bgemm_simt``) of the fitting half (``family_simt.halves``); two-fold
cross-validated.  No H100 row and no whole-model latency is read.

Usage: ``PYTHONPATH=$PWD python bench/capped_clock.py [--out bench/results/capped_clock.md]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import family_simt as fs  # noqa: E402
import fit_neusight as fns  # noqa: E402
import gemm_size_buckets as gsb  # noqa: E402
import neusight_data as nd  # noqa: E402
from report_lines import emit  # noqa: E402
from analyzer.prediction.efficiency.kernel_time import kernel_time  # noqa: E402

CAPPED = {"t4": "nvidia-turing", "p4": "nvidia-pascal"}
TAUS = np.concatenate([[0.0], np.logspace(-5, 1, 40)])   # seconds
MID = (1e-4, 1e-3)   # the latency bucket of the rule's bias test, seconds


def parts(rows, dev: str, arr: dict, share: float) -> dict:
    """Per row (one device): the kernel terms at the sustained clock, ``kernel_time``'s split."""
    feats, hw, a = fns.kernel_inputs(rows, dev, arr, share)
    d = kernel_time(np, feats, hw, a, detail=True)
    helpers = fns.helpers_s(rows, hw, a) if fns.CUDNN_HELPERS else 0.0
    return {"fixed": d["floor_s"] + helpers, "rest": d["compute_s"] - d["matrix_s"], "mat": d["matrix_s"],
            "mem": d["memory_s"], "ratio": 1.0 / share}


def boosted(mat, ratio: float, tau: float):
    """The matrix seconds ``mat`` (at the sustained clock) under a boost window ``tau`` at
    ``ratio`` = boost / sustained: ``mat / ratio`` where that is within ``tau``, else
    ``mat - tau (ratio - 1)``."""
    at_boost = mat / ratio
    return np.where(at_boost <= tau, at_boost, mat - tau * (ratio - 1.0))


def kernel_of(p: dict, tau: float):
    return p["fixed"] + np.maximum(p["rest"] + boosted(p["mat"], p["ratio"], tau), p["mem"])


def predict(rows, p: dict, tau: float):
    """Kernel rows of ``rows`` with ``p``: dispatch (median of latency - kernel on the floor rows,
    per dispatch class) + kernel, under ``tau``."""
    k = kernel_of(p, tau)
    dc = rows.cls.map(fns.dclass).to_numpy()
    at, t = rows.at_floor.to_numpy(), rows.t.to_numpy()
    disp = np.zeros(len(rows))
    for c in np.unique(dc):
        sel = dc == c
        f = sel & at
        disp[sel] = max(float(np.median(t[f] - k[f])), 0.0) if f.any() else 0.0
    ker = ~rows.near_floor.to_numpy()
    return rows[ker].assign(p=(disp + k)[ker])


def fit_tau(rows, p: dict) -> float:
    """The grid's tau with the least MAPE on ``rows``'s GEMM kernel rows."""
    def score(tau):
        s = predict(rows, p, tau)
        s = s[s.cls.isin(fs.GEMM_CLASSES)]
        return float(np.mean(np.abs(s.p / s.t - 1)))
    return float(min(TAUS, key=score))


def card(ns, dev: str) -> dict:
    """One capped card: its rows, the shipped prediction, the two-fold CV and in-sample candidate."""
    import pandas as pd

    fam = CAPPED[dev]
    rows = fs.family_rows(ns, fam)
    rows = rows[rows.device_system == dev].reset_index(drop=True)
    share = fs.shares([dev])[dev]
    arr = fns.arrays_of(gsb.shipped_fit(fam).sets)
    sub = {}
    a, b = fs.halves(rows)
    folds, cv = [], []
    for fit_on, test in ((a, b), (b, a)):
        fit_on, test = fit_on.reset_index(drop=True), test.reset_index(drop=True)
        tau = fit_tau(fit_on, parts(fit_on, dev, arr, share))
        folds.append(tau)
        cv.append(predict(test, parts(test, dev, arr, share), tau))
    p = parts(rows, dev, arr, share)
    sub["tau"] = fit_tau(rows, p)
    sub.update(rows=rows, folds=folds, cv=pd.concat(cv), shipped=predict(rows, p, 0.0),
               insample=predict(rows, p, sub["tau"]), ratio=1.0 / share)
    return sub


def mape(df) -> float:
    return 100.0 * float(np.mean(np.abs(df.p / df.t - 1)))


def bias(df) -> float:
    return 100.0 * float(np.median(df.p / df.t - 1)) if len(df) else float("nan")


def mid(df):
    return df[(df.cls == "gemm_simt") & (df.t >= MID[0]) & (df.t < MID[1])]


def rule(c: dict) -> dict:
    """The fixed rule's three tests for one card (the whole-set test is filled by ``whole``)."""
    key = ["row_id"]
    sh = c["shipped"].set_index(key)
    cv = c["cv"].set_index(key)
    lin_sh, lin_cv = sh[sh.cls == "gemm_simt"], cv[cv.cls == "gemm_simt"]
    lin_sh = lin_sh.loc[lin_cv.index]
    out = {"mape_shipped": mape(lin_sh), "mape_cv": mape(lin_cv),
           "mid_shipped": bias(mid(lin_sh.reset_index())), "mid_cv": bias(mid(lin_cv.reset_index())),
           "mid_rows": len(mid(lin_cv.reset_index()))}
    out["pass_mape"] = out["mape_cv"] <= out["mape_shipped"] - 1.0
    out["pass_mid"] = abs(out["mid_cv"]) <= abs(out["mid_shipped"]) - 5.0
    return out


def whole(ns, cards: dict) -> tuple[float, float, int]:
    """MAPE of every family's GEMM and convolution kernel rows, shipped vs the candidate (the
    capped cards' rows at their in-sample tau; the other cards' rows are the same in both)."""
    base = gsb_all(ns)
    other = base[~base.device_system.isin(list(cards))]
    cand_rows = [other] + [c["insample"] for c in cards.values()]
    ship_rows = [other] + [c["shipped"] for c in cards.values()]
    import pandas as pd

    cand, ship = pd.concat(cand_rows), pd.concat(ship_rows)
    return mape(ship), mape(cand), len(cand)


def gsb_all(ns):
    """Every family's kernel rows of ``family_simt.CLASSES`` with its shipped sets' ``p``."""
    import pandas as pd

    out = []
    for fam in fs.FAMILY_DEVICES:
        rows = fs.family_rows(ns, fam)
        out.append(fs.scored(rows, gsb.shipped_fit(fam)))
    return pd.concat(out)


def bucket_lines(c: dict) -> list[str]:
    """Per latency bucket of the card's GEMM rows: shipped in-sample vs CV candidate bias and MAPE."""
    out = ["| class | latency (s) | rows | shipped bias | CV bias | shipped MAPE | CV MAPE |",
           "|---|---|---:|---:|---:|---:|---:|"]
    sh = c["shipped"].set_index("row_id")
    cv = c["cv"].set_index("row_id")
    sh = sh.loc[cv.index]
    edges = gsb.TIME_EDGES
    for cls in fs.GEMM_CLASSES:
        for lo, hi in itertools.pairwise(edges):
            sel = (cv.cls == cls) & (cv.t >= lo) & (cv.t < hi)
            if sel.sum():
                out.append(f"| {cls} | {lo:g} .. {hi:g} | {int(sel.sum())} | {bias(sh[sel]):+.1f} % | "
                           f"{bias(cv[sel]):+.1f} % | {mape(sh[sel]):.1f} % | {mape(cv[sel]):.1f} % |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "bench", "results", "capped_clock.md"))
    args = ap.parse_args(argv)
    ns = nd.load(nd.DATA)
    cards = {d: card(ns, d) for d in CAPPED}
    w_ship, w_cand, w_rows = whole(ns, cards)
    w_pass = w_cand <= w_ship + 0.05
    rules = {d: rule(c) for d, c in cards.items()}
    adopted = {d: c for d, c in cards.items() if rules[d]["pass_mape"] and rules[d]["pass_mid"] and w_pass}
    _, a_cand, _ = whole(ns, adopted) if adopted else (w_ship, w_ship, w_rows)
    lines = ["# Boost window for the power-capped cards on NeuSight's rows", "",
             "`PYTHONPATH=$PWD python bench/capped_clock.py` (form, data and rule: the script's docstring "
             "and /work/notes/capclock.md's rule, restated below).", "",
             "Rule: adopt for a card iff its gemm_simt two-fold CV MAPE <= shipped - 1 point, the |median bias| "
             "of its gemm_simt rows of 0.1-1 ms measured latency (CV) <= shipped - 5 points, and the whole "
             "NeuSight in-sample set's MAPE (every GPU's GEMM and convolution kernel rows) <= shipped + 0.05.", "",
             f"Whole set ({w_rows} kernel rows): shipped MAPE {w_ship:.2f} %, candidate (in-sample tau) "
             f"{w_cand:.2f} %: {'pass' if w_pass else 'fail'}; with only the adopted cards' tau "
             f"({', '.join(adopted) or 'none'}): {a_cand:.2f} %.", ""]
    lines += ["| card | boost / sustained | tau (folds; all rows) | gemm_simt MAPE shipped -> CV | 0.1-1 ms bias "
              "shipped -> CV (rows) | adopt |", "|---|---:|---|---|---|---|"]
    for dev, c in cards.items():
        r, ok = rules[dev], dev in adopted
        lines.append(f"| {dev} | {c['ratio']:.3f} | {', '.join(f'{t:.3g}' for t in c['folds'])}; {c['tau']:.3g} s "
                     f"| {r['mape_shipped']:.1f} -> {r['mape_cv']:.1f} % | {r['mid_shipped']:+.1f} -> "
                     f"{r['mid_cv']:+.1f} % ({r['mid_rows']}) | {'yes' if ok else 'no'} |")
    for dev, c in cards.items():
        lines += ["", f"## {dev}: by measured latency (CV candidate vs shipped, same rows)", ""] + bucket_lines(c)
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
