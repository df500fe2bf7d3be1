"""Issue 32's four GPUs pooled: the per-row errors of bench/whole_public.py's two result files
(NeuSight's non-H100 rows and its H100 rows) read back and pooled for the A100s, L4, T4 and H100.

    PYTHONPATH=$PWD python bench/whole_public_pool.py [bench/results/whole_public.md bench/results/whole_public_h100.md]

Prints, per mode (inference, train): rows, MAPE and bias over the pooled rows (each row's error as
the result file states it, one decimal). Nothing is predicted here: run bench/whole_public.py first.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILES = [os.path.join(ROOT, "bench", "results", f) for f in ("whole_public.md", "whole_public_h100.md")]
GPUS = ("a100", "l4", "t4", "h100")   # the profile ids of issue 32's GPUs start with these


def row_errors(path: str) -> list[tuple[str, str, float]]:
    """(profile, mode, error %) of each row of a whole_public result file's row table."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            c = [x.strip() for x in line.strip().strip("|").split("|")]
            if len(c) == 10 and c[2] in ("inference", "train"):
                try:
                    out.append((c[0], c[2], float(c[7])))
                except ValueError:
                    continue
    return out


def main(argv=None) -> int:
    files = (sys.argv[1:] if argv is None else argv) or FILES
    rows = [r for p in files for r in row_errors(p) if r[0].startswith(GPUS)]
    for mode in ("inference", "train"):
        e = [x for _, m, x in rows if m == mode]
        if e:
            print(f"{mode}: {len(e)} rows, MAPE {sum(map(abs, e)) / len(e):.1f} %, bias {sum(e) / len(e):+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
