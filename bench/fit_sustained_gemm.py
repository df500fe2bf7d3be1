"""The L4's sustained FMA-peak share from public torch.mm throughputs (fp32, FMA units).

Data: ``bench/data/sustained_gemm/public_gemm_throughput.csv`` (README beside it): one public
script's torch.mm throughput (6 warm-up calls, then 30 back-to-back N x N x N products timed as
one window) on many GPUs, each row with its source.  Only single-op figures; no whole-model
latency and no H100 row is read.

Method (fixed before any held-out figure was looked at):

- ``r(card, N) = measured TFLOP/s / predicted TFLOP/s``, the prediction being opcost's for the
  same one-op fp32 MatMul (``runtime="kernel"``, ``precision="fp32"``) on the card's profile at
  its boost clock (``sustained_clock_ghz`` removed).  Only the two largest sizes, N = 8192 and
  10240 (rows ``use = fit / reference / check_reference / check``): each 30-call window lasts
  3-6 s on the L4, long enough for the power limiter to settle; the smaller sizes' windows
  (33 ms at N = 2048) run faster (a share of 0.81 there) and are not used.
- ``share(L4) = mean r(L4) / mean r(reference)``: the reference is the uncapped cards of the
  L4's SM design (two FP32 datapaths per SM partition, GA10x/AD10x) in the same data, those with
  at least 3.5 W of board power per SM and per-size rows: RTX 4090 (3.52 W/SM) and A40
  (3.57 W/SM).  The ratio takes out what opcost's pooled FMA efficiency gets wrong for this
  design and this cuBLAS, so what is left is the share of the FMA peak the 72 W card holds.
- ``sustained_clock_ghz = share x clock_ghz``, written to ``hardware_db/profiles/l4.toml`` with
  ``--write`` (the engine scales the FMA-unit peaks by ``sustained / boost``; the tensor-core
  peaks are left as listed).

Checks (not fitted): the same ratio for the T4 against the V100 (single FP32 datapath per
partition, as Turing) and for the P4 against the P100, next to the NeuSight-fitted figures of
``bench/fit_neusight.py``; the spread of r over the single-datapath uncapped cards.

Usage: ``PYTHONPATH=$PWD python bench/fit_sustained_gemm.py [--write] [--out
bench/results/fit_sustained_gemm.md]``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import sys
from statistics import mean

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from op_models import build  # noqa: E402

DATA = os.path.join(HERE, "data", "sustained_gemm", "public_gemm_throughput.csv")
SIZES = (8192, 10240)               # the sustained windows (seconds long)
FITTED = "l4"
REFERENCE = ("rtx-4090", "a40")     # uncapped, two FP32 datapaths per partition, >= 3.5 W per SM
CHECKS = {"t4": ("v100-sxm2-32gb",), "p4": ("p100-pcie-16gb",)}   # capped card -> its design's reference
COMMAND = "PYTHONPATH=$PWD python bench/fit_sustained_gemm.py --write"


def read_rows(path: str = DATA) -> list[dict]:
    """The CSV's rows (``value`` as float; ``n`` an int where it names a size, else as written)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["value"] = float(r["value"])
        r["n"] = int(r["n"]) if r["n"].isdigit() else r["n"]
    return rows


def predicted_tflops(profile_id: str, n: int) -> float:
    """opcost's fp32 TFLOP/s for an n x n x n MatMul on ``profile_id`` at its boost clock
    (``runtime="kernel"``: the back-to-back calls hide the host dispatch)."""
    import analyzer
    import hardware_db

    prof = dataclasses.replace(hardware_db.get(profile_id), sustained_clock_ghz=None)
    rep = analyzer.analyze(build("gemm", "fp32", M=n, N=n, K=n), hw=[prof], runtime="kernel", precision="fp32")
    return 2.0 * n ** 3 / rep.predictions[0].latency_s / 1e12


def ratios(rows: list[dict], profile_id: str, uses=("fit", "reference", "check_reference", "check")) -> list[float]:
    """``measured / predicted-at-boost`` of a profile's fp32 rows at the sustained sizes; for rows
    that give only the largest of the sizes (``n = max``), against the prediction at 10240."""
    out = []
    for r in rows:
        if r["profile"] != profile_id or r["precision"] != "fp32" or r["use"] not in uses:
            continue
        if r["n"] in SIZES:
            out.append(r["value"] / predicted_tflops(profile_id, r["n"]))
        elif r["n"] == "max":
            out.append(r["value"] / predicted_tflops(profile_id, SIZES[-1]))
    return out


def share(rows: list[dict], capped: str, reference: tuple[str, ...]) -> tuple[float, float, float]:
    """(share, mean r of the capped card, mean r of its reference cards, each card weighted by
    its rows)."""
    rc = ratios(rows, capped)
    rr = [x for ref in reference for x in ratios(rows, ref)]
    if not rc or not rr:
        raise ValueError(f"no sustained-size rows for {capped} or {reference}")
    return mean(rc) / mean(rr), mean(rc), mean(rr)


def write_profile(share_: float, profiles_dir: str) -> float:
    """``[power] sustained_clock_ghz`` and its source in the L4's profile; returns the GHz."""
    from profile_edit import set_sustained_clock

    return set_sustained_clock(FITTED, share_, (
        f"the FMA peak's share this card held in public fp32 torch.mm throughputs at N = 8192 and 10240 (30 "
        f"back-to-back calls, 3-6 s windows; zzc0721/torch-performance-test-data issue 120), relative to the "
        f"same script's uncapped RTX 4090 (issue 78) and A40 (issue 185), each as measured / opcost's "
        f"prediction at boost; bench/data/sustained_gemm/public_gemm_throughput.csv, bench/fit_sustained_gemm.py, "
        f"{COMMAND}"), profiles_dir)


def report(rows: list[dict]) -> list[str]:
    """The markdown report: r per card, the fitted share, the checks."""
    import hardware_db

    out = ["# Sustained FMA-peak share of power-capped GPUs from public torch.mm throughputs", "",
           f"Command: `{COMMAND}`. Data: `bench/data/sustained_gemm/public_gemm_throughput.csv` (README "
           "there). r = measured TFLOP/s / opcost's prediction at the boost clock, fp32 (FMA units), at "
           "N = 8192 and 10240 (rows `n = max`: the largest of the script's five sizes, against N = 10240).", "",
           "| profile | use | W per SM | rows | r (each) | mean r |", "|---|---|---:|---:|---|---:|"]
    profiles = dict.fromkeys(r["profile"] for r in rows if r["profile"] and r["precision"] == "fp32")
    for pid in profiles:
        rs = ratios(rows, pid, uses=("fit", "reference", "check_reference", "check", "info"))
        if not rs:
            continue
        p = hardware_db.get(pid)
        use = next(r["use"] for r in rows if r["profile"] == pid and (r["n"] in SIZES or r["n"] == "max"))
        out.append(f"| {pid} | {use} | {p.tdp_w / p.units:.2f} | {len(rs)} | "
                   f"{', '.join(f'{x:.3f}' for x in rs)} | {mean(rs):.3f} |")
    s, rc, rr = share(rows, FITTED, REFERENCE)
    clock = hardware_db.get(FITTED).clock_ghz
    out += ["", "## Fitted (in-sample: these rows are the fit)", "",
            f"- L4: mean r {rc:.3f} / reference ({', '.join(REFERENCE)}) mean r {rr:.3f} = share **{s:.3f}**, "
            f"sustained clock {s * clock:.3f} GHz of {clock:g} GHz."]
    for ref in REFERENCE:
        s1 = share(rows, FITTED, (ref,))[0]
        out.append(f"- with {ref} alone as the reference: {s1:.3f}")
    out += ["", "## Checks of the NeuSight-fitted figures (not fitted here)", ""]
    for capped, ref in CHECKS.items():
        p = hardware_db.get(capped)
        s1, rc1, rr1 = share(rows, capped, ref)
        fitted = p.sustained_clock_ghz / p.clock_ghz if p.sustained_clock_ghz else None
        out.append(f"- {capped}: mean r {rc1:.3f} / {', '.join(ref)} {rr1:.3f} = {s1:.3f}; the profile's "
                   f"NeuSight-fitted share {fitted:.3f}" if fitted else f"- {capped}: {s1:.3f}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", action="store_true", help="write the L4's sustained clock into its profile")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "fit_sustained_gemm.md"))
    args = ap.parse_args(argv)
    rows = read_rows()
    lines = report(rows)
    print("\n".join(lines))
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    if args.write:
        ghz = write_profile(share(rows, FITTED, REFERENCE)[0], os.path.join(ROOT, "hardware_db", "profiles"))
        print(f"wrote sustained_clock_ghz = {ghz} to hardware_db/profiles/{FITTED}.toml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
