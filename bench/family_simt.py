"""Per-family FMA-unit GEMM and convolution sets (``gemm_simt``, ``bgemm_simt``, ``conv3_simt``,
``conv_simt``) fitted on each NVIDIA family's own NeuSight rows, shipped where two-fold
cross-validation says they beat the pooled set.

Data: ``shared/measurements/gpu/neusight_ops.csv.gz`` (fp32, TF32 off, one eager PyTorch 2.1 call
between CUDA events: host dispatch + kernel; no L2 flush), the ``nn.Linear`` (``gemm_simt``),
``torch.bmm`` (``bgemm_simt``) and ``nn.Conv2d`` rows (all 3x3 stride 1: ``conv3_simt`` where cuDNN
ran a Winograd or FFT kernel, ``conv_simt`` the rest) of each family's devices (``FAMILY_DEVICES``;
the A100's matmul rows are on the 40 GB card, its convolution rows on the 80 GB one).  No H100 row
and no whole-model latency is read.

Form and method: ``bench/fit_neusight.py``'s.  Latency = host dispatch[device, class] + kernel
(``kernel_time``, the pooled NVIDIA floor cycles over the device's clock); rows within
``FLOOR_X`` (3) x their device's and class's smallest latency are out of every kernel fit and
score; the dispatch of a constants set is the median of ``latency - kernel`` over the rows within
``DISPATCH_X`` (1.5) x it, per device and dispatch class (both convolution classes are one
nn.Conv2d call), refitted in turn with the kernel constants (two rounds).  ``gemm_simt``,
``conv3_simt``, ``conv_simt`` (``fit_tiled``): ``FREE``'s constants (e_compute of the FMA fp32
peak; ``conv3_simt``'s Winograd multiply share too), the tile chosen of ``TILES`` by the fit's
cost, waves and split-K, e_bw held at generic.json's tensor-core gemm set's, b_half 0; a
convolution's cuDNN helper launches (``cudnn_conv``) at their floors, as in the pooled fit.
``bgemm_simt``: the tile of ``BGEMM_TILES`` run whole (``whole_tile``), e_compute and ``k_fill``
(k-loop steps of a tile's prologue and epilogue) free.  Least squares on log(pred/measured),
soft L1, on ``neusight_data.subsample``'s hash-chosen rows (at most 300 per op and device
plus 60 at the floor), scored on every kernel row.  A power-capped card's FMA peak is taken at its profile's NeuSight-fitted sustained
clock (T4, P4), held fixed.

Rule (fixed before any score was seen, the rule of ``bench/ampere_softmax.py``): per family and
class, the family's own set ships iff its two-fold cross-validated MAPE (fit on one hash half of
the family's rows, score the other half's kernel rows with that half's own host dispatch, both
ways) is below the pooled generic set's in-sample MAPE on the same kernel rows; else the family
keeps the pooled set (generic.json), which also stays the set of every family without data.

Writes (``--write``) the chosen sets into the family files (``nvidia-ampere``: Hopper and
Blackwell inherit it; ``nvidia-volta``, ``nvidia-turing``, ``nvidia-pascal``), removes a class the
rule did not choose, copies Ampere's chosen sets into ``nvidia-ampere-ga10x.json`` as inherited
sets (Ada inherits that file; the GA10x/AD10x ``fp32_datapath_factor`` is relative to the
one-datapath level, so those cards take the level of Ampere, their design's nearest one-datapath
family: rerun ``bench/fit_sustained_gemm.py --write`` afterwards, which reads the GEMM sets), and
the report (``--out``; with ``--write`` it ends with a sample of the convolution rows through
``analyzer.analyze`` on the written files and on them without the family convolution sets).

``--kloop FAMILY``: that family's convolution classes with the serial k loop's sum form (``KLOOP``,
scored by ``bench/family_simt_kloop.py``; tried on nvidia-ampere and not kept: no shipped file has it).

Usage: ``PYTHONPATH=$PWD python bench/family_simt.py [--write] [--kloop FAMILY] [--out bench/results/family_simt.md]``.
"""

from __future__ import annotations

import argparse
import hashlib
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
from fit_neusight import Fit  # noqa: E402
from report_lines import emit  # noqa: E402

SCRIPT = "bench/family_simt.py"
COMMAND = "PYTHONPATH=$PWD python bench/family_simt.py --write"
FIT_DATE = {"gemm_simt": "2026-12-02", "bgemm_simt": "2026-12-02", "conv3_simt": "2026-12-03", "conv_simt": "2026-12-03"}
GEMM_CLASSES = ("gemm_simt", "bgemm_simt")
CONV_CLASSES = ("conv3_simt", "conv_simt")
CLASSES = GEMM_CLASSES + CONV_CLASSES
# the free constants of a class fitted on the tiles of TILES (bgemm_simt: fit_neusight.fit_bgemm_whole):
# e_compute, and conv3_simt's Winograd multiply share
FREE = {"gemm_simt": fns.MAT_FREE, "conv3_simt": dict(fns.MAT_FREE, **fns.WINO), "conv_simt": fns.MAT_FREE}
# the NVIDIA families with NeuSight devices: family -> its NeuSight device_system values (the A100's
# matmul rows are on the 40 GB card, its convolution rows on the 80 GB one)
FAMILY_DEVICES = {"nvidia-ampere": ("a100_pcie_40gb", "a100_pcie_80gb"), "nvidia-volta": ("v100_pcie_32gb",),
                  "nvidia-turing": ("t4",), "nvidia-pascal": ("p100_pcie_16gb", "p4")}
GA10X = "nvidia-ampere-ga10x"   # takes nvidia-ampere's chosen sets as inherited copies
# the serial k loop's sum form (``efficiency.tiles.kloop_bound``, ``kloop_sum = 1``: matrix = tiles + K x
# kloop_cycles / clock), cycles per GEMM-depth element K free (start and bounds those of
# bench/hopper_conv_simt.py), for the convolution classes of the families in KLOOP_FAMILIES (``--kloop``)
KLOOP = {"kloop_cycles": (45.0, 1.0, 400.0)}
KLOOP_FAMILIES: list = []


def shares(devices) -> dict:
    """device -> sustained / boost clock of its profile (1 where none is set): the shipped
    NeuSight-fitted shares of the power-capped cards, held fixed."""
    import hardware_db

    out = {}
    for d in devices:
        p = hardware_db.get(nd.PROFILE[d])
        out[d] = p.sustained_clock_ghz / p.clock_ghz if p.sustained_clock_ghz else 1.0
    return out


def family_rows(ns, family: str):
    """The family's rows of ``CLASSES`` (all, the floor rows included: they fit the dispatch)."""
    return ns[ns.device_system.isin(FAMILY_DEVICES[family]) & ns.cls.isin(CLASSES)].copy()


def _tiled_set(vals: dict, tile, kloop: bool) -> dict:
    s = fns._mat_set(vals, tile)
    return dict(s, kloop_sum=1.0) if kloop else s


def fit_tiled(rows, fit: Fit, cls: str, kloop: bool = False) -> None:
    """A tiled FMA-unit class's free constants (``FREE``; ``kloop``: ``KLOOP``'s too, in the sum
    form) for each tile of ``TILES`` (the least cost kept), the shares, the dispatch and the other
    sets held; a convolution class's cuDNN helper launches at their floors (``fit_neusight.kernel_s``)."""
    ker = rows[(rows.cls == cls) & ~rows.near_floor]
    lt = np.log(ker.t.to_numpy())
    free = dict(FREE[cls], **KLOOP) if kloop else FREE[cls]
    best = None
    for tile in fns.TILES:
        def resid(x, tile=tile):
            s = _tiled_set(dict(zip(free, np.exp(x))), tile, kloop)
            return np.log(fns.predict(ker, Fit(dict(fit.sets, **{cls: s}), fit.shares, fit.dispatch))) - lt

        vals, cost = fns._lsq(resid, free)
        if best is None or cost < best[0]:
            best = (cost, _tiled_set(vals, tile, kloop))
    fit.sets[cls] = best[1]


def fit_family(rows, sh: dict, kloop: bool = False) -> Fit:
    """Every class of ``CLASSES`` on ``rows`` (one family's; fitted on ``neusight_data.subsample``'s hash-chosen
    rows of them: at most ``CAP`` per op and device plus ``AT_FLOOR_CAP`` at the floor), the
    dispatch refitted in turn (two rounds; the first dispatch the pooled set's); ``kloop``: the
    convolution classes with the k loop's sum form (``KLOOP``)."""
    rows = nd.subsample(rows)
    fit = Fit({}, dict(sh), {})
    fit.dispatch = fns.fit_dispatch(rows, fit)
    for _ in range(2):
        fit_tiled(rows, fit, "gemm_simt")
        fns.fit_bgemm_whole(rows, fit)
        for cls in CONV_CLASSES:
            fit_tiled(rows, fit, cls, kloop)
        fit.dispatch = fns.fit_dispatch(rows, fit)
    return fit


def halves(rows):
    """Two hash halves of ``rows`` (deterministic, by row id)."""
    h = np.array([int(hashlib.sha256(f"opcost-fsimt|{r}".encode()).hexdigest()[:8], 16) % 2 for r in rows.row_id])
    return rows[h == 0], rows[h == 1]


def scored(rows, fit: Fit):
    """``rows``'s kernel rows with ``p``: the eager-op prediction of ``fit``'s sets with the
    dispatch they imply on ``rows``'s own floor rows."""
    own = Fit(fit.sets, fit.shares, {})
    own.dispatch = fns.fit_dispatch(rows, own)
    ker = rows[~rows.near_floor]
    return ker.assign(p=fns.predict(ker, own))


def evaluate(ns, family: str) -> dict:
    """The family's fit, its two-fold cross-validation and the pooled set on its rows:
    {"fit", "folds", "pooled": kernel rows with p, "own": in-sample, "cv": held out, "choice"}."""
    import pandas as pd

    rows = family_rows(ns, family)
    sh = shares(FAMILY_DEVICES[family])
    kloop = family in KLOOP_FAMILIES
    fit = fit_family(rows, sh, kloop)
    a, b = halves(rows)
    folds, parts = [], []
    for fit_on, test in ((a, b), (b, a)):
        f = fit_family(fit_on, sh, kloop)
        folds.append(f)
        parts.append(scored(test, f))
    out = {"fit": fit, "folds": folds, "rows": rows, "pooled": scored(rows, Fit({}, sh, {})),
           "own": scored(rows, fit), "cv": pd.concat(parts)}
    out["choice"] = choose(out["cv"], out["pooled"])
    return out


def choose(cv, pooled) -> dict:
    """class -> "family" where the family fit's two-fold cross-validated MAPE on its kernel rows
    (``cv``: rows with ``cls``, ``t`` measured, ``p`` predicted) is below the pooled set's
    in-sample MAPE on the same rows (``pooled``), else "pooled" (the rule fixed beforehand)."""
    out = {}
    for c in CLASSES:
        a, b = cv[cv.cls == c], pooled[pooled.cls == c]
        out[c] = "family" if fns.metrics(a.p, a.t)["mape"] < fns.metrics(b.p, b.t)["mape"] else "pooled"
    return out


# ----------------------------------------------------------------------------- writing

FORM = {
    "gemm_simt": "e_compute (of the FMA fp32 peak) free, the tile chosen of 128x128, 128x64, 64x64 by the fit's cost, "
                 "waves over the SMs with split-K",
    "bgemm_simt": "e_compute and k_fill (k-loop steps of a tile's prologue and epilogue) free, the tile (rows x "
                  "columns) chosen of 128x128, 64x128, 64x64 by the fit's cost and run whole (whole_tile)",
    "conv3_simt": "e_compute (of the FMA fp32 peak) and mult_share (Winograd/FFT multiplies per direct multiply, in "
                  "[0.25, 1]) free, the implicit GEMM's tile chosen of 128x128, 128x64, 64x64 by the fit's cost, waves "
                  "over the SMs with split-K; cuDNN's launches besides the main kernel (cudnn_conv) at their floors",
    "conv_simt": "e_compute (of the FMA fp32 peak) free, the implicit GEMM's tile chosen of 128x128, 128x64, 64x64 by "
                 "the fit's cost, waves over the SMs with split-K; cuDNN's launches besides the main kernel "
                 "(cudnn_conv) at their floors"}
KLOOP_NOTE = ("; the serial k loop's kloop_cycles (cycles per GEMM-depth element K) free too, added to the tiles' "
              "time (kloop_sum = 1: matrix = tiles + K x kloop_cycles / clock; bench/family_simt_kloop.py's rule)")
KLOOP_DATE = "2026-12-04"
FILTER = {"gemm_simt": "op linear (nn.Linear)", "bgemm_simt": "op bmm (torch.bmm)",
          "conv3_simt": "op conv (nn.Conv2d); rows running winograd or fft kernels and the rest",
          "conv_simt": "op conv (nn.Conv2d); rows whose kernels_launched name no winograd/fft"}


def provenance(family: str, cls: str, ev: dict) -> dict:
    rows = ev["rows"][ev["rows"].cls == cls]
    own = ev["own"][ev["own"].cls == cls]
    cv = ev["cv"][ev["cv"].cls == cls]
    pool = ev["pooled"][ev["pooled"].cls == cls]
    m_cv, m_pool = fns.metrics(cv.p, cv.t), fns.metrics(pool.p, pool.t)
    devs = [d for d in FAMILY_DEVICES[family] if d in set(rows.device_system)]
    sh = ", ".join(f"{nd.PROFILE[d]} {s:.3f}" for d, s in shares(devs).items() if s < 1.0)
    method = (f"least squares on log(pred/measured) (soft L1), latency = host dispatch + kernel (eager-op), on the "
              f"rows above 3x their device's and class's smallest latency, the dispatch refitted in turn (median of "
              f"latency - kernel over the rows within 1.5x it, per device and class); {FORM[cls]}; e_bw held at "
              f"generic.json's gemm set's, b_half 0"
              + (f"; the FMA peak at the profile's NeuSight-fitted sustained clock ({sh} x boost), held" if sh else "")
              + (KLOOP_NOTE if "kloop_cycles" in ev["fit"].sets[cls] else "")
              + f"; rule fixed beforehand: shipped because its two-fold cross-validated MAPE (hash halves of the "
              f"family's rows) {m_cv['mape']:.2f} % is below the pooled generic set's in-sample MAPE on the same "
              f"kernel rows {m_pool['mape']:.2f} %; floor not identified (inside the host dispatch): the pooled "
              f"NVIDIA floor cycles apply (constants.floor_cycles), floor_s here is that floor at 1.41 GHz")
    err = fns.metrics(own.p, own.t)
    return {"kind": "fit", "measurement_file": nd.MEASUREMENT_FILE, "device_system": ", ".join(devs),
            "hardware": ", ".join(nd.PROFILE[d] for d in devs), "filter": FILTER[cls],
            "timing": "eager single call (CUDA events around one PyTorch 2.1 call, fp32, TF32 off, mean of the "
                      "fastest 5 of 25, no L2 flush; host dispatch included, fitted apart)",
            "rows": int(len(rows)), "rows_used_in_fit": int(len(own)), "fit_method": method,
            "fit_date": KLOOP_DATE if "kloop_cycles" in ev["fit"].sets[cls] else FIT_DATE[cls], "fit_script": SCRIPT, "command": COMMAND,
            "fit_error": {k: (round(v, 2) if isinstance(v, float) else v) for k, v in err.items()}}


def _note(family: str, choice: dict) -> str:
    own = [c for c in CLASSES if choice[c] == "family"]
    rest = [c for c in CLASSES if choice[c] != "family"]
    s = f" FMA-unit GEMM sets ({SCRIPT}, with the convolution classes; rule: a family's own set ships iff its two-fold cross-validated MAPE " \
        "on the family's NeuSight rows beats the pooled set's in-sample MAPE on them):"
    if own:
        s += f" {', '.join(own)} the family's own (fitted on {', '.join(FAMILY_DEVICES[family])})"
    if rest:
        s += f"{';' if own else ''} {', '.join(rest)} generic.json's pooled set (the family fit did not beat it)"
    if family == "nvidia-ampere":
        s += "; Hopper and Blackwell inherit these through their files' inherits, GA10x (and Ada through it) copies them"
    return s + "."


def write(results: dict, directory: str) -> None:
    """Each family's chosen sets into its file (a class not chosen removed), the description's
    note; nvidia-ampere's chosen sets into nvidia-ampere-ga10x.json as inherited sets."""
    from neusight_report import _dump, constants_doc

    for family, ev in results.items():
        path = os.path.join(directory, f"{family}.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for c in CLASSES:
            doc["sets"].pop(c, None)
            if ev["choice"][c] == "family":
                doc["sets"][c] = {"constants": constants_doc(c, ev["fit"].sets[c]), "provenance": provenance(family, c, ev)}
        desc = doc["description"].split(" FMA-unit GEMM sets (")[0].replace(
            "the FMA-unit matrix classes are generic.json's pooled sets",
            "the FMA-unit matrix classes generic.json's pooled sets but where this file has its own")
        doc["description"] = desc + _note(family, ev["choice"])
        _dump(doc, path)
        if family == "nvidia-ampere":
            write_ga10x(doc, directory)


GA10X_NOTE = " FMA-unit sets of nvidia-ampere, inherited ("   # the note's start (efficiency_files.KEPT_NOTES)
GA10X_OLD_NOTE = " gemm_simt, bgemm_simt: nvidia-ampere's, inherited ("   # the GEMM-only note it replaces


def ga10x_source(c: str) -> str:
    """The inherit provenance of GA10x's copy of nvidia-ampere's set of class ``c``."""
    what, rows = (("fp32 SIMT sgemm", "FMA-unit GEMM") if c in GEMM_CLASSES else
                  ("fp32 cuDNN convolutions (FMA units, TF32 off)", "fp32 convolution"))
    return (f"nvidia-ampere's {c} set (PyTorch 2.1's {what} on NeuSight's A100 PCIe rows, {SCRIPT}): no {rows} rows "
            "of GA10x or Ada in NeuSight; the profile's fp32_datapath_factor scales the FMA peak of this design "
            "relative to the one-datapath level (fitted by bench/fit_sustained_gemm.py against the one-datapath "
            "cards' r), and Ampere is the one-datapath family of the same generation")


def write_ga10x(amp: dict, directory: str) -> None:
    """nvidia-ampere's sets of ``CLASSES`` (``amp``: its written file) into GA10x's file as
    inherited copies, the description's note replaced."""
    from neusight_report import _dump

    path = os.path.join(directory, f"{GA10X}.json")
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    for c in CLASSES:
        doc["sets"].pop(c, None)
        if c in amp["sets"]:
            doc["sets"][c] = {"constants": amp["sets"][c]["constants"],
                              "provenance": {"kind": "inherit", "source": ga10x_source(c)}}
    have = [c for c in CLASSES if c in amp["sets"]]
    desc = doc["description"].split(GA10X_OLD_NOTE)[0].split(GA10X_NOTE)[0]
    doc["description"] = desc + (f"{GA10X_NOTE}{SCRIPT}): {', '.join(have)}." if have else "")
    _dump(doc, path)


def main(argv=None) -> int:
    from family_simt_report import product_lines, report

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=nd.DATA)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "family_simt.md"))
    ap.add_argument("--write", action="store_true", help="write the chosen sets into the family files")
    ap.add_argument("--kloop", action="append", default=[], metavar="FAMILY",
                    help="fit this family's convolution classes with the k loop's sum form (KLOOP)")
    args = ap.parse_args(argv)
    KLOOP_FAMILIES[:] = args.kloop
    t0 = time.time()
    ns = nd.load(args.data)
    results = {fam: evaluate(ns, fam) for fam in FAMILY_DEVICES}
    if args.write:
        write(results, fns.fc.EFFICIENCY_DIR)
    product = product_lines(results) if args.write else []
    lines = report(results, time.time() - t0) + product
    emit(args.out, lines)
    return 0


if __name__ == "__main__":
    import family_simt

    sys.exit(family_simt.main())
