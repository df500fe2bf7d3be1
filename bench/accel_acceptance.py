"""Issue 34's acceptance figures, pooled: the held-out accelerator rows exactly as the scripts that
own them score them, per device, pooled over every row and averaged over devices, and the
8 Gen 3 / 8 Gen 2 latency-ratio check.

    PYTHONPATH=$PWD python bench/accel_acceptance.py [MEASUREMENTS_DIR]

Rows and their scoring (imported, not re-implemented):

- Hexagon NPU (hexagon-sd8gen2, hexagon-sd8gen3; fp16 and W8A8): bench/fit_accelerators.py's
  held-out rows (``hexagon_rows`` of the ``HELD_OUT`` models), each predicted by its ``opcost_ms``
  at the row's deployment runtime (``LIBRARY_RUNTIME``: qnn-dlc or qnn-tflite, shipped profiles;
  its "opcost ... held-out rows" table), and its ``ratio_pairs`` for the 8 Gen 3 / 8 Gen 2 ratio.
- Apple Neural Engine (ane-a17pro): bench/fit_ane.py's held-out rows (``rows_of``, the ``HELD_OUT``
  model), each predicted by its ``opcost_ms`` (shipped profile, runtime coreml).  Its A16 held-out
  rows are printed apart: the issue names the A17 Pro.
- TPU v6e and TPU7x single ops: bench/tpu_public.py's ``scored_rows`` (every public row of those
  two chips; none is fitted on).

Error = predicted / measured - 1; MAPE over a device's rows; "pooled" over every row of the issue's
devices; "mean over devices" the mean of their MAPEs.  Running this reads held-out rows: a
re-computation of recorded figures, to be run after a model change is committed and disclosed.
Nothing is written.
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import fit_accelerators as FA  # noqa: E402
import fit_ane  # noqa: E402
import hexagon_model as H  # noqa: E402
import tpu_public  # noqa: E402

COMMAND = "PYTHONPATH=$PWD python bench/accel_acceptance.py ../shared/measurements/accelerators"
# the devices issue 34's acceptance names
DEVICES = ("hexagon-sd8gen2", "hexagon-sd8gen3", "ane-a17pro", "tpu-v6e", "tpu7x")
RATIO_TOL = 0.15


def hexagon_errors(mdir: str):
    """([(device, error %)] of bench/fit_accelerators.py's held-out rows, its ratio pairs)."""
    rows = FA.hexagon_rows(mdir)
    test = rows[rows.model_id.isin(FA.HELD_OUT)].reset_index(drop=True)
    pred = [FA.opcost_ms(r.model_id, r.opcost_profile, r.precision, FA.LIBRARY_RUNTIME[r.runtime])
            for r in test.itertuples()]
    errs = [(r.opcost_profile, (p / r.inference_time_ms - 1) * 100) for r, p in zip(test.itertuples(), pred)]
    return errs, FA.ratio_pairs(test.assign(pred=pred))


def ane_errors(mdir: str) -> list[tuple[str, float]]:
    """[(device, error %)] of bench/fit_ane.py's held-out rows at opcost's shipped prediction."""
    rows, _ = fit_ane.rows_of(mdir)
    test = rows[rows.model.isin(fit_ane.HELD_OUT)]
    return [(r.pid, (fit_ane.opcost_ms(r.model, r.pid, r.precision) / r.latency_ms - 1) * 100)
            for r in test.itertuples()]


def tpu_errors() -> list[tuple[str, float]]:
    """[(device, error %)] of bench/tpu_public.py's rows on the TPU v6e and TPU7x."""
    return [(r["profile"], r["err"]) for r in tpu_public.scored_rows() if r["profile"] in ("tpu-v6e", "tpu7x")]


def summary(errs: list[tuple[str, float]]) -> list[str]:
    """Per device rows, MAPE and max |error|; the pooled MAPE over the issue's devices and the mean
    of their MAPEs."""
    out = ["| device | rows | MAPE % | max |error| % | acceptance device |", "|---|---:|---:|---:|---|"]
    mapes, pooled = [], []
    for dev in sorted({d for d, _ in errs}, key=lambda d: (d not in DEVICES, d)):
        e = [abs(x) for d, x in errs if d == dev]
        mape = sum(e) / len(e)
        if dev in DEVICES:
            mapes.append(mape)
            pooled += e
        out.append(f"| {dev} | {len(e)} | {mape:.1f} | {max(e):.1f} | {'yes' if dev in DEVICES else 'no'} |")
    out += ["", f"Pooled over the acceptance devices: MAPE {sum(pooled) / len(pooled):.1f} % over {len(pooled)} rows; "
            f"mean over devices {sum(mapes) / len(mapes):.1f} %; largest device MAPE {max(mapes):.1f} % "
            "(acceptance: pooled <= 25 %, no device above 40 %)."]
    return out


def ratio_lines(pairs) -> list[str]:
    """The 8 Gen 3 / 8 Gen 2 ratio per held-out model, precision and runtime, and how many are
    within ``RATIO_TOL`` of the measured ratio."""
    out = ["| model | precision | runtime | measured | predicted | error % |", "|---|---|---|---:|---:|---:|"]
    within = 0
    for m, prec, rt, mr, got in pairs:
        pr = got["pred"]
        within += abs(pr / mr - 1) <= RATIO_TOL
        out.append(f"| {m} | {prec} | {rt} | {mr:.3f} | {pr:.3f} | {abs(pr / mr - 1) * 100:.1f} |")
    return out + ["", f"Within {RATIO_TOL * 100:g} % of the measured ratio: {within} of {len(pairs)} pairs."]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("measurements", nargs="?", default=H.MEASUREMENTS)
    a = ap.parse_args()
    hex_errs, pairs = hexagon_errors(a.measurements)
    errs = hex_errs + ane_errors(a.measurements) + tpu_errors()
    print("\n".join(["# Issue 34 acceptance: held-out accelerator rows", "", f"Command: `{COMMAND}`", "",
                     *summary(errs), "", "**8 Gen 3 / 8 Gen 2 latency ratio, held-out models**", "",
                     *ratio_lines(pairs)]))


if __name__ == "__main__":
    main()
