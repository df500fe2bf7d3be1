"""The markdown report of ``bench/fit_aic_elementwise.py``: the measured figures per system,
the constants of every fit compared, the accuracy per system (in-sample and
leave-one-system-out), per size regime, on the other unflagged versions, and the count check.
"""

from __future__ import annotations

import numpy as np

from aic_elementwise_data import COMMAND, FILE, FIT_DATE, FIT_TABLES, KERNELS, L2_RESIDENT, SYSTEMS, hw_of


def _m(m: dict) -> str:
    return f"{m['mape']:.1f} | {m['median_ape']:.1f} | {m['bias']:+.1f} | {m['within10']:.0f} | {m['within25']:.0f}"


def _consts_line(c: dict) -> str:
    return (f"{c['e_bw']:.3f} | {c['b_half_bytes'] / 1e6:.3f} | {c['floor_cycles']:.0f} | {c['bpc']:.1f} | "
            f"{c['l2_hit']:.3f}")


def measured_lines(q) -> list[str]:
    """Per system, from the fitted tables: the measured DRAM fraction at >= 1.6 GB and the best
    rate per SM-cycle of the L2-resident rows (what the pooled constants describe)."""
    d = q[q.fit]
    out = ["| system | profile | DRAM GB/s | SMs | L2 MB | clock GHz (per-SM term) | bytes / t / DRAM at >= 1.6 GB "
           "(median) | L2-resident: median bytes per SM-cycle |", "|" + "---|" * 8]
    for system in SYSTEMS:
        hw = hw_of(system)
        e = d[d.device_system == system]
        big = e[e.bytes >= 1.6e9]
        frac = float(np.median(big.bytes / big.t / hw["mem_bw"]))
        l2 = hw["l2_bytes"]
        res = e[(e.bytes > 4e6) & (e.bytes < L2_RESIDENT * l2)] if l2 > 0 else e.iloc[:0]
        bpc = (f"{float(np.median(res.bytes / res.t / (hw['units'] * hw['clock_hz']))):.1f}"
               if len(res) else "(L2 size unknown)")
        clock = f"{hw['clock_hz'] / 1e9:.3g}" + ("" if hw["own_clock"] else " (median stand-in)")
        out.append(f"| {system} | {hw['profile']} | {hw['mem_bw'] / 1e9:.0f} | {hw['units']:.0f} | "
                   f"{l2 / 1e6:.0f} | {clock} | {frac:.3f} | {bpc} |")
    return out


def _intro(q, seconds: float) -> list[str]:
    return [f"# Elementwise class on seven current GPUs: aiconfigurator's quantize kernel ({FIT_DATE})", "",
            f"Command: `{COMMAND}` (from the repository root; {seconds:.0f} s).", "",
            f"Data: `{FILE}` (shared/measurements/gpu/README.md), flag empty, the newest table of each framework "
            f"per system ({', '.join(f'{f} {v}' for f, v in FIT_TABLES.items())}): {int(q.fit.sum())} rows, "
            f"{len(SYSTEMS)} systems x 2 kernels x 1,628 m x k shapes. Kernels: " + "; ".join(KERNELS.values())
            + ". Time definition: kernel time in CUDA-graph replay (mean of 30 back-to-back executions of one "
            "kernel on the same input; no host launch; no L2 flush, so inputs that fit the L2 are read from it). "
            "Counts: opcost's one-op ONNX model QuantizeLinear(bf16 [m, k]) -> fp8 (bytes = 3 m k + 3). "
            "APE = |pred/measured - 1|; bias = median signed error (negative: optimistic). Hardware figures: the "
            "opcost profiles as the library resolves them (a profile without a clock: the median GPU clock for "
            "the per-SM term, the family set's floor in seconds).", "",
            "**In-sample** = the pooled fit on all seven systems scored on each; **held-out** = "
            "leave-one-system-out: fitted on the other six, scored on the seventh. Shipped: the pooled fit (all "
            "five constants pooled) in the overlap form (`sm_overlap = 1`: memory time = max(DRAM term, per-SM "
            "term)) with e_bw held at the measured large-size DRAM fraction (the median over the fitted systems "
            "of bytes / t / DRAM bandwidth at >= 1.6 GB). Shipped as the `quantize` class "
            "(QuantizeLinear / DequantizeLinear) of the three families: PyTorch's own elementwise kernels keep "
            "the A100/A40 sets (with this set as their elementwise class, PyTorch's add on A100/A40, vidur, "
            "in-sample, went 3.8 -> 6.5 % and 5.5 -> 9.9 % MAPE: the quantize kernel's per-SM rate and floor, "
            "with its dependent load of the scale, are its own); the constants table scores the shipped set with PyTorch's floor from the earlier pool. Compared: the sum form (the vidur-fitted sets' form: "
            "DRAM term + per-SM term, e_bw free), whose e_bw runs to its bound (1.5: faster than the datasheet) "
            "because a sum cannot give both the SM-limited L2-resident rate and the large-size DRAM rate; it has "
            "the lower mean held-out MAPE (the small and L2-resident rows dominate the count) and the larger "
            "held-out error at large sizes (the DRAM regime table). Also compared: the two-level variant (floor, "
            "ramp and L2 share pooled; e_bw and bpc per "
            "family).", "", "## Measured figures (what the constants describe)", ""] + measured_lines(q)


def render(res: dict, alt: dict, q, verify: list[str], seconds: float) -> str:
    hdr = "| MAPE | median APE | bias | ±10 % | ±25 % |"
    out = _intro(q, seconds) + [
        "", "## Constants", "",
        "| fit | e_bw | b_half MB | floor cycles | bpc (B per SM-cycle) | l2_hit |", "|---|---|---|---|---|---|",
        f"| pooled, 7 systems, overlap form (shipped) | {_consts_line(res['pooled'])} |",
        f"| pooled, 7 systems, sum form | {_consts_line(alt['pooled'])} |",
        f"| the shipped set with PyTorch's pooled floor (not shipped; in-sample MAPE "
        f"{np.mean([m['mape'] for m in res['pytorch_floor_in_sample'].values()]):.1f} %) | "
        f"{_consts_line(res['pytorch_floor'])} |"]
    out += [f"| two-level, {fam} | {_consts_line(c)} |" for fam, c in res["two_level"].items()]
    out += [f"| family in-sample, {fam} | {_consts_line(c)} |" for fam, (c, _) in res["family"].items()]
    out += [f"| one system, {s} | {_consts_line(c)} |" for s, (c, _) in res["per_system"].items()]
    out += [f"| pooled without {s} (held-out fit) | {_consts_line(c)} |" for s, c in res["loso_consts"].items()]
    out += ["", "## Accuracy per system (shipped constants; last columns: the alternatives' MAPE)", "",
            "| system | family | rows | in-sample " + hdr[2:] + " held-out " + hdr[2:]
            + " sum form in-sample | sum form held-out | two-level held-out | one-system fit |", "|" + "---|" * 17]
    for s in SYSTEMS:
        out.append(f"| {s} | {SYSTEMS[s][1]} | {res['in_sample'][s]['rows']} | {_m(res['in_sample'][s])} | "
                   f"{_m(res['loso'][s])} | {alt['in_sample'][s]['mape']:.1f} | {alt['loso'][s]['mape']:.1f} | "
                   f"{res['loso_two_level'][s]['mape']:.1f} | {res['per_system'][s][1]['mape']:.1f} |")
    mean = lambda r, k: np.mean([r[k][s]["mape"] for s in SYSTEMS])  # noqa: E731
    out += ["", f"Mean over the systems: in-sample MAPE {mean(res, 'in_sample'):.1f} %, held-out "
            f"{mean(res, 'loso'):.1f} %; sum form {mean(alt, 'in_sample'):.1f} % / {mean(alt, 'loso'):.1f} %; "
            f"two-level held-out {mean(res, 'loso_two_level'):.1f} %.", "",
            "## Error by size regime", "",
            "tiny: < 1 MB; L2-resident: below 0.5x the profile's L2; DRAM: above 4x the L2 (above 403 MB where "
            "the profile states no L2); transition: between.", "",
            "| system | regime | rows | in-sample " + hdr[2:] + " held-out " + hdr[2:] + " sum form held-out MAPE |",
            "|" + "---|" * 14]
    for s, regs in res["regimes"].items():
        out += [f"| {s} | {r} | {m['rows']} | {_m(m)} | {_m(res['loso_regimes'][s][r])} | "
                f"{alt['loso_regimes'][s][r]['mape']:.1f} |" for r, m in regs.items()]
    out += ["", "## Check: the other unflagged versions (same kernels, other builds; shipped constants)", "",
            "| system | rows " + hdr, "|" + "---|" * 7]
    out += [f"| {s} | {m['rows']} | {_m(m)} |" for s, m in res["check_versions"].items()]
    out += ["", "## Count verification", "", "```"] + verify + ["```", ""]
    return "\n".join(out)
