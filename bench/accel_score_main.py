"""Score another checkout's opcost (its analyzer and hardware_db) on the Hexagon rows that
bench/fit_accelerators.py uses: the "before" column of docs/accuracy.md's Hexagon section.

    git worktree add /tmp/opcost-before <commit before the fit>
    PYTHONPATH=/tmp/opcost-before python bench/accel_score_main.py /tmp/opcost-before \
        ../shared/measurements/accelerators

The graphs and the row selection come from this checkout's bench/fit_accelerators.py; the
prediction (default runtime of each profile) from the other checkout.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    other, mdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    spec = importlib.util.spec_from_file_location("fit_accelerators", os.path.join(HERE, "fit_accelerators.py"))
    F = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(F)
    mine = os.path.dirname(HERE)
    sys.path = [other] + [p for p in sys.path if os.path.abspath(p or ".") != mine]
    import analyzer
    import hardware_db
    from analyzer.prediction.predict import predict

    assert os.path.dirname(os.path.dirname(os.path.abspath(analyzer.__file__))) == other, analyzer.__file__
    rows = F.hexagon_rows(mdir)
    held = rows.model_id.isin(F.HELD_OUT)
    out = np.array([predict(F.H.report(r.model_id),
                            [hardware_db.get(r.opcost_profile)], precision=r.precision)[0].latency_s * 1e3
                    for r in rows.itertuples()])
    print("\n".join(F.table("other checkout, fitted rows", rows[~held], out[~held.values])))
    print("\n".join(F.table("other checkout, held-out rows", rows[held], out[held.values])))


if __name__ == "__main__":
    main()
