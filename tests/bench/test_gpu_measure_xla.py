"""bench/gpu's XLA single-op measurement on a CPU: the cases, one wall pass cut to a few cases by its
budget, and the committed H200 rows' join (no time is asserted)."""

from __future__ import annotations

import collections
import csv
import json
import os

import assemble_xla
import measure_xla
import xla_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_cases_are_unique_and_counted_per_family():
    cs = xla_cases.cases()
    fam = collections.Counter(c["family"] for c in cs)
    # elementwise: 9 sizes x 2 dtypes each (add, tanh, gelu, affine_relu); rows: 3 widths x 4 row
    # counts x 2 dtypes; dots: 16 shapes x 2 dtypes; bias+ReLU dots: 3 x 2; batched: 6 x 2;
    # col means 6, sums 5, convs 3 x 3 batches, transposes 3, scans 2 x 3
    assert fam == {"add": 18, "tanh": 18, "gelu": 18, "affine_relu": 18, "layernorm": 24, "softmax": 24,
                   "dot": 32, "dot_bias_relu": 6, "bdot": 12, "colmean": 6, "sum": 5, "conv": 9,
                   "transpose": 3, "scan": 6}
    assert len(cs) == 199
    assert [c["tier"] for c in cs] == sorted(c["tier"] for c in cs)


def test_wall_pass_runs_on_cpu_and_stops_at_its_budget(tmp_path, monkeypatch):
    keep = [c for c in xla_cases.cases() if c["key"] in ("add|f32|256", "softmax|f32|1x64")]
    monkeypatch.setattr(xla_cases, "cases", lambda: keep)
    monkeypatch.setattr(measure_xla, "T0", measure_xla.time.perf_counter())
    measure_xla.run("wall", str(tmp_path), budget_s=1e9)
    with open(tmp_path / "xla_ops_wall.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["key"] for r in rows] == ["add|f32|256", "softmax|f32|1x64"]
    assert all(not r["error"] and float(r["eager_wall_us"]) > 0 and int(r["xla_fusions"]) >= 1 for r in rows)
    meta = json.loads((tmp_path / "xla_ops_meta_wall.json").read_text())
    assert meta["skipped"] == [] and meta["cases"] == 2
    measure_xla.run("wall", str(tmp_path), budget_s=-1.0)
    meta = json.loads((tmp_path / "xla_ops_meta_wall.json").read_text())
    assert meta["skipped"] == ["add|f32|256", "softmax|f32|1x64"]


def test_committed_h200_rows_cover_every_case_with_both_runs():
    path = os.path.join(ROOT, "bench", "results", "h200_xla_ops_2026-12-04.csv")
    with open(path, newline="") as f:
        rows = {r["key"]: r for r in csv.DictReader(f)}
    assert set(rows) == {c["key"] for c in xla_cases.cases()}
    for r in rows.values():
        assert not r["error"]
        # the repeat agrees within 20 % on every case (its median difference is 0.1 %)
        assert abs(float(r["kernel_sum_us_run2"]) / float(r["kernel_sum_us"]) - 1) < 0.2, r["key"]
    assert set(assemble_xla.OPS_TIMES) <= {k[:-5] for k in next(iter(rows.values())) if k.endswith("_run2")}


def test_xla_ops_check_scores_rows_and_summarises_by_family():
    import xla_ops_check
    rows = [{"key": "add|f32|256", "family": "add", "dtype": "f32", "kernel_sum_us": "1.0", "n_kernels": "1"},
            {"key": "sum|f32|1024", "family": "sum", "dtype": "f32", "kernel_sum_us": "", "n_kernels": "1"}]
    scored = xla_ops_check.predict_rows(rows, "h200", "kernel_sum_us")
    assert [s["key"] for s in scored] == ["add|f32|256"]      # a row without a time is skipped
    assert scored[0]["n_predicted"] == 1 and scored[0]["predicted_us"] > 0
    fake = [{"family": "a", "err": 0.1}, {"family": "a", "err": -0.3}, {"family": "b", "err": 0.2}]
    s = xla_ops_check.summary(fake)
    # a: MAPE (0.1 + 0.3) / 2 = 0.2, bias (0.1 - 0.3) / 2 = -0.1; all: (0.1 + 0.3 + 0.2) / 3 = 0.2
    assert abs(s["a"]["mape"] - 0.2) < 1e-12 and abs(s["a"]["bias"] + 0.1) < 1e-12
    assert abs(s["all"]["mape"] - 0.2) < 1e-12 and s["all"]["rows"] == 3
