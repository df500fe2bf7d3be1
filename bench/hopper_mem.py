"""H200 memory-bound single ops: the Hopper sets scored, and a per-class refit by leave-one-group-out.

Data: ``bench/data/hopper_mem/h200_ops_2026-12-04.csv`` (README there), PyTorch 2.11's own kernels
on an H200 SXM, the same 780 cases as the H100 held-out set, measured with
``bench/h100/measure_ops.py``. No H100 row is read here.

Two parts:
1. ``score``: every row predicted with ``analyzer.analyze`` (``bench/accuracy.score``, the committed
   ``nvidia-hopper`` constants: elementwise and activation fitted on these add and GELU rows, the
   other memory-bound classes inherited from ``nvidia-ampere``) under each
   time definition (``kernel``: profiler kernel sum, inputs reused, L2-warm; ``kernel_l2cold``:
   the L2 flushed, ``l2="cold"``; ``eager``: one call's wall-clock, ``eager-op``); MAPE and bias
   by op class.
2. ``logo``: per refit candidate class (elementwise = add, activation = GELU, norm = layer norm
   and RMS norm), the kernel-sum rows in the fit's evaluator (``efficiency_data.predict``): the
   ``nvidia-ampere`` set's error (the one Hopper inherited before) against
   ``efficiency_class_fit.fit_memory_class`` fitted on four of the five
   row widths N and scored on the fifth (each N left out once), pooled over the class's rows.

Usage: ``PYTHONPATH=$PWD python bench/hopper_mem.py [--out bench/results/hopper_mem.md]``.
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
# the family the Hopper memory-bound classes were inherited from before the H200 rows (the baseline
# of the refit comparison)
PROFILE, INHERITED_FROM = "h200-sxm", "nvidia-ampere"
REFIT_CLASSES = ("elementwise", "activation", "norm")
TIMINGS = (("kernel", "kernel_sum_us"), ("kernel_l2cold", "kernel_sum_l2cold_us"),
           ("eager", "eager_wall_us"))


def read_rows(path: str = ROWS) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def cases(rows: list[dict]) -> list:
    """``accuracy.Case`` per row and time definition (a bmm row without a batch is skipped)."""
    from accuracy import Case

    out = []
    for r in rows:
        dims = tuple((c, int(r[c])) for c in ("M", "N", "K", "B", "V") if r[c] and int(r[c]))
        if r["op"] == "bmm" and not any(c == "B" for c, _ in dims):
            continue
        for timing, col in TIMINGS:
            if r[col]:
                out.append(Case("h200_mem", "h200_sxm", PROFILE, r["op"], r["dtype"], dims, timing,
                                float(r[col]) * 1e-6))
    return out


def inherited_set(cls: str) -> dict:
    """``INHERITED_FROM``'s constants of ``cls``, as the committed files state them."""
    from efficiency_class_fit import base_set

    from analyzer.prediction.efficiency.constants import load_constants
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    arr = load_constants(INHERITED_FROM).arrays
    i = CLASS_CODE[cls]
    keys = set(base_set(cls)) | {"per_element", "floor_clock_hz", "sm_overlap"}
    return {k: float(arr[k][i]) for k in keys if k in arr and np.ndim(arr[k])}


def _ape(df, hw, cls: str, consts: dict) -> np.ndarray:
    from efficiency_data import predict
    from efficiency_class_fit import _arrays_with

    return np.abs(predict(df, hw, _arrays_with(cls, consts)) / df.t.to_numpy() - 1.0)


def logo() -> dict:
    """class -> {rows, inherited MAPE, in-sample refit MAPE, LOGO refit MAPE, refit constants}."""
    from efficiency_data import H200_COUNTS, PER_ELEMENT, hw_of, load_h200_ops
    from efficiency_class_fit import fit_memory_class

    df, hw = load_h200_ops(ops=tuple(H200_COUNTS)), hw_of("h200_sxm")
    clock = hw["clock_hz"]
    out = {}
    for cls in REFIT_CLASSES:
        d = df[df.op_class == cls].reset_index(drop=True)
        per = cls in PER_ELEMENT
        base = _ape(d, hw, cls, inherited_set(cls))
        full, _ = fit_memory_class(cls, [(d, hw)], per, floor_clock_hz=clock)
        held = np.zeros(len(d))
        for g in sorted(set(d.group)):
            fit, _ = fit_memory_class(cls, [(d[d.group != g], hw)], per, floor_clock_hz=clock)
            mask = (d.group == g).to_numpy()
            held[mask] = _ape(d[mask], hw, cls, fit)
        out[cls] = {"rows": len(d), "inherited": 100 * base.mean(),
                    "refit_in_sample": 100 * _ape(d, hw, cls, full).mean(), "refit_logo": 100 * held.mean(),
                    "constants": {k: float(f"{v:.4g}") for k, v in full.items()}}
    return out


def report(rows: list[dict]) -> list[str]:
    from accuracy import _md, score, stats, table

    sc = score(cases(rows))
    lines = ["# H200 single ops (PyTorch 2.11), the committed Hopper constants", "",
             "`PYTHONPATH=$PWD python bench/hopper_mem.py --out bench/results/hopper_mem.md`", "",
             "## By time definition and op class (analyzer.analyze, h200-sxm)", ""]
    lines += _md(table(sc, by=("timing", "op_class")), ["timing", "class"])
    lines += ["", "## By time definition", ""]
    lines += _md(table(sc, by=("timing",)), ["timing"])
    allk = [s for s in sc if s.case.timing == "kernel"]
    st = stats(allk)
    lines += ["", f"Kernel time (L2-warm), all classes: {st['rows']} rows, MAPE {st['mape']:.1f} %, "
              f"bias {st['bias']:+.1f} %.", "",
              "## Refit candidates: leave one row width N out (kernel time, fit evaluator)", "",
              "| class | rows | nvidia-ampere set MAPE % | refit in-sample % | refit, N left out % | refit constants |",
              "|---|---:|---:|---:|---:|---|"]
    for cls, r in logo().items():
        c = {k: v for k, v in r["constants"].items() if k in ("floor_s", "b_half_bytes", "bpc", "l2_hit")}
        lines.append(f"| {cls} | {r['rows']} | {r['inherited']:.1f} | {r['refit_in_sample']:.1f} | "
                     f"{r['refit_logo']:.1f} | {c} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("--out", default="", help="markdown file to write (default: print)")
    args = ap.parse_args(argv)
    text = "\n".join(report(read_rows(args.rows))) + "\n"
    emit_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
