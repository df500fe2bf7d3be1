"""Choose the Hexagon NPU model form by cross-validation on the fitted models only (the held-out
models of bench/hexagon_model.py never enter).

    PYTHONPATH=$PWD python bench/hexagon_forms.py [MEASUREMENTS_DIR] [--out bench/results/hexagon_forms.md]

For each form in FORMS (bench/hexagon_model.py: the runtime's plan, a per-inference fixed cost,
the floors, the largest e_bw, the least squares' loss and its scale) prints the
leave-one-model-out (LOMO) and leave-one-family-out (LOFO, hexagon_model.FAMILIES) MAPE and
geometric-mean bias of the fitted rows, each row predicted by a fit without its model (its
family). The rule, fixed before any held-out score: the form with the lowest mean of
the two; a form with fewer constants within RULE_MARGIN points of that mean is taken instead
(the fewest constants; ties to the lower mean). bench/fit_accelerators.py fits the chosen form
(its FORM).

Needs pandas and scipy (bench only).
"""

from __future__ import annotations

import argparse
import os
import sys


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402

RULE_MARGIN = 1.0   # points of mean CV MAPE within which the form with fewer constants is preferred
FORMS = {
    "kernel runtime, e_bw unbounded, floors <= 1 us (the 14-model fit's form)": H.Form("kernel", t0=False, fcap=1e-6),
    "kernel runtime, e_bw unbounded, floors <= 1 us, t0 per precision": H.Form("kernel", t0=True, fcap=1e-6),
    "qnn fusion, e_bw <= 1, t0 per precision, floors uncapped (the qnn candidate)": H.Form("qnn", t0=True, bwmax=1.0),
    "qnn fusion, e_bw <= 1, t0 per precision, no floor": H.Form("qnn", t0=True, floors=False, bwmax=1.0),
    **{f"qnn fusion, e_bw <= 1, t0 per precision, no floor, {loss} loss f = {f:g}":
       H.Form("qnn", t0=True, floors=False, bwmax=1.0, loss=loss, f_scale=f)
       for loss, f in (("soft_l1", 0.2), ("cauchy", 0.1), ("cauchy", 0.2), ("cauchy", 0.3), ("cauchy", 0.5))},
}


def choose(scores: dict) -> str:
    """RULE (module docstring) over {name: (lomo, lofo, constants)}."""
    mean = {k: (v[0] + v[1]) / 2 for k, v in scores.items()}
    best = min(mean, key=mean.get)
    near = [k for k in scores if mean[k] <= mean[best] + RULE_MARGIN]
    return min(near, key=lambda k: (scores[k][2], mean[k]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "hexagon_forms.md"))
    a = ap.parse_args()
    rows = H.hexagon_rows(a.measurements)
    train = H.fitted_rows(rows)
    meas = train.inference_time_ms.values * 1e-3
    cache: dict = {}
    scores = {}
    lines = ["# Hexagon NPU: model forms compared by cross-validation on the fitted models", "",
             f"Command: `PYTHONPATH=$PWD python bench/hexagon_forms.py ../shared/measurements/accelerators`; "
             f"{len(train)} fitted rows, {train.model_id.nunique()} models, {len(set(H.FAMILIES.values()))} "
             "families (bench/hexagon_model.py FAMILIES); the held-out models never enter. MAPE of each row "
             "predicted by a fit that left its model (its family) out. Rule (fixed before any held-out score): "
             f"the lowest mean of the two, unless a form with fewer constants is within {RULE_MARGIN:g} point.", "",
             "| form | constants | leave one model out (bias) | leave one family out (bias) | mean MAPE |",
             "|---|---:|---:|---:|---:|"]
    print("\n".join(lines), flush=True)
    for name, form in FORMS.items():
        fkey = (form.runtime, form.onchip, form.hvx)
        if fkey not in cache:
            cache[fkey] = H.features(train, *fkey)
        feats = cache[fkey]
        s_mo = H.stats(H.cv(train, feats, form, lambda m: m), meas)
        s_fa = H.stats(H.cv(train, feats, form, H.FAMILIES.get), meas)
        lomo, lofo = s_mo["mape"], s_fa["mape"]
        scores[name] = (lomo, lofo, form.n_constants())
        lines.append(f"| {name} | {form.n_constants()} | {lomo:.1f} % ({s_mo['bias']:+.1f} %) | {lofo:.1f} % "
                     f"({s_fa['bias']:+.1f} %) | {(lomo + lofo) / 2:.1f} % |")
        print(lines[-1], flush=True)
    pick = choose(scores)
    lines += ["", f"Chosen: **{pick}**"]
    print(lines[-1])
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
