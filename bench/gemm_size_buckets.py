"""Signed error of the shipped FMA-unit GEMM sets (``gemm_simt``: nn.Linear, ``bgemm_simt``:
torch.bmm) on NeuSight's fp32 single-op rows, bucketed by size, per device (in-sample: these rows
fitted the sets).

Prediction: ``fit_neusight.predict`` (host dispatch + ``kernel_time``) with each family's shipped
sets (``hardware_db/efficiency/<family>.json``; a class the family file lacks takes generic.json's
pooled set), the capped cards' FMA peak at their profiles' sustained clocks, the dispatch the
sets imply on the device's own floor rows (``family_simt.scored``).  Kernel rows only (above 3x
the smallest latency of the device and class).  Buckets: GEMM FLOPs (2 M N K x batch) in decades,
and the smallest of the three GEMM dimensions.  bias: median of pred / measured - 1 (positive:
predicted slow); ``rate``: the measured FLOP/s over the FMA peak (at the sustained clock where set).

The ``nn.Linear`` rows also by each GEMM dimension (m: rows, n: output features, k: the reduction)
and the eight rows nearest (in summed |log| distance of m, n, k) a transformer's 4096 x 3072 by
3072 x 9216 projection and a 4096 x 1024 by 1024 x 1024 one; the rows by measured latency; then ``bench/gemm_cta_ramp.py``'s tried form against the shipped one.

Usage: ``PYTHONPATH=$PWD python bench/gemm_size_buckets.py [--out FILE]`` (about 40 s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import family_simt as fs  # noqa: E402
import gemm_cta_ramp  # noqa: E402
import fit_neusight as fns  # noqa: E402
import neusight_data as nd  # noqa: E402
from report_lines import emit  # noqa: E402

FLOP_EDGES = (0.0, 1e9, 1e10, 1e11, 1e12, np.inf)   # GEMM FLOPs
DIM_EDGES = (0, 256, 1024, 2048, 4096, np.inf)       # the smallest of m, n, k
TIME_EDGES = (0.0, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, np.inf)   # measured latency, seconds


def shipped_fit(family: str) -> fns.Fit:
    """The family file's GEMM sets (the pooled set where it has none) as a ``Fit``."""
    path = os.path.join(fns.fc.EFFICIENCY_DIR, f"{family}.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    sets = {c: dict(doc["sets"][c]["constants"]) for c in fs.GEMM_CLASSES if c in doc["sets"]}
    return fns.Fit(sets, fs.shares(fs.FAMILY_DEVICES[family]), {})


def scored_rows(ns, fit_of) -> "object":
    """Every family's GEMM kernel rows with ``p`` under ``fit_of(family)``."""
    import pandas as pd

    parts = []
    for fam in fs.FAMILY_DEVICES:
        rows = fs.family_rows(ns, fam)
        rows = rows[rows.cls.isin(fs.GEMM_CLASSES)]
        parts.append(fs.scored(rows, fit_of(fam)).assign(family=fam))
    return pd.concat(parts)


def bucket_lines(df, col: str, edges, label: str) -> list[str]:
    """One table: device x class x bucket of ``col`` -> rows, MAPE, median bias, median rate."""
    out = [f"| device | class | {label} | rows | MAPE | bias | measured rate / FMA peak |", "|---|---|---|---:|---:|---:|---:|"]
    b = np.digitize(df[col].to_numpy(), edges[1:-1])
    for (dev, cls, i), g in df.assign(b=b).groupby(["device_system", "cls", "b"]):
        m = fns.metrics(g.p, g.t)
        lo, hi = edges[i], edges[i + 1]
        out.append(f"| {dev} | {cls} | {lo:g} .. {hi:g} | {m['rows']} | {m['mape']:.1f} % | {m['bias']:+.1f} % "
                   f"| {np.median(g.rate):.3f} |")
    return out


def with_sizes(df):
    """``df`` with ``flops``, ``dmin`` and ``rate`` (kernel-only FLOP/s estimate: the latency
    less the row's fitted host dispatch, over the FMA peak)."""
    peak = np.array([nd.device_hw(d, s)["matrix_peak"] for d, s in
                     zip(df.device_system, df.device_system.map(lambda d: fs.shares([d])[d]))])
    disp = df.t - (df.p - df.kern)
    return df.assign(flops=df.mac, dmin=np.minimum(np.minimum(df.m, df.n), df.k), rate=df.mac / disp / peak)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "bench", "results", "gemm_size_buckets.md"))
    args = ap.parse_args(argv)
    ns = nd.load(nd.DATA)
    df = scored_rows(ns, shipped_fit)
    df = df.assign(kern=kernel_only(df))
    df = with_sizes(df)
    lin = df[df.cls == "gemm_simt"]
    lines = ["# Shipped FMA-unit GEMM sets on NeuSight's rows, by size (in-sample)", "",
             f"`PYTHONPATH=$PWD python bench/gemm_size_buckets.py`; {len(df)} kernel rows.", "",
             "## By GEMM FLOPs", ""] + bucket_lines(df, "flops", FLOP_EDGES, "FLOPs") + [
             "", "## By the smallest GEMM dimension", ""] + bucket_lines(df, "dmin", DIM_EDGES, "min(m, n, k)")
    for col in ("m", "n", "k"):
        lines += ["", f"## nn.Linear rows by {col}", ""] + bucket_lines(lin, col, DIM_EDGES, col)
    lines += ["", "## By measured latency (seconds)", ""] + bucket_lines(df, "t", TIME_EDGES, "latency")
    for shape in ((4096.0, 9216.0, 3072.0), (4096.0, 1024.0, 1024.0)):
        lines += ["", f"## nn.Linear rows nearest {shape[0]:.0f} x {shape[2]:.0f} by {shape[2]:.0f} x {shape[1]:.0f}", ""]
        lines += nearest_lines(lin, shape)
    lines += ["", "## Tried: a CTA-per-SM efficiency ramp (bench/gemm_cta_ramp.py), two-fold CV", ""]
    lines += gemm_cta_ramp.ramp_lines(ns)
    emit(args.out, lines)
    return 0


def nearest_lines(lin, shape: tuple, count: int = 8) -> list[str]:
    """Per device, the ``count`` rows nearest ``shape`` (m, n, k) in summed |log| distance."""
    out = ["| device | median bias | median rate | rows (m x k x n: bias) |", "|---|---:|---:|---|"]
    for dev, d in lin.groupby("device_system"):
        dist = sum(np.abs(np.log(d[c] / v)) for c, v in zip(("m", "n", "k"), shape))
        near = d.assign(dist=dist).nsmallest(count, "dist")
        rel = near.p / near.t - 1
        rows = ", ".join(f"{int(r.m)}x{int(r.k)}x{int(r.n)}: {100 * e:+.0f} %" for r, e in zip(near.itertuples(), rel))
        out.append(f"| {dev} | {100 * np.median(rel):+.1f} % | {np.median(near.rate):.3f} | {rows} |")
    return out


def kernel_only(df):
    """Each row's predicted kernel seconds (no dispatch) under its family's shipped sets."""
    out = np.zeros(len(df))
    for fam, part in df.groupby("family"):
        arr = fns.arrays_of(shipped_fit(fam).sets)
        sh = fs.shares(fs.FAMILY_DEVICES[fam])
        for dev, g in part.groupby("device_system"):
            out[df.index.get_indexer(g.index)] = fns.kernel_s(g, dev, arr, sh[dev])
    return out


if __name__ == "__main__":
    sys.exit(main())
