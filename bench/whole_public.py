#!/usr/bin/env python3
"""Whole transformer models in eager PyTorch fp32 on public GPU measurements: a held-out check.

    PYTHONPATH=$PWD python bench/whole_public.py [--rows bench/data/whole_public/rows.csv]
        [--exports bench/data/whole_public/exports] [--out bench/results/whole_public.md]

The rows (``bench/data/whole_public/``, README there) are NeuSight's whole-model latencies of
Hugging Face BERT-Large, GPT-2-Large, two GPT-3-shaped GPT-2 models and OPT-1.3B: one forward
(inference) or one forward + backward (training, no optimizer step) between CUDA events, eager
attention, fp32 with TF32 off, on seven NVIDIA GPUs. Each row is predicted from the graph-only
export of its model at its batch and sequence length (``bench/whole_public_exports.py``) with
``analyzer.analyze(path, hw=profile, runtime="eager", precision="fp32")``; a training row adds
``train=True, optimizer="none", dropout=0.1`` and is scored on the step's ``forward_s +
backward_s``. Nothing is fitted or chosen on these rows (check only). A row whose analysis
raises is listed with the exception and counted as a failure, never skipped.

Error = predicted / measured - 1; MAPE = mean |error|; bias = mean error.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "whole_public")
sys.path.insert(0, ROOT)

from bench.whole_public_exports import export_name  # noqa: E402

TRAIN = dict(train=True, optimizer="none", dropout=0.1)


def predict_export(path: str, profiles: list[str], train: bool) -> dict:
    """profile -> (predicted ms, forward ms, backward ms) of one export on each profile."""
    import analyzer

    kw = TRAIN if train else {}
    rep = analyzer.analyze(path, hw=profiles, runtime="eager", precision="fp32", **kw)
    out = {}
    for i, prof in enumerate(profiles):
        if train:
            st = rep.training.steps[i]
            out[prof] = (st.step_s * 1e3, st.forward_s * 1e3, st.backward_s * 1e3)
        else:
            ms = rep.predictions[i].latency_s * 1e3
            out[prof] = (ms, ms, 0.0)
    return out


def predict_rows(rows: list[dict], exports: str) -> None:
    """Fill each row's ``pred_ms`` / ``pred_fw_ms`` / ``pred_bw_ms`` or its ``error``."""
    by_export = defaultdict(list)
    for r in rows:
        by_export[(export_name(r), r["mode"])].append(r)
    for (name, mode), group in sorted(by_export.items()):
        profiles = sorted({r["profile"] for r in group})
        path = os.path.join(exports, name + ".onnx")
        try:
            got = predict_export(path, profiles, mode == "train")
        except Exception as e:  # noqa: BLE001  (every failure is a finding of the check)
            for r in group:
                r["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            continue
        for r in group:
            r["pred_ms"], r["pred_fw_ms"], r["pred_bw_ms"] = got[r["profile"]]
            r["err"] = r["pred_ms"] / float(r["e2e_ms"]) - 1.0


def stats(rows: list[dict]) -> tuple[int, float, float]:
    errs = [r["err"] for r in rows if "err" in r]
    if not errs:
        return 0, float("nan"), float("nan")
    return len(errs), 100 * sum(abs(e) for e in errs) / len(errs), 100 * sum(errs) / len(errs)


def summary_table(rows: list[dict]) -> list[str]:
    out = ["| GPU (profile) | mode | rows | failed | MAPE % | bias % |",
           "|---|---|---:|---:|---:|---:|"]
    groups = [(p, m) for p in sorted({r["profile"] for r in rows}) for m in ("inference", "train")]
    groups += [("all", "inference"), ("all", "train"), ("all", "both")]
    for prof, mode in groups:
        sel = [r for r in rows if prof in ("all", r["profile"]) and mode in ("both", r["mode"])]
        if not sel:
            continue
        n, mape, bias = stats(sel)
        failed = sum(1 for r in sel if "error" in r)
        out.append(f"| {prof} | {mode} | {n} | {failed} | {mape:.1f} | {bias:+.1f} |")
    return out


def row_table(rows: list[dict]) -> list[str]:
    out = ["| GPU (profile) | model | mode | seq | batch | measured ms | predicted ms | error % "
           "| fw meas / pred ms | bw meas / pred ms |",
           "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        head = (f"| {r['profile']} | {r['model']} | {r['mode']} | {r['seq']} | {r['batch']} "
                f"| {float(r['e2e_ms']):.1f} ")
        if "error" in r:
            out.append(head + f"| failed: {r['error']} | | | |")
            continue
        tail = "| | |"
        if r["mode"] == "train":
            tail = (f"| {float(r['fw_ms']):.1f} / {r['pred_fw_ms']:.1f} "
                    f"| {float(r['bw_ms']):.1f} / {r['pred_bw_ms']:.1f} |")
        out.append(head + f"| {r['pred_ms']:.1f} | {100 * r['err']:+.1f} " + tail)
    return out


def worst(rows: list[dict], k: int = 5) -> list[str]:
    out = []
    for prof in sorted({r["profile"] for r in rows}):
        sel = sorted((r for r in rows if r["profile"] == prof and "err" in r),
                     key=lambda r: -abs(r["err"]))[:k]
        items = ", ".join(f"{r['model']} {r['mode']} b{r['batch']} {100 * r['err']:+.1f}%"
                          for r in sel)
        out.append(f"- {prof}: {items}")
    return out


def render(rows: list[dict], args) -> str:
    lines = ["# Whole models on public GPU measurements (held out, check only)", "",
             f"Command: `PYTHONPATH=$PWD python bench/whole_public.py --rows {args.rows_rel} "
             f"{args.exports_flag}--out {args.out_rel}`. Data: NeuSight's whole-model rows "
             "(bench/data/whole_public/README.md); exports: bench/whole_public_exports.py. "
             "runtime `eager`, precision `fp32`, L2 warm; training rows `train=True, "
             "optimizer=\"none\", dropout=0.1`, scored on forward + backward. Nothing here is "
             "fitted or chosen.", "", "## Per GPU", ""]
    lines += summary_table(rows)
    lines += ["", "## Five worst rows per GPU", ""] + worst(rows)
    lines += ["", "## Rows", ""] + row_table(rows)
    return "\n".join(lines) + "\n"


def default_out(rows: str) -> str:
    """The report of a row file: ``bench/results/whole_public.md`` for ``rows.csv``,
    ``whole_public_<name>.md`` for ``rows_<name>.csv`` (and ``whole_public_<stem>.md`` for another)."""
    stem = os.path.splitext(os.path.basename(rows))[0]
    name = "whole_public" + ("" if stem == "rows" else "_" + stem.removeprefix("rows_"))
    return os.path.join(ROOT, "bench", "results", f"{name}.md")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default=os.path.join(DATA, "rows.csv"))
    ap.add_argument("--exports", default=os.path.join(DATA, "exports"))
    ap.add_argument("--out", default=None, help="the report (default: bench/results/whole_public.md for the "
                    "default rows, whole_public_<name>.md for rows_<name>.csv: another row file never "
                    "overwrites the default rows' report)")
    args = ap.parse_args(argv)
    args.out = args.out or default_out(args.rows)
    args.rows_rel = os.path.relpath(args.rows, ROOT)
    args.out_rel = os.path.relpath(args.out, ROOT)
    default = os.path.abspath(args.exports) == os.path.join(DATA, "exports")
    args.exports_flag = "" if default else f"--exports {args.exports} "
    with open(args.rows, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["scored"] == "yes"]
    predict_rows(rows, args.exports)
    text = render(rows, args)
    with open(args.out, "w") as f:
        f.write(text)
    print("\n".join(summary_table(rows)))
    print("\n".join(worst(rows)))
    return 0 if not any("error" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
