"""NeuSight's fp32 A100 LayerNorm rows: the fit scripts' feature path against ``analyzer.analyze``.

Why the Ampere norm set scores NeuSight's A100 PCIe LayerNorm rows one way by the feature path
(``bench/ampere_softmax.py``'s scoring: every kernel row, i.e. above ``FLOOR_X`` (3) x the class's
smallest latency, plus the dispatch fitted with the Ampere set itself) and another way in
``bench/fit_neusight.py``'s product check (6 hash-chosen rows, ``neusight_report.product_rows``,
through ``analyzer.analyze`` with ``runtime="kernel"`` plus the held-out host's dispatch fitted
with the set the product predicts the rows with, ``fit_neusight.fit_dispatch``).

For each of the 6 rows it prints the terms of both paths side by side
(``kernel_time(detail=True)`` on the feature path's features; ``KernelTable.detail`` of the
product's one kernel), each with the per-element set as shipped and with the same constants per
byte (``per_element = 0``: the set before, same bpc), and scores the feature path on the 182
kernel rows and on exactly the 6 rows with the dispatch fitted with each set (the A100 PCIe's floor rows,
``fit_neusight.fit_dispatch``, as the product check fits it), and the 182 rows by quartile of
their bytes.

Usage: ``PYTHONPATH=$PWD python bench/ln_product_check.py [--out bench/results/ln_product_check.md]``
(about 30 s: one leave-A100-out fit).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import ampere_softmax as asm  # noqa: E402
import fit_neusight as fns  # noqa: E402
import neusight_data as nd  # noqa: E402
import neusight_report as nr  # noqa: E402
from analyzer.prediction.efficiency import constants as fc  # noqa: E402
from analyzer.prediction.efficiency.kernel_time import BPC_ELEM_BYTES, CLASS_CODE, kernel_time  # noqa: E402
from report_lines import emit  # noqa: E402

NORM = CLASS_CODE["norm"]
TERMS = ("bytes", "elem_bytes", "sm_bytes", "dram_s", "sm_s", "cache_share", "floor_s", "time_s")


def per_byte(arr: dict) -> dict:
    """``arr`` with the norm set's per-SM term per byte (``per_element = 0``; the other constants kept)."""
    out = {k: (np.array(v, dtype=float) if np.ndim(v) else v) for k, v in arr.items()}
    out["per_element"][NORM] = 0.0
    return out


def feature_terms(rows, arr: dict) -> list[dict]:
    """``fit_neusight.kernel_s``'s arithmetic (device clock, pooled floor cycles, elem_bytes 4), per row."""
    feats, hw, a = fns.kernel_inputs(rows, asm.DEV, arr)
    d = kernel_time(np, feats, hw, a, detail=True)
    out = []
    for i in range(len(rows)):
        t = {k: float(np.asarray(v).reshape(-1)[i if np.size(v) > 1 else 0]) for k, v in d.items()}
        out.append(dict(t, elem_bytes=4.0, per_element=float(a["per_element"][NORM])))
    return out


def product_terms(rows, fold: fns.Fit, per_element: bool) -> list[dict]:
    """``analyzer.analyze`` (runtime kernel, precision fp32, boost clock) on each row's one-op model
    with the fold's constants written as ``product_check`` writes them; the norm set per byte
    where ``per_element`` is False.  Each row: its one kernel's terms and the eager-op latency."""
    import analyzer
    import hardware_db
    from analyzer.prediction import hardware as hwmod

    tmp = tempfile.mkdtemp(prefix="opcost-ln-")
    saved = fc.EFFICIENCY_DIR
    try:
        eff_dir = os.path.join(tmp, "efficiency")
        shutil.copytree(fc.EFFICIENCY_DIR, eff_dir)
        nr.write_constants(fold, rows, {c: {} for c in fns.MEMORY + fns.MATRIX}, eff_dir)
        if not per_element:
            path = os.path.join(eff_dir, "nvidia-ampere.json")
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            doc["sets"]["norm"]["constants"]["per_element"] = 0.0
            nr._dump(doc, path)
        fc.EFFICIENCY_DIR = hwmod.fc.EFFICIENCY_DIR = eff_dir
        out = []
        for r in rows.itertuples():
            prof = dataclasses.replace(hardware_db.get(nd.PROFILE[r.device_system]), sustained_clock_ghz=None)
            p = analyzer.analyze(nr.onnx_of(r), hw=[prof], runtime="kernel", precision="fp32").predictions[0]
            e = analyzer.analyze(nr.onnx_of(r), hw=[prof], runtime="eager-op", precision="fp32").predictions[0]
            kt = p.kernel_table
            if len(kt.feats["bytes"]) != 1:
                raise RuntimeError(f"row {r.row_id}: {len(kt.feats['bytes'])} kernels, expected one")
            t = dict(kt.detail(0), elem_bytes=float(kt.feats["elem_bytes"][0]),
                     per_element=float(np.asarray(kt.class_consts["per_element"])[NORM]),
                     latency_s=p.latency_s, eager_s=e.latency_s)
            out.append(t)
        return out
    finally:
        fc.EFFICIENCY_DIR = hwmod.fc.EFFICIENCY_DIR = saved
        shutil.rmtree(tmp, ignore_errors=True)


def sm_bytes(t: dict) -> float:
    """The bytes the per-SM term charges: ``bytes * BPC_ELEM_BYTES / elem_bytes`` per element, else ``bytes``."""
    return t["bytes"] * (BPC_ELEM_BYTES / t["elem_bytes"] if t["per_element"] > 0 and t["elem_bytes"] > 0 else 1.0)


def _fmt(k: str, v: float) -> str:
    if k.endswith("_s"):
        return f"{v * 1e6:.2f}"
    if k in ("bytes", "sm_bytes"):
        return f"{v / 1e6:.2f}"
    return f"{v:.4g}"


def row_lines(six, feat: list, prod: list, host: float, form: str) -> list[str]:
    out = [f"### {form}: terms per row (feature path / product; MB, us)", "",
           "| row | B x H | measured us | " + " | ".join(TERMS) + " | dispatch | "
           "prediction (feature / product, each + dispatch) | error % | eager-op as shipped (error %) |",
           "|---|---|---:|" + "---:|" * len(TERMS) + "---:|---:|---:|---:|"]
    for r, f, p in zip(six.itertuples(), feat, prod):
        f["sm_bytes"], p["sm_bytes"] = sm_bytes(f), sm_bytes(p)
        cells = [f"{_fmt(k, f[k])} / {_fmt(k, p[k])}" for k in TERMS]
        a, b = f["time_s"] + host, p["latency_s"] + host
        out.append(f"| {r.row_id} | {int(r.B)} x {int(r.H)} | {r.t * 1e6:.2f} | " + " | ".join(cells)
                   + f" | {host * 1e6:.2f} | {a * 1e6:.2f} / {b * 1e6:.2f} | "
                   f"{100 * (a / r.t - 1):+.1f} / {100 * (b / r.t - 1):+.1f} | "
                   f"{p['eager_s'] * 1e6:.2f} ({100 * (p['eager_s'] / r.t - 1):+.1f}) |")
    return out + [""]


def score_lines(ln, six, A, arrs: dict) -> list[str]:
    out = ["### Feature path scores (MAPE % / median bias %)", "",
           "| form | dispatch | 182 kernel rows | the 6 product-check rows |", "|---|---|---:|---:|"]
    quart = ["", "### The 182 kernel rows by quartile of their bytes (feature path, the fit scoring's dispatch)", "",
             "| form | " + " | ".join(f"Q{i + 1}" for i in range(4)) + " |", "|---|---:|---:|---:|---:|"]
    q = np.percentile(ln.bytes, [0, 25, 50, 75, 100])
    q[-1] += 1.0
    b = ln.bytes.to_numpy()
    bins = [(b >= q[i]) & (b < q[i + 1]) for i in range(4)]
    for form, arr in arrs.items():
        own = asm.dispatch(A, arr)["norm"]
        m = [fns.metrics(own + fns.kernel_s(d, asm.DEV, arr), d.t) for d in (ln, six)]
        out.append(f"| {form} | fitted with this set: {own * 1e6:.2f} us | "
                   + " | ".join(f"{x['mape']:.1f} / {x['bias']:+.1f}" for x in m) + " |")
        rel = (own + fns.kernel_s(ln, asm.DEV, arr)) / ln.t.to_numpy() - 1.0
        quart.append(f"| {form} | " + " | ".join(f"{100 * np.abs(rel[s]).mean():.1f} / {100 * np.median(rel[s]):+.1f}"
                                                   for s in bins) + " |")
    six_in = [int(((six.bytes.to_numpy() >= q[i]) & (six.bytes.to_numpy() < q[i + 1])).sum()) for i in range(4)]
    quart += ["", "Quartile bounds (MB): " + ", ".join(f"{v / 1e6:.1f}" for v in q[:-1]) + f", {(q[-1] - 1) / 1e6:.1f}; "
              f"rows per quartile {[int(s.sum()) for s in bins]}; the 6 product-check rows per quartile {six_in}."]
    return out + quart + [""]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=nd.DATA)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "ln_product_check.md"))
    args = ap.parse_args(argv)
    ns = nd.load(args.data)
    sub = nd.subsample(ns)
    fold = fns.fit_all(sub[sub.gpu != "A100"])            # fit_neusight.logo's A100 fold
    test = ns[ns.gpu == "A100"]
    prow = nr.product_rows(test)
    six = prow[prow.op == "ln"]
    amp = fc.load_constants("nvidia-ampere").arrays
    A = ns[(ns.device_system == asm.DEV) & ns.cls.isin(fns.MEMORY)]
    ln = A[(A.op == "ln") & ~A.near_floor]
    arrs = {"per element (shipped)": amp, "per byte (same constants, per_element 0)": per_byte(amp)}
    lines = ["# NeuSight fp32 A100 LayerNorm: feature path vs analyzer.analyze", "",
             "Command: `PYTHONPATH=$PWD python bench/ln_product_check.py`. Rows: the 6 LayerNorm rows "
             "fit_neusight.py's product check scores on the A100 (all a100_pcie_40gb), and the 182 LayerNorm kernel "
             "rows of the A100 PCIe 40GB ampere_softmax.py scores. Set: nvidia-ampere's norm set (fitted on "
             "vidur's fp16 A100 kernel sums; never on these rows). Feature path: fit_neusight.kernel_s (elem_bytes 4, "
             "the pooled floor cycles over the 1.41 GHz clock). Product: analyzer.analyze, runtime kernel, "
             "precision fp32, the fold's constants files. Terms: `bytes` the kernel's bytes; `sm_bytes` the bytes "
             "the per-SM term charges; `dram_s` the DRAM term (with the ramp and cache); `sm_s` the per-SM term; "
             "`cache_share` the share of the bytes that skips DRAM; `floor_s`; `time_s` the kernel time.", ""]
    for (form, arr), per_el in zip(arrs.items(), (True, False)):
        feat = feature_terms(six, arr)
        prod = product_terms(six, fold, per_el)
        lines += row_lines(six, feat, prod, asm.dispatch(A, arr)["norm"], form)
    lines += score_lines(ln, six, A, arrs)
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
