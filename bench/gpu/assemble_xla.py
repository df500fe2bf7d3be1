#!/usr/bin/env python3
"""Join ``measure_xla.py``'s passes (and ``measure_models.py``'s JAX parts) from two runs into
``bench/results/<gpu>_xla_ops_<date>.csv``, ``<gpu>_jax_models_<date>.csv``,
``<gpu>_xla_kernels_<date>.json.gz`` and ``<gpu>_xla_meta_<date>.json``.

Run 1's columns as measured; run 2's (a repeat on the same machine) as ``*_run2``.  No fitting
here, only joins.

    python bench/gpu/assemble_xla.py RUN1_DIR RUN2_DIR --gpu h200 --date 2026-12-04 \
        --command-file CMD.txt
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPS_TIMES = ("kernel_sum_us", "n_kernels", "main_kernel", "eager_wall_us", "pipelined_us")
MODEL_TIMES = ("kernel_sum_us", "n_kernels", "eager_wall_us", "pipelined_us")


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _join(run, keys, prof_name, wall_name):
    """One dict per case key: the prof pass's row updated with the wall pass's non-empty cells."""
    out = {}
    for r in _rows(os.path.join(run, prof_name)):
        out[keys(r)] = dict(r)
    for r in _rows(os.path.join(run, wall_name)):
        row = out.setdefault(keys(r), dict(r))
        row.update({k: v for k, v in r.items() if v not in ("", None)})
    return out


def _write(path, rows, repeat, times):
    cols = list(next(iter(rows.values())).keys())
    cols += [f"{t}_run2" for t in times]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        for k, r in rows.items():
            r2 = repeat.get(k, {})
            w.writerow({**r, **{f"{t}_run2": r2.get(t, "") for t in times}})
    return len(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run1")
    ap.add_argument("run2")
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--command-file", required=True, help="the exact device command line")
    a = ap.parse_args(argv)
    res = os.path.join(ROOT, "bench", "results")
    stem = lambda what, ext: os.path.join(res, f"{a.gpu}_{what}_{a.date}.{ext}")  # noqa: E731
    ops = [_join(r, lambda x: x["key"], "xla_ops_prof.csv", "xla_ops_wall.csv") for r in (a.run1, a.run2)]
    mkey = lambda x: (x["model"], x["variant"], x["dtype"], x["batch"])  # noqa: E731
    models = [_join(r, mkey, "models_jax_prof.csv", "models_jax.csv") for r in (a.run1, a.run2)]
    n_ops = _write(stem("xla_ops", "csv"), ops[0], ops[1], OPS_TIMES)
    n_models = _write(stem("jax_models", "csv"), models[0], models[1], MODEL_TIMES)
    kernels = {}
    for i, run in enumerate((a.run1, a.run2), 1):
        for name in ("xla_ops_kernels.json", "models_jax_kernels.json"):
            with open(os.path.join(run, name)) as f:
                kernels[f"run{i}:{name}"] = json.load(f)
    with gzip.open(stem("xla_kernels", "json.gz"), "wt") as f:
        json.dump(kernels, f)
    with open(a.command_file) as f:
        command = f.read().strip()
    meta = {"command": command, "gpu": a.gpu, "date": a.date,
            "rows": {"xla_ops": n_ops, "jax_models": n_models}}
    for i, run in enumerate((a.run1, a.run2), 1):
        with open(os.path.join(run, "machine.txt")) as f:
            meta[f"run{i}_machine"] = f.read()
        for name in ("xla_ops_meta_prof.json", "xla_ops_meta_wall.json", "models_meta_jax.json"):
            with open(os.path.join(run, name)) as f:
                m = json.load(f)
            m.pop("hlo", None) if i == 2 else None
            meta[f"run{i}:{name}"] = m
    with gzip.open(stem("xla_meta", "json.gz"), "wt") as f:
        json.dump(meta, f, indent=1)
    print(f"{n_ops} op rows, {n_models} model rows -> {res}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
