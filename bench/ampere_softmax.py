"""The Ampere family's softmax sets, fitted on NeuSight's A100 PCIe rows; the Ampere memory-bound
sets checked on those rows and on vidur's.

Data: ``shared/measurements/gpu/neusight_ops.csv.gz`` (fp32, one eager PyTorch 2.1 call between
CUDA events: host dispatch + kernel; no L2 flush), device ``a100_pcie_40gb`` only; for the
cross-source check ``vidur_a100_a40.csv`` (fp16 kernel sums, ``bench/fit_efficiency.py``'s rows).

Host dispatch as ``bench/fit_neusight.py`` handles it: rows within ``FLOOR_X`` (3) x their class's
smallest latency are out of every kernel score and fit; the dispatch of a constants set is the
median of ``latency - kernel`` over the rows within ``DISPATCH_X`` (1.5) x it, per dispatch class
(the host measurement of that set).  Kernel = ``kernel_time`` with the class floor at the pooled
NVIDIA cycles (``constants.floor_cycles``) over the A100 PCIe's clock, as the product has it.

1. The shipped ``nvidia-ampere`` sets (fitted on vidur's fp16 kernel sums; Ampere has no softmax
   set: a softmax takes its norm set) scored per op group on the A100's kernel rows (held out for
   every class: none was fitted on NeuSight).
2. ``softmax`` (rows of at most ``SOFTMAX_WARP_ROW`` elements, the warp kernel) and
   ``softmax_block`` (longer rows) fitted on the A100's kernel rows in ``fit_neusight``'s
   memory-bound form (e_compute 0.5; e_bw, bpc <= 64 bytes per SM-cycle, l2_hit, b_half <= 1 MB
   free), the dispatch refitted with them (two rounds).  Rule fixed before any score was seen: a
   class with fewer than ``MIN_ROWS`` kernel rows frees e_bw only (the DRAM fraction, which its
   large rows identify) and holds bpc, l2_hit and b_half at the pooled five-GPU set's (the
   Volta/Turing/Pascal files).  Choice fixed before any held-out score was seen: the A100 fit is
   shipped where its two-fold cross-validated MAPE on the A100's kernel rows (hash halves: fit on
   one, score the other) is below the pooled set's in-sample MAPE on the same rows; else the
   pooled set.
3. Cross-source check of the other classes (rule fixed beforehand: a class changes only if the
   set fitted on NeuSight's A100 rows scores vidur's A100 rows better than vidur's own
   cross-check, the A40-fitted ``nvidia-ampere-ga10x`` set on them).

Writes (``--write``) the chosen sets into ``nvidia-ampere.json`` (Hopper and Blackwell inherit it)
and, as inherited sets, into ``nvidia-ampere-ga10x.json`` (Ada inherits it), and the report.

Usage: ``PYTHONPATH=$PWD python bench/ampere_softmax.py [--write] [--out bench/results/ampere_softmax.md]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import fit_neusight as fns  # noqa: E402
import neusight_data as nd  # noqa: E402
from analyzer.prediction.efficiency import constants as fc  # noqa: E402
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE  # noqa: E402
from report_lines import emit  # noqa: E402

DEV = "a100_pcie_40gb"
COMMAND = "PYTHONPATH=$PWD python bench/ampere_softmax.py --write"
SCRIPT = "bench/ampere_softmax.py"
FIT_DATE = "2026-12-02"
VIDUR = os.path.join(ROOT, "..", "shared", "measurements", "gpu")
MIN_ROWS = 20    # kernel rows below which only e_bw is free
SOFTMAX = ("softmax", "softmax_block")
CHECKED = ("elementwise", "activation", "norm")   # the cross-source check's classes
# op groups of the report: (label, op names, class)
GROUPS = (("softmax, rows <= 1,024 (warp kernel)", ("softmax",), "softmax"),
          ("softmax, rows > 1,024 (block kernel)", ("softmax",), "softmax_block"),
          ("LayerNorm", ("ln",), "norm"), ("GELU", ("gelu",), "activation"), ("tanh", ("tanh",), "activation"),
          ("pow (tensor, scalar)", ("pow", "powu"), "activation"),
          ("add, mul, div (two tensors)", ("add", "mul", "div"), "elementwise"),
          ("add, mul, div (tensor, scalar), relu", ("addu", "mulu", "divu", "relu"), "elementwise"))
RESET = ("tile_m", "tile_n", "wave_alpha", "l2_gain", "mult_share", "whole_tile", "k_fill", "sm_overlap",
         "per_element", "floor_clock_hz")


def with_sets(base: dict, sets: dict) -> dict:
    """A copy of the arrays ``base`` with each class of ``sets`` replaced by its constants (the
    keys not given: 0, as in a set written without them)."""
    arr = {k: (np.array(v, dtype=float) if np.ndim(v) else v) for k, v in base.items()}
    for cls, vals in sets.items():
        i = CLASS_CODE[cls]
        for p in RESET:
            if p in arr:
                arr[p][i] = 0.0
        for p, v in vals.items():
            arr[p][i] = v
    return arr


def dispatch(rows, arr: dict) -> dict:
    """Dispatch class -> seconds: median of latency - kernel (``arr``) over the A100's rows at the
    floor (``fit_neusight.fit_dispatch``)."""
    return {c: v for (_, c), v in fns.fit_dispatch(rows, fns.Fit({}), {DEV: arr}).items()}


def eager(rows, arr: dict, host: dict) -> np.ndarray:
    return np.array([host[fns.dclass(c)] for c in rows.cls]) + fns.kernel_s(rows, DEV, arr)


def fit_class(rows, base: dict, cls: str, free: dict, held: dict) -> tuple[dict, dict]:
    """``cls``'s set fitted on ``rows``'s kernel rows (free: name -> (start, lo, hi)), the
    dispatch refitted from the rows at the floor in turn (two rounds); (set, dispatch)."""
    vals = dict(held)
    host = dispatch(rows, with_sets(base, {cls: dict(held, **{k: v[0] for k, v in free.items()})}))
    ker = rows[(rows.cls == cls) & ~rows.near_floor]
    lt = np.log(ker.t.to_numpy())
    for _ in range(2):
        def resid(x, host=host):
            arr = with_sets(base, {cls: dict(held, **dict(zip(free, np.exp(x))))})
            return np.log(eager(ker, arr, host)) - lt

        got, _ = fns._lsq(resid, free)
        vals = dict(held, **got)
        host = dispatch(rows, with_sets(base, {cls: vals}))
    return vals, host


def pooled_sets() -> dict:
    """The pooled five-GPU sets of the memory-bound classes (the Turing file's: the same in the
    Volta, Turing and Pascal files; ``bench/fit_neusight.py``)."""
    with open(os.path.join(fc.EFFICIENCY_DIR, "nvidia-turing.json"), encoding="utf-8") as f:
        doc = json.load(f)
    keep = ("e_compute", "e_bw", "b_half_bytes", "bpc", "l2_hit", "per_element")
    return {c: {k: float(s["constants"].get(k, 0.0)) for k in keep} for c, s in doc["sets"].items()}


def fit_free(rows, cls: str, pooled: dict) -> tuple[dict, dict]:
    """(free, held) of ``cls``'s A100 fit by the ``MIN_ROWS`` rule; a class of ``fns.PER_ELEMENT_ON``
    holds ``per_element = 1`` (its per-SM term per element: bpc at 2 bytes an element)."""
    n = int(((rows.cls == cls) & ~rows.near_floor).sum())
    p = pooled[cls]
    per = {"per_element": 1.0} if cls in fns.PER_ELEMENT_ON else {}
    if n >= MIN_ROWS:
        return dict(fns.MEM_FREE), {"e_compute": 0.5, **per}
    return ({"e_bw": fns.MEM_FREE["e_bw"]},
            {"e_compute": 0.5, "bpc": p["bpc"], "l2_hit": p["l2_hit"], "b_half_bytes": p["b_half_bytes"], **per})


def halves(rows):
    """Two hash halves of ``rows`` (deterministic, by row id)."""
    import hashlib

    h = np.array([int(hashlib.sha256(f"opcost-smax|{r}".encode()).hexdigest()[:8], 16) % 2 for r in rows.row_id])
    return rows[h == 0], rows[h == 1]


def fit_softmax(rows, base: dict, pooled: dict) -> dict:
    """``softmax`` and ``softmax_block`` fitted in turn, twice (one host op: their rows at the floor
    share one dispatch, so each fit holds the other's current set)."""
    sets: dict = {}
    for _ in range(2):
        for cls in SOFTMAX:
            free, held = fit_free(rows, cls, pooled)
            sets[cls], _ = fit_class(rows, with_sets(base, sets), cls, free, held)
    return sets


def cross_validate(rows, base: dict, pooled: dict) -> dict:
    """class -> [(kernel rows, predictions, the fold's set)] of the softmax classes, each half
    predicted by the fit on the other hash half (two folds)."""
    a, b = halves(rows)
    out: dict = {c: [] for c in SOFTMAX}
    for fit_on, test in ((a, b), (b, a)):
        sets = fit_softmax(fit_on, base, pooled)
        arr = with_sets(base, sets)
        host = dispatch(test, arr)
        for cls in SOFTMAX:
            ker = test[(test.cls == cls) & ~test.near_floor]
            out[cls].append((ker, eager(ker, arr, host), sets[cls]))
    return out


def norm_fallback(arrays: dict) -> dict:
    """The Ampere arrays as they were without softmax sets: both softmax classes take the
    family's norm set (``CLASS_FALLBACK``)."""
    arr = {k: (np.array(v, dtype=float) if np.ndim(v) else v) for k, v in arrays.items()}
    n = CLASS_CODE["norm"]
    for cls in SOFTMAX:
        for v in arr.values():
            if np.ndim(v):
                v[CLASS_CODE[cls]] = v[n]
    return arr


def main(argv=None) -> int:
    from ampere_softmax_report import cross_source, report, write_sets

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=nd.DATA)
    ap.add_argument("--vidur", default=VIDUR, help="folder of vidur_a100_a40.csv (the cross-source check)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "ampere_softmax.md"))
    ap.add_argument("--write", action="store_true", help="write the chosen sets into the family files")
    ap.add_argument("--per-byte", action="store_true",
                    help="the form before: the fitted sets' per-SM term per byte (none per element)")
    args = ap.parse_args(argv)
    if args.per_byte:
        fns.PER_ELEMENT_ON.clear()
    t0 = time.time()
    ns = nd.load(args.data)
    rows = ns[(ns.device_system == DEV) & ns.cls.isin(fns.MEMORY)].copy()
    shipped = norm_fallback(fc.load_constants("nvidia-ampere").arrays)
    pooled = pooled_sets()
    cands = {"shipped": shipped, "pooled": with_sets(shipped, {c: pooled[c] for c in fns.MEMORY})}
    fitted = fit_softmax(rows, shipped, pooled)
    for cls in CHECKED:
        free, held = fit_free(rows, cls, pooled)
        fitted[cls], _ = fit_class(rows, shipped, cls, free, held)
    cv = cross_validate(rows, shipped, pooled)
    cands["a100"] = with_sets(shipped, fitted)
    preds = {name: eager(rows, arr, dispatch(rows, arr)) for name, arr in cands.items()}
    choice = {}
    for cls in SOFTMAX:
        ker = ~rows.near_floor & (rows.cls == cls)
        in_pool = fns.metrics(preds["pooled"][ker.to_numpy()], rows.t[ker])["mape"]
        p = np.concatenate([p for _, p, _ in cv[cls]])
        m = np.concatenate([k.t.to_numpy() for k, _, _ in cv[cls]])
        choice[cls] = ("a100" if fns.metrics(p, m)["mape"] < in_pool else "pooled")
    src = cross_source(args.vidur, fitted, shipped)
    chosen = {c: (fitted[c] if choice[c] == "a100" else pooled[c]) for c in SOFTMAX}
    if args.write:
        write_sets(chosen, choice, rows, preds, fc.EFFICIENCY_DIR)
    lines = report(rows, preds, fitted, pooled, cv, choice, src, time.time() - t0)
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
