"""Recorded measurements: NeuSight fp32 PyTorch ops on five GPUs, predicted with the shipped constants.

tests/fixtures/neusight/rows.csv: 12 rows of ``shared/measurements/gpu/neusight_ops.csv.gz``
(``source_row``: the 1-based data row of that file; one per listed (device, op), the row of
least ``sha256("opcost-ns|fixture|<row>")`` among those at least 10x their device's and class's
smallest latency, so the kernel dominates), with the host dispatch ``bench/fit_neusight.py``
fitted for that device and class (``bench/results/fit_neusight.md``: a property of NeuSight's
host, recorded as data). A row's time is one eager call: ``analyze(..., runtime="kernel")`` +
that dispatch. Every row is in the fit's pool (in-sample); the stated tolerances are the
fit's in-sample spread: 20 % for the memory-bound classes, 35 % for the FMA-unit products
(their in-sample MAPE is 19-36 %).
"""

from __future__ import annotations

import csv
import os
import sys
from types import SimpleNamespace

import pytest

import analyzer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = os.path.join(ROOT, "tests", "fixtures", "neusight", "rows.csv")
MATRIX_TOL, MEMORY_TOL = 0.35, 0.20


def _rows():
    with open(ROWS, newline="") as f:
        return list(csv.DictReader(f))


def _onnx(row):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import neusight_data
        import neusight_report
    finally:
        sys.path.pop(0)
    vals = {k: (float(v) if v not in ("",) and k not in ("device_system", "op") else (v or float("nan")))
            for k, v in row.items()}
    return neusight_report.onnx_of(SimpleNamespace(**vals)), neusight_data.PROFILE[row["device_system"]]


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['device_system']}-{r['op']}-{r['source_row']}")
def test_recorded_row_within_tolerance(row):
    model, hw = _onnx(row)
    pred = analyzer.analyze(model, hw=[hw], runtime="kernel").predictions[0].latency_s
    pred += float(row["host_dispatch_us"]) * 1e-6
    meas = float(row["latency_us"]) * 1e-6
    tol = MATRIX_TOL if row["op"] in ("linear", "bmm", "conv") else MEMORY_TOL
    assert abs(pred / meas - 1.0) <= tol, (pred, meas)
