"""The scores and the report of ``bench/fit_efficiency.py``: the datasheet roofline and the
fitted model per (family, device, class), in-device (in-sample) and cross-device / cross-source
(out-of-sample), against the constants at ``BASELINE_REV`` ("before"); the markdown report; the
DRAM-fraction table; the regression fixture in ``tests/fixtures/efficiency``.
"""

from __future__ import annotations

import json
import os

import numpy as np

from efficiency_data import (
    COMMAND, DEVICES, FILES, FIT_DATE, NOT_FITTED, ROOT, _hash_order, feats_of, hw_of, metrics, predict, roofline)
from efficiency_files import scored_family
from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR
from analyzer.prediction.efficiency.kernel_time import kernel_time, with_clock

DRAM_X = 4.0        # rows whose bytes exceed DRAM_X x the device's L2 stream from DRAM (dram_fraction_lines)


EVALS = [  # (label, constants family, (file, device)) ; in-device first, then cross-device
    ("in-device", "nvidia-ampere", ("aic_gemm", "a100_sxm")),
    ("in-device", "nvidia-ampere", ("aic_attention", "a100_sxm")),
    ("in-device", "nvidia-ampere", ("vidur", "a100_80gb")),
    ("in-device", "nvidia-ampere-ga10x", ("vidur", "a40")),
    ("in-device", "nvidia-ada", ("aic_gemm", "l40s")),
    ("in-device", "nvidia-ada", ("aic_attention", "l40s")),
    ("in-device", "nvidia-hopper", ("aic_gemm", "h200_sxm")),
    ("in-device", "nvidia-hopper", ("aic_attention", "h200_sxm")),
    ("in-device", "nvidia-blackwell", ("aic_gemm", "b200_sxm")),
    ("in-device", "nvidia-blackwell", ("aic_attention", "b200_sxm")),
    ("cross-device", "nvidia-ampere", ("vidur", "a40")),
    ("cross-device", "nvidia-ampere-ga10x", ("vidur", "a100_80gb")),
    ("cross-device", "nvidia-hopper", ("aic_gemm", "b200_sxm")),
    ("cross-device", "nvidia-hopper", ("aic_attention", "b200_sxm")),
    ("cross-device", "nvidia-blackwell", ("aic_gemm", "h200_sxm")),
    ("cross-device", "nvidia-blackwell", ("aic_attention", "h200_sxm")),
    ("cross-device", "nvidia-ampere", ("aic_gemm", "h200_sxm")),
    ("cross-device", "nvidia-ampere", ("aic_attention", "h200_sxm")),
    ("cross-device", "nvidia-ampere", ("aic_gemm", "l40s")),
    ("cross-device", "nvidia-hopper", ("aic_gemm", "a100_sxm")),
    ("cross-device", "nvidia-blackwell", ("aic_gemm", "gb200")),
    ("cross-device", "nvidia-blackwell", ("aic_attention", "gb200")),
    ("cross-source", "nvidia-ampere", ("vidur", "a100_80gb")),   # vidur gemm vs aic-fitted gemm
]


BASELINE_REV = "a6ee5a4"  # the constants before the cache term and the staged fit ("before" columns)


def baseline_dir() -> str | None:
    """The family files at ``BASELINE_REV`` (git show) in a temporary directory; None without git."""
    import subprocess
    import tempfile

    out = tempfile.mkdtemp()
    try:
        names = subprocess.run(["git", "-C", ROOT, "ls-tree", "--name-only", BASELINE_REV, "hardware_db/efficiency/"],
                               check=True, capture_output=True, text=True).stdout.split()
        for path in names:
            text = subprocess.run(["git", "-C", ROOT, "show", f"{BASELINE_REV}:{path}"], check=True,
                                  capture_output=True, text=True).stdout
            with open(os.path.join(out, os.path.basename(path)), "w", encoding="utf-8") as f:
                f.write(text)
    except (OSError, subprocess.CalledProcessError):
        return None
    # validate the old files against the current schema (a superset: l2_gain is optional)
    import shutil

    shutil.copy(os.path.join(EFFICIENCY_DIR, "schema.json"), out)
    return out


def score(data: dict, directory: str, before: str | None = None) -> list[dict]:
    from analyzer.prediction.efficiency.constants import load_constants

    rows = []
    for label, fam, src in EVALS:
        if src not in data:
            continue
        df = data[src]
        hw = hw_of(src[1])
        consts = load_constants(scored_family(fam, src, directory), directory)
        # a class is borrowed when neither the variant nor its family has a set of it
        borrowed = set(consts.inherited) & set(load_constants(fam, directory).inherited)
        pred = predict(df, hw, consts.arrays)
        prev = (predict(df, hw, load_constants(scored_family(fam, src, before), before).arrays)
                if before else None)
        roof = roofline(df, hw)
        own = DEVICES[src[1]][0] == fam
        for cls, idx in df.groupby("op_class").groups.items():
            fitted_here = (src[0], src[1], cls) not in NOT_FITTED
            if label == "cross-source" and fitted_here:
                continue
            if label == "in-device" and not fitted_here:
                continue
            idx = df.index.get_indexer(idx)
            meas = df.t.to_numpy()[idx]
            rows.append({"eval": label if own or label != "in-device" else "cross-device",
                         "constants": fam, "source": FILES[src[0]], "device": src[1], "op_class": cls,
                         "ops": ",".join(sorted(set(df.op.to_numpy()[idx]))),
                         "inherited": cls in borrowed,
                         "roofline": metrics(roof[idx], meas), "fitted": metrics(pred[idx], meas),
                         **({"before": metrics(prev[idx], meas)} if prev is not None else {})})
    return rows


def render(rows: list[dict], fams: dict, verify: list[str], argv: str, seconds: float,
           before_fams: dict | None = None) -> str:
    from analyzer.prediction.efficiency.kernel_time import L2_STEP_POWER

    out = [f"# Kernel-time efficiency model: fit and accuracy ({FIT_DATE})", "",
           f"Command: `{argv}` (run from the repository root; {seconds:.0f} s).", "",
           "Timing definition: **kernel** (vidur: PyTorch-profiler kernel sum; aiconfigurator: mean of 6 "
           "CUDA-graph replays). Datasheet roofline = `max(flops/peak, bytes/bw) + 1.5 us` with the "
           "hardware_db profile's dense bf16 matrix peak, fp32 vector peak and DRAM bandwidth. Fitted = "
           "`analyzer/prediction/efficiency.py` with `hardware_db/efficiency/<family>.json`. APE = "
           "|pred/measured - 1|; bias = median signed error (negative: optimistic). In-device rows are "
           "in-sample (the fit saw them, subsampled to 12,000 rows per source and class); cross-device rows "
           "are out-of-sample: constants of one family scored on another device with that device's profile.", "",
           f"**Before** = the constants at commit `{BASELINE_REV}` (no cache term; one global least squares per "
           "class). **After** = this fit: the kernel-time form with the L2 term "
           f"`memory = (bytes + b_half) / (mem_bw * e_bw * (1 + l2_gain * s(bytes / l2_bytes)))`, "
           f"`s(x) = 1 / (1 + x^{L2_STEP_POWER:g})`, `l2_bytes` = the profile's `onchip_mb`; the memory-bound "
           "classes fitted in stages (`fit_memory_class`: floor from the smallest 10% of rows, e_bw from rows "
           "above 4x L2, then b_half and l2_gain on the rows below 4x L2); GEMM as before plus a fitted "
           "l2_gain, its waves over the device's SMs with the tile and split-K a library picks "
           "(`kernel_time.wave_split`, not a fitted exponent); attention unchanged. The before columns "
           "score the older constants with this code (their wave exponent is read as a switch: on).", ""]
    hdr = ("| eval | constants | device | source | class | rows | roof MAPE | before MAPE | before med | "
           "before bias | before ±10% | before ±25% | after MAPE | after med | after bias | after ±10% | "
           "after ±25% |")
    out += [hdr, "|" + "---|" * 17]
    for r in rows:
        a, b = r["roofline"], r["fitted"]
        p = r.get("before")
        cls = r["op_class"] + (" (generic)" if r["inherited"] else "")
        prev = (f"{p['mape']:.1f} | {p['median_ape']:.1f} | {p['bias']:+.1f} | {p['within10']:.0f} | "
                f"{p['within25']:.0f}") if p else "| | | |"
        out.append(f"| {r['eval']} | {r['constants']} | {r['device']} | {r['source']} | {cls} | {a['rows']} | "
                   f"{a['mape']:.1f} | {prev} | {b['mape']:.1f} | {b['median_ape']:.1f} | {b['bias']:+.1f} | "
                   f"{b['within10']:.0f} | {b['within25']:.0f} |")
    out += ["", "## Constants (after; before in brackets where a set changed)", "",
            "| family | class | e_compute | e_bw | b_half MB | floor us | l2_gain | bpc | l2_hit | tile | wave_alpha | "
            "fitted on | rows | fit MAPE |", "|" + "---|" * 14]
    for fam, sets in fams.items():
        for cls, (c, p) in sets.items():
            old = ((before_fams or {}).get(fam) or {}).get(cls)

            def cell(key, scale=1.0, fmt="{:.3g}"):
                v = fmt.format(c.get(key, 0.0) * scale)
                if old is not None and abs(old.get(key, 0.0) - c.get(key, 0.0)) > 1e-3 * max(abs(c.get(key, 0.0)), 1e-12):
                    v += " [" + fmt.format(old.get(key, 0.0) * scale) + "]"
                return v

            where = p.get("device_system", p.get("source", "")) if p["kind"] == "fit" else p["source"][:60]
            err = p.get("fit_error", {}).get("mape")
            out.append(f"| {fam} | {cls} | {cell('e_compute')} | {cell('e_bw')} | {cell('b_half_bytes', 1e-6)} | "
                       f"{cell('floor_s', 1e6)} | {cell('l2_gain')} | {cell('bpc')} | {cell('l2_hit')} | "
                       f"{int(c['tile_m'])}x{int(c['tile_n'])} | "
                       f"{cell('wave_alpha')} | {where} | {p.get('rows', '')} | {'' if err is None else f'{err:.1f}'} |")
    out += ["", "## Count verification (closed forms vs `analyzer.analyze` on one-op ONNX models)", "", "```"]
    out += verify + ["```", ""]
    return "\n".join(out)


def dram_fraction_lines(data: dict) -> list[str]:
    """Per vidur op: the median DRAM fraction (bytes / t / mem_bw) of rows above DRAM_X x L2 on
    each device, and the bytes/s per SM it implies: why the memory-bound classes do not transfer
    between A100 and A40 as a fraction of DRAM bandwidth."""
    devs = [d for d in ("a100_80gb", "a40") if ("vidur", d) in data]
    out = ["## Why the memory-bound classes carry a per-SM term", "",
           "Median over rows above 4x L2 (DRAM streaming) of bytes / time: as a fraction of the profile's DRAM "
           "bandwidth, and per SM (GB/s). `add` reaches the same fraction on both devices (0.85 / 0.82: DRAM "
           "streaming transfers). The 2024 vLLM/PyTorch kernels do not: on the A100 rope, silu_and_mul, gelu "
           "and the norms stop at 6-12 GB/s per SM (0.34-0.65 of DRAM), a rate that on the A40's 84 SMs would "
           "exceed its DRAM bandwidth, and there they reach 0.59-0.83 of DRAM; the index_select embedding "
           "reaches 2.7 GB/s per SM on the A100 and 4.0 on the A40. Measured t_A40 / t_A100 at matched shapes "
           "lies between what a DRAM fraction predicts (2.93) and what a fixed rate per SM-cycle predicts "
           "(1.04) for every class but add, so the memory term adds the two: DRAM time plus "
           "bytes / (units * clock * bpc), the second a per-class issue rate per SM-cycle that moves with "
           "the device's own SM count and clock (the digest's mechanism 4). With it the A100 -> A40 and "
           "A40 -> A100 errors of activation and norm drop from 28-89% to 14-18%; embedding (faster on the "
           "A40 than on the A100) still does not transfer. (rope, and vLLM's rms_norm and silu_and_mul kernels, "
           "are not fitted on: the classes describe a framework's own kernels, so the table lists the fitted ops.)",
           "",
           "| op | class | " + " | ".join(f"{d} rows | {d} DRAM fraction | {d} GB/s per SM" for d in devs) + " |",
           "|" + "---|" * (2 + 3 * len(devs))]
    per = {}
    for d in devs:
        hw = hw_of(d)
        df = data[("vidur", d)]
        df = df[~df.op.isin(["gemm", "gemm_bias"])]
        big = df[df.bytes > DRAM_X * hw["l2_bytes"]]
        for op, e in big.groupby("op"):
            bw = e.bytes / e.t
            per.setdefault(op, {"class": e.op_class.iloc[0]})[d] = (len(e), float(np.median(bw / hw["mem_bw"])),
                                                                     float(np.median(bw) / hw["units"] / 1e9))
    for op, v in sorted(per.items()):
        cells = " | ".join(f"{v[d][0]} | {v[d][1]:.2f} | {v[d][2]:.1f}" if d in v else "0 | | " for d in devs)
        out.append(f"| {op} | {v['class']} | {cells} |")
    return out + [""]


FIXTURE_DIR = os.path.join(ROOT, "tests", "fixtures", "efficiency")
FIXTURE_PER_SET = 18
FIXTURE_MARGIN = 2.0  # percentage points the regression test allows above the recorded MAPE


def write_fixture(data: dict, directory: str) -> dict:
    """300-odd rows of the in-device sets (hash-selected) + the fitted model's MAPE on them."""
    import pandas as pd

    from analyzer.prediction.efficiency.constants import load_constants

    parts = []
    for label, fam, src in EVALS:
        if label != "in-device" or src not in data:
            continue
        hw = hw_of(src[1])
        for cls, d in data[src].groupby("op_class"):
            if (src[0], src[1], cls) in NOT_FITTED:
                continue
            d = d.iloc[np.sort(_hash_order(d.key)[:FIXTURE_PER_SET])]
            d = d.assign(family=scored_family(fam, src, directory), source=FILES[src[0]], device=src[1],
                         **{k: hw[k] for k in ("matrix_peak", "vector_peak", "mem_bw", "units", "l2_bytes", "clock_hz")})
            parts.append(d)
    fx = pd.concat(parts, ignore_index=True)[
        ["family", "source", "device", "op", "op_class", "mac", "vec", "trans", "bytes", "m", "n", "k", "batch",
         "matrix_peak", "vector_peak", "mem_bw", "units", "l2_bytes", "clock_hz", "t"]]
    os.makedirs(FIXTURE_DIR, exist_ok=True)
    fx.to_csv(os.path.join(FIXTURE_DIR, "sample.csv"), index=False, float_format="%.10g")
    pred = np.empty(len(fx))
    for fam, idx in fx.groupby("family").groups.items():
        idx = fx.index.get_indexer(idx)
        d = fx.iloc[idx]
        hw = {k: d[k].to_numpy() for k in ("matrix_peak", "vector_peak", "mem_bw", "units", "l2_bytes")}
        arrays = with_clock(load_constants(fam, directory).arrays, float(d.clock_hz.iloc[0]))
        pred[idx] = kernel_time(np, feats_of(d), hw, arrays)["time_s"]
    rec = {"rows": len(fx), "mape": round(metrics(pred, fx.t.to_numpy())["mape"], 3),
           "margin_points": FIXTURE_MARGIN, "selection": f"first {FIXTURE_PER_SET} rows by sha256('opcost-eff-v1|key') "
           "of every in-device (family, device, class) set", "command": COMMAND, "fit_date": FIT_DATE}
    with open(os.path.join(FIXTURE_DIR, "recorded.json"), "w", encoding="utf-8") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    return rec
