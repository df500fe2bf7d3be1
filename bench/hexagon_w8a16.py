"""The Hexagon NPU's W8A16 rate: one fraction of the int8 matrix peak per device family, fitted on
Qualcomm AI Hub's W8A16 rows (int8 weights, int16 activations) with every other constant as
bench/fit_accelerators.py fits it on the fp16 and W8A8 rows.

Per row (one model on one device, W8A16, deployed as AI Hub's runtime of the row):

    T = t0_fp16 + sum_k runs_k * floor
        + max(W_k / (P_int8 * r_w8a16 * e[g_k]), (B_k + c_act * O_k) / (BW * e_bw[g_k]))

(bench/hexagon_model.py ``times``; ``B_k``, ``O_k`` with weights at 1 B an element and activations
at 2 B, the library's w8a16 bytes; the fp16 graph's per-inference cost t0_fp16, no deployment
offset: the form B of the criterion, chosen over A, the W8A8 graph's t0_int8 and offset d_int8,
by leave-one-model-out MAPE, ``--fixed int8`` scores A).  ``--nonmatrix int8`` scores form C: the
non-matrix kernels (groups ew and move) computing at the int8 peak as in the W8A8 graph (s = 1), the
matrix and depthwise ones at r_w8a16; the fit's e_bw, c_act and per-kernel cost are one set for both
precisions, so C differs from B only in that compute share, and every ew / move kernel of the rows is
memory-bound (its FLOP-equivalent work ~0): C's predictions equal B's, row for row
(bench/results/hexagon_w8a16_nonmatrix.md).  r_w8a16 is one figure for both Hexagon devices,
fitted with the shipped loss (Cauchy on log(pred / measured), f = 0.2), at most 1.  Scores:
in-sample, leave one model out (r refitted without the model's rows), and the held-out models
(``HELD_OUT``, never fitted on), per device.  The criterion was written down before any score
(docs/accuracy.md, "Hexagon NPU, whole models", "W8A16").

Writes ``qnn_w8a16_share`` (and its provenance) into both Hexagon families' files, the results to
bench/results/hexagon_w8a16.md / .json, and checks the library (analyzer.prediction.predict on the
shipped profiles) against the bench's figures row by row.  Needs pandas and scipy (bench only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fit_accelerators as F
import hexagon_model as H

COMMAND = "PYTHONPATH=$PWD python bench/hexagon_w8a16.py ../shared/measurements/accelerators"
RESULT = os.path.join(H.ROOT, "bench", "results", "hexagon_w8a16")
# the form's acceptance: its leave-one-model-out MAPE on the fitted W8A16 rows (fixed before scoring)
LOMO_MAX = 30.0


def w8a16_features(rows) -> dict:
    """``H.features`` of the W8A16 rows with each kernel's fixed precision share set to 1 (a
    placeholder ``rows_at`` replaces by r_w8a16)."""
    feats = H.features(rows, F.FORM.runtime, F.FORM.onchip, F.FORM.hvx, dw_unit=F.FORM.dwt[:1])
    return {k: (*f[:5], np.ones(len(f[0]))) for k, f in feats.items()}


# the per-inference cost a W8A16 graph takes: "int8" the W8A8 graph's (and its deployment offset), "fp16"
# the fp16 graph's (no offset): the criterion's forms A and B; B shipped (leave one model out 88.6 % against
# A's 96.4 %, both over the 30 % threshold; docs/accuracy.md)
FIXED = "fp16"
# the compute share of the non-matrix kernels (groups ew and move): "r" r_w8a16 as every kernel (form B,
# shipped), "int8" 1, the W8A8 graph's (form C: their bytes, e_bw and per-kernel cost are the fit's only ones,
# shared by both precisions; ``--nonmatrix int8`` scores it)
NONMATRIX = "r"
_NONMATRIX_GROUPS = [H.GROUPS.index("ew"), H.GROUPS.index("move")]


def set_share(D: H.Rows, r: float) -> None:
    """Each kernel's share of the int8 peak (in place): r, or 1 for a non-matrix one (``NONMATRIX``)."""
    D.S = np.full(len(D.G), r)
    D.dw_share = np.full(len(D.G), r)   # a Form.dwt form's depthwise kernels: r x its W8A8 rate
    if NONMATRIX == "int8":
        D.S[np.isin(D.G, _NONMATRIX_GROUPS)] = 1.0


def rows_at(rows, feats, r: float) -> H.Rows:
    """The rows' kernels with every kernel computing at r x the int8 peak, the per-inference cost
    of the ``FIXED`` graph."""
    D = H.Rows(rows, feats)
    set_share(D, r)
    if FIXED == "fp16":
        D.key_fp16, D.fp16 = np.ones_like(D.key_fp16), np.ones_like(D.fp16)
    return D


def fit_r(rows, feats, P: dict) -> float:
    """r_w8a16 by the shipped loss over ``rows`` (the other constants ``P`` fixed)."""
    from scipy.optimize import least_squares

    D = rows_at(rows, feats, 1.0)

    def res(x):
        set_share(D, float(np.exp(x[0])))
        return np.log(H.times(D, P, 1.0, F.FORM.dwt) / D.meas)

    sol = least_squares(res, [np.log(0.25)], bounds=([-np.inf], [0.0]), loss=F.FORM.loss, f_scale=F.FORM.f_scale)
    return float(np.exp(sol.x[0]))


def ms(rows, feats, P, r: float) -> np.ndarray:
    if len(rows) == 0:
        return np.zeros(0)
    return H.times(rows_at(rows, feats, r), P, 1.0, F.FORM.dwt) * 1e3


def lomo(rows, feats, P) -> tuple[np.ndarray, dict]:
    """Each row predicted with r fitted on the other models' rows; (ms, model -> r)."""
    pred, rs = np.zeros(len(rows)), {}
    for m in sorted(set(rows.model_id)):
        out = (rows.model_id == m).values
        rs[m] = fit_r(rows[~out].reset_index(drop=True), feats, P)
        pred[out] = ms(rows[out].reset_index(drop=True), feats, P, rs[m])
    return pred, rs


def per_device(rows, pred) -> dict:
    out = {dev: H.stats(pred[(rows.opcost_profile == dev).values], rows.inference_time_ms[rows.opcost_profile == dev])
           for dev in H.DEVS}
    out["all"] = H.stats(pred, rows.inference_time_ms)
    return out


def write_share(r: float, train, scores: dict) -> None:
    """``qnn_w8a16_share`` = r and its provenance into both Hexagon families' files."""
    for family in F.HEXAGON.values():
        path = os.path.join(F.EFF_DIR, f"{family}.json")
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        doc["scalars"]["qnn_w8a16_share"] = round(r, 4)
        doc["scalars"]["qnn_w8a16_provenance"] = {
            "kind": "fit", "measurement_file": "aihub_hexagon.csv", "fit_script": "bench/hexagon_w8a16.py",
            "command": COMMAND,
            "source": ("a W8A16 kernel's rate (int8 weights, int16 activations) as a fraction of the int8 matrix "
                       "peak, one figure for both Hexagon devices, fitted (Cauchy loss, f = 0.2, on log(pred / "
                       "measured)) on Qualcomm AI Hub v0.35.0 W8A16 NPU rows (QAIRT 2.37.0) of "
                       f"{', '.join(sorted(set(train.model_id)))} ({len(train)} rows), every other constant "
                       "as fitted on the fp16 and W8A8 rows (bench/fit_accelerators.py); the fp16 graph's "
                       "per-inference cost (run_fixed_s); held out (never fitted): "
                       f"{', '.join(sorted(H.HELD_OUT))}; Qualcomm publishes no int8 x int16 rate"),
            "fit_error": scores}
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")


def table(title: str, cells: dict) -> list[str]:
    out = [f"**{title}**", "", "| device | rows | MAPE % | max APE % | bias % |", "|---|---:|---:|---:|---:|"]
    out += [f"| {k} | {s['rows']} | {s.get('mape', '')} | {s.get('max_ape', '')} | {s.get('bias', '')} |"
            for k, s in cells.items()]
    return out + [""]


def per_model(rows, pred) -> list[str]:
    out = ["| model | device | measured ms | predicted ms | error % |", "|---|---|---:|---:|---:|"]
    for row, p in zip(rows.itertuples(), pred):
        out.append(f"| {row.model_id} | {row.opcost_profile} | {row.inference_time_ms:.3f} | {p:.3f} | "
                   f"{(p / row.inference_time_ms - 1) * 100:+.1f} |")
    return out + [""]


def library_ms(rows) -> np.ndarray:
    """opcost's own W8A16 predictions (shipped profiles and families, each row at its runtime)."""
    H._REPORTS.clear()
    import hardware_db

    hardware_db.clear_cache()
    return np.array([F.opcost_ms(r.model_id, r.opcost_profile, "w8a16", F.LIBRARY_RUNTIME[r.runtime])
                     for r in rows.itertuples()])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--fixed", choices=("int8", "fp16"), default="fp16",
                    help="the per-inference cost: the W8A8 graph's (form A) or the fp16 graph's (form B, shipped)")
    ap.add_argument("--fitted-only", action="store_true", help="score the fitted models only (no held-out row read)")
    ap.add_argument("--nonmatrix", choices=("r", "int8"), default="r",
                    help="the non-matrix kernels' share of the int8 peak: r_w8a16 (form B, shipped) or 1 (form C)")
    a = ap.parse_args()
    global FIXED, NONMATRIX
    FIXED, NONMATRIX = a.fixed, a.nonmatrix
    base = H.fitted_rows(H.hexagon_rows(a.measurements))
    P, r_fp16 = H.fit(H.Rows(base, H.features(base, F.FORM.runtime, F.FORM.onchip, F.FORM.hvx,
                                              dw_unit=F.FORM.dwt[:1])), F.FORM)
    rows = H.hexagon_rows(a.measurements, ("w8a16",))
    feats = w8a16_features(rows)
    held = rows.model_id.isin(H.HELD_OUT).values
    train, test = rows[~held].reset_index(drop=True), rows[held].reset_index(drop=True)
    if a.fitted_only:
        test = test.iloc[:0]
    r = fit_r(train, feats, P)
    cv_pred, rs = lomo(train, feats, P)
    scores = {"in_sample": per_device(train, ms(train, feats, P, r)), "lomo": per_device(train, cv_pred),
              "held_out": per_device(test, ms(test, feats, P, r))}
    accepted = scores["lomo"]["all"]["mape"] <= LOMO_MAX
    flags = "".join(f" --{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in vars(a).items()
                    if k != "measurements" and v != ap.get_default(k))
    report = ["# Hexagon NPU: the W8A16 rate", "", f"Command: `{COMMAND}{flags}`", "",
              f"r_w8a16 = {r:.4f} (one figure, both devices; r_fp16 of the fp16 / W8A8 fit {r_fp16:.4f}); "
              f"leave-one-model-out r from {min(rs.values()):.4f} to {max(rs.values()):.4f}", "",
              f"Rows: fitted {len(train)} ({train.model_id.nunique()} models), held out {len(test)} "
              f"({', '.join(sorted(set(test.model_id)))}); accepted (LOMO <= {LOMO_MAX:g} %): {accepted}", ""]
    report += table("in-sample", scores["in_sample"]) + table("leave one model out", scores["lomo"])
    report += table("held-out models", scores["held_out"])
    report += ["**per row, in-sample**", ""] + per_model(train, ms(train, feats, P, r))
    report += ["**per row, held out**", ""] + per_model(test, ms(test, feats, P, r))
    if not (a.no_write or a.fitted_only):
        write_share(r, train, {k: v["all"] for k, v in scores.items()})
        lib = library_ms(rows)
        bench = ms(rows, feats, P, r)
        worst = float(np.max(np.abs(lib / bench - 1)))
        report += [f"Library check (analyzer.prediction.predict, shipped profiles, precision w8a16): largest "
                   f"relative difference from the bench's rows {worst:.2e} (r written rounded to 4 digits)", ""]
        with open(RESULT + ".json", "w", encoding="utf-8") as fh:
            json.dump({"command": COMMAND, "r_w8a16": round(r, 4), "accepted": bool(accepted), "lomo_max": LOMO_MAX,
                       "lomo_r": {k: round(v, 4) for k, v in rs.items()}, **scores}, fh, indent=1)
            fh.write("\n")
        with open(RESULT + ".md", "w", encoding="utf-8") as fh:
            fh.write("\n".join(report) + "\n")
    print("\n".join(report))


if __name__ == "__main__":
    main()
