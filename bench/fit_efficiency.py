"""Fit the kernel-time efficiency constants (analyzer/prediction/efficiency.py) per GPU family.

Reads the public measurements in ``../shared/measurements/gpu`` (see its README for how every
row was timed), maps each row to opcost's counts of the equivalent one-op ONNX model (closed
forms in ``efficiency_data``, checked against ``analyzer.analyze`` on a sample of rows at every
run: ``efficiency_verify``), fits the constants of each family and op class (one class's fit:
``efficiency_class_fit``, scipy least squares on log(pred/measured), deterministic), writes ``hardware_db/efficiency/<family>.json``
(``efficiency_files``) and scores the datasheet roofline and the fitted model in-device and
cross-device (``efficiency_report``).

    PYTHONPATH=$PWD python bench/fit_efficiency.py [MEASUREMENTS_DIR] [--no-write] [--verify N]

Needs pandas and scipy (this script only; the library needs numpy/jax).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from efficiency_data import (  # (puts the repository root on sys.path first)
    COMMAND, DEVICES, FILES, FIT_DATE, FIT_SOURCES, NOT_FITTED, PER_ELEMENT, ROOT, SCRIPT, hw_of, load)
from efficiency_class_fit import FIT_CAP, _loss, fit_class, fit_method
from efficiency_files import FAMILY_INHERITS, LEGACY, _filter_text, _timing, unpinned, write_files
from efficiency_report import BASELINE_REV, baseline_dir, dram_fraction_lines, render, score, write_fixture
from efficiency_verify import verify_counts
from analyzer.prediction.efficiency.constants import EFFICIENCY_DIR
from analyzer.prediction.efficiency.kernel_time import CLASS_CODE


PER_ELEMENT_ON: list = list(PER_ELEMENT)   # the family sets written per element (``--per-byte``: none)


def _round(consts: dict) -> dict:
    return {k: float(f"{v:.4g}") for k, v in consts.items()}


def _family_parts(fam: str, data: dict) -> dict:
    """op class -> [(source, rows)] of ``fam``'s fit sources (``FIT_SOURCES``, less ``NOT_FITTED``)."""
    by_class: dict = {}
    for src in FIT_SOURCES[fam]:
        if src not in data:
            continue
        for cls, d in data[src].groupby("op_class"):
            if (src[0], src[1], cls) not in NOT_FITTED:
                by_class.setdefault(cls, []).append((src, d))
    return by_class


def fit_family(fam: str, data: dict, floors: np.ndarray | None = None, own: dict | None = None,
               mode: str = "median") -> dict:
    """{class: (constants, provenance)} of one family.  ``floors`` (None: the floor is fitted):
    per op class (``OP_CLASSES``) the floor in cycles each set is fitted with, held at
    cycles / the clock of the set's device (``floor_clock_hz``), a NaN class fitted free;
    ``own``: the family's sets fitted with the floor free, named in the provenance; ``mode`` (the
    ``FLOOR_MODES`` entry ``floors`` came from; "median-ramp": each set's ``b_half_bytes`` held at
    ``own``'s too)."""
    sets = {}
    for cls, parts in sorted(_family_parts(fam, data).items()):
        # the floor is a number of cycles of the device it was fitted on (efficiency.with_clock)
        clocks = {hw_of(src[1])["clock_hz"] for src, _ in parts}
        clock = clocks.pop() if len(clocks) == 1 and min(clocks) > 0 else 0.0
        cycles = float(floors[CLASS_CODE[cls]]) if floors is not None and clock else float("nan")
        held = cycles / clock if np.isfinite(cycles) else None
        mine = (own or {}).get(cls)
        hold = {} if held is None else {"floor_s": held}
        if hold and mode == "median-ramp" and mine:
            hold["b_half_bytes"] = mine[0]["b_half_bytes"]
        consts, err = fit_class(cls, [(d, hw_of(src[1])) for src, d in parts], cls in PER_ELEMENT_ON, hold)
        if clock:
            consts = dict(consts, floor_clock_hz=clock)
        method = fit_method(cls, consts)
        if held is not None:
            method += FLOOR_HELD.format(cycles=cycles, mode=mode, ramp=", b_half_bytes held at its own" if
                                        "b_half_bytes" in hold else "",
                                        own=f"{mine[0]['floor_s'] * clock:.0f} cycles" if mine else "none")
        ops = sorted(set().union(*[set(d.op) for _, d in parts]))
        sets[cls] = (_round(consts), {
            "kind": "fit",
            "measurement_file": ", ".join(sorted({FILES[s[0]] for s, _ in parts})),
            "device_system": ", ".join(sorted({s[1] for s, _ in parts})),
            "hardware": ", ".join(sorted({hw_of(s[1])["profile"] for s, _ in parts})),
            "filter": _filter_text(parts, ops),
            "timing": ", ".join(sorted({_timing(s[0]) for s, _ in parts})),
            "rows": int(sum(len(d) for _, d in parts)),
            "rows_used_in_fit": int(sum(min(len(d), FIT_CAP) for _, d in parts)),
            "fit_method": method,
            "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND,
            "fit_error": {k: round(v, 2) if isinstance(v, float) else v for k, v in err.items()}})
        print(f"  fit {fam:22s} {cls:12s} rows {sets[cls][1]['rows']:6d}  MAPE {err['mape']:6.1f}%  "
              f"{_round(consts)}", flush=True)
    return sets


# what a set fitted at the pooled floor says of it (fit_family)
FLOOR_HELD = ("; floor_s held at {cycles:.0f} cycles / floor_clock_hz, one figure per class for every NVIDIA "
              "family (--floor {mode}; this family's own fit with the floor free: {own}){ramp}, the other "
              "constants fitted with it")


def pooled_cycles(fams: dict) -> np.ndarray:
    """``constants.floor_cycles`` of the family files ``fams`` would be written as (the committed
    folder with ``fams``' sets written over it, in a temporary folder): per op class, the floor in
    cycles ``analyze`` applies to an NVIDIA GPU with a stated clock."""
    import shutil
    import tempfile

    from analyzer.prediction.efficiency.constants import floor_cycles

    tmp = tempfile.mkdtemp()
    for name in os.listdir(EFFICIENCY_DIR):
        if name.endswith(".json"):
            shutil.copy(os.path.join(EFFICIENCY_DIR, name), tmp)
    write_files(fams, tmp)
    out = floor_cycles(tmp)
    shutil.rmtree(tmp)
    return out


# the classes whose pooled floor the joint fit chooses (``joint_cycles``); the gather is held at the
# elementwise figure, the one analyze gives it (the gather's class_chain)
JOINT_CLASSES = ("gemm", "attention", "elementwise", "activation", "norm")


def joint_cycles(data: dict, free: dict, floors: np.ndarray) -> np.ndarray:
    """``floors`` with each ``JOINT_CLASSES`` class's cycles replaced by the one number F that
    minimises the summed loss (``_loss``) over the NVIDIA families that fit the class, each family
    refitted with its floor held at F / its clock: a bounded 1-D search on log F between the
    smallest and the largest of the families' own cycles (``free``, fitted with the floor free)."""
    from scipy.optimize import minimize_scalar

    out = floors.copy()
    for cls in JOINT_CLASSES:
        fits = []
        for fam in FIT_SOURCES:
            parts = _family_parts(fam, data).get(cls)
            if parts and cls in free[fam] and free[fam][cls][0].get("floor_clock_hz", 0) > 0:
                fits.append(([(d, hw_of(src[1])) for src, d in parts], free[fam][cls][0]["floor_clock_hz"]))
        own = [free[f][cls][0]["floor_s"] * free[f][cls][0]["floor_clock_hz"] for f in FIT_SOURCES
               if cls in free[f] and free[f][cls][0].get("floor_clock_hz", 0) > 0]
        if len(fits) < 2:
            continue

        def total(log_f):
            f = float(np.exp(log_f))
            return sum(_loss(cls, fit_class(cls, ds, cls in PER_ELEMENT_ON, {"floor_s": f / clk})[0], ds)
                       for ds, clk in fits)

        r = minimize_scalar(total, bounds=(np.log(min(own)), np.log(max(own))), method="bounded",
                            options={"xatol": 0.01})
        out[CLASS_CODE[cls]] = float(np.exp(r.x))
        print(f"joint floor {cls}: {out[CLASS_CODE[cls]]:.0f} cycles (own {', '.join(f'{o:.0f}' for o in own)}; "
              f"{r.nfev} evaluations)", flush=True)
    out[CLASS_CODE["gather"]] = out[CLASS_CODE["elementwise"]]
    return out


# how the floor of an NVIDIA family's set is fitted (``fit_all``): "own" free per family; "median"
# held at the median over the families of their own cycles; "median-ramp" the same with each set's
# b_half_bytes held at the family's own; "joint" held at one figure per class fitted over the
# families together (``joint_cycles``). Only "own" writes the shipped files (docs/accuracy.md)
FLOOR_MODES = ("own", "median", "median-ramp", "joint")


def fit_all(data: dict, aic_dir: str | None = None, floor: str = "own") -> dict:
    """family -> {class: (constants, provenance)}; plus 'generic' and the "-pytorch2.3" variants.

    ``floor`` "own": every family fitted with its floor free.  The other ``FLOOR_MODES``: then
    each family's sets refitted with the floor held at one number of cycles per class over the
    set's clock, so that the constants are fitted with the floor ``analyze`` applies to an NVIDIA
    GPU (``hardware.pooled_floors``: the median over the families' files): "median" and
    "median-ramp" the first stage's median (``pooled_cycles``), "joint" the figure of
    ``joint_cycles``.  ``aic_dir``:
    the measurements folder whose ``aic_elementwise.csv`` gives the quantize sets
    (``add_aic_elementwise``), None: none."""
    free = {fam: fit_family(fam, data) for fam in FIT_SOURCES}
    fams = {fam: dict(sets) for fam, sets in free.items()}
    fams["generic"] = fit_generic(data)
    legacy_variants(fams)
    add_aic_elementwise(fams, aic_dir)
    if floor == "own":
        return fams
    floors = pooled_cycles(fams)
    if floor == "joint":
        floors = joint_cycles(data, free, floors)
    print("held floor cycles: " + ", ".join(f"{c} {floors[CLASS_CODE[c]]:.0f}"
                                            for c in ("gemm", "attention", "elementwise", "activation",
                                                      "norm", "gather", "quantize")), flush=True)
    held = {fam: fit_family(fam, data, floors, free[fam], floor) for fam in FIT_SOURCES}
    for fam, sets in held.items():   # the quantize sets (fit_aic_elementwise's) as they were
        sets.update({c: v for c, v in fams[fam].items() if c not in sets and c not in free[fam]})
    out = {fam: dict(sorted(sets.items())) for fam, sets in held.items()}
    out["generic"] = fams["generic"]
    legacy_variants(out)
    if "generic" + LEGACY in fams:
        out["generic" + LEGACY] = fams["generic" + LEGACY]
    return out


def fit_generic(data: dict) -> dict:
    """The generic sets: each class fitted over every device that has it (GB200 left out), the
    classes without rows inheriting a fitted one."""
    # generic: pooled over every device that has the class
    pooled: dict = {}
    for (fkey, dev), df in data.items():
        # GB200 is scored cross-device; the H200 op rows (this project's, one device) leave the
        # pooled public fit as it was
        if dev not in DEVICES or dev == "gb200" or fkey == "h200_ops":
            continue
        for cls, d in df.groupby("op_class"):
            if (fkey, dev, cls) in NOT_FITTED:
                continue
            pooled.setdefault(cls, []).append(((fkey, dev), d))
    gsets = {}
    for cls, parts in sorted(pooled.items()):
        consts, err = fit_class(cls, [(d, hw_of(src[1])) for src, d in parts])
        gsets[cls] = (_round(consts), {
            "kind": "fit",
            "measurement_file": ", ".join(sorted({FILES[s[0]] for s, _ in parts})),
            "device_system": ", ".join(sorted({s[1] for s, _ in parts})) + " (pooled)",
            "filter": _filter_text(parts, sorted(set().union(*[set(d.op) for _, d in parts]))),
            "timing": ", ".join(sorted({_timing(s[0]) for s, _ in parts})),
            "rows": int(sum(len(d) for _, d in parts)),
            "rows_used_in_fit": int(sum(min(len(d), FIT_CAP) for _, d in parts)),
            "fit_method": fit_method(cls, consts),
            "fit_date": FIT_DATE, "fit_script": SCRIPT, "command": COMMAND,
            "fit_error": {k: round(v, 2) if isinstance(v, float) else v for k, v in err.items()}})
        print(f"  fit {'generic':22s} {cls:12s} rows {gsets[cls][1]['rows']:6d}  MAPE {err['mape']:6.1f}%  "
              f"{_round(consts)}", flush=True)
    inherit = {"bgemm": ("gemm", "no batched-GEMM measurements in shared; same cuBLAS tiles as gemm"),
               "conv": ("gemm", "no convolution measurements in shared; implicit-GEMM kernels, gemm constants"),
               "softmax": ("norm", "no softmax measurements in shared; a row reduction plus elementwise pass "
                                   "like a norm (quack: tuned norms and softmax reach similar bandwidth)"),
               "reduce": ("norm", "no reduction measurements in shared; one-pass row reduction like a norm"),
               "movement": ("elementwise", "no copy/transpose measurements in shared; a streaming copy like add"),
               "other": ("elementwise", "unknown kernels: streaming-elementwise constants")}
    for cls, (src, why) in inherit.items():
        gsets[cls] = (dict(gsets[src][0]), {"kind": "inherit", "source": f"generic '{src}' set: {why}"})
    return gsets


def legacy_variants(fams: dict) -> None:
    """Each family's gather set moved to its "-pytorch2.3" variant, in place."""
    # the 2024 gather kernel (PyTorch's index_select: a per-element rate) is not the one PyTorch
    # runs today (the vectorized gather, a row copy: op_classes.CLASS_FALLBACK): its fitted sets go
    # to "<family>-pytorch2.3" files that inherit the family; the family's own gather falls back
    # to its elementwise set
    for fam in list(fams):
        if "gather" in fams[fam]:
            c, p = fams[fam].pop("gather")
            fams[fam + LEGACY] = {"gather": (dict(c, per_element=1), p)}
    # a family without gather rows takes the variant set of the family it inherits (the same
    # 2024 kernel on the same memory technology): every GPU family has its "-pytorch2.3" variant
    for fam, parent in FAMILY_INHERITS.items():
        if fam in fams and fam + LEGACY not in fams and parent + LEGACY in fams:
            c, _ = fams[parent + LEGACY]["gather"]
            fams[fam + LEGACY] = {"gather": (dict(c), {
                "kind": "inherit", "source": f"{parent}{LEGACY}'s gather set (PyTorch's 2024 index_select "
                f"kernel, fitted on {fams[parent + LEGACY]['gather'][1].get('device_system', parent)}): "
                f"no gather measurements on {fam}"})}


def add_aic_elementwise(fams: dict, meas_dir: str) -> None:
    """The elementwise sets of the Hopper, Blackwell and Ada families, pooled over the seven
    systems of ``aic_elementwise.csv`` (``bench/fit_aic_elementwise.py``, which reports the fit and
    its leave-one-system-out scores), in place; none where the file (or ``meas_dir``) is absent."""
    if not meas_dir or not os.path.exists(os.path.join(meas_dir, "aic_elementwise.csv")):
        return
    import fit_aic_elementwise

    for fam, sets in fit_aic_elementwise.family_sets(meas_dir).items():
        if fam in fams:
            fams[fam] = dict(sorted({**fams[fam], **sets}.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("measurements", nargs="?", default=os.path.join(ROOT, "..", "shared", "measurements", "gpu"))
    ap.add_argument("--out-dir", default=EFFICIENCY_DIR, help="where the family JSON files go")
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results", "efficiency_fit_2026-12-03"))
    ap.add_argument("--no-write", action="store_true",
                    help="fit and score, write nothing in the repository (the family files go to --out-dir where "
                         "one is given, else to a temporary folder)")
    ap.add_argument("--verify", type=int, default=3, help="rows per op checked against analyzer.analyze")
    ap.add_argument("--check", action="store_true",
                    help="fit into a temporary folder and compare with the committed family files (exit 1 "
                         "where a constant differs by more than 1e-6 relative and its set's stated fit error "
                         "differs too; a constant whose set's fit error is unchanged is listed as not pinned "
                         "down by the rows); writes nothing")
    ap.add_argument("--floor", choices=FLOOR_MODES, default="own",
                    help="the NVIDIA families' floors: own (each family's, fitted; analyze applies their median "
                         "in cycles), median (each family refitted with the floor held at that median), "
                         "median-ramp (the same with b_half_bytes held at the family's own), joint (held at one "
                         "figure per class fitted over the families together); docs/accuracy.md, Tried and not kept")
    ap.add_argument("--per-byte", action="store_true",
                    help="the form before: every family set's per-SM term per byte (none per element)")
    args = ap.parse_args(argv)
    if args.per_byte:
        PER_ELEMENT_ON.clear()
    t0 = time.time()
    verify = verify_counts(args.measurements, args.verify) if args.verify else []
    bad = [v for v in verify if v.startswith("BAD")]
    print(f"count verification: {len(verify) - len(bad)}/{len(verify)} ok", flush=True)
    for v in bad:
        print("  " + v)
    if bad:
        return 1
    data = load(args.measurements)
    print("loaded: " + ", ".join(f"{k[0]}:{k[1]}={len(v)}" for k, v in data.items()), flush=True)
    fams = fit_all(data, args.measurements, args.floor)
    directory = args.out_dir
    if args.check:
        import tempfile

        directory = tempfile.mkdtemp()
        write_files(fams, directory)
        moved, flat = unpinned(directory, EFFICIENCY_DIR)
        if flat:
            print("constants the rows do not pin down (each set's stated fit error is the same as the committed "
                  "one's):\n  " + "\n  ".join(flat))
        print("\n".join(moved) if moved else "the committed family files are what this fit writes "
              f"(every constant within 1e-6 relative or its set's fit error unchanged; {EFFICIENCY_DIR})")
        return 1 if moved else 0
    if args.no_write:
        import shutil
        import tempfile

        if os.path.abspath(directory) == os.path.abspath(EFFICIENCY_DIR):
            directory = tempfile.mkdtemp()
        os.makedirs(directory, exist_ok=True)
        shutil.copy(os.path.join(EFFICIENCY_DIR, "schema.json"), directory)
    write_files(fams, directory)
    before = baseline_dir()
    rows = score(data, directory, before)
    before_fams = None
    if before:
        before_fams = {}
        for name in os.listdir(before):
            if name.endswith(".json") and name != "schema.json":
                with open(os.path.join(before, name), encoding="utf-8") as f:
                    doc = json.load(f)
                before_fams[doc["family"]] = {c: e["constants"] for c, e in doc["sets"].items()}
    text = render(rows, fams, verify, COMMAND, time.time() - t0, before_fams)
    head, tail = text.split("## Constants", 1)
    text = head + "\n".join(dram_fraction_lines(data)) + "\n## Constants" + tail
    print(text)
    if not args.no_write:
        os.makedirs(os.path.dirname(args.results), exist_ok=True)
        with open(args.results + ".md", "w", encoding="utf-8") as f:
            f.write(text)
        rec = write_fixture(data, directory)
        print(f"fixture: {rec['rows']} rows, fitted MAPE {rec['mape']:.2f}%")
        with open(args.results + ".json", "w", encoding="utf-8") as f:
            json.dump({"command": COMMAND, "fit_date": FIT_DATE, "baseline_rev": BASELINE_REV, "rows": rows,
                       "constants": {k: {c: v[0] for c, v in s.items()} for k, s in fams.items()},
                       "constants_before": before_fams}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
