"""Compare model forms for the Hexagon NPU whole-model rows by cross-validation on the fitted
models only (the held-out models of bench/fit_accelerators.py never enter).

    PYTHONPATH=$PWD python bench/hexagon_forms.py [MEASUREMENTS_DIR]

Per row: ``T = t0 + sum_k runs_k * floor[g_k] + max(W_k / (P_int8 * s_prec * e[g_k]),
B_k / (BW * e_bw[g_k]))`` over the kernels ``k`` of a runtime's plan (opcost's datasheet
lowering: FLOP-equivalent work ``W``, bytes ``B`` at the row's precision), class groups ``g``
(matrix, depthwise, elementwise, movement: fit_accelerators.group_of), per device constants, one
shared ``r_fp16``. A form is: the runtime's plan (``kernel``: no fusion; ``qnn``: QNN's fusion,
accelerators/qnn.py, with or without its Concat elision), ``t0`` (none, one per device, one per
device and precision), the floors (per group, one shared, none, or capped), the largest e_bw.
Prints the leave-one-model-out and leave-one-family-out MAPE (fit_accelerators.FAMILIES) of each
form. The same least squares on log(pred / measured) as fit_accelerators.fit, vectorised.

Needs pandas and scipy (this script only).
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import fit_accelerators as F  # noqa: E402

GROUPS = ("mat", "dw", "ew", "move")
DEVS = ("hexagon-sd8gen2", "hexagon-sd8gen3")
X0 = {"e_mat": 0.3, "e_dw": 0.05, "bw_mat": 0.5, "bw_ew": 0.5, "bw_move": 0.5, "f_mat": 5e-6,
      "f_ew": 2e-6, "f_move": 1e-6, "t0_fp": 1e-4, "t0_i8": 1e-4}
# name -> (runtime, a Concat runs as a kernel?, form options)
FORMS = {
    "kernel runtime, e_bw unbounded, floors <= 1 us (main's)": ("kernel", True, dict(bwmax=np.inf, fcap=1e-6)),
    "kernel runtime, e_bw <= 1": ("kernel", True, {}),
    "kernel runtime, e_bw <= 1, t0 per precision": ("kernel", True, dict(t0="devprec")),
    "qnn fusion, e_bw <= 1": ("qnn", True, {}),
    "qnn fusion, e_bw <= 1, one t0": ("qnn", True, dict(t0="dev")),
    "qnn fusion, e_bw <= 1, t0 per precision": ("qnn", True, dict(t0="devprec")),
    "qnn fusion, e_bw <= 1, t0 per precision, Concat elided (the candidate)": ("qnn", False, dict(t0="devprec")),
    "same, one floor for every class": ("qnn", False, dict(t0="devprec", floors="one")),
    "same, no floor": ("qnn", False, dict(t0="devprec", floors="none")),
    "same, e_bw <= 2": ("qnn", False, dict(t0="devprec", bwmax=2.0)),
}


def features(rows, runtime: str, concat_bytes: bool) -> dict:
    """(model, device, precision) -> per-kernel arrays of ``runtime``'s plan on the datasheet set."""
    from analyzer.prediction.accelerators import qnn
    from analyzer.prediction.predict import predict

    out = {}
    elided = qnn.ELIDED
    qnn.ELIDED = elided if not concat_bytes else frozenset()   # qnn: a Concat kernel of its own
    try:
        for key in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision))):
            rep = F._report(os.path.join(F.FX, F.HEX_GRAPHS[key[0]]))
            (pred,) = predict(rep, [F._datasheet(key[1])], precision=key[2], runtime=runtime)
            kt = pred.kernel_table
            out[key] = (np.array([GROUPS.index(F.group_of(c)) for c in kt.op_class]),
                        np.asarray(kt.compute) * np.asarray(kt.matrix_peak), np.asarray(kt.memory, float),
                        np.asarray(kt.runs, float))
    finally:
        qnn.ELIDED = elided
    return out


class Rows:
    """The rows' kernels concatenated (index ``I`` = row), for vectorised model times."""

    def __init__(self, rows, feats):
        parts = [feats[(r.model_id, r.opcost_profile, r.precision)] for r in rows.itertuples()]
        self.G, self.W, self.M, self.R = (np.concatenate([p[j] for p in parts]) for j in range(4))
        self.I = np.concatenate([np.full(len(p[0]), i) for i, p in enumerate(parts)])
        self.dev = np.array([DEVS.index(p) for p in rows.opcost_profile])
        self.fp16 = (rows.precision == "fp16").values
        self.meas = rows.inference_time_ms.values * 1e-3
        self.peak = np.array([F.peak_int8(d) for d in DEVS])[self.dev[self.I]]


def active(form: dict) -> list[str]:
    names = ["e_mat", "e_dw", "bw_mat", "bw_ew", "bw_move"]
    names += {"group": ["f_mat", "f_ew", "f_move"], "one": ["f_mat"], "none": []}[form.get("floors", "group")]
    return names + {None: [], "dev": ["t0_fp"], "devprec": ["t0_fp", "t0_i8"]}[form.get("t0")]


def unpack(x, form):
    names = active(form)
    P = {k: np.zeros(2) for k in X0}
    for d in range(2):
        for j, k in enumerate(names):
            P[k][d] = np.exp(x[d * len(names) + j])
    if form.get("floors") == "one":
        P["f_ew"], P["f_move"] = P["f_mat"], P["f_mat"]
    if form.get("t0") == "dev":
        P["t0_i8"] = P["t0_fp"]
    return P, float(np.exp(x[-1]))


def times(D: Rows, P: dict, r: float) -> np.ndarray:
    d, G = D.dev[D.I], D.G
    e = np.where(G == 1, P["e_dw"][d], P["e_mat"][d])
    bw = np.choose(G, [P["bw_mat"][d], P["bw_mat"][d], P["bw_ew"][d], P["bw_move"][d]])
    floor = np.choose(G, [P["f_mat"][d], P["f_mat"][d], P["f_ew"][d], P["f_move"][d]])
    fp = D.fp16[D.I]
    t = D.R * floor + np.maximum(D.W / (D.peak * np.where(fp, r, 1.0) * e), D.M / bw)
    return np.bincount(D.I, weights=t, minlength=len(D.meas)) + np.where(D.fp16, P["t0_fp"][D.dev], P["t0_i8"][D.dev])


def fit(D: Rows, form: dict):
    from scipy.optimize import least_squares

    names = active(form)
    x0 = np.array([np.log(X0[k]) for _ in range(2) for k in names] + [np.log(0.25)])
    cap = {"e_": 0.0, "bw": np.log(form.get("bwmax", 1.0)), "f_": np.log(form.get("fcap", np.inf)), "t0": np.inf}
    up = np.array([cap[k[:2]] for _ in range(2) for k in names] + [0.0])
    lo = np.array([np.log(F.T0_MIN) if k.startswith("t0") else -np.inf for _ in range(2) for k in names] + [-np.inf])

    def res(x):
        P, r = unpack(x, form)
        return np.concatenate([np.log(times(D, P, r) / D.meas), 0.01 * (x - x0)])

    best = None
    for bw_scale in (1.0, 10.0):
        start = x0 + np.array([np.log(bw_scale) if k.startswith("bw_") else 0.0 for _ in range(2) for k in names] + [0.0])
        sol = least_squares(res, np.clip(start, lo + 1e-3, up - 1e-3), bounds=(lo, up), method="trf")
        best = sol if best is None or sol.cost < best.cost else best
    return unpack(best.x, form)


def cv(rows, feats, form: dict, key) -> float:
    keys = np.array([key(m) for m in rows.model_id])
    pred = np.zeros(len(rows))
    for k in sorted(set(keys)):
        out = keys == k
        P, r = fit(Rows(rows[~out], feats), form)
        pred[out] = times(Rows(rows[out], feats), P, r)
    return float(np.mean(np.abs(pred / (rows.inference_time_ms.values * 1e-3) - 1)) * 100)


def main() -> None:
    mdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "measurements", "accelerators")
    rows = F.hexagon_rows(mdir)
    train = rows[~rows.model_id.isin(F.HELD_OUT)].reset_index(drop=True)
    cache: dict = {}
    print("| form | leave one model out | leave one family out |\n|---|---:|---:|")
    for name, (runtime, concat_bytes, form) in FORMS.items():
        if (runtime, concat_bytes) not in cache:
            cache[(runtime, concat_bytes)] = features(train, runtime, concat_bytes)
        feats = cache[(runtime, concat_bytes)]
        lomo, lofo = cv(train, feats, form, lambda m: m), cv(train, feats, form, F.FAMILIES.get)
        print(f"| {name} | {lomo:.1f} % | {lofo:.1f} % |", flush=True)


if __name__ == "__main__":
    main()
