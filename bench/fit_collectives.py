"""Check the collective model (analyzer/scaling/collectives.py) against NCCL measurements.

Data: ``../shared/measurements/gpu/aic_nccl.csv`` beside the repository (``--csv`` to change; nccl-tests all_reduce / all_gather /
reduce_scatter, float16, one node of 2, 4, 8 GPUs, 512 B .. 512 MiB; the median over repeats of
each size). Links: A100 SXM = nvlink3, H200 SXM = nvlink4, B200 SXM = nvlink5 (hardware_db/links).

Two constants per fit: ``eff`` (achieved fraction of the link's per-direction bandwidth) and
``alpha`` (seconds per ring step), fitted on ONE system by grid search minimising MAPE over its
all_reduce + all_gather + reduce_scatter rows, then scored on every system (the others are
out-of-sample: different GPU, NVLink generation and NCCL version). Also scored: the datasheet
model (eff 1, alpha 0), and each system's own fit (in-sample, an upper bound on what two
constants can do).

    PYTHONPATH=$PWD python bench/fit_collectives.py [--train a100_sxm] [--csv PATH] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
from collections import defaultdict

import numpy as np

from analyzer.scaling import collectives as C
from hardware_db import links

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "..", "shared", "measurements", "gpu", "aic_nccl.csv")
SYSTEMS = {"a100_sxm": "nvlink3", "h200_sxm": "nvlink4", "b200_sxm": "nvlink5"}
MODEL = {"all_reduce": C.ring_allreduce, "all_gather": C.ring_allgather,
         "reduce_scatter": C.ring_reduce_scatter}


def load(path: str = CSV) -> dict[str, list[tuple[str, int, int, float]]]:
    """system -> [(collective, gpus, message_bytes, median seconds)]."""
    raw = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            if (r["device_system"] in SYSTEMS and r["library"] == "nccl-tests"
                    and r["dtype"] == "float16" and r["collective"] in MODEL):
                key = (r["device_system"], r["collective"], int(r["num_gpus"]), int(r["message_bytes"]))
                raw[key].append(float(r["latency_us"]) * 1e-6)
    out = defaultdict(list)
    for (sysname, coll, n, nbytes), ts in sorted(raw.items()):
        out[sysname].append((coll, n, nbytes, statistics.median(ts)))
    return out


def predict(rows, bw: float, eff: float, alpha: float, base: float = 0.0) -> np.ndarray:
    """The library's own functions (plus ``base`` seconds per call: the launch NCCL pays
    whatever the size, a term the alpha-beta form lacks)."""
    return np.array([MODEL[c](b, n, bw * eff, alpha).total + base for c, n, b, _ in rows])


def _terms(rows, bw):
    """Per row: seconds at eff 1 (per-byte term) and the number of alpha steps, from the
    library (alpha 1 minus alpha 0), so the grid search is vectorised."""
    b = np.array([MODEL[c](nb, n, bw, 0.0).bandwidth_s for c, n, nb, _ in rows])
    k = np.array([MODEL[c](nb, n, bw, 1.0).latency_s for c, n, nb, _ in rows])
    return b, k


def mape(rows, pred) -> float:
    meas = np.array([t for *_, t in rows])
    return float(np.mean(np.abs(pred - meas) / meas) * 100)


def fit(rows, bw: float, with_base: bool = False) -> tuple[float, float, float, float]:
    """(eff, alpha, base, MAPE %) minimising MAPE on ``rows`` (grid search)."""
    b, k = _terms(rows, bw)
    meas = np.array([t for *_, t in rows])
    effs = np.linspace(0.05, 1.0, 96)[:, None, None, None]
    alphas = np.concatenate([[0.0], np.geomspace(1e-7, 1e-4, 61)])[None, :, None, None]
    bases = (np.concatenate([[0.0], np.linspace(1e-6, 30e-6, 30)]) if with_base
             else np.array([0.0]))[None, None, :, None]
    pred = b / effs + k * alphas + bases
    err = np.mean(np.abs(pred - meas) / meas, axis=-1) * 100
    i = np.unravel_index(np.argmin(err), err.shape)
    return float(effs.ravel()[i[0]]), float(alphas.ravel()[i[1]]), float(bases.ravel()[i[2]]), float(err[i])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", default="a100_sxm", choices=sorted(SYSTEMS))
    ap.add_argument("--csv", default=CSV, help="nccl-tests rows (default: ../shared/measurements/gpu/aic_nccl.csv)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    data = load(a.csv)
    bw = {s: links.get(l).bytes_per_s for s, l in SYSTEMS.items()}
    fits = {False: fit(data[a.train], bw[a.train]), True: fit(data[a.train], bw[a.train], True)}
    lines = ["# Collective model vs NCCL (nccl-tests, fp16, one node of 2/4/8 GPUs, 512 B to 512 MiB)",
             "", f"Command: `PYTHONPATH=$PWD python bench/fit_collectives.py --train {a.train} "
             f"--out {a.out or 'FILE.md'}`", "",
             "Model: `analyzer.scaling.collectives` ring formulas over the datasheet NVLink "
             "bandwidth per direction (A100 nvlink3 300 GB/s, H200 nvlink4 450, B200 nvlink5 900). "
             "Constants are fitted on ONE system and scored unchanged on the others (different GPU, "
             "NVLink generation, NCCL build): those rows are out of sample. No H100 data is used.", ""]
    for with_base in (False, True):
        eff, alpha, base, err = fits[with_base]
        name = ("alpha-beta + base (eff, alpha per step, base per call)" if with_base
                else "alpha-beta (eff, alpha per step), the form the library uses")
        lines += [f"## {name}", "",
                  f"Fitted on **{a.train}**: eff = {eff:.3f}, alpha = {alpha * 1e6:.2f} us"
                  + (f", base = {base * 1e6:.1f} us" if with_base else "")
                  + f" (in-sample MAPE {err:.1f}%).", "",
                  "| system | link | rows | datasheet MAPE (eff 1, alpha 0) | MAPE, fit on "
                  f"{a.train} | own fit (in-sample) |", "|---|---|---:|---:|---:|---|"]
        for s_, rows in data.items():
            ds = mape(rows, predict(rows, bw[s_], 1.0, 0.0))
            tr = mape(rows, predict(rows, bw[s_], eff, alpha, base))
            oe, oa, ob, oerr = fit(rows, bw[s_], with_base)
            tag = " (train)" if s_ == a.train else " (out of sample)"
            lines.append(f"| {s_}{tag} | {SYSTEMS[s_]} | {len(rows)} | {ds:.1f}% | {tr:.1f}% | "
                         f"eff {oe:.3f}, alpha {oa * 1e6:.2f} us"
                         + (f", base {ob * 1e6:.1f} us" if with_base else "") + f": {oerr:.1f}% |")
        lines.append("")
    eff, alpha, base, _ = fits[False]
    lines += ["Per collective and GPU count, alpha-beta fit on " + a.train + ":", "",
              "| system | collective | GPUs | MAPE | small msgs (<=64 KiB) | large msgs (>=64 MiB) |",
              "|---|---|---:|---:|---:|---:|"]
    for s_, rows in data.items():
        for coll in MODEL:
            for n in (2, 4, 8):
                sub = [r for r in rows if r[0] == coll and r[1] == n]
                if not sub:
                    continue
                small = [r for r in sub if r[2] <= 65536]
                large = [r for r in sub if r[2] >= 64 << 20]
                f = lambda rr: f"{mape(rr, predict(rr, bw[s_], eff, alpha)):.1f}%" if rr else "-"  # noqa: E731
                lines.append(f"| {s_} | {coll} | {n} | {f(sub)} | {f(small)} | {f(large)} |")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
