"""The markdown report of ``bench/family_simt.py``."""

from __future__ import annotations

import numpy as np

import family_simt as fs
import fit_neusight as fns
import neusight_data as nd


def _m(d) -> str:
    m = fns.metrics(d.p, d.t)
    return f"{m['mape']:.1f} | {m['bias']:+.1f} | {m['within10']:.0f}"


def _set(v: dict) -> str:
    k = f", k_fill {v['k_fill']:.3g}" if v.get("k_fill") else ""
    return f"e_compute {v['e_compute']:.3f}, tile {v['tile_m']:g}x{v['tile_n']:g}{k}"


def _large(d, gflop: float = 250.0) -> str:
    """Median measured / predicted-free ratio (pred / measured - 1) over rows above ``gflop``."""
    big = d[d.mac > gflop * 1e9]
    return f"{100 * np.median(big.p / big.t - 1):+.1f} ({len(big)})" if len(big) else "-"


def report(results: dict, seconds: float) -> list[str]:
    gen = fns.arrays_of({})
    pooled = {c: {"e_compute": gen["e_compute"][fns.CLASS_CODE[c]], "tile_m": gen["tile_m"][fns.CLASS_CODE[c]],
                  "tile_n": gen["tile_n"][fns.CLASS_CODE[c]], "k_fill": gen["k_fill"][fns.CLASS_CODE[c]]}
              for c in fs.CLASSES}
    out = ["# Per-family FMA-unit GEMM sets on NeuSight's rows", "",
           f"Command: `{fs.COMMAND}` ({seconds:.0f} s on this machine). Data: `{nd.MEASUREMENT_FILE}`, the "
           "nn.Linear (`gemm_simt`) and torch.bmm (`bgemm_simt`) rows of each family's devices (fp32, TF32 off, one "
           "eager PyTorch 2.1 call between CUDA events; no L2 flush). Scores on the kernel rows (above "
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
                out.append(f"| {dev} | {c} | {len(pool):,} | {_m(pool)} | {_large(pool)} | {_m(own)} | {_large(own)} |")
    out += ["", "Host dispatch the family fit implies (us): " + "; ".join(
        f"{d} {c} {v * 1e6:.1f}" for ev in results.values() for (d, c), v in sorted(ev["fit"].dispatch.items()))]
    return out + [""]
