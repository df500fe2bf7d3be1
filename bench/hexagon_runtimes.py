"""How AI Hub's two deployment runtimes of the Hexagon NPU differ on the fitted models (the
held-out models, hexagon_model.HELD_OUT, are never read): per (model, device, precision) with
both a ``qnn_dlc`` row (a QNN DLC on QAIRT) and a ``tflite`` row (TFLite with the QNN delegate),
the ratio qnn_dlc / tflite and the difference qnn_dlc - tflite (us), and which of three forms
carries the difference best, each with one constant per precision (the median over the pairs):

- a per-inference offset: qnn_dlc = tflite + d (us);
- a per-kernel offset: qnn_dlc = tflite + n_k k (n_k: the kernels of the ``qnn`` plan);
- a proportional factor: qnn_dlc = tflite x f.

Scored by the median and mean |log(predicted qnn_dlc / measured)| over the pairs (in %, as
exp(.) - 1), per precision, on all pairs and on the pairs under 30 ms (the few far larger ones,
VideoMAE's 3.2x, WavLM's 1.2x, FCN-ResNet50 fp16's 1.3x, are not a runtime constant of any form).

    PYTHONPATH=$PWD python bench/hexagon_runtimes.py [MEASUREMENTS_DIR] [--out bench/results/hexagon_runtimes.md]

Needs pandas (bench only).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import hexagon_model as H  # noqa: E402

SMALL_MS = 30.0


def pairs(mdir: str):
    """The fitted models' (model, device, precision) keys with both runtimes: a DataFrame with
    tflite and qnn_dlc (ms), ratio, diff_us and nk (the ``qnn`` plan's kernels)."""
    import hexagon_variants as V

    rows = H.hexagon_rows(mdir)
    train = H.fitted_rows(rows)
    p = train.pivot_table(index=["model_id", "opcost_profile", "precision"], columns="runtime",
                          values="inference_time_ms", aggfunc="first").dropna()
    kd = V.kernel_data(train)
    p["ratio"] = p.qnn_dlc / p.tflite
    p["diff_us"] = (p.qnn_dlc - p.tflite) * 1e3
    p["nk"] = [kd[k]["nk"] for k in p.index]
    return p.reset_index()


def form_errors(p) -> dict:
    """{form: (constant, median |log error| %, mean |log error| %)} of the three forms (module
    docstring) on the pairs ``p``, each constant the median over them."""
    d = float(np.median(p.diff_us))
    k = float(np.median(p.diff_us / p.nk))
    f = float(np.median(p.ratio))
    out = {}
    for name, c, pred in (("per-inference offset d (us)", d, p.tflite + d * 1e-3),
                          ("per-kernel offset k (us)", k, p.tflite + p.nk * k * 1e-3),
                          ("proportional factor f", f, p.tflite * f)):
        z = np.abs(np.log(np.maximum(pred, 1e-6) / p.qnn_dlc))
        out[name] = (c, float(np.expm1(np.median(z)) * 100), float(np.expm1(np.mean(z)) * 100))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "hexagon_runtimes.md"))
    a = ap.parse_args()
    p = pairs(a.measurements)
    lines = ["# Hexagon NPU: AI Hub's deployment runtimes (qnn_dlc against tflite) on the fitted models", "",
             "Command: `PYTHONPATH=$PWD python bench/hexagon_runtimes.py ../shared/measurements/accelerators`; "
             f"{len(p)} (model, device, precision) keys with both runtimes, held-out models not read.", "",
             "| model | device | precision | tflite (ms) | qnn_dlc (ms) | qnn_dlc / tflite | difference (us) | kernels |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in p.sort_values(["precision", "tflite"]).itertuples():
        lines.append(f"| {r.model_id} | {r.opcost_profile} | {r.precision} | {r.tflite:.3f} | {r.qnn_dlc:.3f} | "
                     f"{r.ratio:.3f} | {r.diff_us:+.0f} | {r.nk} |")
    lines += ["", "Per precision and device (keys under 30 ms): median ratio, median difference", "",
              "| precision | device | keys | median ratio | median difference (us) | ratio range |",
              "|---|---|---:|---:|---:|---|"]
    small = p[p.tflite < SMALL_MS]
    for (prec, dev), g in small.groupby(["precision", "opcost_profile"]):
        lines.append(f"| {prec} | {dev} | {len(g)} | {g.ratio.median():.3f} | {g.diff_us.median():+.0f} | "
                     f"{g.ratio.min():.3f}-{g.ratio.max():.3f} |")
    lines += ["", "qnn_dlc predicted from the same key's tflite row by one constant per precision (the median "
              "over the keys): |log error| as a percentage", "",
              "| precision | keys | form | constant | median error | mean error |", "|---|---|---|---:|---:|---:|"]
    for label, sub in (("all", p), (f"under {SMALL_MS:g} ms", small)):
        for prec, g in sub.groupby("precision"):
            for name, (c, med, mean) in form_errors(g).items():
                lines.append(f"| {prec} | {label} ({len(g)}) | {name} | {c:.3g} | {med:.1f} % | {mean:.1f} % |")
    print("\n".join(lines))
    with open(a.out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
