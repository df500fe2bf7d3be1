"""H200 GEMMs and batched GEMMs, L2 warm and flushed: the Hopper ``gemm`` set's cache constants.

The Hopper ``gemm`` set (``nvidia-hopper.json``) is fitted on aiconfigurator's H200 CUDA-graph rows
with no cache term.  This project's H200 rows (``bench/data/hopper_mem/``, README there) time the same
292 cases (GEMM 220, batched GEMM ``qk``/``pv`` 72, fp16 and bf16) twice: ``kernel_sum_us`` (inputs
reused: L2 warm) and ``kernel_sum_l2cold_us`` (a 256 MiB buffer overwritten before each call: L2
flushed).  The gap between the two is what the warm form's cache step describes
(``docs/model.md``, "The L2 state")::

    warm:  dram_s = (bytes (1 - l2_hit s) + b_half) / (mem_bw e_bw (1 + l2_gain s)),  s = 1 / (1 + (bytes / L2)^2)
    cold:  dram_s = (bytes + b_half) / (mem_bw e_bw)

Only ``l2_hit`` and ``l2_gain`` are fitted here (the cold form does not depend on them: the flushed
rows are scored beside the warm ones so that a change anywhere else shows); every other constant is
the aiconfigurator fit's.  Evaluator: each row's own ``analyzer.analyze`` prediction (``runtime=
"kernel"``, its L2 state), its one kernel re-evaluated with ``efficiency.kernel_time`` under the
candidate constants (``Row``; equal to ``analyze`` for the committed set: ``check``).  Variants
(``VARIANTS``): none, l2_hit only, l2_gain only, both; chosen by leave-one-shape-family-out
(``family``: GEMM by (N, K), batched GEMM by ``qk`` / ``pv``: 12 families).  The rules (fixed before
their scores) and the outcome, not shipped: ``docs/accuracy.md``, "Tried and not kept".  Rule 1 keeps
the chosen variant only if the warm rows' LOFO MAPE falls by 3 points and the set's fit error on its
own aiconfigurator H200 rows (``aic_error``) rises by at most 0.5 point; rule 2 caps ``l2_gain`` at
that 0.5 point (``gain_cap``) and asks the same 3 points.  ``kind`` labels what PyTorch ran
(``h200_kernels_*.json``) for the errors by kernel kind.

Usage: ``PYTHONPATH=$PWD python bench/hopper_gemm_l2.py [--out bench/results/hopper_gemm_l2.md]``.
No H100 row is read here.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from report_lines import emit_text  # noqa: E402

ROWS = os.path.join(HERE, "data", "hopper_mem", "h200_ops_2026-12-04.csv")
KERNELS = os.path.join(HERE, "data", "hopper_mem", "h200_kernels_2026-12-04.json")
PROFILE = "h200-sxm"
TIMINGS = (("kernel", "kernel_sum_us", "warm"), ("kernel_l2cold", "kernel_sum_l2cold_us", "cold"))
# the classes whose constants are the Hopper gemm set's (bgemm falls back to gemm: op_classes)
CLASSES = ("gemm", "bgemm")
# name -> the constants it frees (the others held at 0): each (initial, low, high)
BOUNDS = {"l2_hit": (0.5, 0.0, 1.0), "l2_gain": (0.5, 0.0, 5.0)}
VARIANTS = {"none": (), "l2_hit": ("l2_hit",), "l2_gain": ("l2_gain",), "both": ("l2_hit", "l2_gain")}


@dataclass(frozen=True)
class Row:
    """One measured row and its one kernel's inputs to ``efficiency.kernel_time`` (from analyze)."""
    op: str
    family: str          # the shape family left out together (GEMM "N,K"; bmm "qk" / "pv")
    dtype: str
    dims: tuple          # ((name, value), ...)
    l2: str              # "warm" | "cold"
    measured_s: float
    predicted_s: float   # analyze's latency with the committed constants
    feats: dict          # name -> float (the kernel's features)
    hw: dict             # matrix_peak, vector_peak, mem_bw, units, l2_bytes (0 when cold)
    fixed_s: float       # analyze's per-launch fixed cost (the class floor; no host dispatch here)
    consts: dict         # the profile's per-class constant arrays (KernelTable.class_consts)
    kind: str = ""       # what ran (``kind``: the kernels of the L2-warm profiler run)


def family(r: dict) -> str:
    return r["variant"] if r["op"] == "bmm" else f"{r['N']},{r['K']}"


def kind(names: list[str]) -> str:
    """What PyTorch ran for one call: cuBLASLt's split-K kernel and its reduction kernel, a
    cooperative (stream-K style) nvjet kernel after a workspace memset, one without, or one plain
    nvjet kernel (``h200_kernels_*.json``'s names)."""
    if any("splitKreduce" in n for n in names):
        return "split-K + reduction kernel"
    if any(n.startswith("Memset") for n in names):
        return "memset + cooperative kernel"
    return "one cooperative kernel" if any("coop" in n for n in names) else "one kernel"


def kernel_kinds(path: str = KERNELS) -> dict:
    """Case key (``op|variant|dtype|M..|N..|K..|B..|V..``) -> ``kind``."""
    with open(path) as f:
        return {k: kind(v["names"]) for k, v in json.load(f).items()}


def _key(r: dict) -> str:
    return "|".join([r["op"], r["variant"], r["dtype"]] + [f"{c}{r[c]}" for c in ("M", "N", "K", "B", "V")])


def read_rows(path: str = ROWS) -> list[dict]:
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r["op"] in ("gemm", "bmm")]


def _row(r: dict, l2: str, measured_s: float, what: str = "") -> Row:
    import analyzer
    import hardware_db
    from op_models import build

    dims = tuple((c, int(r[c])) for c in ("M", "N", "K", "B") if r[c] and int(r[c]))
    pred = analyzer.analyze(build(r["op"], r["dtype"], **dict(dims)), hw=[hardware_db.get(PROFILE)],
                            runtime="kernel", l2=l2).predictions[0]
    t = pred.kernel_table
    if len(t.names) != 1:
        raise ValueError(f"{r['op']} {dims}: {len(t.names)} kernels, expected 1")
    feats = {name: float(np.asarray(v)[0]) for name, v in t.feats.items()}
    hw = {"matrix_peak": float(t.matrix_peak[0]), "vector_peak": float(t.vector_peak[0]),
          "mem_bw": float(t.mem_bw), "units": float(t.units), "l2_bytes": float(t.l2_bytes)}
    return Row(r["op"], family(r), r["dtype"], dims, l2, measured_s, pred.latency_s, feats, hw,
               float(t.fixed[0]), t.class_consts, what)


def rows(path: str = ROWS) -> list[Row]:
    """Every GEMM / bmm row of ``path`` under both L2 states (584 for the committed file)."""
    kinds = kernel_kinds()
    return [_row(r, l2, float(r[col]) * 1e-6, kinds.get(_key(r), "")) for r in read_rows(path)
            for _, col, l2 in TIMINGS if r[col]]


def with_cache(consts: dict, values: dict) -> dict:
    """``consts`` with the ``CLASSES``' entries of ``values`` set."""
    from analyzer.prediction.efficiency.kernel_time import CLASS_CODE

    out = {k: (np.array(v, dtype=float) if np.ndim(v) else v) for k, v in consts.items()}
    for name, v in values.items():
        if name in out and np.ndim(out[name]):
            for cls in CLASSES:
                out[name][CLASS_CODE[cls]] = float(v)
    return out


def stack(data: list[Row]) -> dict:
    """The rows' kernels as arrays (one profile: every row's ``consts`` must be the same arrays)."""
    c0 = data[0].consts
    for r in data:   # (the gather's id-load latency depends on the L2 state: no GEMM reads it)
        if any(not np.array_equal(np.asarray(r.consts[k]), np.asarray(v)) for k, v in c0.items()
               if k != "gather_dep_s"):
            raise ValueError("rows of more than one constant set")
    return {"feats": {k: np.array([r.feats[k] for r in data]) for k in data[0].feats},
            "hw": {k: np.array([r.hw[k] for r in data]) for k in data[0].hw},
            "consts": c0, "fixed": np.array([r.fixed_s for r in data]),
            "measured": np.array([r.measured_s for r in data])}


def take(batch: dict, mask: np.ndarray) -> dict:
    """The rows of ``batch`` where ``mask``."""
    return {"feats": {k: v[mask] for k, v in batch["feats"].items()},
            "hw": {k: v[mask] for k, v in batch["hw"].items()}, "consts": batch["consts"],
            "fixed": batch["fixed"][mask], "measured": batch["measured"][mask]}


def predict(batch: dict, values: dict) -> np.ndarray:
    """Seconds per row: ``fixed_s - l2_start_s + max(compute_s, memory_s)`` (one launch; ``l2_start_s``: a set's
    warm start, as ``kernels.kernel_terms`` takes it) under ``values``."""
    from analyzer.prediction.efficiency import kernel_time as eff

    t = eff.kernel_time(np, batch["feats"], batch["hw"], with_cache(batch["consts"], values))
    return batch["fixed"] - t["l2_start_s"] + np.maximum(t["compute_s"], t["memory_s"])


def check(data: list[Row], batch: dict, rel: float = 1e-4) -> None:
    """Raise where ``predict`` under the committed constants is not ``analyze``'s latency."""
    p = predict(batch, {})
    bad = [(r.op, r.dims, r.l2) for r, x in zip(data, p) if abs(x / r.predicted_s - 1) > rel]
    if bad:
        raise AssertionError(f"evaluator != analyze on {len(bad)} rows, e.g. {bad[:3]}")


def fit(batch: dict, free: tuple, cap: float = np.inf) -> dict:
    """Least squares on log(predicted / measured) over ``batch``, ``free`` constants (``BOUNDS``), the
    others of ``BOUNDS`` held at 0 (soft_l1, f_scale 0.1: ``fit_efficiency``'s loss); ``cap``: an upper
    limit on l2_gain (rule 2: what the aiconfigurator rows allow)."""
    from scipy.optimize import least_squares

    held = {k: 0.0 for k in BOUNDS if k not in free}
    if not free:
        return held
    lt = np.log(batch["measured"])

    def resid(x):
        return np.log(predict(batch, dict(zip(free, x), **held))) - lt

    lo, hi = [BOUNDS[k][1] for k in free], [BOUNDS[k][2] for k in free]
    r = least_squares(resid, [BOUNDS[k][0] for k in free], bounds=(lo, hi), loss="soft_l1", f_scale=0.1,
                      diff_step=1e-3, max_nfev=200)
    out = dict(zip(free, (float(f"{v:.4g}") for v in r.x)), **held)
    return dict(out, l2_gain=min(out["l2_gain"], cap))


def ape(batch: dict, values: dict) -> np.ndarray:
    """Signed relative error per row."""
    return predict(batch, values) / batch["measured"] - 1.0


def lofo(batch: dict, fams: np.ndarray, free: tuple, cap: float = np.inf) -> np.ndarray:
    """Signed errors with each shape family's rows predicted by a fit on the other families."""
    err = np.zeros(len(fams))
    for f in sorted(set(fams)):
        err[fams == f] = ape(take(batch, fams == f), fit(take(batch, fams != f), free, cap))
    return err


def aic_error(gains) -> list[float]:
    """The Hopper gemm set's fit error (MAPE %) on its own aiconfigurator H200 rows (6667; the fit's
    evaluator, ``efficiency_class_fit._error``) with ``l2_gain`` at each of ``gains``, the rest as committed."""
    from efficiency_data import hw_of, load
    from efficiency_class_fit import _capped, _error
    from fit_efficiency import _family_parts

    from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR

    parts = _family_parts("nvidia-hopper", load(os.path.join(os.path.dirname(HERE), "..", "shared",
                                                             "measurements", "gpu")))["gemm"]
    data = _capped([(d, hw_of(src[1])) for src, d in parts])
    with open(os.path.join(EFFICIENCY_DIR, "nvidia-hopper.json")) as f:
        c = json.load(f)["sets"]["gemm"]["constants"]
    c = {k: v for k, v in c.items() if k != "floor_clock_hz"}
    return [_error("gemm", dict(c, l2_gain=float(g)), data)["mape"] for g in gains]


def gain_cap(hi: float, allowed: float = 0.5, steps: int = 30) -> float:
    """Rule 2: the largest l2_gain in [0, ``hi``] whose aiconfigurator fit error is at most
    ``allowed`` points over the committed set's (bisection)."""
    base, lo = aic_error([0.0])[0], 0.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if aic_error([mid])[0] <= base + allowed else (lo, mid)
    return float(f"{lo:.4g}")


def _stats(e: np.ndarray) -> str:
    return f"{100 * np.mean(np.abs(e)):.1f} % / {100 * np.mean(e):+.1f} %"


def rule1(batch: dict, fams: np.ndarray, warm: np.ndarray) -> tuple[list[str], str, dict]:
    """Every variant fitted and scored leaving one shape family out; the lowest LOFO MAPE chosen."""
    lines = ["| variant | LOFO, all 584 | LOFO, warm 292 | LOFO, flushed 292 | in-sample constants |",
             "|---|---|---|---|---|"]
    scores = {}
    for name, free in VARIANTS.items():
        e, consts = lofo(batch, fams, free), fit(batch, free)
        scores[name] = (e, consts)
        lines.append(f"| {name} | {_stats(e)} | {_stats(e[warm])} | {_stats(e[~warm])} | {consts} |")
    best = min(scores, key=lambda n: np.mean(np.abs(scores[n][0])))
    return lines, best, scores[best]


def by_rows(batch: dict, data: list[Row], columns: list[tuple]) -> list[str]:
    """MAPE / bias per (op, L2 state) and per (op, L2 state, what ran) under each column's errors."""
    lines = ["| rows | n | " + " | ".join(c[0] for c in columns) + " |", "|---|---:|" + "---|" * len(columns)]
    keys = [(r.op, r.l2, "") for r in data] + [(r.op, r.l2, r.kind) for r in data]
    errs = [np.concatenate([e, e]) for _, e in columns]
    for key in sorted(set(keys)):
        m = np.array([k == key for k in keys])
        label = f"{key[0]} {key[1]}" + (f", {key[2]}" if key[2] else "")
        lines.append(f"| {label} | {m.sum()} | " + " | ".join(_stats(e[m]) for e in errs) + " |")
    return lines


def report(data: list[Row]) -> list[str]:
    """Markdown: rule 1 (variants by LOFO), the aiconfigurator check, rule 2 (capped), the errors by
    what ran, the trade-off."""
    batch, fams = stack(data), np.array([r.family for r in data])
    check(data, batch)
    warm = np.array([r.l2 == "warm" for r in data])
    lines, best, (e_best, c_best) = rule1(batch, fams, warm)
    base, at = aic_error([0.0, c_best["l2_gain"]])
    cap = gain_cap(c_best["l2_gain"])
    e_cap = lofo(batch, fams, VARIANTS[best], cap)
    lines += ["", f"Rule 1 chooses **{best}** {c_best}: aiconfigurator H200 fit error (6667 rows) "
              f"{base:.2f} -> {at:.2f} %.", "",
              f"Rule 2: l2_gain capped at {cap} (fit error {aic_error([cap])[0]:.2f} %): LOFO warm "
              f"{_stats(e_cap[warm])}, flushed {_stats(e_cap[~warm])}.", "",
              "## Errors by what ran (MAPE / bias)", ""]
    lines += by_rows(batch, data, [("today (no cache term)", ape(batch, {})), ("rule 1, in-sample", ape(batch, c_best)),
                                   ("rule 1, LOFO", e_best), (f"rule 2 (cap {cap}), LOFO", e_cap)])
    gains = (0.0, 0.1, 0.2, 0.3, 0.45, c_best["l2_gain"])
    lines += ["", "## Trade-off: l2_gain against both sets of rows", "",
              "| l2_gain | aiconfigurator H200 fit error | H200 warm, in-sample |", "|---:|---:|---|"]
    for g, a in zip(gains, aic_error(gains)):
        lines.append(f"| {g:g} | {a:.2f} % | {_stats(ape(batch, {'l2_gain': g, 'l2_hit': 0.0})[warm])} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default=ROWS)
    ap.add_argument("--out", default="", help="markdown file to write (default: print)")
    args = ap.parse_args(argv)
    text = "\n".join(["# H200 GEMM / bmm: the Hopper gemm set's cache constants (warm and flushed rows)", "",
                      "`PYTHONPATH=$PWD python bench/hopper_gemm_l2.py --out bench/results/hopper_gemm_l2.md`",
                      "", "## Rule 1: variants, leave one shape family out (MAPE / bias)", ""]
                     + report(rows(args.rows))) + "\n"
    emit_text(args.out, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
