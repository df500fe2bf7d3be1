"""Fit the NCCL collective model (analyzer/scaling/collectives.py, ``nccl``) on nccl-tests runs and
score it leave-one-system-out; write the constants file and a markdown report.

Data: ``../shared/measurements/gpu/aic_nccl.csv`` beside the repository (``--csv``): rows with
library nccl-tests, dtype float16, collective all_reduce or all_gather, one node of 2, 4 or 8
GPUs, 512 B .. 512 MiB; the median over repeats and tables of each (system, collective, GPUs,
size). No H100 row is in that file (its README); the script stops if one appears.

Systems and their links come from ``hardware_db/links/nodes.toml`` (the node whose
``aic_system`` names the system): the bottleneck link of a ring over n of its GPUs
(``Node.ring_gbs``; the datasheet NVLink figure per direction on NVSwitch nodes) and, where the
switches reduce (NVLS), NCCL's per-architecture NVLS efficiency (``nvls_efficiency``: Hopper 0.85,
Blackwell 0.74). Model, per call, the least over algorithms and protocols of

    base + steps * step(protocol) + (F + w) * nbytes / rate,   rate = bw * eff(protocol) * c(collective),
    NVLS: rate = bw * nvls_efficiency

(steps and F per algorithm in the module docstring of analyzer/scaling/collectives.py; w, the
output share, per byte of each rank's output, which is nbytes for all-reduce and all-gather). Nine
shared constants: step and eff for LL, LL128, Simple; NVLS step; c for all-gather (all-reduce 1);
w. Two forms were chosen against by the mean over the NVSwitch systems of the strict
leave-one-system-out MAPE (a cross-validation figure), and the flags score them:
``--no-output-share`` (w = 0) and ``--nvls-channels`` (NVLS rate = min(bw, NCCL's NVLS channel
count, 16 Hopper / 24 Blackwell, x a fitted bytes/s per channel): ten constants). The per-call base is a property of the run (host launch path, driver;
nccl-tests runs without CUDA graphs), so each system gets its own in the fit; the shipped base is
their median. The constants minimise the mean absolute percentage error (Nelder-Mead over log /
logit parameters, a few starts). The fit population is the NVSwitch systems. Leave-one-system-out:
each NVSwitch system is scored with the constants fitted on the other NVSwitch systems, twice:
strict (base = the median of the fitted systems' bases) and run base (the held-out run's own
base, the one value that fits its rows of at most 4 KiB; every other constant from the others).
The PCIe systems (their topology beyond the x16 link is not on record) are scored with the
constants fitted on all NVSwitch systems, and with those fitted on the other PCIe system alone.
The shipped constants are the fit on all NVSwitch systems.

    PYTHONPATH=$PWD python bench/fit_collectives.py [--csv PATH] [--constants FILE.json] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize

from analyzer.scaling import collectives as C
from hardware_db import links
from report_lines import emit_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "..", "shared", "measurements", "gpu", "aic_nccl.csv")
CONSTANTS = os.path.join(ROOT, "hardware_db", "collectives", "nccl.json")
COLLS = ("all_reduce", "all_gather")
KINDS = C.PROTOCOLS + ("nvls",)   # the three protocols' (step, eff) and NVLS's (step, channel rate)
RUN_BASE_BYTES = 4096   # rows that measure a run's per-call base (latency floor)
FIT_W = True   # fit the output share w (False: w = 0, the form without it)
NVLS_CHANNELS = False   # True: NVLS rate = min(bw, channels x a fitted rate), the form not shipped


def n_params() -> int:
    """Shared parameters (``unpack``): nine, ten with the NVLS channel rate."""
    return 10 if NVLS_CHANNELS else 9


@dataclass(frozen=True)
class ChannelConstants(C.NcclConstants):
    """The constants of the ``--nvls-channels`` form: NVLS moves at most ``nvls_channel_Bps`` per
    channel (bench only; the library ships the efficiency form)."""

    nvls_channel_Bps: float = 0.0
COMMAND = "PYTHONPATH=$PWD python bench/fit_collectives.py --out bench/results/collectives_nccl_fit.md"


def systems() -> dict[str, links.Node]:
    return {n.aic_system: n for n in links.list_nodes() if n.aic_system}


def load(path: str = CSV) -> tuple[list[tuple], int]:
    """([(system, collective, gpus, bytes, median seconds, repeats)], raw rows used)."""
    known = systems()
    raw = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["device_system"] == "h100_sxm" or "H100" in r["device_name"]:
                raise SystemExit("an H100 row is in the collective data; H100 is held out")
            if (r["device_system"] in known and r["library"] == "nccl-tests"
                    and r["dtype"] == "float16" and r["collective"] in COLLS):
                key = (r["device_system"], r["collective"], int(r["num_gpus"]), int(r["message_bytes"]))
                raw[key].append(float(r["latency_us"]) * 1e-6)
    rows = [(*k, statistics.median(ts), len(ts)) for k, ts in sorted(raw.items())]
    return rows, sum(len(v) for v in raw.values())


def ring_bw(node: links.Node, n: int) -> float:
    """Bytes/s per direction of a ring over ``n`` of the node's GPUs (its bottleneck link)."""
    return node.ring_gbs(n)[0] * 1e9


def design(rows, nodes):
    """Per candidate (row, kind index, steps, F*bytes, ring bytes/s, NVLS channels, collective
    index, output bytes, NVLS efficiency) as arrays, from the library's ``candidates``."""
    ri, ki, st, fb, bw, ch, ci, ob, ne = [], [], [], [], [], [], [], [], []
    for i, (s, coll, n, nb, _, _) in enumerate(rows):
        node = nodes[s]
        for alg, proto, steps, f in C.candidates(coll, n, nvls=node.nvls):
            ri.append(i)
            ki.append(KINDS.index("nvls" if alg == "nvls" else proto))
            st.append(steps)
            fb.append(f * nb)
            bw.append(ring_bw(node, n))
            ch.append(node.nvls_channels or 0)
            ci.append(COLLS.index(coll))
            ob.append(nb)   # all-reduce and all-gather: each rank's output is the message
            ne.append(node.nvls_efficiency or 0.0)
    return tuple(np.array(a) for a in (ri, ki, st, fb, bw, ch, ci, ob, ne))


def unpack(theta, base_s: float = 0.0) -> C.NcclConstants:
    """The ``n_params()`` shared parameters, kept physical: step LL <= LL128 <= Simple (each adds
    a positive amount), NVLS step; eff LL <= LL128 <= Simple (each a fraction of the next);
    all-gather factor; output share (>= 0); with ``--nvls-channels`` the NVLS bytes/s per channel.
    The per-call base is given (a property of the run)."""
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    s1, s2, s3, sn, e3, e2, e1, c_ag, w, *rate = (float(v) for v in np.clip(theta, -60, 60))
    step = {"LL": np.exp(s1)}
    step["LL128"] = step["LL"] + np.exp(s2)
    step["Simple"] = step["LL128"] + np.exp(s3)
    eff = {"Simple": sig(e3)}
    eff["LL128"] = eff["Simple"] * sig(e2)
    eff["LL"] = eff["LL128"] * sig(e1)
    ag = float(sig(c_ag))
    kw = dict(base_s=float(base_s), step_s={p: float(step[p]) for p in C.PROTOCOLS},
              eff={p: float(eff[p]) for p in C.PROTOCOLS},
              coll_eff={"all_reduce": 1.0, "all_gather": ag, "reduce_scatter": ag},
              nvls_step_s=float(np.exp(sn)), out_share=float(np.exp(w)) if FIT_W else 0.0)
    if NVLS_CHANNELS:
        return ChannelConstants(**kw, nvls_channel_Bps=float(np.exp(rate[0])))
    return C.NcclConstants(**kw)


def predict_fast(k: C.NcclConstants, d, nrows: int, base=None) -> np.ndarray:
    """Each row's least candidate time; ``base``: per-row per-call cost (default ``k.base_s``)."""
    ri, ki, st, fb, bw, ch, ci, ob, ne = d
    step = np.array([k.step_s[p] for p in C.PROTOCOLS] + [k.nvls_step_s])
    eff = np.array([k.eff[p] for p in C.PROTOCOLS] + [1.0])
    ce = np.array([k.coll_eff[c] for c in COLLS])
    nvls = ki == len(C.PROTOCOLS)
    nv_rate = np.minimum(bw, ch * k.nvls_channel_Bps) if NVLS_CHANNELS else bw * ne
    rate = np.where(nvls, nv_rate, bw * eff[ki] * ce[ci])
    t = st * step[ki] + (fb + k.out_share * ob) / rate
    out = np.full(nrows, np.inf)
    np.minimum.at(out, ri, t)
    return out + (k.base_s if base is None else base)


def predict_library(k: C.NcclConstants, rows, nodes) -> list[C.Choice]:
    """Each row through the library's ``nccl`` (the shipped form only)."""
    return [C.nccl(coll, nb, n, ring_bw(nodes[s], n), k, nvls_efficiency=nodes[s].nvls_efficiency or 0.0)
            for s, coll, n, nb, _, _ in rows]


def predict(k: C.NcclConstants, rows, nodes) -> list[tuple[float, str, str]]:
    """Each row's (least time, algorithm, protocol) from ``design`` (either form)."""
    d = design(rows, nodes)
    ri, ki = d[0], d[1]
    one = predict_fast(k, (np.arange(len(ri)), *d[1:]), len(ri))   # each candidate's own time
    out = []
    for i in range(len(rows)):
        j = np.flatnonzero(ri == i)
        b = j[int(np.argmin(one[j]))]
        kind = KINDS[ki[b]]
        out.append((float(one[b]), "nvls" if kind == "nvls" else "ring", "Simple" if kind == "nvls" else kind))
    return out


def fit(rows, nodes) -> tuple[C.NcclConstants, dict]:
    """(shared constants with the median per-call base, {system: its own per-call base}): one
    base per system (a property of the run), the ``NP`` other constants shared."""
    names = sorted({r[0] for r in rows})
    d = design(rows, nodes)
    meas = np.array([r[4] for r in rows])
    si = np.array([names.index(r[0]) for r in rows])

    NP = n_params()

    def loss(theta):
        pred = predict_fast(unpack(theta[:NP]), d, len(rows), np.exp(theta[NP:])[si])
        return float(np.mean(np.abs(pred / meas - 1)))

    best = None
    for eff0, nvls0 in ((0.3, 3e-6), (0.7, 3e-6), (0.3, 20e-6), (0.7, 20e-6)):
        lg = np.log(eff0 / (1 - eff0))
        r = np.r_[np.log(0.5e-6), np.log(1e-6), np.log(3e-6), np.log(nvls0), lg, 1.0, 0.0,
                  1.0, np.log(0.2), [np.log(16e9)] * NVLS_CHANNELS, [np.log(6e-6)] * len(names)]
        for _ in range(4):   # restarts of Nelder-Mead from its last point
            r = minimize(loss, r, method="Nelder-Mead",
                         options={"maxiter": 12000, "xatol": 1e-5, "fatol": 1e-7}).x
        if best is None or loss(r) < loss(best):
            best = r
    bases = {s: float(np.exp(b)) for s, b in zip(names, best[NP:])}
    return unpack(best[:NP], float(np.median(list(bases.values())))), bases


def run_base(k: C.NcclConstants, rows, nodes) -> C.NcclConstants:
    """``k`` with the per-call base of the run ``rows`` came from: the one value (0.1 us grid)
    that minimises the MAPE of its rows of at most ``RUN_BASE_BYTES`` (the latency floor a
    two-minute nccl-tests run on the target measures), the shared constants kept."""
    small = [r for r in rows if r[3] <= RUN_BASE_BYTES]
    d = design(small, nodes)
    meas = np.array([r[4] for r in small])
    floor = predict_fast(replace(k, base_s=0.0), d, len(small))
    grid = np.arange(1, 301) * 1e-7
    err = [float(np.mean(np.abs((floor + b) / meas - 1))) for b in grid]
    return replace(k, base_s=float(grid[int(np.argmin(err))]))


def score(k, rows, nodes) -> dict:
    """Per (system, collective): MAPE %, bias % (mean signed error), rows; MAPE of >= 1 MiB, of
    the rows above ``RUN_BASE_BYTES`` (those a run base is not fitted on) and of each GPU count."""
    pred = np.array([t for t, _, _ in predict(k, rows, nodes)])
    out = {}
    for key in sorted({(r[0], r[1]) for r in rows}):
        idx = [i for i, r in enumerate(rows) if (r[0], r[1]) == key]
        e = pred[idx] / np.array([rows[i][4] for i in idx]) - 1
        big = np.array([rows[i][3] >= 1 << 20 for i in idx])
        gpus = np.array([rows[i][2] for i in idx])
        above = np.array([rows[i][3] > RUN_BASE_BYTES for i in idx])
        out[key] = {"mape_pct": round(float(np.mean(np.abs(e)) * 100), 2),
                    "bias_pct": round(float(np.mean(e) * 100), 2), "rows": len(idx),
                    "mape_ge_1mib_pct": round(float(np.mean(np.abs(e[big])) * 100), 2),
                    "mape_above_run_base_rows_pct": round(float(np.mean(np.abs(e[above])) * 100), 2),
                    "mape_by_gpus_pct": {int(g): round(float(np.mean(np.abs(e[gpus == g])) * 100), 2)
                                         for g in sorted(set(gpus))}}
    return out


def to_json(k: C.NcclConstants) -> dict:
    return {"base_us": round(k.base_s * 1e6, 4), "output_share": round(k.out_share, 4),
            "protocols": {p: {"step_us": round(k.step_s[p] * 1e6, 4), "efficiency": round(k.eff[p], 4)}
                          for p in C.PROTOCOLS},
            "nvls": {"step_us": round(k.nvls_step_s * 1e6, 4),
                     **({"channel_gbs": round(k.nvls_channel_Bps / 1e9, 4)} if NVLS_CHANNELS else {})},
            "collective_efficiency": {c: round(v, 4) for c, v in k.coll_eff.items()}}


def loso(rows, nodes, pop) -> dict:
    """{held-out system: (strict constants, run-base constants, score strict, score run base,
    fitted_on)}: each NVSwitch system with the constants fitted on the other NVSwitch systems,
    each PCIe system with those fitted on all of them. Strict: the median per-call base of the
    fitted systems; run base: the held-out run's own (``run_base``)."""
    full, _ = fit([r for r in rows if r[0] in pop], nodes)
    out = {}
    for s in sorted({r[0] for r in rows}):
        on = [p for p in pop if p != s]
        k = fit([r for r in rows if r[0] in on], nodes)[0] if s in pop else full
        sub = [r for r in rows if r[0] == s]
        kr = run_base(k, sub, nodes)
        out[s] = (k, kr, score(k, sub, nodes), score(kr, sub, nodes), on)
    return out


def pcie_family(rows, nodes, pcie) -> dict:
    """{held-out PCIe system: (constants fitted on the other PCIe system alone, run-base
    constants, score strict, score run base, fitted_on)}: one system to fit on, so thin."""
    out = {}
    for s in pcie:
        on = [p for p in pcie if p != s]
        k, _ = fit([r for r in rows if r[0] in on], nodes)
        sub = [r for r in rows if r[0] == s]
        kr = run_base(k, sub, nodes)
        out[s] = (k, kr, score(k, sub, nodes), score(kr, sub, nodes), on)
    return out


def table(res: dict) -> list[dict]:
    """The JSON rows of a leave-one-out result (``loso`` / ``pcie_family``)."""
    out = []
    for s, (k, kr, sc, sr, on) in res.items():
        for (_, c), v in sc.items():
            r = sr[(s, c)]
            out.append({"held_out": s, "collective": c, **v, "fold_nvls": to_json(k)["nvls"],
                        "run_base_us": round(kr.base_s * 1e6, 2),
                        "run_base_mape_pct": r["mape_pct"], "run_base_bias_pct": r["bias_pct"],
                        "run_base_mape_ge_1mib_pct": r["mape_ge_1mib_pct"],
                        "run_base_mape_above_run_base_rows_pct": r["mape_above_run_base_rows_pct"],
                        "run_base_mape_by_gpus_pct": r["mape_by_gpus_pct"], "fitted_on": on})
    return out


FLOOR = ("What the fit cannot carry to a held-out system: its small-message floor. bench/nccl_floor.py "
         "fits each run's medians of <= 4 KiB as a + b x ring steps: a is 6.5-8.1 us on A100 and the four "
         "Blackwell systems and 4.6 us on H200, b 0.98 (A100), 1.35-1.41 (Blackwell), 0.84 (H200) us per "
         "step; a further per-GPU term c x (GPUs - 2) is -0.19..+0.28 us on every system (no host launch "
         "per GPU). Not the NCCL version (folder 2.29.2: 4.8 us on H200, 6.8-8.2 on Blackwell). "
         "NCCL's own cost model has one base and one NVLink per-step latency for every architecture "
         "(NVIDIA/nccl src/graph/tuning.cc, ncclTunerConstantsDefaults: ring base LL/LL128/Simple "
         "6.6/14/8.4 us, NVLink per step 0.6/1.9/3.4 us; architecture enters only bandwidth caps and "
         "nvlsEfficiency), so it offers no Hopper latency to take. A lower Hopper per-step latency "
         "is reported (NVIDIA/nccl issue 1940: tuned 8-byte all-reduce about 3 us on 8 x B200 against "
         "2.3 us on 8 x H200/H800), but no other system here is Hopper (H100 is held out), so no fit "
         "can learn it. The run's threading is not recorded either: aiconfigurator's "
         "collector/network/collect_nccl.py has run nccl-tests both as -t num_gpus (a thread per GPU) "
         "and -g num_gpus (one thread for all) in its history.")


def constants_doc(full, bases, rows, nodes, pop, nraw, sha, res, fam) -> dict:
    return {"model": "nccl alpha-beta per algorithm and protocol (analyzer.scaling.collectives.nccl)",
            **to_json(full),
            "provenance": {
                "data": "../shared/measurements/gpu/aic_nccl.csv (aiconfigurator nccl-tests tables; "
                        "its README says how they were measured)",
                "data_sha256": sha,
                "selection": "library nccl-tests, dtype float16, collective all_reduce and all_gather, "
                             "one node of 2/4/8 GPUs, 512 B .. 512 MiB; median over repeats and tables",
                "fitted_on_systems": pop,
                "rows": sum(1 for r in rows if r[0] in pop),
                "raw_rows": nraw,
                "base_us_by_system": {s: round(v * 1e6, 3) for s, v in bases.items()},
                "base": "the per-call cost is a property of the run (host launch and synchronisation "
                        "path, driver; nccl-tests without CUDA graphs): one per system in the fit, the "
                        "shipped base_us is their median",
                "links": {s: {"node": nodes[s].id, "intra_link": nodes[s].intra_link,
                              "ring_gbs": [nodes[s].ring_gbs(n)[0] for n in (2, 4, 8)],
                              "topology_on_record": nodes[s].ring_gbs(8)[1],
                              "nvls_channels": nodes[s].nvls_channels,
                              "nvls_efficiency": nodes[s].nvls_efficiency}
                          for s in sorted({r[0] for r in rows})},
                "objective": "mean absolute percentage error, Nelder-Mead over log/logit parameters",
                "form_choice": "chosen by the mean over the NVSwitch systems of the strict "
                               "leave-one-system-out MAPE (a cross-validation figure): the output share w "
                               "fitted, over w = 0 (--no-output-share scores that form); the NVLS rate the "
                               "link x NCCL's per-architecture NVLS efficiency (nodes.toml), over "
                               "min(link, NCCL's channels x a fitted rate per channel) (--nvls-channels)",
                "command": COMMAND,
                "h100": "no H100 row read or used",
                "floor": FLOOR},
            "leave_one_system_out": table(res),
            "pcie_fitted_on_the_other_pcie_system": table(fam)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default=CSV)
    ap.add_argument("--constants", default=CONSTANTS, help="constants file to write")
    ap.add_argument("--out", default=None, help="markdown report to write")
    ap.add_argument("--no-write", action="store_true",
                    help="fit and score, print the report; leave the constants file alone")
    ap.add_argument("--no-output-share", action="store_true",
                    help="fit and score the form without the output share (w = 0)")
    ap.add_argument("--nvls-channels", action="store_true",
                    help="fit and score the NVLS form min(bw, channels x a fitted rate per channel)")
    a = ap.parse_args()
    global FIT_W, NVLS_CHANNELS
    FIT_W = not a.no_output_share
    NVLS_CHANNELS = a.nvls_channels
    sys.modules["fit_collectives"] = sys.modules[__name__]   # the report reads these flags too
    if NVLS_CHANNELS or not FIT_W:
        a.no_write = True   # a form not shipped: scored, never written
    nodes = systems()
    rows, nraw = load(a.csv)
    pop = sorted({r[0] for r in rows if nodes[r[0]].nvswitch})
    pcie = sorted({r[0] for r in rows} - set(pop))
    full, bases = fit([r for r in rows if r[0] in pop], nodes)
    res, fam = loso(rows, nodes, pop), pcie_family(rows, nodes, pcie)
    own = {}   # each system's own fit: the best the model's form does on it (in sample)
    for s in sorted({r[0] for r in rows}):
        sub = [r for r in rows if r[0] == s]
        k = fit(sub, nodes)[0]
        own[s] = (k, score(k, sub, nodes))
    # the vectorised fit and the library agree (the shipped form), choices included
    fast = predict(full, rows, nodes)
    if not NVLS_CHANNELS:
        lib = predict_library(full, rows, nodes)
        assert np.allclose([t for t, _, _ in fast], [c.comm.total for c in lib], rtol=1e-9), \
            "vectorised fit and library disagree"
        assert [(a_, p) for _, a_, p in fast] == [(c.algorithm, c.protocol) for c in lib]
    with open(a.csv, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    doc = constants_doc(full, bases, rows, nodes, pop, nraw, sha, res, fam)
    doc["own_fit_in_sample"] = [{"system": s, "collective": c, **v, "base_us": round(k.base_s * 1e6, 3)}
                                for s, (k, sc) in own.items() for (_, c), v in sc.items()]
    if not a.no_write:
        os.makedirs(os.path.dirname(a.constants), exist_ok=True)
        with open(a.constants, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    from collectives_report import report   # the markdown report's tables
    emit_text(a.out, report(full, bases, res, fam, rows, nodes, pop, nraw, own))


if __name__ == "__main__":
    main()
