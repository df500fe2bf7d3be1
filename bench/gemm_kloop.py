"""Small GEMMs against K: the rows a k-loop latency term is for (public data, no H100 row).

Per aiconfigurator device (bf16 CUDA-graph replays, ``../shared/measurements/gpu/aic_gemm.csv``),
the tiny GEMMs (M = 1, N x K <= 2^18: a small MLP's dots at batch 1) in bands of K: rows, median
measured time, the median split-K that ``efficiency.tiles.wave_split`` picks, and the median
signed error (pred / measured - 1) of the fit framework's prediction (``efficiency_data.predict``:
the family set with its own floor, scaled by clock) under one or two constants directories.

    PYTHONPATH=$PWD python bench/gemm_kloop.py [--candidate LABEL=DIR ...] [--out PATH]

(a candidate's DIR: ``bench/fit_efficiency.py --no-write --kloop VARIANT --out-dir DIR``).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from efficiency_data import ROOT, feats_of, hw_of, load  # (puts the repository root on sys.path first)
from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR, load_constants
from analyzer.prediction.efficiency.kernel_time import kernel_time, with_clock

FAMILY = {"a100_sxm": "nvidia-ampere", "b200_sxm": "nvidia-blackwell", "gb200": "nvidia-blackwell",
          "h200_sxm": "nvidia-hopper", "l40s": "nvidia-ada"}
K_BANDS = ((0, 128), (128, 512), (512, 2048), (2048, 10**9))
TINY_NK = 2**18


def _terms(df, device: str, directory: str) -> dict:
    hw = hw_of(device)
    arrays = with_clock(load_constants(FAMILY[device], directory).arrays, hw.get("clock_hz", 0.0))
    return kernel_time(np, feats_of(df), hw, arrays, detail=True)


def tiny_rows(data: dict, device: str):
    df = data[("aic_gemm", device)]
    return df[(df.m == 1) & (df.n * df.k <= TINY_NK)].reset_index(drop=True)


def band_table(data: dict, dirs: dict) -> list[tuple]:
    """(device, K band, rows, median us, median split-K, {label: median error %})."""
    out = []
    for dev in FAMILY:
        df = tiny_rows(data, dev)
        terms = {lab: _terms(df, dev, d) for lab, d in dirs.items()}
        for lo, hi in K_BANDS:
            sel = ((df.k > lo) & (df.k <= hi)).to_numpy()
            if not sel.any():
                continue
            t = df.t.to_numpy()[sel]
            split = float(np.median(next(iter(terms.values()))["split_k"][sel]))
            errs = {lab: 100 * float(np.median(tt["time_s"][sel] / t - 1)) for lab, tt in terms.items()}
            out.append((dev, f"({lo}, {hi if hi < 10**9 else 'inf'}]", int(sel.sum()), 1e6 * float(np.median(t)),
                        split, errs))
    return out


def tiny_medians(data: dict, directory: str) -> dict:
    """device -> median signed error % of the tiny rows under ``directory``'s constants."""
    out = {}
    for dev in FAMILY:
        df = tiny_rows(data, dev)
        out[dev] = 100 * float(np.median(_terms(df, dev, directory)["time_s"] / df.t.to_numpy() - 1))
    return out


def report(data: dict, dirs: dict) -> list[str]:
    labs = list(dirs)
    lines = ["# Tiny GEMMs (M = 1, N x K <= 2^18) against K (public data, no H100 row)", "",
             "`PYTHONPATH=$PWD python bench/gemm_kloop.py" + "".join(f" --candidate {lab}=DIR" for lab in labs[1:])
             + "`", "",
             "A candidate's DIR: `PYTHONPATH=$PWD python bench/fit_efficiency.py --no-write --verify 0 --kloop LABEL "
             "--out-dir DIR` (the fit framework's in-sample constants of that variant).", "",
             "Median signed error of the fit framework's prediction (family set, floor and k-loop step scaled "
             "by clock); split-K: `tiles.wave_split`'s median choice. Constants: "
             + "; ".join(f"{lab} = `{'hardware_db/efficiency' if d == EFFICIENCY_DIR else d}`" for lab, d in dirs.items()),
             "",
             "| device | K band | rows | median us | split-K | " + " | ".join(f"{lab} median err %" for lab in labs) + " |",
             "|---|---|---:|---:|---:|" + "---:|" * len(labs)]
    for dev, band, n, us, split, errs in band_table(data, dirs):
        lines.append(f"| {dev} | {band} | {n} | {us:.2f} | {split:g} | "
                     + " | ".join(f"{errs[lab]:+.1f}" for lab in labs) + " |")
    meds = {lab: tiny_medians(data, d) for lab, d in dirs.items()}
    lines += ["", "All tiny rows per device, median signed error %:", "",
              "| device | " + " | ".join(labs) + " |", "|---|" + "---:|" * len(labs)]
    lines += [f"| {dev} | " + " | ".join(f"{meds[lab][dev]:+.1f}" for lab in labs) + " |" for dev in FAMILY]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--candidate", action="append", default=[],
                    help="LABEL=DIR: another constants directory, scored beside the shipped one (repeatable)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "gemm_kloop.md"))
    args = ap.parse_args(argv)
    dirs = {"shipped": EFFICIENCY_DIR}
    for c in args.candidate:
        label, _, path = c.partition("=")
        dirs[label] = path
    text = "\n".join(report(load(args.shared), dirs)) + "\n"
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
