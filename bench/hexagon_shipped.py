"""Score the shipped Hexagon profiles (their written constants, nothing fitted) on the held-out AI
Hub rows: each row's graph predicted through ``analyzer.analyze`` at its device and precision
with the default runtime (``qnn``), against its measured time.

    PYTHONPATH=$PWD python bench/hexagon_shipped.py [MEASUREMENTS_DIR]

MEASUREMENTS_DIR defaults to ../shared/measurements/accelerators; rows and held-out models as
``bench/hexagon_model.py`` selects them (``hexagon_rows``, ``HELD_OUT``).  Prints the row count
and the mean absolute percentage error.  Needs pandas (this script only).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main(argv: list[str]) -> int:
    import analyzer
    import hexagon_model as hm

    mdir = argv[0] if argv else os.path.join(ROOT, "..", "shared", "measurements", "accelerators")
    rows = hm.hexagon_rows(mdir)
    held = rows[rows.model_id.isin(list(hm.HELD_OUT))]
    pred = {}
    for (m, prec), g in held.groupby(["model_id", "precision"]):
        pids = sorted(set(g.opcost_profile))
        r = analyzer.analyze(os.path.join(hm.FX, hm.HEX_GRAPHS[m]), hw=pids, precision=prec)
        for pid, p in zip(pids, r.predictions):
            pred[(m, prec, pid)] = p.latency_s * 1e3
    ape = [abs(pred[(a.model_id, a.precision, a.opcost_profile)] / a.inference_time_ms - 1) * 100
           for a in held.itertuples()]
    print(f"held-out rows: {len(ape)}, MAPE {sum(ape) / max(len(ape), 1):.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
