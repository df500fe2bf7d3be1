"""Fit and choose ``analyzer.prediction.gather_latency``'s constants on the H200's embedding rows.

Data: ``bench/data/hopper_mem/h200_ops_2026-12-04.csv`` (README there), ``op == embedding``: 138
cases (bf16 and fp16; V 32000 and 128256; N 768 ... 8192; M 1, 16: ``indexSelectSmallIndex``; M 128
... 32768: ``vectorized_gather_kernel<16>``), each timed L2-warm (``kernel_sum_us``) and flushed
(``kernel_sum_l2cold_us``). No H100 row is read.

Every row is predicted through ``analyzer.analyze`` on ``h200-sxm`` (runtime ``kernel``, its L2
state) with the term off (``gather_latency.FAMILIES`` emptied): the time ``t0`` and the memory term
``mem`` (DRAM + per-SM seconds). The candidates (the rule: ``/work/notes/s33/hoppergather.md``,
fixed before any score) fit ``t - t0`` by least squares relative to ``t`` on the vectorized rows:

- ``dep``: ``L_warm / clock`` and ``L_cold / clock`` (one dependent load per kernel, every gather kernel)
- ``rate``: ``(k - 1) x mem`` (the vectorized gather only)
- ``dep+rate``: both (shipped)

scored leaving one id count M out (the vectorized rows of M predicted by the fit on the other four
M), the small-index rows with the fit on all vectorized rows. Usage:
``PYTHONPATH=$PWD python bench/gather_latency_fit.py [--out bench/results/gather_latency_fit.md]``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from report_lines import emit_text  # noqa: E402

ROWS = os.path.join(HERE, "data", "hopper_mem", "h200_ops_2026-12-04.csv")
PROFILE, CLOCK_HZ = "h200-sxm", 1.98e9     # the rows ran at 1980 MHz (README: nvidia-smi trace)
STATES = (("warm", "kernel_sum_us"), ("cold", "kernel_sum_l2cold_us"))
FORMS = {"none": (False, False), "dep": (True, False), "rate": (False, True), "dep+rate": (True, True)}


def baseline_rows(path: str = ROWS) -> list[dict]:
    """Per embedding case and L2 state: M, N, state, vectorized (M > 16), measured ``t``, and the
    prediction with the term off: ``t0``, ``mem`` (seconds)."""
    import analyzer
    from analyzer.prediction import gather_latency
    from op_models import build

    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["op"] == "embedding"]
    keep, gather_latency.FAMILIES = gather_latency.FAMILIES, ()
    try:
        out = []
        for r in rows:
            model = build("embedding", r["dtype"], M=int(r["M"]), N=int(r["N"]), V=int(r["V"]))
            for state, col in STATES:
                p = analyzer.analyze(model, hw=PROFILE, runtime="kernel", l2=state).predictions[0]
                d = p.kernel_table.detail(0)
                out.append({"M": int(r["M"]), "N": int(r["N"]), "state": state, "vec": int(r["M"]) > 16,
                            "t": float(r[col]) * 1e-6, "t0": p.latency_s, "mem": d["dram_s"] + d["sm_s"]})
        return out
    finally:
        gather_latency.FAMILIES = keep


def _columns(r: dict, dep: bool, rate: bool) -> list[float]:
    cols = [float(r["state"] == "warm") / CLOCK_HZ, float(r["state"] == "cold") / CLOCK_HZ] if dep else []
    return cols + ([r["mem"] * r["vec"]] if rate else [])


def fit(rows: list[dict], form: str) -> np.ndarray:
    """Least squares of ``t - t0`` relative to ``t``: [L_warm, L_cold] cycles and / or [k - 1]."""
    dep, rate = FORMS[form]
    if not (dep or rate):
        return np.zeros(0)
    a = np.array([_columns(r, dep, rate) for r in rows])
    w = 1.0 / np.array([r["t"] for r in rows])
    y = np.array([r["t"] - r["t0"] for r in rows])
    return np.linalg.lstsq(a * w[:, None], y * w, rcond=None)[0]


def predict(r: dict, form: str, c: np.ndarray) -> float:
    dep, rate = FORMS[form]
    return r["t0"] + float(np.dot(_columns(r, dep, rate), c)) if len(c) else r["t0"]


def scores(rows: list[dict], form: str) -> dict:
    """Signed errors per (state, kernel) and pooled, leaving one M out on the vectorized rows."""
    vec = [r for r in rows if r["vec"]]
    full = fit(vec, form)
    errs: dict = {}
    for r in rows:
        c = fit([q for q in vec if q["M"] != r["M"]], form) if r["vec"] else full
        e = predict(r, form, c) / r["t"] - 1.0
        for key in ("all", r["state"], (r["state"], "vectorized" if r["vec"] else "small-index")):
            errs.setdefault(key, []).append(e)
    return {"full": full, "errs": errs}


def _cell(e) -> str:
    e = np.asarray(e)
    return f"{100 * np.mean(np.abs(e)):.1f} / {100 * np.mean(e):+.1f}"


def report(rows: list[dict]) -> list[str]:
    keys = ["all", "warm", "cold", ("warm", "vectorized"), ("cold", "vectorized"), ("warm", "small-index"),
            ("cold", "small-index")]
    lines = ["# The H200's embedding rows: gather_latency's forms (MAPE % / bias %, leave one M out)", "",
             "`PYTHONPATH=$PWD python bench/gather_latency_fit.py --out bench/results/gather_latency_fit.md`", "",
             "| form | constants (full fit: L_warm, L_cold cycles; k) | " + " | ".join(map(str, keys)) + " |",
             "|---|---|" + "---:|" * len(keys)]
    for form in FORMS:
        s = scores(rows, form)
        c = s["full"]
        dep, rate = FORMS[form]
        txt = ", ".join(([f"{c[0]:.0f}", f"{c[1]:.0f}"] if dep else []) + ([f"k {1 + c[-1]:.3f}"] if rate else []))
        lines.append(f"| {form} | {txt or '-'} | " + " | ".join(_cell(s["errs"][k]) for k in keys) + " |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="", help="markdown file to write (default: print)")
    args = ap.parse_args(argv)
    text = "\n".join(report(baseline_rows())) + "\n"
    emit_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
