"""The markdown report of bench/fit_collectives.py: the fit's constants, the
leave-one-system-out table (strict and run base, with each system's own fit), the PCIe servers
fitted on each other, and the per-GPU-count errors and choices."""

from __future__ import annotations

import numpy as np

from fit_collectives import COLLS, COMMAND, RUN_BASE_BYTES, n_params, predict, to_json


def header(full, bases, rows, pop, nraw) -> list[str]:
    j = to_json(full)
    return ["# NCCL collective model: fit and leave-one-system-out score", "",
            f"Command: `{COMMAND}` (writes `hardware_db/collectives/nccl.json`).", "",
            "Data: `../shared/measurements/gpu/aic_nccl.csv`, nccl-tests all_reduce and all_gather, fp16, "
            f"one node of 2/4/8 GPUs, 512 B to 512 MiB: {len(rows)} (system, collective, GPUs, size) "
            f"medians of {nraw} rows. No H100 data.", "",
            "Model (`analyzer.scaling.collectives.nccl`): per call the least over ring (LL, LL128, Simple) "
            "and, on NVLS nodes with more than 2 GPUs, NVLS of `base + steps x step + (F + w) x bytes / rate` (w: the output share, per byte of each rank's output); "
            "ring rate = bw x eff x c with bw the ring's bottleneck link per direction "
            "(`hardware_db.links.Node.ring_gbs`: the NVLink figure on NVSwitch nodes; on the PCIe nodes "
            "the x16 link, their switch layout, peer-to-peer and host path not being on record); "
            + ("NVLS rate = min(bw, channels x rate per channel), channels NCCL's (16 Hopper, 24 Blackwell)"
             if "channel_gbs" in j["nvls"] else
             "NVLS rate = bw x NCCL's per-architecture NVLS efficiency (Hopper 0.85, Blackwell 0.74; "
             "`nodes.toml` nvls_efficiency).") + " Inside one node only: between nodes the library "
            + "prices the unfitted ring/tree on the link's datasheet figures (no measurement here).", "",
            "The per-call base is a property of the run (host, driver, launch path; nccl-tests without "
            "CUDA graphs), not of the GPUs: the fit gives each system its own base and shares the other "
            f"{n_params()} constants. Fitted on all NVSwitch systems ({', '.join(pop)}): bases "
            + ", ".join(f"{s} {v * 1e6:.2f}" for s, v in bases.items())
            + f" us (shipped: the median, {j['base_us']} us); "
            + "; ".join(f"{p} step {v['step_us']} us, eff {v['efficiency']}" for p, v in j["protocols"].items())
            + f"; NVLS step {j['nvls']['step_us']} us"
            + (f", {j['nvls']['channel_gbs']} GB/s per channel" if "channel_gbs" in j["nvls"] else "") + "; "
            f"all-gather c {j['collective_efficiency']['all_gather']}; output share w {j['output_share']}.", ""]


def summary(res, pop) -> list[str]:
    """The NVSwitch systems' leave-one-system-out MAPE (a cross-validation figure): per system over
    its rows of both collectives, their mean, and the mean over all their rows; strict and run base."""
    out = {}
    for kind, i in (("strict", 2), ("run base", 3)):
        per = {}
        for s in pop:
            sc = res[s][i]
            n = sum(v["rows"] for v in sc.values())
            per[s] = (sum(v["mape_pct"] * v["rows"] for v in sc.values()) / n, n)
        rows = sum(n for _, n in per.values())
        out[kind] = (per, sum(m for m, _ in per.values()) / len(per),
                     sum(m * n for m, n in per.values()) / rows)
    L = ["## Summary (leave one system out: cross-validation)", "",
         "| | " + " | ".join(pop) + " | mean over systems | mean over rows | systems <= 15 % |",
         "|---|" + "---:|" * (len(pop) + 3)]
    for kind, (per, m, w) in out.items():
        L.append(f"| {kind} | " + " | ".join(f"{per[s][0]:.1f}%" for s in pop)
                 + f" | {m:.1f}% | {w:.1f}% | {sum(per[s][0] <= 15 for s in pop)} of {len(pop)} |")
    return L + [""]


def report(full, bases, res, fam, rows, nodes, pop, nraw, own) -> str:
    L = header(full, bases, rows, pop, nraw) + summary(res, pop)
    L += ["## Leave one system out", "",
          "NVSwitch systems: scored with the constants fitted on the other NVSwitch systems. PCIe "
          "systems (*): with those fitted on all NVSwitch systems. Strict: the held-out system's "
          "per-call base is the median of the fitted systems' bases. Run base: the held-out run's own "
          f"base, the one value that fits its rows of <= {RUN_BASE_BYTES} B (the latency floor any "
          "short nccl-tests run on the target measures); every other constant from the other systems. "
          "Own fit: the same form fitted on that system alone (in sample).", "",
          "| system | node | collective | rows | strict MAPE | strict bias | run base | run-base MAPE "
          f"| run-base bias | run-base MAPE > {RUN_BASE_BYTES} B | run-base MAPE >= 1 MiB | own fit MAPE (base) |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s, (_, kr, sc, sr, _) in res.items():
        ko, osc = own[s]
        for (_, c), v in sc.items():
            r = sr[(s, c)]
            L.append(f"| {s}{'' if s in pop else ' *'} | {nodes[s].id} | {c} | {v['rows']} | "
                     f"{v['mape_pct']:.1f}% | {v['bias_pct']:+.1f}% | {kr.base_s * 1e6:.1f} us | "
                     f"{r['mape_pct']:.1f}% | {r['bias_pct']:+.1f}% | {r['mape_above_run_base_rows_pct']:.1f}% | "
                     f"{r['mape_ge_1mib_pct']:.1f}% | "
                     f"{osc[(s, c)]['mape_pct']:.1f}% ({ko.base_s * 1e6:.1f} us) |")
    L += ["", "Each fold's NVLS constants (fitted on the other NVSwitch systems): "
          + "; ".join(f"without {s}: " + ", ".join(f"{key} {val:g}" for key, val in to_json(k)["nvls"].items())
                      for s, (k, _, _, _, _) in res.items() if s in pop) + "."]
    L += ["", "## PCIe systems with constants fitted on the other PCIe system", "",
          "One system to fit on (thin); its 4- and 8-GPU rows carry its own server's host path.", "",
          "| system | fitted on | collective | strict MAPE | run-base MAPE | run-base MAPE at 2 / 4 / 8 GPUs |",
          "|---|---|---|---:|---:|---|"]
    for s, (_, _, sc, sr, on) in fam.items():
        for (_, c), v in sc.items():
            g = sr[(s, c)]["mape_by_gpus_pct"]
            L.append(f"| {s} | {', '.join(on)} | {c} | {v['mape_pct']:.1f}% | {sr[(s, c)]['mape_pct']:.1f}% "
                     f"| {' / '.join(f'{g[n]:.1f}%' for n in sorted(g))} |")
    return "\n".join(L + per_gpus(res, rows, nodes)) + "\n"


def per_gpus(res, rows, nodes) -> list[str]:
    L = ["", "## Per GPU count (leave one system out, run base)", "",
         "| system | collective | GPUs | ring GB/s (on record) | MAPE, all sizes | <= 64 KiB | >= 64 MiB "
         "| choice at 4 KiB / 1 MiB / 256 MiB |",
         "|---|---|---:|---|---:|---:|---:|---|"]
    for s, (_, kr, _, _, _) in res.items():
        for c in COLLS:
            for n in (2, 4, 8):
                sub = [r for r in rows if r[0] == s and r[1] == c and r[2] == n]
                if not sub:
                    continue
                pred = predict(kr, sub, nodes)
                e = np.array([p[0] / r[4] - 1 for p, r in zip(pred, sub)])
                nb = np.array([r[3] for r in sub])
                f = lambda m: f"{np.mean(np.abs(e[m])) * 100:.1f}%" if m.any() else "-"  # noqa: E731
                ch = {r[3]: f"{p[1]}/{p[2]}" for p, r in zip(pred, sub)}
                gbs, known = nodes[s].ring_gbs(n)
                L.append(f"| {s} | {c} | {n} | {gbs:g} ({'yes' if known else 'no'}) | {f(nb > 0)} | "
                         f"{f(nb <= 65536)} | {f(nb >= 64 << 20)} | "
                         f"{ch.get(4096, '-')} / {ch.get(1 << 20, '-')} / {ch.get(256 << 20, '-')} |")
    return L
