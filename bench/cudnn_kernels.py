"""The kernels cuDNN 8.9 ran for NeuSight's PyTorch 2.1 ``nn.Conv2d`` rows, against opcost's eager
plan rule ``cudnn-fp32`` (``analyzer.prediction.cudnn_conv``), and the conv rows' scores with and
without the rule's launches.

Data: ``shared/measurements/gpu/neusight_ops.csv.gz`` (its README): fp32, TF32 off, every
convolution 3x3, stride 1, padding 1 (the Winograd shape), on A100 PCIe 80 GB, V100, T4, P100, P4;
``kernels_launched`` lists every kernel of the call.  Sections of the report:

1. the algorithm family of each row by its kernel names (non-fused Winograd: ``winograd_nonfused``;
   FFT: ``fft``; fused Winograd: ``scudnn_winograd``; cuDNN's implicit GEMM with its offsets helper:
   ``computeoffsets``; ``explicit_convolve`` after im2col; ``precomputed_convolve``;
   ``implicit_convolve_sgemm`` alone) per GPU, and the kernels per call of each family;
2. the rule's kernel count (4 where ``cudnn_conv.nonfused``, else 2) against the recorded count, beside
   the plan before the rule (1): in-sample (the shipped thresholds), and leave one GPU out (the two
   thresholds chosen on four GPUs from the grid ``CHANNELS`` x ``TILES`` by their count match, scored on
   the fifth);
3. the conv rows' eager-op scores of ``bench/fit_neusight.py``'s fit (feature path) without the rule's
   launches, with them (floors only, as shipped) and with the non-fused Winograd's transforms' bytes too
   (``fit_neusight.CUDNN_HELPERS``, ``CUDNN_BYTES``): in-sample and leave one GPU out (own host).

Usage: ``PYTHONPATH=$PWD python bench/cudnn_kernels.py [--out bench/results/cudnn_kernels.md] [--no-fit]``
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_neusight  # (puts the repository root on sys.path)
from neusight_data import DATA, GPU, GPUS, ROOT, load, subsample
from analyzer.prediction import cudnn_conv
from report_lines import emit

COMMAND = "PYTHONPATH=$PWD python bench/cudnn_kernels.py"
CHANNELS = (16, 32, 48, 64, 96, 128, 160)
TILES = (0, 50, 100, 150, 200)
FAMILIES = (("wino_nonfused", "winograd_nonfused"), ("fft", "fft"), ("wino_fused", "scudnn_winograd"),
            ("implicit_offsets", "computeoffsets"), ("explicit", "explicit_convolve"),
            ("precomputed", "precomputed_convolve"), ("implicit_sgemm", "implicit_convolve_sgemm"))


def family(kernels: str) -> str:
    """The algorithm family of one call's kernel list (the first of ``FAMILIES`` whose key is in it)."""
    low = kernels.lower()
    return next((f for f, key in FAMILIES if key in low), "other")


def conv_rows(ns):
    """The convolution rows with their family, recorded kernel count, channels, output size and tiles."""
    cv = ns[ns.op.eq("conv")].copy()
    names = cv.kernels_launched.fillna("")
    cv["family"] = names.map(family)
    cv["n_rec"] = names.map(lambda s: len([k for k in s.split(";") if k.strip()]))
    cv["o"] = (cv.input_size + 2 * cv.padding - cv.kernel_size) // cv.stride + 1
    cv["tiles"] = cv.B * np.ceil(cv.o / 4) ** 2
    cv["minc"] = np.minimum(cv.in_channels, cv.out_channels)
    return cv


def rule_count(cv, channels: float, tiles: float) -> np.ndarray:
    """The rule's kernels per call with thresholds ``channels`` and ``tiles``."""
    return np.where((cv.minc >= channels) & (cv.tiles >= tiles), 4, 2)


def match_lines(cv) -> list[str]:
    """Count match of the shipped rule (in-sample) and of thresholds chosen without the GPU (held out)."""
    shipped = (cudnn_conv.NONFUSED_MIN_CHANNELS, cudnn_conv.NONFUSED_MIN_TILES)
    lines = ["## Kernel count: rule vs recorded", "",
             f"The rule: non-fused Winograd (4 kernels) where min(C_in, C_out) >= {shipped[0]} and "
             f"N ceil(H_out/4) ceil(W_out/4) >= {shipped[1]}, else 2 (a helper and the main kernel). Held out: "
             f"thresholds chosen on the other four GPUs from channels {CHANNELS} x tiles {TILES}.", "",
             "| GPU | rows | plan before (1 kernel) % | rule in-sample % | held-out thresholds | rule held out % |",
             "|---|---:|---:|---:|---|---:|"]
    tot = {"rows": 0, "before": 0, "in": 0, "out": 0}
    for g in GPUS:
        m = (cv.gpu == g).to_numpy()
        rest = cv[~m]
        best = max(itertools.product(CHANNELS, TILES),
                   key=lambda p: (np.mean(rule_count(rest, *p) == rest.n_rec), -p[0], -p[1]))
        part = cv[m]
        before = int((part.n_rec == 1).sum())
        ins = int((rule_count(part, *shipped) == part.n_rec).sum())
        out = int((rule_count(part, *best) == part.n_rec).sum())
        n = len(part)
        lines.append(f"| {g} | {n:,} | {100 * before / n:.1f} | {100 * ins / n:.1f} | {best[0]}, {best[1]} | "
                     f"{100 * out / n:.1f} |")
        for k, v in (("rows", n), ("before", before), ("in", ins), ("out", out)):
            tot[k] += v
    n = tot["rows"]
    lines += [f"| all | {n:,} | {100 * tot['before'] / n:.1f} | {100 * tot['in'] / n:.1f} | - | "
              f"{100 * tot['out'] / n:.1f} |", ""]
    return lines


def family_lines(cv) -> list[str]:
    """Rows per family and GPU (% of the GPU's rows), and the recorded kernels per call of each family."""
    fams = [f for f, _ in FAMILIES] + ["other"]
    lines = ["## Algorithm families (% of each GPU's conv rows) and kernels per call", "",
             "| family | " + " | ".join(GPUS) + " | kernels per call (min / median / max) |",
             "|---|" + "---:|" * len(GPUS) + "---|"]
    for f in fams:
        part = cv[cv.family == f]
        if not len(part):
            continue
        pct = [100 * float((part.gpu == g).sum()) / max(int((cv.gpu == g).sum()), 1) for g in GPUS]
        n = part.n_rec
        lines.append(f"| {f} | " + " | ".join(f"{p:.1f}" for p in pct) +
                     f" | {n.min()} / {n.median():g} / {n.max()} |")
    two = cv[cv.n_rec == 2]
    lines += ["", f"Rows with 2 kernels: {len(two):,} of {len(cv):,}; their kernel pairs' helper (the first "
              "kernel) by count:", ""]
    first = two.kernels_launched.map(lambda s: re.sub(r"[<(].*", "", [k for k in s.split(";") if k.strip()][0])
                                     .split("::")[-1].strip())
    for name, c in first.value_counts().head(6).items():
        lines.append(f"- {name}: {c:,}")
    return lines + [""]


def fit_lines(ns) -> list[str]:
    """The conv rows' scores (both conv classes pooled) of fit_neusight's fit with and without the rule's launches."""
    sub = subsample(ns)
    conv = ns.op.eq("conv")
    lines = ["## Conv rows' eager-op scores with and without the rule's launches (feature path)", "",
             "Both conv classes pooled, every row. The adoption criterion, fixed before scoring: held out, MAPE and "
             "|bias| not above the plan before the rule's (to 0.1 pp), and the kernel-count match above its.", "",
             "| launches | in-sample MAPE % | bias % | held out (own host) MAPE % | bias % | within 10 % |",
             "|---|---:|---:|---:|---:|---:|"]
    for on, nbytes, label in ((False, False, "main kernel only (before the rule)"),
                              (True, False, "main + the rule's launches, floors only (shipped)"),
                              (True, True, "main + the rule's launches, Winograd transforms' bytes too")):
        fit_neusight.CUDNN_HELPERS, fit_neusight.CUDNN_BYTES = on, nbytes
        fit = fit_neusight.fit_all(sub)
        p_in = fit_neusight.predict(ns[conv], fit)
        ins = fit_neusight.metrics(p_in, ns.t[conv])
        folds = fit_neusight.logo(sub, ns)
        test = [t[t.op.eq("conv")] for _, t in folds.values()]
        pred = np.concatenate([t.p_own.to_numpy() for t in test])
        meas = np.concatenate([t.t.to_numpy() for t in test])
        out = fit_neusight.metrics(pred, meas)
        lines.append(f"| {label} | {ins['mape']:.2f} | "
                     f"{ins['bias']:+.2f} | {out['mape']:.2f} | {out['bias']:+.2f} | {out['within10']:.1f} |")
    fit_neusight.CUDNN_HELPERS, fit_neusight.CUDNN_BYTES = True, False
    return lines + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "cudnn_kernels.md"))
    ap.add_argument("--no-fit", action="store_true", help="the kernel tables only")
    args = ap.parse_args(argv)
    ns = load(args.data)
    cv = conv_rows(ns).assign(gpu=lambda d: d.device_system.map(GPU))
    lines = ["# cuDNN's kernels for NeuSight's nn.Conv2d rows vs opcost's eager plan", "",
             f"Command: `{COMMAND}`. Data: `neusight_ops.csv.gz`, {len(cv):,} conv rows (fp32, TF32 off, 3x3 "
             "stride 1 padding 1; PyTorch 2.1, cuDNN 8.9).", ""]
    lines += family_lines(cv) + match_lines(cv)
    if not args.no_fit:
        lines += fit_lines(ns)
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
