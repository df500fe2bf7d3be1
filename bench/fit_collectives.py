"""Fit the NCCL collective model (analyzer/scaling/collectives.py, ``nccl``) on nccl-tests runs and
score it leave-one-system-out; write the constants file and a markdown report.

Data: ``../shared/measurements/gpu/aic_nccl.csv`` beside the repository (``--csv``): rows with
library nccl-tests, dtype float16, collective all_reduce or all_gather, one node of 2, 4 or 8
GPUs, 512 B .. 512 MiB; the median over repeats and tables of each (system, collective, GPUs,
size). No H100 row is in that file (its README); the script stops if one appears.

Systems and their links come from ``hardware_db/links/nodes.toml`` (the node whose
``aic_system`` names the system): the intra-node link's datasheet bandwidth per direction and
whether the switches reduce (NVLS). Model, per call, the least over algorithms and protocols of

    base + steps * step(protocol) + F * nbytes / (bw * eff(protocol) * c(collective))

(steps and F per algorithm in the module docstring of analyzer/scaling/collectives.py). Ten
constants: base; step and eff for LL, LL128, Simple and NVLS; c for all-gather (all-reduce 1).
They minimise the mean absolute percentage error (Nelder-Mead over log / logit parameters, a few
starts). The fit population is the NVSwitch systems (NVLink through switches: every pair of GPUs
at the datasheet per-GPU NVLink bandwidth). Leave-one-system-out: each NVSwitch system is scored
with constants fitted on the other NVSwitch systems; the PCIe systems (not in the population:
their measured bandwidth beyond two GPUs is set by the server's PCIe/CPU topology, which no
datasheet link here describes) are scored with the constants fitted on all NVSwitch systems.
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
from collections import defaultdict

import numpy as np
from scipy.optimize import minimize

from analyzer.scaling import collectives as C
from hardware_db import links

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "..", "shared", "measurements", "gpu", "aic_nccl.csv")
CONSTANTS = os.path.join(ROOT, "hardware_db", "collectives", "nccl.json")
COLLS = ("all_reduce", "all_gather")
KINDS = C.PROTOCOLS + ("nvls",)   # the four (step, eff) pairs
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


def design(rows, nodes):
    """Per candidate (row, kind index, steps, F*bytes/bw, collective index) as arrays, from the
    library's ``candidates``."""
    ri, ki, st, fb, ci = [], [], [], [], []
    for i, (s, coll, n, nb, _, _) in enumerate(rows):
        node = nodes[s]
        bw = links.get(node.intra_link).bytes_per_s
        for alg, proto, steps, f in C.candidates(coll, n, nvls=node.nvls):
            ri.append(i)
            ki.append(KINDS.index("nvls" if alg == "nvls" else proto))
            st.append(steps)
            fb.append(f * nb / bw)
            ci.append(COLLS.index(coll))
    return tuple(np.array(a) for a in (ri, ki, st, fb, ci))


def unpack(theta) -> C.NcclConstants:
    """Parameters kept physical: step LL <= LL128 <= Simple (each adds a positive amount) and
    eff LL <= LL128 <= Simple (each a fraction of the next); NVLS its own step and eff."""
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    base, s1, s2, s3, sn, e3, e2, e1, en, c_ag = (float(v) for v in theta)
    step = {"LL": np.exp(s1)}
    step["LL128"] = step["LL"] + np.exp(s2)
    step["Simple"] = step["LL128"] + np.exp(s3)
    eff = {"Simple": sig(e3)}
    eff["LL128"] = eff["Simple"] * sig(e2)
    eff["LL"] = eff["LL128"] * sig(e1)
    ag = float(sig(c_ag))
    return C.NcclConstants(base_s=float(np.exp(base)),
                           step_s={p: float(step[p]) for p in C.PROTOCOLS},
                           eff={p: float(eff[p]) for p in C.PROTOCOLS},
                           coll_eff={"all_reduce": 1.0, "all_gather": ag, "reduce_scatter": ag},
                           nvls_step_s=float(np.exp(sn)), nvls_eff=float(sig(en)))


def predict_fast(k: C.NcclConstants, d, nrows: int) -> np.ndarray:
    ri, ki, st, fb, ci = d
    step = np.array([k.step_s[p] for p in C.PROTOCOLS] + [k.nvls_step_s])
    eff = np.array([k.eff[p] for p in C.PROTOCOLS] + [k.nvls_eff])
    ce = np.array([k.coll_eff[c] for c in COLLS])
    t = k.base_s + st * step[ki] + fb / (eff[ki] * ce[ci])
    out = np.full(nrows, np.inf)
    np.minimum.at(out, ri, t)
    return out


def predict_library(k: C.NcclConstants, rows, nodes) -> list[C.Choice]:
    return [C.nccl(coll, nb, n, links.get(nodes[s].intra_link).bytes_per_s, k, nvls=nodes[s].nvls)
            for s, coll, n, nb, _, _ in rows]


def fit(rows, nodes) -> C.NcclConstants:
    d = design(rows, nodes)
    meas = np.array([r[4] for r in rows])

    def loss(theta):
        return float(np.mean(np.abs(predict_fast(unpack(theta), d, len(rows)) / meas - 1)))

    best = None
    for eff0 in (0.3, 0.7):
        lg = np.log(eff0 / (1 - eff0))
        x0 = np.array([np.log(6e-6), np.log(0.5e-6), np.log(1e-6), np.log(3e-6), np.log(3e-6),
                       lg, 1.0, 0.0, lg, 1.0])
        r = x0
        for _ in range(4):   # restarts of Nelder-Mead from its last point
            r = minimize(loss, r, method="Nelder-Mead",
                         options={"maxiter": 6000, "xatol": 1e-5, "fatol": 1e-7}).x
        if best is None or loss(r) < loss(best):
            best = r
    return unpack(best)


def score(k, rows, nodes) -> dict:
    """Per (system, collective): MAPE %, bias % (mean signed error), rows."""
    pred = np.array([c.comm.total for c in predict_library(k, rows, nodes)])
    out = {}
    for key in sorted({(r[0], r[1]) for r in rows}):
        idx = [i for i, r in enumerate(rows) if (r[0], r[1]) == key]
        e = pred[idx] / np.array([rows[i][4] for i in idx]) - 1
        big = np.array([rows[i][3] >= 1 << 20 for i in idx])
        out[key] = {"mape_pct": round(float(np.mean(np.abs(e)) * 100), 2),
                    "bias_pct": round(float(np.mean(e) * 100), 2), "rows": len(idx),
                    "mape_ge_1mib_pct": round(float(np.mean(np.abs(e[big])) * 100), 2)}
    return out


def to_json(k: C.NcclConstants) -> dict:
    return {"base_us": round(k.base_s * 1e6, 4),
            "protocols": {p: {"step_us": round(k.step_s[p] * 1e6, 4), "efficiency": round(k.eff[p], 4)}
                          for p in C.PROTOCOLS},
            "nvls": {"step_us": round(k.nvls_step_s * 1e6, 4), "efficiency": round(k.nvls_eff, 4)},
            "collective_efficiency": {c: round(v, 4) for c, v in k.coll_eff.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default=CSV)
    ap.add_argument("--constants", default=CONSTANTS, help="constants file to write")
    ap.add_argument("--out", default=None, help="markdown report to write")
    a = ap.parse_args()
    nodes = systems()
    rows, nraw = load(a.csv)
    pop = sorted({r[0] for r in rows if nodes[r[0]].nvswitch})
    others = sorted({r[0] for r in rows} - set(pop))
    full = fit([r for r in rows if r[0] in pop], nodes)
    loso = {}
    for s in pop:
        k = fit([r for r in rows if r[0] in pop and r[0] != s], nodes)
        loso[s] = (k, score(k, [r for r in rows if r[0] == s], nodes))
    for s in others:
        loso[s] = (full, score(full, [r for r in rows if r[0] == s], nodes))
    insample = score(full, [r for r in rows if r[0] in pop], nodes)
    own = {}   # each system's own fit: the best the ten constants do on it (in sample)
    for s in sorted({r[0] for r in rows}):
        sub = [r for r in rows if r[0] == s]
        k = fit(sub, nodes)
        own[s] = (k, score(k, sub, nodes))
    # the vectorised fit and the library agree
    d = design(rows, nodes)
    fast = predict_fast(full, d, len(rows))
    lib = np.array([c.comm.total for c in predict_library(full, rows, nodes)])
    assert np.allclose(fast, lib, rtol=1e-9), "vectorised fit and library disagree"
    with open(a.csv, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    table = [{"held_out": s, "collective": c, **v, "fitted_on": [p for p in pop if p != s] if s in pop else pop}
             for s, (_, sc) in loso.items() for (_, c), v in sc.items()]
    doc = {"model": "nccl alpha-beta per algorithm and protocol (analyzer.scaling.collectives.nccl)",
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
               "links": {s: {"node": nodes[s].id, "intra_link": nodes[s].intra_link,
                             "nvls": nodes[s].nvls} for s in sorted({r[0] for r in rows})},
               "objective": "mean absolute percentage error, Nelder-Mead over log/logit parameters",
               "command": COMMAND,
               "h100": "no H100 row read or used"},
           "leave_one_system_out": table}
    os.makedirs(os.path.dirname(a.constants), exist_ok=True)
    with open(a.constants, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    doc["own_fit_in_sample"] = [{"system": s, "collective": c, **v, "base_us": round(k.base_s * 1e6, 3)}
                                for s, (k, sc) in own.items() for (_, c), v in sc.items()]
    with open(a.constants, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    text = report(full, loso, insample, rows, nodes, pop, others, nraw, own)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


def report(full, loso, insample, rows, nodes, pop, others, nraw, own) -> str:
    j = to_json(full)
    L = ["# NCCL collective model: fit and leave-one-system-out score", "",
         f"Command: `{COMMAND}` (writes `hardware_db/collectives/nccl.json`).", "",
         "Data: `../shared/measurements/gpu/aic_nccl.csv`, nccl-tests all_reduce and all_gather, fp16, "
         f"one node of 2/4/8 GPUs, 512 B to 512 MiB: {len(rows)} (system, collective, GPUs, size) "
         f"medians of {nraw} rows. No H100 data.", "",
         "Model (`analyzer.scaling.collectives.nccl`): per call the least over ring (LL, LL128, Simple) "
         "and, on NVLS nodes, NVLS of `base + steps x step + F x bytes / (bw x eff x c)`; bw = the "
         "node's datasheet NVLink/PCIe bandwidth per direction (hardware_db/links/nodes.toml).", "",
         f"Constants fitted on all NVSwitch systems ({', '.join(pop)}): base {j['base_us']} us; "
         + "; ".join(f"{p} step {v['step_us']} us, eff {v['efficiency']}" for p, v in j["protocols"].items())
         + f"; NVLS step {j['nvls']['step_us']} us, eff {j['nvls']['efficiency']}; all-gather c "
         f"{j['collective_efficiency']['all_gather']}.", "",
         "## Leave one system out", "",
         "NVSwitch systems: scored with constants fitted on the other NVSwitch systems. PCIe systems "
         "(marked *): scored with the constants fitted on all NVSwitch systems (not in the fit population).", "",
         "Own fit: the same ten constants fitted on that system alone (in sample; what the model's "
         "form can do there), with its per-call base.", "",
         "| system | node | link | collective | rows | MAPE | bias | MAPE >= 1 MiB | own fit MAPE (base) |",
         "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for s, (_, sc) in loso.items():
        ko, osc = own[s]
        for (_, c), v in sc.items():
            ov = osc[(s, c)]
            L.append(f"| {s}{' *' if s in others else ''} | {nodes[s].id} | {nodes[s].intra_link} | {c} "
                     f"| {v['rows']} | {v['mape_pct']:.1f}% | {v['bias_pct']:+.1f}% | "
                     f"{v['mape_ge_1mib_pct']:.1f}% | {ov['mape_pct']:.1f}% ({ko.base_s * 1e6:.1f} us) |")
    L += ["", "## In sample (constants above, NVSwitch systems)", "",
          "| system | collective | rows | MAPE | bias |", "|---|---|---:|---:|---:|"]
    for (s, c), v in insample.items():
        L.append(f"| {s} | {c} | {v['rows']} | {v['mape_pct']:.1f}% | {v['bias_pct']:+.1f}% |")
    L += ["", "## Per GPU count (leave one system out)", "",
          "| system | collective | GPUs | MAPE, all sizes | <= 64 KiB | >= 64 MiB | choice at 4 KiB / 1 MiB / 256 MiB |",
          "|---|---|---:|---:|---:|---:|---|"]
    for s, (k, _) in loso.items():
        for c in COLLS:
            for n in (2, 4, 8):
                sub = [r for r in rows if r[0] == s and r[1] == c and r[2] == n]
                if not sub:
                    continue
                pred = predict_library(k, sub, nodes)
                e = np.array([p.comm.total / r[4] - 1 for p, r in zip(pred, sub)])
                nb = np.array([r[3] for r in sub])
                f = lambda m: f"{np.mean(np.abs(e[m])) * 100:.1f}%" if m.any() else "-"  # noqa: E731
                ch = {r[3]: f"{p.algorithm}/{p.protocol}" for p, r in zip(pred, sub)}
                L.append(f"| {s} | {c} | {n} | {f(nb > 0)} | {f(nb <= 65536)} | {f(nb >= 64 << 20)} | "
                         f"{ch.get(4096, '-')} / {ch.get(1 << 20, '-')} / {ch.get(256 << 20, '-')} |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
