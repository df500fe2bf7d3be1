"""Which form of the gather set carries between GPUs: leave-one-device-out on vidur's embedding rows.

PyTorch's 2024 index_select gather (vidur's fp16 ``embedding`` rows, A100-80GB and A40; the
``-pytorch2.3`` family variants) runs 1.12x faster on the A40 than on the A100 at the same shape
although the A40 has a third of the DRAM bandwidth: it is bound by its SMs (about 2 bytes per
SM-cycle on both), not by DRAM.  Each memory-bound form of ``efficiency_class_fit.MEM_FORMS`` is fitted
on one device's rows and scored on the other's (its floor a number of cycles of the fit device's
clock, as shipped), and fitted pooled over both (in-sample on each):

- ``sum``: memory = DRAM term + per-SM term, floor_s, b_half_bytes, bpc, l2_hit free;
- ``max``: memory = max(DRAM term, per-SM term), the same four free;
- ``sm_bound``: the max form with b_half_bytes and l2_hit held at 0, floor_s and bpc free.

The rows are those ``fit_efficiency`` fits on (``efficiency_data.load``: at most 400 per device,
spread over bytes); the scores are its own model evaluation (``efficiency_data.predict``).  The
rule the shipped form was chosen by is in docs/accuracy.md ("GPU, the gather across devices").

    PYTHONPATH=$PWD python bench/gather_lodo.py [MEASUREMENTS_DIR] [--out bench/results/gather_lodo.md]

Needs pandas and scipy (the bench only).
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from efficiency_data import ROOT, hw_of, load, metrics, predict  # noqa: E402  (puts ROOT on sys.path)
from efficiency_class_fit import _arrays_with, fit_memory_class  # noqa: E402
from report_lines import emit  # noqa: E402

DEVICES = ("a100_80gb", "a40")
FORMS = ("sum", "max", "sm_bound")
FREE = ("floor_s", "b_half_bytes", "bpc", "l2_hit")


BIG = 50e6   # bytes moved (fp16 rows read and written) above which a row is "large" in data_lines


def data_lines(meas_dir: str) -> list[str]:
    """The A100 / A40 time ratio on the same (M, N, K), and the large rows' rate per DRAM byte and
    per SM-cycle (bytes = 2 x M x N x 2: the rows read and written, fp16)."""
    import numpy as np
    import pandas as pd

    v = pd.read_csv(os.path.join(meas_dir, "vidur_a100_a40.csv"))
    g = v[v.op == "embedding"].groupby(["gpu", "M", "N", "K"]).measured_us.median().unstack(0).dropna()
    r = g[DEVICES[0]] / g[DEVICES[1]]
    q1, q3 = r.quantile([0.25, 0.75])
    out = [f"Same (M, N, K) on both ({len(r)} shapes): time A100 / A40 median {r.median():.3f} (IQR {q1:.3f}-{q3:.3f}).", "",
           f"| device | rows above {BIG / 1e6:g} MB | median GB/s | of DRAM bandwidth | bytes per SM-cycle |",
           "|---|---:|---:|---:|---:|"]
    nbytes = 4.0 * g.index.get_level_values("M") * g.index.get_level_values("N")
    for dev in DEVICES:
        hw, big = hw_of(dev), nbytes > BIG
        rate = float(np.median(nbytes[big] / (g[dev].to_numpy()[big] * 1e-6)))
        out.append(f"| {dev} | {int(big.sum())} | {rate / 1e9:.1f} | {rate / hw['mem_bw']:.3f} | "
                   f"{rate / (hw['units'] * hw['clock_hz']):.2f} |")
    return out + [""]


def rows_of(meas_dir: str) -> dict:
    """device -> vidur's embedding rows as the fit sees them."""
    data = load(meas_dir)
    return {dev: data[("vidur", dev)][data[("vidur", dev)].op == "embedding"] for dev in DEVICES}


def score(consts: dict, df, dev: str) -> dict:
    return metrics(predict(df, hw_of(dev), _arrays_with("gather", consts)), df.t.to_numpy())


def evaluate(rows: dict) -> list[dict]:
    """One record per (form, fitted on): the constants, in-sample and the other devices' scores."""
    out = []
    for form in FORMS:
        for fit_on in DEVICES + ("pooled",):
            devs = DEVICES if fit_on == "pooled" else (fit_on,)
            clock = hw_of(devs[0])["clock_hz"]   # the floor: cycles of this clock
            consts, _ = fit_memory_class("gather", [(rows[d], hw_of(d)) for d in devs], form=form,
                                         floor_clock_hz=clock)
            scores = {d: score(consts, rows[d], d) for d in DEVICES}
            out.append({"form": form, "fit_on": fit_on, "consts": consts, "scores": scores})
    return out


def lines(recs: list[dict], command: str, data: list[str]) -> list[str]:
    def cell(m):
        return f"{m['mape']:.2f} | {m['bias']:+.1f}"

    out = ["# The gather set across GPUs: leave-one-device-out (vidur's fp16 embedding rows)", "",
           f"Command: `{command}`. In-sample: scored on the rows fitted on; LODO: fitted on one device, "
           "scored on the other (out of sample for that form).", "", *data,
           "| form | fitted on | scored on | in-sample / LODO | rows | MAPE % | bias % |",
           "|---|---|---|---|---:|---:|---:|"]
    for r in recs:
        for dev, m in r["scores"].items():
            kind = "in-sample" if r["fit_on"] in (dev, "pooled") else "LODO"
            out.append(f"| {r['form']} | {r['fit_on']} | {dev} | {kind} | {m['rows']} | {cell(m)} |")
    out += ["", "Constants (bpc: bytes per SM-cycle; floor_s at the clock of the first device fitted on):", "",
            "| form | fitted on | " + " | ".join(FREE) + " | sm_overlap |", "|---|---|" + "---:|" * (len(FREE) + 1)]
    for r in recs:
        c = r["consts"]
        out.append(f"| {r['form']} | {r['fit_on']} | " + " | ".join(f"{c.get(k, 0.0):.4g}" for k in FREE)
                   + f" | {c.get('sm_overlap', 0.0):g} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measurements", nargs="?", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "gather_lodo.md"))
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.measurements, "vidur_a100_a40.csv")):
        print(f"no vidur_a100_a40.csv in {args.measurements}", file=sys.stderr)
        return 2
    emit(args.out, lines(evaluate(rows_of(args.measurements)), "PYTHONPATH=$PWD python bench/gather_lodo.py",
                         data_lines(args.measurements)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
