"""The markdown report of ``bench/family_simt.py``."""

from __future__ import annotations

import numpy as np

import family_simt as fs
import fit_neusight as fns
import neusight_data as nd
from fit_neusight import Fit


def _m(d) -> str:
    m = fns.metrics(d.p, d.t)
    return f"{m['mape']:.1f} | {m['bias']:+.1f} | {m['within10']:.0f}"


def _set(v: dict) -> str:
    k = f", k_fill {v['k_fill']:.3g}" if v.get("k_fill") else ""
    w = f", mult_share {v['mult_share']:.3f}" if v.get("mult_share") else ""
    return f"e_compute {v['e_compute']:.3f}, tile {v['tile_m']:g}x{v['tile_n']:g}{k}{w}"


def _large(d, gflop: float = 250.0) -> str:
    """Median measured / predicted-free ratio (pred / measured - 1) over rows above ``gflop``."""
    big = d[d.mac > gflop * 1e9]
    return f"{100 * np.median(big.p / big.t - 1):+.1f} ({len(big)})" if len(big) else "-"


def report(results: dict, seconds: float) -> list[str]:
    gen = fns.arrays_of({})
    pooled = {c: {"e_compute": gen["e_compute"][fns.CLASS_CODE[c]], "tile_m": gen["tile_m"][fns.CLASS_CODE[c]],
                  "tile_n": gen["tile_n"][fns.CLASS_CODE[c]], "k_fill": gen["k_fill"][fns.CLASS_CODE[c]],
                  "mult_share": gen["mult_share"][fns.CLASS_CODE[c]]}
              for c in fs.CLASSES}
    out = ["# Per-family FMA-unit GEMM and convolution sets on NeuSight's rows", "",
           f"Command: `{fs.COMMAND}` ({seconds:.0f} s on this machine). Data: `{nd.MEASUREMENT_FILE}`, the "
           "nn.Linear (`gemm_simt`), torch.bmm (`bgemm_simt`) and nn.Conv2d rows (`conv3_simt`: cuDNN ran a "
           "Winograd or FFT kernel; `conv_simt`: the rest) of each family's devices (fp32, TF32 off, one "
           "eager PyTorch 2.1 call between CUDA events; no L2 flush; the A100's matmul rows on the 40 GB card, its "
           "convolution rows on the 80 GB one). Scores on the kernel rows (above "
           f"{nd.FLOOR_X:g}x their device's and class's smallest latency), each set with the host dispatch it implies "
           f"on the scored rows' own floor rows (median of latency - kernel within {nd.DISPATCH_X:g}x the smallest "
           "latency, per device and class); the capped cards at their profiles' sustained clocks.", "",
           "Rule (fixed before any score was seen): a family's own set of a class ships iff its two-fold "
           "cross-validated MAPE (hash halves of the family's rows: fit on one, score the other) is below the pooled "
           "generic set's in-sample MAPE on the same kernel rows; else the pooled set stays.", "",
           "| family | class | kernel rows | pooled (in-sample) MAPE % | bias % | ±10 % | family fit (in-sample) "
           "MAPE % | bias % | ±10 % | family fit, two-fold (held out) MAPE % | bias % | ±10 % | shipped |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for fam, ev in results.items():
        for c in fs.CLASSES:
            parts = [ev[k][ev[k].cls == c] for k in ("pooled", "own", "cv")]
            out.append(f"| {fam} | {c} | {len(parts[0]):,} | " + " | ".join(_m(p) for p in parts)
                       + f" | **{ev['choice'][c]}** |")
    out += ["", "## Constants", "", "| family | class | pooled (generic.json) | family fit | fold 1 | fold 2 |",
            "|---|---|---|---|---|---|"]
    for fam, ev in results.items():
        for c in fs.CLASSES:
            f1, f2 = (f.sets[c] for f in ev["folds"])
            out.append(f"| {fam} | {c} | {_set(pooled[c])} | {_set(ev['fit'].sets[c])} | {_set(f1)} | {_set(f2)} |")
    out += ["", "## Per device (kernel rows)", "",
            "Median pred / measured - 1 over the rows above 250 GFLOP (rows) beside the MAPE.", "",
            "| device | class | rows | pooled MAPE % | bias % | ±10 % | median > 250 GFLOP % | family fit (in-sample) "
            "MAPE % | bias % | ±10 % | median > 250 GFLOP % |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for fam, ev in results.items():
        for dev in fs.FAMILY_DEVICES[fam]:
            for c in fs.CLASSES:
                pool, own = (ev[k][(ev[k].cls == c) & (ev[k].device_system == dev)] for k in ("pooled", "own"))
                if not len(pool):
                    continue
                out.append(f"| {dev} | {c} | {len(pool):,} | {_m(pool)} | {_large(pool)} | {_m(own)} | {_large(own)} |")
    out += ["", "Host dispatch the family fit implies (us): " + "; ".join(
        f"{d} {c} {v * 1e6:.1f}" for ev in results.values() for (d, c), v in sorted(ev["fit"].dispatch.items()))]
    return out + [""]


PRODUCT_PER = 25   # conv kernel rows per device and class through analyzer.analyze


def _without_conv_sets(src: str, dst: str) -> None:
    """A copy of the family files ``src`` in ``dst`` without the family convolution sets (each
    family then predicts its convolutions with generic.json's pooled sets)."""
    import json
    import os
    import shutil

    shutil.copytree(src, dst)
    for fam in list(fs.FAMILY_DEVICES) + [fs.GA10X]:
        path = os.path.join(dst, f"{fam}.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for c in fs.CONV_CLASSES:
            doc["sets"].pop(c, None)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)


def product_sample(results: dict):
    """``PRODUCT_PER`` hash-chosen kernel rows per device and convolution class of every family,
    through ``analyzer.analyze`` (runtime ``kernel`` plus the host dispatch the family files imply on
    the device's own floor rows, fp32 as NeuSight ran them) with the shipped files (``p_after``)
    and with the family convolution sets removed (``p_before``: the pooled sets)."""
    import os
    import shutil
    import tempfile

    import pandas as pd

    import neusight_report as nr

    tmp = tempfile.mkdtemp(prefix="opcost-fconv-")
    try:
        pooled_dir = os.path.join(tmp, "efficiency")
        _without_conv_sets(fns.fc.EFFICIENCY_DIR, pooled_dir)
        parts = []
        for fam, ev in results.items():
            rows = ev["rows"]
            ker = rows[rows.cls.isin(fs.CONV_CLASSES) & ~rows.near_floor]
            pick = nd.subsample(ker.assign(op=ker.cls), cap=PRODUCT_PER, salt="product").query("not at_floor")
            pick = pick.assign(op="conv", family=fam)
            sh = fs.shares(fs.FAMILY_DEVICES[fam])
            for col, d in (("p_after", fns.fc.EFFICIENCY_DIR), ("p_before", pooled_dir)):
                host = fns.fit_dispatch(rows[rows.at_floor & rows.cls.isin(fs.CONV_CLASSES)], Fit({}, sh, {}),
                                        nr.product_arrays(rows, d))
                disp = np.array([host.get((dev, "conv3_simt"), 0.0) for dev in pick.device_system])
                pick[col] = nr.product_times(pick, Fit({}, sh, {}), d, "kernel") + disp
            parts.append(pick)
        return pd.concat(parts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def product_lines(results: dict) -> list[str]:
    rows = product_sample(results)
    out = ["## Through the product (analyzer.analyze, convolution rows)", "",
           f"{PRODUCT_PER} hash-chosen kernel rows per device and class (one-op ONNX Conv models, precision fp32 as "
           "NeuSight ran them, runtime `kernel` plus the host dispatch the files imply on the device's own floor "
           "rows). `pooled`: the family convolution sets removed (generic.json's); `shipped`: the files as written. "
           "In-sample for a family whose own set ships (its rows fitted it). Every NeuSight convolution is 3x3 "
           "stride 1, which the product runs as `conv3_simt` (engines.winograd_shape: it cannot know cuDNN's "
           "choice); the `conv_simt` rows (cuDNN ran no Winograd/FFT kernel) thus test the `conv3_simt` set here, "
           "and their differences between the two columns are the host dispatch's only. A `conv_simt` set reaches "
           "other shapes (1x1, strided) in a model, which NeuSight has no rows of.", "",
           "| family | class | rows | set shipped | pooled MAPE % | bias % | shipped MAPE % | bias % |",
           "|---|---|---:|---|---:|---:|---:|---:|"]
    for (fam, c), d in rows.groupby(["family", "cls"], sort=False):
        a, b = fns.metrics(d.p_before, d.t), fns.metrics(d.p_after, d.t)
        out.append(f"| {fam} | {c} | {len(d)} | {results[fam]['choice'][c]} | {a['mape']:.1f} | {a['bias']:+.1f} | "
                   f"{b['mape']:.1f} | {b['bias']:+.1f} |")
    return out + [""]
