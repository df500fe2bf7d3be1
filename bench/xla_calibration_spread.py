#!/usr/bin/env python3
"""How far apart repeated XLA calibrations predict, with all passes in one worker process or each
pass in a fresh one (``calibrate_xla.measure_in_processes``, the calibration's way since
2026-11-29), measured in alternation so that both meet the same states of the machine.

    PYTHONPATH=$PWD python bench/xla_calibration_spread.py [--rounds 3] [--passes 3]
        [--out bench/results/xla_calibration_spread_<date>]

Each round measures the rows once each way (the order alternating between rounds), fits each
measurement (``calibrate_xla.profile_doc``) and predicts ``bench/accuracy_xla_cpu.py``'s 16 JAX
programs with ``runtime="xla"``. Per way: the largest relative difference between two rounds'
predictions of a program (issue #10: "two runs predict within 5 % of each other"), per program and
overall. Nothing here is scored against measured programs; the rows are kept
(``<out>_rows_<way>_<round>.json``), so a fit change can be re-scored on them.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

WAYS = ("one process", "fresh process per pass")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                 f"xla_calibration_spread_{datetime.date.today().isoformat()}"))
    a = ap.parse_args()
    import accuracy_xla_cpu as acc

    from analyzer.measure.xla import calibrate as cx
    from hardware_db.write import write_profile

    def quiet(f, s):
        return None

    measure = {WAYS[0]: lambda: cx.run_worker(cx.QUANTILE, a.passes, quiet),
               WAYS[1]: lambda: cx.measure_in_processes(cx.QUANTILE, a.passes, quiet)}
    progs = acc.programs()
    names = [n for n, *_ in progs]
    preds: dict[str, list[dict[str, float]]] = {w: [] for w in WAYS}
    t0 = time.time()
    for r in range(a.rounds):
        for w in (WAYS if r % 2 == 0 else WAYS[::-1]):
            print(f"round {r + 1}/{a.rounds}: {w}", file=sys.stderr, flush=True)
            m = measure[w]()
            tag = "one" if w == WAYS[0] else "fresh"
            with open(f"{a.out}_rows_{tag}_{r + 1}.json", "w") as f:
                json.dump(m, f)
            doc = cx.profile_doc(m)
            for k in ("_rows", "_measured", "_warnings"):
                doc.pop(k, None)
            path = write_profile(doc, f"{a.out}_profile_{tag}_{r + 1}.toml")
            preds[w].append(acc.predict(progs, path))
    spread = {w: {n: max(abs(p[n] / q[n] - 1) for p, q in itertools.permutations(preds[w], 2)) * 100
                  for n in names} for w in WAYS}
    res = {"rounds": a.rounds, "passes": a.passes, "seconds": round(time.time() - t0, 1),
           "predicted_us": {w: [{n: p[n] * 1e6 for n in names} for p in preds[w]] for w in WAYS},
           "max_difference_pct": spread}
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    lines = [f"# XLA calibration spread ({datetime.date.today().isoformat()}, {os.cpu_count()} cores)", "",
             f"Command: `PYTHONPATH=$PWD python bench/xla_calibration_spread.py --rounds {a.rounds} "
             f"--passes {a.passes} --out {os.path.relpath(a.out, ROOT)}`", "",
             f"{a.rounds} rounds, each measuring the rows both ways in alternation ({res['seconds']:.0f} s in all); "
             "per program the largest difference between two rounds' predictions.", "",
             "| program | " + " | ".join(WAYS) + " |", "|---|" + "---:|" * len(WAYS)]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(f"{spread[w][n]:.1f}%" for w in WAYS) + " |")
    lines.append("| **largest** | " + " | ".join(f"**{max(spread[w].values()):.1f}%**" for w in WAYS) + " |")
    lines.append("| programs within 5% | " + " | ".join(
        f"{sum(v <= 5 for v in spread[w].values())} of {len(names)}" for w in WAYS) + " |")
    acc.write_markdown(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
