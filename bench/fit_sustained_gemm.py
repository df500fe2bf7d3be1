"""The shared-INT32 FP32 design's datapath factor and the L4's sustained clock from public torch.mm
throughputs.

Data: ``bench/data/sustained_gemm/public_gemm_throughput.csv`` (README beside it): one public
script's torch.mm throughput (6 warm-up calls, then 30 back-to-back N x N x N products timed as
one window) on many GPUs, each row with its source.  Only single-op figures; no whole-model
latency and no H100 row is read.

Method (fixed before any held-out figure was looked at):

- ``r(card, N) = measured TFLOP/s / predicted TFLOP/s``, the prediction being opcost's for the
  same one-op MatMul (``runtime="kernel"``, ``precision`` as measured: fp32 on the FMA units,
  tf32/fp16/bf16 on the tensor cores) on the card's profile at its boost clock
  (``sustained_clock_ghz`` removed).  Only the two largest sizes, N = 8192 and 10240 (each
  30-call window lasts 3-6 s on the L4, long enough for the power limiter to settle; the
  smaller sizes' windows, 33 ms at N = 2048, run faster and are not used).
- **FP32 datapath factor** ``g`` (``[compute] fp32_datapath_factor``): the SMs of NVIDIA's GA10x
  and AD10x chips list 128 FP32 lanes, half of them on a datapath shared with INT32; an sgemm
  reaches a smaller share of that doubled peak than an SM with a datapath per lane (V100, P100,
  A100: the design the FMA-unit classes were fitted on, ``bench/fit_neusight.py``; each card
  predicted with its family's ``gemm_simt`` set, ``bench/family_simt.py``: the A100 and, through
  GA10x's inherited copy, the RTX 4090 and A40 with Ampere's, the V100 with Volta's, the P100
  with the pooled one).
  ``g = mean r(RTX 4090, A40) / mean r(V100-SXM2, P100-PCIe, A100-PCIe)``, r without the factor,
  on the N = 8192 row of each (one row per card: in-sample); N = 10240 and the RTX 3090's rows
  check it.  Written into every profile of that design (``SHARED_INT32``); designs without data
  (Hopper, Blackwell) keep 1.
- **L4 sustained clock**: ``share(L4) = mean r(L4) / mean r(reference)``, the reference being the
  uncapped cards of the L4's SM design with at least 3.5 W of board power per SM and per-size
  rows: RTX 4090 (3.52 W/SM) and A40 (3.57 W/SM).  The ratio takes out what opcost's FMA
  constants get wrong for this design and this cuBLAS (the datapath factor cancels in it), so
  what is left is the share of the peaks the 72 W card holds; ``sustained_clock_ghz = share x
  clock_ghz``.  The engine scales every compute peak of the card by ``sustained / boost``: the
  same ratio on the tensor-core rows (TF32/FP16/BF16, ``check_tc`` against ``reference_tc``) is
  the check that one clock follows both engines.

Checks (not fitted): the same ratio for the T4 against the V100 (single FP32 datapath per
partition, as Turing) and for the P4 against the P100, next to the NeuSight-fitted figures of
``bench/fit_neusight.py``.

Hopper: ``g_H = r(Hopper fp32) / mean r(one-datapath cards at N = 8192)``, r without a factor (the
GA10x factor's method), and the check fixed with it: ``t = r(the same runs' fp16, bf16) /
r(A100-SXM4-80GB fp16, bf16)`` (tensor cores).  The rule fixed before either was computed: a Hopper
factor ships iff ``g_H < 0.95`` and ``|ln t| < |ln g_H| / 2`` (the tensor cores of the same runs do not
show the deficit, so it is the FMA datapath and not a clock).  The H200 SXM's one torch.mm row
(the largest of its run's five sizes) does not meet it (reported).  The H200 NVL's cuBLASLt rows
(``bench/data/hopper_fp32``, four boards, per size) are predicted on ``h200-sxm`` at the run's
1.785 GHz SM clock (the same GH100, 132 SMs); g_H at N = 8192, t from its fp16/bf16 rows at 8192 and
16384, and, the harness being another, a bridge fixed with the rule: the RTX 4090's r in that harness
at N = 8192 over its torch.mm r within exp(+-0.10).  Where all hold, g_H is written as
``fp32_datapath_factor`` into the Hopper profiles.  No H100 or H800 row is read.

Usage: ``PYTHONPATH=$PWD python bench/fit_sustained_gemm.py [--write] [--out
bench/results/fit_sustained_gemm.md]``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import os
import sys
from statistics import mean

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)

from op_models import build  # noqa: E402
from report_lines import emit  # noqa: E402

DATA = os.path.join(HERE, "data", "sustained_gemm", "public_gemm_throughput.csv")
SIZES = (8192, 10240)               # the sustained windows (seconds long)
FITTED = "l4"
REFERENCE = ("rtx-4090", "a40")     # uncapped, two FP32 datapaths per partition, >= 3.5 W per SM
CHECKS = {"t4": ("v100-sxm2-32gb",), "p4": ("p100-pcie-16gb",)}   # capped card -> its design's reference
ONE_DATAPATH = ("v100-sxm2-32gb", "p100-pcie-16gb", "a100-40gb-pcie")   # uncapped, an FP32 datapath per lane
FACTOR_N = 8192                     # the one row per card the datapath factor is fitted on
HOPPER = "h200-sxm"                 # the Hopper card with a public fp32 row and a profile (H100 rows: held out)
HOPPER_TC_REF = "a100-80gb-sxm"     # the one-datapath card whose tensor-core rows come from the same script
HOPPER_SHIPS = 0.95                 # the rule: g_H below this, and |ln t| < |ln g_H| / 2
NVL_DATA = os.path.join(HERE, "data", "hopper_fp32", "public_hopper_fp32.csv")
NVL_CLOCK_GHZ = 1.785               # the H200 NVL run's SM clock (its NVML reading, bench/data/hopper_fp32)
NVL_TC_SIZES = (8192, 16384)        # the NVL's fp16/bf16 rows of the check
BRIDGE_LN = 0.10                    # |ln| of the RTX 4090's r in the cuBLASLt harness over its torch.mm r, at most
HOPPER_PROFILES = ("h100-sxm", "h100-pcie", "h200-sxm")   # the GH100 profiles the factor is written into
HOPPER_SOURCE = ("NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): each of the 4 GH100 SM partitions "
                 "has 32 FP32 lanes under one warp scheduler (an A100 partition has 16)")
# the profiles of the SM design whose partitions issue FP32 on one datapath of their own and one shared with
# INT32 (NVIDIA's GA10x and AD10x SMs: 128 listed FP32 lanes per SM, 64 of them shared)
SHARED_INT32 = {"a10": "GA102", "a40": "GA102", "rtx-3090": "GA102", "jetson-agx-orin-64gb": "GA10B",
                "rtx-4090": "AD102", "l40s": "AD102", "l4": "AD104"}
DESIGN_SOURCE = ("NVIDIA Ampere GA102 GPU architecture whitepaper (2020), 'GA10x SM': each of the 4 SM partitions "
                 "has one datapath of 16 FP32 units and one of 16 units that run FP32 or INT32; NVIDIA Ada GPU "
                 "architecture whitepaper (2022): the AD10x SM keeps that partition")
COMMAND = "PYTHONPATH=$PWD python bench/fit_sustained_gemm.py --write"


def read_rows(path: str = DATA) -> list[dict]:
    """The CSV's rows (``value`` as float; ``n`` an int where it names a size, else as written)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["value"] = float(r["value"])
        r["n"] = int(r["n"]) if r["n"].isdigit() else r["n"]
    return rows


def predicted_tflops(profile_id: str, n: int, precision: str = "fp32", factor: bool = True,
                     clock_ghz: float | None = None) -> float:
    """opcost's TFLOP/s for an n x n x n MatMul on ``profile_id`` at its boost clock (or every compute
    peak at ``clock_ghz`` / boost), at ``precision`` (fp32: the FMA units; tf32, fp16, bf16: the tensor
    cores), with the profile's ``fp32_datapath_factor`` (``factor``) or without it
    (``runtime="kernel"``: the back-to-back calls hide the host dispatch)."""
    import analyzer
    import hardware_db

    prof = dataclasses.replace(hardware_db.get(profile_id), sustained_clock_ghz=clock_ghz,
                               **({} if factor else {"fp32_datapath_factor": None}))
    model = build("gemm", "fp32" if precision in ("fp32", "tf32") else precision, M=n, N=n, K=n)
    rep = analyzer.analyze(model, hw=[prof], runtime="kernel", precision=precision)
    return 2.0 * n ** 3 / rep.predictions[0].latency_s / 1e12


def ratios(rows: list[dict], profile_id: str, uses=("fit", "reference", "check_reference", "check"),
           sizes=SIZES, precision: str = "fp32", factor: bool = True) -> list[float]:
    """``measured / predicted-at-boost`` of a profile's rows at ``precision`` and the sustained
    ``sizes``; for rows that give only the largest of the sizes (``n = max``), against the
    prediction at 10240."""
    out = []
    for r in rows:
        if r["profile"] != profile_id or r["precision"] != precision or r["use"] not in uses:
            continue
        if r["n"] in sizes:
            out.append(r["value"] / predicted_tflops(profile_id, r["n"], precision, factor))
        elif r["n"] == "max" and SIZES[-1] in sizes:
            out.append(r["value"] / predicted_tflops(profile_id, SIZES[-1], precision, factor))
    return out


def share(rows: list[dict], capped: str, reference: tuple[str, ...], **kw) -> tuple[float, float, float]:
    """(share, mean r of the capped card, mean r of its reference cards, each card weighted by
    its rows); ``kw`` goes to ``ratios`` (the tensor-core rows: ``uses``, ``precision``)."""
    rc = ratios(rows, capped, **kw.get("capped", {}))
    rr = [x for ref in reference for x in ratios(rows, ref, **kw.get("reference", {}))]
    if not rc or not rr:
        raise ValueError(f"no sustained-size rows for {capped} or {reference}")
    return mean(rc) / mean(rr), mean(rc), mean(rr)


def datapath_factor(rows: list[dict], shared=REFERENCE, one=ONE_DATAPATH, sizes=(FACTOR_N,)):
    """(factor, mean r of the shared-INT32 cards, mean r of the one-datapath cards): r without
    the factor at ``sizes`` (the fit: the N = 8192 row of each uncapped card)."""
    rs = [x for p in shared for x in ratios(rows, p, sizes=sizes, factor=False)]
    r1 = [x for p in one for x in ratios(rows, p, sizes=sizes, factor=False)]
    return mean(rs) / mean(r1), mean(rs), mean(r1)


def tc_share(rows: list[dict]) -> tuple[float, float, float]:
    """The L4's tensor-core share by the FMA share's method: mean r of its TF32/FP16/BF16 rows at
    the sustained sizes (``check_tc``) / mean r of the reference cards' (``reference_tc``), r at boost."""
    def r_of(pid, use):
        return [x for p in ("tf32", "fp16", "bf16") for x in ratios(rows, pid, uses=(use,), precision=p)]

    rc = r_of(FITTED, "check_tc")
    rr = [x for ref in REFERENCE for x in r_of(ref, "reference_tc")]
    return mean(rc) / mean(rr), mean(rc), mean(rr)


def write_profiles(rows: list[dict], profiles_dir: str) -> tuple[float, float]:
    """The L4's ``[power] sustained_clock_ghz`` and the shared-INT32 design's
    ``[compute] fp32_datapath_factor`` (in each of ``SHARED_INT32``'s profiles), with their
    sources; returns (GHz, factor)."""
    from profile_edit import set_datapath_factor, set_sustained_clock

    ghz = set_sustained_clock(FITTED, share(rows, FITTED, REFERENCE)[0], (
        f"the peak share this card held in public fp32 torch.mm throughputs at N = 8192 and 10240 (30 "
        f"back-to-back calls, 3-6 s windows; zzc0721/torch-performance-test-data issue 120), relative to the "
        f"same script's uncapped RTX 4090 (issue 78) and A40 (issue 185), each as measured / opcost's "
        f"prediction at boost; the tensor-core rows of the same runs give {tc_share(rows)[0]:.3f} by the same "
        f"method (one clock for both engines); bench/data/sustained_gemm/public_gemm_throughput.csv, bench/fit_sustained_gemm.py, "
        f"{COMMAND}"), profiles_dir)
    g = datapath_factor(rows)[0]
    for pid, chip in SHARED_INT32.items():
        set_datapath_factor(pid, g, (
            f"the shared-INT32 FP32 design's factor ({chip}; {DESIGN_SOURCE}): mean r of the uncapped RTX 4090 "
            f"and A40 over mean r of the uncapped V100-SXM2, P100-PCIe and A100-PCIe, r = measured / opcost's "
            f"prediction without the factor (each card on its family's gemm_simt set, bench/family_simt.py), public fp32 torch.mm at N = {FACTOR_N} (zzc0721/torch-performance-"
            f"test-data issues 78, 185, 140, 174, 108); bench/data/sustained_gemm/public_gemm_throughput.csv, "
            f"bench/fit_sustained_gemm.py, {COMMAND}"), profiles_dir)
    return ghz, g


def _fmt(xs) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def r_table(rows: list[dict]) -> list[str]:
    """Per profile with fp32 rows at the sustained sizes: r without and with the datapath factor
    (both at boost), and r as shipped (a capped card at its sustained clock)."""
    import hardware_db

    out = ["| profile | use | W per SM | datapath factor | rows | r, no factor (each) | r, with it (each) | "
           "mean r, no factor | mean r, with it | mean r as shipped |", "|---|---|---:|---:|---:|---|---|---:|---:|---:|"]
    profiles = dict.fromkeys(r["profile"] for r in rows if r["profile"] and r["precision"] == "fp32")
    uses = ("fit", "reference", "check_reference", "check", "info", "fit_hopper")
    for pid in profiles:
        r0 = ratios(rows, pid, uses=uses, factor=False)
        if not r0:
            continue
        r1 = ratios(rows, pid, uses=uses)
        p = hardware_db.get(pid)
        clock = p.clock_ghz / p.sustained_clock_ghz if p.sustained_clock_ghz else 1.0
        use = next(r["use"] for r in rows if r["profile"] == pid and (r["n"] in SIZES or r["n"] == "max"))
        out.append(f"| {pid} | {use} | {p.tdp_w / p.units:.2f} | {p.fp32_datapath_factor or 1:g} | {len(r0)} | "
                   f"{_fmt(r0)} | {_fmt(r1)} | {mean(r0):.3f} | {mean(r1):.3f} | {mean(r1) * clock:.3f} |")
    return out


def factor_lines(rows: list[dict]) -> list[str]:
    """The datapath factor: the fit (in-sample), one reference card at a time, and the checks."""
    g, rs, r1 = datapath_factor(rows)
    out = ["## FP32 datapath factor of the shared-INT32 design (GA10x, AD10x)", "",
           f"Fit (in-sample: the N = {FACTOR_N} row of each uncapped card, r without the factor): mean r of "
           f"{', '.join(REFERENCE)} {rs:.3f} / mean r of {', '.join(ONE_DATAPATH)} {r1:.3f} = **{g:.3f}**, written as "
           f"`fp32_datapath_factor` into {', '.join(SHARED_INT32)}. Design: {DESIGN_SOURCE}.", ""]
    for ref in REFERENCE:
        out.append(f"- with {ref} alone: {datapath_factor(rows, shared=(ref,))[0]:.3f}")
    for one in ONE_DATAPATH:
        out.append(f"- against {one} alone: {datapath_factor(rows, one=(one,))[0]:.3f}")
    g10 = datapath_factor(rows, sizes=(10240,))[0]
    r3090 = mean(ratios(rows, "rtx-3090", uses=("info",), factor=False))
    out += ["", "Checks (not fitted): the same ratio at N = 10240 (the same runs' other sustained row) "
            f"{g10:.3f}; the RTX 3090's three `database.md` rows (other runs, largest size) mean r {r3090:.3f} / "
            f"the one-datapath cards' {r1:.3f} = {r3090 / r1:.3f}.", ""]
    return out


def hopper_factor(rows: list[dict]) -> tuple[float, float, float, bool]:
    """(g_H, t, r of the H200's fp32 row, ships): g_H = r(H200 fp32) / mean r(one-datapath cards at
    N = 8192), r without a factor; t = mean r(H200 fp16, bf16) / mean r(A100-SXM4-80GB fp16, bf16), the
    tensor-core rows of the same script; ships by the rule fixed before either was computed
    (``g_H < HOPPER_SHIPS`` and ``|ln t| < |ln g_H| / 2``)."""
    rh = mean(ratios(rows, HOPPER, uses=("fit_hopper",), factor=False))
    r1 = mean([x for p in ONE_DATAPATH for x in ratios(rows, p, sizes=(FACTOR_N,), factor=False)])

    def tc(pid, use):
        return mean([x for p in ("fp16", "bf16") for x in ratios(rows, pid, uses=(use,), precision=p)])

    g, t = rh / r1, tc(HOPPER, "check_tc_hopper") / tc(HOPPER_TC_REF, "reference_tc_hopper")
    return g, t, rh, g < HOPPER_SHIPS and abs(math.log(t)) < abs(math.log(g)) / 2


def nvl_r(nvl: list[dict], precision: str, n: int) -> float:
    """Mean over the H200 NVL's boards of measured / opcost's ``h200-sxm`` prediction with every compute
    peak at ``NVL_CLOCK_GHZ`` / boost (the same GH100, 132 SMs), without a factor, at ``precision``, size n."""
    vals = [r["value"] for r in nvl if r["device"] == "NVIDIA H200 NVL" and r["precision"] == precision
            and r["n"] == n]
    if not vals:
        raise ValueError(f"no H200 NVL {precision} row at N = {n}")
    return mean(vals) / predicted_tflops(HOPPER, n, precision, factor=False, clock_ghz=NVL_CLOCK_GHZ)


def nvl_factor(rows: list[dict], nvl: list[dict]) -> dict:
    """The H200 NVL's Hopper factor by ``hopper_factor``'s method and rule, plus the bridge between the
    two harnesses: g = r(NVL fp32, N = 8192) / mean r(one-datapath cards, torch.mm, N = 8192); t = mean
    r(NVL fp16, bf16 at ``NVL_TC_SIZES``) / mean r(A100-SXM4-80GB fp16, bf16); bridge = ln(r of the RTX
    4090 in the NVL's cuBLASLt harness / its torch.mm r), both at N = 8192; ships iff g < 0.95,
    |ln t| < |ln g| / 2 and |bridge| <= ``BRIDGE_LN`` (the rule fixed before any of them was computed)."""
    r1 = mean([x for p in ONE_DATAPATH for x in ratios(rows, p, sizes=(FACTOR_N,), factor=False)])
    rf = {n: nvl_r(nvl, "fp32", n) for n in sorted({r["n"] for r in nvl if r["device"] == "NVIDIA H200 NVL"
                                                       and r["precision"] == "fp32"})}
    rtc = mean([nvl_r(nvl, p, n) for p in ("fp16", "bf16") for n in NVL_TC_SIZES])
    ref = mean([x for p in ("fp16", "bf16") for x in ratios(rows, HOPPER_TC_REF, uses=("reference_tc_hopper",),
                                                            precision=p)])
    b = mean([r["value"] for r in nvl if r["use"] == "bridge"]) / predicted_tflops("rtx-4090", FACTOR_N, factor=False)
    bridge = math.log(b / mean(ratios(rows, "rtx-4090", sizes=(FACTOR_N,), factor=False)))
    g, t = rf[FACTOR_N] / r1, rtc / ref
    ships = g < HOPPER_SHIPS and abs(math.log(t)) < abs(math.log(g)) / 2 and abs(bridge) <= BRIDGE_LN
    return {"g": g, "t": t, "r": rf, "r_tc": rtc, "r_one": r1, "r_ref_tc": ref, "bridge": bridge,
            "r_4090": b, "ships": ships}


def write_hopper(rows: list[dict], nvl: list[dict], profiles_dir: str) -> float | None:
    """``[compute] fp32_datapath_factor`` = the H200 NVL's g into ``HOPPER_PROFILES`` where its rule is
    met (returns it), else nothing written (None)."""
    from profile_edit import set_datapath_factor

    h = nvl_factor(rows, nvl)
    if not h["ships"]:
        return None
    src = (f"the Hopper FMA-unit factor ({HOPPER_SOURCE}): r of the H200 NVL's public cuBLASLt fp32 GEMM at "
           f"N = {FACTOR_N} (mean of 4 boards; xzwgit/gpu-flops-bench nvidia/results/20260810T090857Z, commit "
           f"ce1f4c7), predicted on h200-sxm at the run's {NVL_CLOCK_GHZ} GHz SM clock without a factor, over the "
           f"uncapped V100-SXM2, P100-PCIe and A100-PCIe's mean r at N = {FACTOR_N} (public torch.mm); its check: "
           f"the same runs' fp16/bf16 rows over the A100-SXM4-80GB's, t = {h['t']:.3f}; fitted on no H100 or H800 "
           f"figure; bench/data/hopper_fp32, bench/fit_sustained_gemm.py, {COMMAND}")
    for pid in HOPPER_PROFILES:
        set_datapath_factor(pid, h["g"], src, profiles_dir)
    return round(h["g"], 3)


def listed_shares(rows: list[dict], device: str, peak_tflops: float) -> list[float]:
    """measured / listed fp32 peak of a device's fp32 rows at the sustained sizes (no opcost prediction:
    for a card without a profile)."""
    return [r["value"] / peak_tflops for r in rows
            if r["device"] == device and r["precision"] == "fp32" and r["n"] in SIZES]


def hopper_lines(rows: list[dict], nvl: list[dict]) -> list[str]:
    """The Hopper rows: the factor the GA10x method gives on the H200 SXM's torch.mm row and on the H200
    NVL's cuBLASLt rows, the tensor-core check and the bridge, the decision."""
    g, t, rh, ships = hopper_factor(rows)
    lt, lg = abs(math.log(t)), abs(math.log(g)) / 2
    h = nvl_factor(rows, nvl)
    h20 = listed_shares(rows, "NVIDIA H20", 44.0)
    h200 = next(r["value"] for r in rows if r["use"] == "fit_hopper") / 66.9
    return ["## Hopper FP32 (H200 SXM and NVL; H100 and H800 rows held out, none read)", "",
            f"- H200 SXM (torch.mm): g_H = r(fp32, the run's largest size, against N = 10240) {rh:.3f} / the "
            f"one-datapath cards' mean r at N = {FACTOR_N} = **{g:.3f}** (the GA10x factor's method); check: t = "
            f"r(H200 fp16, bf16) / r({HOPPER_TC_REF} fp16, bf16) = **{t:.3f}**; rule: "
            f"{'met' if ships else 'not met'} (|ln t| {lt:.3f} against |ln g_H| / 2 {lg:.3f})",
            f"- H200 NVL (cuBLASLt, 4 boards, at its {NVL_CLOCK_GHZ} GHz SM clock): r(fp32) "
            + ", ".join(f"{r:.3f} at N = {n}" for n, r in h["r"].items())
            + f"; g_H = {h['r'][FACTOR_N]:.3f} / {h['r_one']:.3f} = **{h['g']:.3f}** (in-sample: the fit); check: t = "
            f"r(NVL fp16, bf16 at N = {', '.join(map(str, NVL_TC_SIZES))}) {h['r_tc']:.3f} / r({HOPPER_TC_REF}) "
            f"{h['r_ref_tc']:.3f} = **{h['t']:.3f}** (|ln t| {abs(math.log(h['t'])):.3f} against |ln g_H| / 2 "
            f"{abs(math.log(h['g'])) / 2:.3f}); bridge: the RTX 4090's r in that harness {h['r_4090']:.3f} over its "
            f"torch.mm r, ln = {h['bridge']:+.3f} (at most {BRIDGE_LN}); rule "
            f"{'met: written into ' + ', '.join(HOPPER_PROFILES) if h['ships'] else 'not met: nothing written'}",
            f"- the H20 (no profile) holds {_fmt(h20)} of its listed 44 TF at N = 8192, 10240; the H200 "
            f"{h200:.3f} of 66.9 TF; r of the Blackwell rows (no factor, `info`): b200-hgx "
            f"{_fmt(ratios(rows, 'b200-hgx', uses=('info',), factor=False))}, rtx-pro-6000 "
            f"{_fmt(ratios(rows, 'rtx-pro-6000', uses=('info',), factor=False))}", ""]


def report(rows: list[dict]) -> list[str]:
    """The markdown report: r per card, the datapath factor, the L4's fitted share, the tensor-core
    check of its one clock, the T4/P4 checks."""
    import hardware_db

    out = ["# FP32 datapath factor and sustained clocks from public torch.mm throughputs", "",
           f"Command: `{COMMAND}`. Data: `bench/data/sustained_gemm/public_gemm_throughput.csv` (README "
           "there). r = measured TFLOP/s / opcost's prediction at the boost clock, fp32 (FMA units), at "
           "N = 8192 and 10240 (rows `n = max`: the largest of the script's five sizes, against N = 10240); "
           "`as shipped`: a power-capped card at its sustained clock.", ""]
    out += r_table(rows) + [""] + factor_lines(rows) + hopper_lines(rows, read_rows(NVL_DATA))
    s, rc, rr = share(rows, FITTED, REFERENCE)
    clock = hardware_db.get(FITTED).clock_ghz
    out += ["## The L4's sustained clock (in-sample: these rows are the fit)", "",
            f"- L4: mean r {rc:.3f} / reference ({', '.join(REFERENCE)}) mean r {rr:.3f} = share **{s:.3f}**, "
            f"sustained clock {s * clock:.3f} GHz of {clock:g} GHz (the datapath factor is in both r: the ratio "
            "does not depend on it)."]
    for ref in REFERENCE:
        out.append(f"- with {ref} alone as the reference: {share(rows, FITTED, (ref,))[0]:.3f}")
    st, rct, rrt = tc_share(rows)
    l4 = [x for p in ("tf32", "fp16", "bf16") for x in ratios(rows, FITTED, uses=("check_tc",), precision=p)]
    out += ["", "## One clock for both engines (check, not fitted)", "",
            f"- the L4's TF32/FP16/BF16 rows at N = 8192 and 10240 by the same method: mean r {rct:.3f} / the "
            f"reference cards' tensor-core rows (`reference_tc`) mean r {rrt:.3f} = **{st:.3f}**, against "
            f"{s:.3f} from the FMA rows: one sustained clock, applied to the tensor-core peaks too.",
            f"- the L4's tensor-core r at boost (each): {_fmt(l4)}; at the sustained clock: "
            f"{_fmt([x / s for x in l4])}. The reference cards' own tensor-core r (opcost's tensor-core "
            f"constants on them, not the cap): " + "; ".join(
                f"{ref} {mean([x for p in ('tf32', 'fp16', 'bf16') for x in ratios(rows, ref, uses=('reference_tc',), precision=p)]):.3f}"
                for ref in REFERENCE)]
    t4 = hardware_db.get("t4")
    for r in rows:
        if r["profile"] == "t4" and r["precision"] == "fp16" and isinstance(r["n"], int):
            rb = r["value"] / predicted_tflops("t4", r["n"], "fp16")
            out.append(f"- the T4's cuBLAS fp16 {r['n']}^3 figure ({r['value']:g} TF, NVIDIA forum; `info`): r "
                       f"{rb:.3f} at boost, {rb * t4.clock_ghz / t4.sustained_clock_ghz:.3f} at its NeuSight-fitted "
                       f"sustained clock ({t4.sustained_clock_ghz:g} of {t4.clock_ghz:g} GHz, fitted on fp32 rows only)")
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
    ap.add_argument("--write", action="store_true",
                    help="write the L4's sustained clock and the shared-INT32 design's datapath factor into the profiles")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "fit_sustained_gemm.md"))
    args = ap.parse_args(argv)
    rows = read_rows()
    if args.write:
        import hardware_db

        ghz, g = write_profiles(rows, os.path.join(ROOT, "hardware_db", "profiles"))
        gh = write_hopper(rows, read_rows(NVL_DATA), os.path.join(ROOT, "hardware_db", "profiles"))
        hardware_db.clear_cache()   # the report reads the written figures
        print(f"wrote sustained_clock_ghz = {ghz} to {FITTED}, fp32_datapath_factor = {g:.3f} to "
              f"{', '.join(SHARED_INT32)}" + (f", {gh} to {', '.join(HOPPER_PROFILES)}" if gh else ""))
    lines = report(rows)
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
