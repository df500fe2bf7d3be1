"""Changes to the Hexagon NPU form aimed at models it never saw, judged by cross-validation on the
fitted models only (the held-out models of bench/hexagon_model.py never enter).

    PYTHONPATH=$PWD python bench/hexagon_transfer.py [MEASUREMENTS_DIR] [--only TEXT]
        [--out bench/results/hexagon_transfer.md]

Writes the table to ``--out`` and the same scores as data beside it (its ``.json``; ``form_line``
names the line that is bench/fit_accelerators.py's ``FORM``, whose LOMO / LOFO the Hexagon
profiles' notes quote through bench/hexagon_notes.py).

Base: ``SHIPPED``, ``dwq`` (depthwise kernels at one shared fraction q of the matrix efficiency,
the qnn runtime's ``spill``), the form shipped when these lines were scored; bench/fit_accelerators.py's
``FORM`` is now its ``dwe-wm`` line (``form_line``), chosen by this table. Each
candidate changes one thing of it (``CANDIDATES``; ``BASE`` is the form with no depthwise rule,
from which each line's form is built); each line is scored by leave one model out (LOMO) and leave
one family out (LOFO, hexagon_model.FAMILIES) on the fitted rows, overall and per device x
precision cell, and in-sample, and judged against the base line of the same run (a line
in ``STACKED_ON``: against the line it names). A candidate is adopted when it passes every
condition of its rule (``RULES``, ``Rule``, ``adopted``; each fixed before any held-out score of
the candidates it judges): ``transfer``: LOFO MAPE at least 1 point below its base's, LOMO at most
0.5 above, no LOFO device x precision cell more than 2 above; ``int8`` (stream, bnq): the same and
the W8A8 rows' LOFO MAPE below the base's; ``hw`` (mib, dil): LOFO at least 1 below, LOMO not
above, in-sample at most 1 above (and, after, bench/fit_accelerators.py's held-out 8 Gen 3 / 8 Gen 2
ratio check, a gate); of several adopted, the lowest LOFO is taken (``chosen``). The feature
changes are bench/hexagon_changes.py's.

Candidates (hexagon_model.times with one change; "dwq, X": the base form with X):

- ``dwq`` (the base): e_dw = q x e_mat, one q (at most 1) for both devices (hexagon_model.Form.dwq);
  ``dwm``: q = 1, depthwise kernels at their device's matrix-class efficiency; the base line: an
  e_dw of its own per device; ``dws``: e_dw x P_int8 the same on both devices (the 8 Gen 2's
  rate), one q;
- ``ecap``: the efficiencies bounded by this value instead of 1 (the int8 peaks are derived
  figures, hardware_db/profiles);
- ``kq`` / ``mq`` / ``cq`` / ``eq``: one W8A8 factor for both devices on the per-kernel cost /
  the memory time / the on-chip activation cost c_act / the compute efficiency (W8A8 structure:
  requantization, int8 data paths);
- ``pad``: a convolution's MACs with its per-group input and output channels rounded up to this
  multiple (a matrix engine's tile depth; depthwise convolutions excluded; attributes read from
  the ONNX file);
- ``wres``: a model whose weight bytes (at the row's precision) are at most this many MB reads
  no weight from DRAM (they stay in an on-chip cache between the back-to-back inferences AI Hub
  times; 8 MB: the profiles' ``onchip_mb``);
- ``f_scale``: the Cauchy loss's scale (0.2 in the form) re-chosen;
- ``wpf``: weights streamed apart from the kernels (a DMA prefetch into the VTCM): each kernel's
  time without its weight bytes, and per inference ``max`` (overlapped) or ``sum`` (serial) of
  that kernel sum and the model's weight seconds at e_bw of the matrix class;
- ``stream``: a kernel whose activation bytes exceed the on-chip budget keeps none of them on chip
  and streams all of them from DRAM (the form before spill; the form, as the library's qnn
  runtime, keeps the budget's worth on chip and streams only the excess: ``spill``, adopted by the
  ``int8`` rule against this form);
- ``bnq``: at W8A8, each BatchNormalization kernel no convolution absorbed adds two elementwise
  kernels moving its activation bytes, no work (AI Hub's layers_total: DenseNet-121 has 372 layers
  at fp16, 497 = 372 + 2 x 62 + 1 at W8A8, and 62 such BatchNorms; what the two layers are is
  assumed);
- ``mib``: the on-chip budget 8 MiB (8,388,608 B) instead of the profiles' 8e6 B (the VTCM's
  "8 MB" read as Qualcomm's HTP code reads it, hexagon_changes.MIB_MB);
- ``dil``: a dilated convolution computes as a dense one over its dilated kernel extent (zeros
  between the taps), work x prod (1 + d (k - 1)) / k (hexagon_changes.dilated; assumed; of the
  fitted models only FCN-ResNet50 has dilated convolutions);
- ``mvo`` / ``mvs``: a data-movement kernel (classes movement, view, reorder, gather, other) moves
  every byte, kept on chip, over the budget or a weight, at its on-chip rate (c_act / e_bw of the
  movement group per DRAM byte: a pass of the HVX unit through the VTCM), its DRAM bytes also
  crossing DRAM at the datasheet bandwidth, overlapped (``mvo``: max of the two) or serial
  (``mvs``: their sum); the shipped form charges a movement kernel's DRAM bytes at 1 / e_bw of the
  group, 255-286x a DRAM byte, which a large transpose or copy multiplies out to tenths of a second;
- ``dwt-..`` / ``dwe-..`` (hexagon_model.Form.dwt): a depthwise kernel's compute time is its work
  unit over a fitted rate of its own, in place of q_dw x the matrix rate (its memory term
  unchanged): ``dwt`` taps x output elements (its MACs), ``dwe`` output elements (a cost per output
  whatever the window); ``p``: a rate per precision (fp16, W8A8), ``w``: one W8A8 rate, fp16 at 0.5
  of it (the HVX lane widths); ``s``: the same rate on both devices, ``m``: the 8 Gen 3's the
  8 Gen 2's x the ratio of their fitted matrix rates (e_mat x P_int8, as ``dwq`` ties them).

``--only "stream|bnq"``, ``--only "mib|dil"``, ``--only "mvo|mvs"`` or ``--only "dwt-|dwe-"`` (with ``--out`` elsewhere) scores those lines with
the base line alone.

Needs pandas, scipy and onnx (bench only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402
from fit_accelerators import FORM  # noqa: E402
from hexagon_changes import dw_units, transformed  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Rule:
    """An adoption rule, each condition against the base's scores in the same run (MAPE points,
    at the 0.1 the scores are rounded to): LOFO at least ``lofo_gain`` below; LOMO at most
    ``lomo_slack`` above; each LOFO device x precision cell at most ``cell_slack`` above;
    in-sample at most ``insample_slack`` above; ``int8_better``: the W8A8 rows' LOFO MAPE (both
    devices pooled) below the base's. None / False: the condition is not part of the rule."""
    lofo_gain: float = 1.0
    lomo_slack: float = 0.5
    cell_slack: float | None = 2.0
    insample_slack: float | None = None
    int8_better: bool = False

    def text(self) -> str:
        return "; ".join(
            [f"LOFO >= {self.lofo_gain:g} point below the base's", f"LOMO at most {self.lomo_slack:g} above"]
            + ([f"no LOFO device x precision cell more than {self.cell_slack:g} above"] if self.cell_slack is not None
               else [])
            + ([f"in-sample at most {self.insample_slack:g} above"] if self.insample_slack is not None else [])
            + (["the W8A8 rows' LOFO below the base's"] if self.int8_better else []))


# the rules, each fixed before any held-out score of the candidates it judges: ``transfer`` (the
# depthwise, W8A8-factor, padding, weight and loss-scale lines), ``int8`` (stream, bnq: the W8A8
# rows must improve), ``hw`` (mib, dil: LOMO not worse, in-sample at most 1 point worse, no cell
# condition; the held-out 8 Gen 3 / 8 Gen 2 ratio check of bench/fit_accelerators.py a gate after)
RULES = {"transfer": Rule(), "int8": Rule(int8_better=True),
         "hw": Rule(lomo_slack=0.0, cell_slack=None, insample_slack=1.0)}
BASE = dataclasses.replace(FORM, dwm=False, dwq=False, dwt="")
FACTORS = ("kq", "mq", "cq", "eq")
# the line every other line is judged against (``dwq``, the form shipped when these lines were scored;
# ``form_line`` names the one that is ``FORM`` now), but those listed in ``STACKED_ON`` (a change on top
# of another line, judged against that line)
SHIPPED = "dwq: e_dw = q e_mat, q <= 1 shared"
# name -> (form changes to ``BASE``, options): options ecap, pad, dw ("s": dws) and the W8A8
# factors; the names "dwq, X" are the base form with X
CANDIDATES = {
    SHIPPED: ({"dwq": True}, {}),
    "dwm: depthwise at e_mat (q = 1)": ({"dwm": True}, {}),
    "base (a depthwise efficiency per device)": ({}, {}),
    "dws: depthwise rate the same on both devices": ({"dwm": True}, {"dw": "s"}),
    **{f"dwq, {k}: a W8A8 factor on the {w}": ({"dwq": True}, {k: True}) for k, w in
       (("kq", "per-kernel cost"), ("mq", "memory time"), ("cq", "on-chip cost"), ("eq", "compute efficiency"))},
    "dwq, ecap 2: efficiencies <= 2": ({"dwq": True}, {"ecap": 2.0}),
    **{f"dwq, pad {p}: channels rounded up to {p}": ({"dwq": True}, {"pad": p}) for p in (4, 8, 16, 32)},
    **{f"dwq, wres {m:g}: weights resident when <= {m:g} MB": ({"dwq": True}, {"wres": m}) for m in (4, 8, 12)},
    **{f"dwq, wpf {m}: weights streamed apart, {m} with the kernels": ({"dwq": True}, {"wpf": m})
       for m in ("max", "sum")},
    **{f"dwq, cauchy f = {f:g}": ({"dwq": True, "f_scale": f}, {}) for f in (0.1, 0.3)},
    "dwq, stream: a kernel over the budget streams all its activations (no spill)": ({"dwq": True}, {"stream": True}),
    "dwq, bnq: W8A8 standalone BatchNorm adds 2 elementwise kernels": ({"dwq": True}, {"bnq": True}),
    "dwq, mib: on-chip budget 8 MiB (8,388,608 B), not 8e6 B": ({"dwq": True}, {"mib": True}),
    "dwq, dil: dilated convolutions at their dilated kernel's dense work": ({"dwq": True}, {"dil": True}),
    "dwq, mib, dil": ({"dwq": True}, {"mib": True, "dil": True}),
    **{f"dwq, {k}: data movement at its on-chip rate, DRAM {w}": ({"dwq": True}, {"mv": m})
       for k, m, w in (("mvo", "max", "overlapped"), ("mvs", "sum", "serial"))},
    **{f"{u}-{p}{d}: depthwise {uw} at a rate of their own, {pw}, {dw}": ({"dwt": f"{u[-1]}{p}{d}"}, {})
       for u, uw in (("dwt", "taps x outputs"), ("dwe", "output elements"))
       for p, pw in (("p", "one per precision"), ("w", "fp16 at 0.5 of int8"))
       for d, dw in (("s", "the same on both devices"), ("m", "8 Gen 3 by the matrix-rate ratio"))},
}
# a stacked line -> the line it is judged against (else: ``SHIPPED``)
STACKED_ON: dict[str, str] = {}
# a candidate's rule (RULES; the others: ``transfer``)
RULE_OF = {"dwq, stream": "int8", "dwq, bnq": "int8", "dwq, mib": "hw", "dwq, dil": "hw"}


def base_of(name: str) -> str:
    """The line a candidate is judged against: ``STACKED_ON``'s, else the base line (``SHIPPED``)."""
    return STACKED_ON.get(name, SHIPPED)


def chosen(scores: dict) -> str | None:
    """The adopted line with the lowest LOFO (ties: lower LOMO, then lower in-sample) among the lines
    judged against the base line (``scores``: name -> its scores with its ``verdict``); None if
    none passes."""
    ok = [n for n, s in scores.items() if s.get("verdict") == "yes" and base_of(n) == SHIPPED]
    return min(ok, key=lambda n: (scores[n]["lofo"], scores[n]["lomo"], scores[n]["insample"])) if ok else None


def rule_of(name: str) -> Rule:
    return RULES[next((r for pre, r in RULE_OF.items() if name.startswith(pre)), "transfer")]


def unpack(x, form, opt: dict) -> tuple[dict, float]:
    """hexagon_model.unpack with the candidate's shared constants (after the form's, r_fp16 last)."""
    n = len(form.shared())
    P, r = H.unpack(np.concatenate([x[:len(x) - 1 - len(extras(opt))], x[-1:]]), form)
    for j, k in enumerate(extras(opt)):
        P[k] = np.full(2, np.exp(x[2 * len(form.names()) + n + j]))
    if opt.get("dw") == "s":
        peak = np.array([H.peak_int8(d) for d in H.DEVS])
        P["e_dw"] = P["q"] * peak[0] / peak
    return P, r


def extras(opt: dict) -> list[str]:
    return [k for k in FACTORS if opt.get(k)] + (["q"] if opt.get("dw") else [])


def rows_of(rows, feats) -> H.Rows:
    """hexagon_model.Rows, with ``tw`` (a ``wpf`` candidate's weight seconds per key) when given."""
    if isinstance(feats, tuple):
        D = H.Rows(rows, feats[0])
        D.tw = np.array([feats[1][k] for k in sorted(set(zip(rows.model_id, rows.opcost_profile, rows.precision)))])
        return D
    return H.Rows(rows, feats)


def times(D, P: dict, r: float, opt: dict | None = None, dwt: str = "") -> np.ndarray:
    """hexagon_model.times with the W8A8 factors (1 where absent) and ``wpf``'s weight term
    (``dwt``: the form's ``Form.dwt``)."""
    d, G, fp = D.key_dev[D.K], D.G, D.key_fp16[D.K]
    q = {k: np.where(fp, 1.0, P[k][0]) if k in P else 1.0 for k in FACTORS}
    bw = np.choose(G, [P["bw_mat"][d], P["bw_mat"][d], P["bw_ew"][d], P["bw_move"][d]])
    mem = q["mq"] * (D.M + q["cq"] * P["c_act"][d] * D.O) / bw
    if opt and opt.get("mv"):   # a movement kernel's every byte at its on-chip rate, and its DRAM trip
        onrate = P["c_act"][d] * (D.M + D.O) / bw
        mem = np.where(G == H.GROUPS.index("move"),
                       np.maximum(onrate, D.M) if opt["mv"] == "max" else onrate + D.M, mem)
    t = q["kq"] * D.R * P["kfix"][d] + D.N * np.maximum(H.compute_seconds(D, P, r, dwt, q["eq"]), mem)
    per_key = np.bincount(D.K, weights=t, minlength=D.n_keys)
    if opt and opt.get("wpf"):
        tw = D.tw / P["bw_mat"][D.key_dev]
        per_key = np.maximum(per_key, tw) if opt["wpf"] == "max" else per_key + tw
    per_key = per_key + np.where(D.key_fp16, P["t0_fp16"][D.key_dev], P["t0_int8"][D.key_dev])
    off = D.sign * np.where(D.fp16, P["d_fp16"][D.dev], P["d_int8"][D.dev]) / 2
    return np.maximum(per_key[D.row_key] + off, 1e-7)


def fit(D, form, opt: dict) -> tuple[dict, float]:
    """hexagon_model.fit (same loss, prior, starts and bounds; efficiencies at most ``ecap``, q and
    q_dw at most 1, the W8A8 factors unbounded) for a candidate."""
    names = [k for _ in range(2) for k in form.names()] + form.shared() + extras(opt)
    x0 = np.array([0.0 if k in H.SIGNED else np.log(H.X0.get(k, 1.0 if k != "q" else 0.5)) for k in names]
                  + [np.log(0.25)])
    cap = {"e_": np.log(opt.get("ecap", 1.0)), "bw": np.log(form.bwmax), "c_": 0.0, "q": 0.0, "q_": 0.0}
    up = np.array([cap.get(k[:2], cap.get(k, np.inf)) for k in names] + [0.0])
    lo = np.array([np.log(H.T0_MIN) if k.startswith("t0") else np.log(H.KFIX_MIN) if k == "kfix" else -np.inf
                   for k in names] + [-np.inf])

    def res(x):
        P, r = unpack(x, form, opt)
        return np.concatenate([np.log(times(D, P, r, opt, form.dwt) / D.meas), 0.01 * (x - x0)])

    return unpack(H.solve(res, x0, lo, up, names, form), form, opt)


def cv(rows, feats, form, opt: dict, key) -> np.ndarray:
    keys = np.array([key(m) for m in rows.model_id])
    pred = np.zeros(len(rows))
    for k in sorted(set(keys)):
        out = keys == k
        P, r = fit(rows_of(rows[~out], feats), form, opt)
        pred[out] = times(rows_of(rows[out], feats), P, r, opt, form.dwt)
    return pred


def cells(rows, pred) -> dict:
    """MAPE % per (device, precision) cell."""
    g = rows.assign(p=pred, m=rows.inference_time_ms.values * 1e-3).groupby(["opcost_profile", "precision"])
    return {f"{dv.removeprefix('hexagon-')} {pr}": H.stats(s.p, s.m)["mape"] for (dv, pr), s in g}


def adopted(s: dict, b: dict, rule: Rule) -> bool:
    """Whether scores ``s`` pass every condition of ``rule`` against its base's ``b`` (each a dict
    of ``lofo``, ``lomo``, ``insample``, ``int8`` (MAPE %) and ``cells`` ({cell: LOFO MAPE %}))."""
    eps = 1e-9   # the scores are rounded to 0.1: equal means equal
    return (s["lofo"] <= b["lofo"] - rule.lofo_gain + eps and s["lomo"] <= b["lomo"] + rule.lomo_slack + eps
            and (rule.cell_slack is None
                 or all(s["cells"][c] <= b["cells"][c] + rule.cell_slack + eps for c in b["cells"]))
            and (rule.insample_slack is None or s["insample"] <= b["insample"] + rule.insample_slack + eps)
            and (not rule.int8_better or s["int8"] < b["int8"]))


def score(train, feats0: dict, name: str) -> dict:
    """One line's scores: in-sample, LOMO and LOFO MAPE (and biases), the LOFO cells and the W8A8
    rows' pooled LOFO MAPE (%, rounded to 0.1)."""
    fchange, opt = CANDIDATES[name]
    meas = train.inference_time_ms.values * 1e-3
    form = dataclasses.replace(BASE, **fchange)
    feats = transformed(train, feats0, opt)
    if form.dwt:
        feats = dw_units(train, feats, form.dwt[0])
    P, r = fit(rows_of(train, feats), form, opt)
    s_in = H.stats(times(rows_of(train, feats), P, r, opt, form.dwt), meas)
    mo, fa = cv(train, feats, form, opt, lambda m: m), cv(train, feats, form, opt, H.FAMILIES.get)
    s_mo, s_fa = H.stats(mo, meas), H.stats(fa, meas)
    q = train.precision.values == "int8"
    return {"lomo": s_mo["mape"], "lofo": s_fa["mape"], "cells": cells(train, fa),
            "int8": H.stats(fa[q], meas[q])["mape"], "insample": s_in["mape"],
            "lomo_bias": s_mo["bias"], "lofo_bias": s_fa["bias"]}


def row_text(name: str, s: dict) -> str:
    return (f"| {name} | {base_of(name) if name != SHIPPED else ''} | {s['insample']:.1f} % | "
            f"{s['lomo']:.1f} % ({s['lomo_bias']:+.1f} %) | {s['lofo']:.1f} % ({s['lofo_bias']:+.1f} %) | "
            + ", ".join(f"{c} {v:.1f}" for c, v in s["cells"].items())
            + f" (W8A8 rows {s['int8']:.1f}) | {s['verdict']}{' **shipped**' if name == form_line() else ''} |")


def header(train) -> list[str]:
    return ["# Hexagon NPU: changes for transfer to unseen models, cross-validated on the fitted models", "",
            "Command: `PYTHONPATH=$PWD python bench/hexagon_transfer.py ../shared/measurements/accelerators`; "
            f"{len(train)} fitted rows, {train.model_id.nunique()} models; the held-out models never enter. "
            f"Every line is judged against the base line (`{SHIPPED}`, the form shipped when they were scored), "
            "in this run, but a stacked line, judged against the line named in its 'judged against' column; the "
            f"line marked shipped is bench/fit_accelerators.py's FORM (`{form_line()}`). Rules "
            "(each fixed before any held-out score of the lines it judges): "
            + " | ".join(f"`{k}`: {r.text()}" for k, r in RULES.items())
            + ". The stream / bnq lines are judged by `int8`, the mib / dil lines by `hw`, the others by `transfer`.",
            "", "| candidate | judged against | in-sample MAPE | LOMO (bias) | LOFO (bias) | LOFO per cell | adopted |",
            "|---|---|---:|---:|---:|---|---|"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--only", default="", help="run only the base line and the candidates whose name "
                    "contains this (or one of several texts separated by |)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "hexagon_transfer.md"))
    a = ap.parse_args()
    train = H.fitted_rows(H.hexagon_rows(a.measurements))
    feats0 = H.features(train, BASE.runtime, BASE.onchip, BASE.hvx)
    lines = header(train)
    print("\n".join(lines), flush=True)
    scores: dict = {}
    for name in CANDIDATES:   # the shipped line first, each stacked line after the line it is judged against
        if name != SHIPPED and not any(t in name for t in a.only.split("|")):
            continue
        scores[name] = score(train, feats0, name)
        scores[name]["verdict"] = ("(base)" if name == SHIPPED else "yes" if base_of(name) in scores
                                   and adopted(scores[name], scores[base_of(name)], rule_of(name)) else "no")
        lines.append(row_text(name, scores[name]))
        print(lines[-1], flush=True)
    stacked = [n for n in scores if base_of(n) != SHIPPED and scores[n]["verdict"] == "yes"]
    lines += ["", "Chosen among the lines that pass against the base line (the lowest LOFO): **"
              + (chosen(scores) or "none") + "**; stacked lines that pass against theirs: "
              + (", ".join(stacked) or "none") + "."]
    move_b = H.largest_move_dram(feats0)
    lines += ["", f"The most bytes per launch a data-movement kernel of these rows sends to DRAM (weights and "
              f"activations over the on-chip budget): {move_b:,} B (analyzer/prediction/accelerators/qnn.py "
              "FITTED_MOVE_DRAM_B: beyond it the qnn runtime says its movement time extrapolates the fitted rate)."]
    print(lines[-1])
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    write_record(os.path.splitext(a.out)[0] + ".json", train, scores, move_b)


def form_line() -> str:
    """The candidate line that is bench/fit_accelerators.py's ``FORM`` (no option, its changes
    turning ``BASE`` into ``FORM``): its LOMO / LOFO are the error the Hexagon profiles' notes quote."""
    return next(n for n, (fchange, opt) in CANDIDATES.items()
                if not opt and dataclasses.replace(BASE, **fchange) == FORM)


def write_record(path: str, train, scores: dict, move_dram_b: int) -> None:
    """The scores as data (MAPE and bias in %, rounded to 0.1) beside the table: ``form_line``
    names the shipped form's line, whose figures bench/hexagon_notes.py fills into the profiles;
    ``largest_move_dram_bytes``: hexagon_model.largest_move_dram of the fitted rows."""
    doc = {"command": "PYTHONPATH=$PWD python bench/hexagon_transfer.py ../shared/measurements/accelerators",
           "fitted_rows": int(len(train)), "models": int(train.model_id.nunique()), "form_line": form_line(),
           "largest_move_dram_bytes": int(move_dram_b), "lines": scores}
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
