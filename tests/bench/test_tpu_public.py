"""bench/tpu_public.py and bench/tpu_variants.py: the public TPU rows' derived times against the
published numbers (closed form), and the predictions the bench compares them with against the
xla runtime's closed form on a TPU (launch + floor + max(MXU, HBM))."""

from __future__ import annotations

import csv
import json
import os

import pytest
import tpu_public as B
import tpu_variants as V

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _rows():
    with open(B.DATA, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_derived_times_follow_the_published_numbers():
    rows = _rows()
    assert len(rows) == 202  # 84 + 84 yw-host, 1 + 12 yw-trace, 8 aih-gemm, 13 aih-hbm
    by = {(r["source"], r["m"], r["bytes"]): float(r["measured_us"]) for r in rows}
    # aih-gemm 128^3: 2 x 128^3 / 2.589961271e12 FLOP/s = 4194304 / 2.589961271e12 s = 1.619447 us
    assert by[("aih-gemm", "128", "")] == pytest.approx(1.619447, abs=1e-6)
    # aih-hbm 2 MiB: 2 x 2097152 B / 1379.335021e9 B/s = 3.040816 us
    assert by[("aih-hbm", "", "2097152")] == pytest.approx(3.040816, abs=1e-6)
    for r in rows:
        pub, t = float(r["published"]), float(r["measured_us"])
        if r["published_unit"] == "us":
            assert t == pytest.approx(pub, rel=1e-6)
        elif r["op"] == "copy":
            assert t == pytest.approx(2 * int(r["bytes"]) / (pub * 1e9) * 1e6, rel=1e-6)
        else:
            assert t == pytest.approx(2 * int(r["m"]) * int(r["k"]) * int(r["n"]) / (pub * 1e12) * 1e6, rel=1e-6)


def _v5e_constants():
    with open(os.path.join(ROOT, "hardware_db", "efficiency", "google-tpu-v5e.json"), encoding="utf-8") as fh:
        doc = json.load(fh)
    return doc["scalars"]["run_fixed_s"], doc["sets"]["gemm"]["constants"]["e_compute"]


def test_copy_row_is_floor_plus_hbm_on_one_tpu7x_device():
    row = {"op": "copy", "dtype": "bf16", "bytes": "536870912", "profile": "tpu7x", "time_definition": "device_op"}
    p = B.predict_row(row)
    # device time: 1 us floor + read + write 2 x 536870912 B over 7380e9 / 2 B/s (one of two devices)
    # = 1 + 1073741824 / 3.69e12 s = 1 + 290.98694 us
    assert p["pred_us"] == pytest.approx(1 + 290.98694, rel=1e-6)
    assert p["launch_us"] == 0.0 and p["kernels"] == 1
    assert V.closed_us(dict(row, **p)) == pytest.approx(p["pred_us"], rel=1e-6)


def test_host_row_adds_the_call_launch():
    launch, e = _v5e_constants()
    row = {"op": "matmul", "dtype": "bf16", "m": "8192", "k": "8192", "n": "8192", "profile": "tpu-v6e",
           "time_definition": "host_call"}
    p = B.predict_row(row)
    # launch + 1 us + 2 x 8192^3 / (918e12 x e): the v5e's launch and MXU fraction, inherited
    assert p["pred_us"] == pytest.approx((launch + 1e-6 + 2 * 8192 ** 3 / (918e12 * e)) * 1e6, rel=1e-6)
    assert p["launch_us"] == pytest.approx(launch * 1e6, rel=1e-9)
    # a scaled MXU term (V2's form): c = 1.2 makes the MXU seconds 1.2x
    assert V.closed_us(dict(row, **p), c=1.2) == pytest.approx(
        (launch + 1e-6 + 1.2 * 2 * 8192 ** 3 / (918e12 * e)) * 1e6, rel=1e-6)


def test_hbm_fit_recovers_a_known_line():
    # rows made from t = 2 us + 1.25 x memory: the fit returns (2e-6, 1.25)
    rs = [{"measured_us": str((2e-6 + 1.25 * ms) * 1e6), "parts": [(0.0, ms, 1e-6)]} for ms in (1e-6, 1e-5, 1e-4, 1e-3)]
    fl, b = V.fit_hbm(rs)
    assert fl == pytest.approx(2e-6, rel=1e-9) and b == pytest.approx(1.25, rel=1e-9)


def test_fused_dot_convert_is_one_floor_and_the_bf16_result():
    # V3: dot (2 us MXU, 4 us HBM, 1 us floor) + convert (0.1 us vector, 3 us HBM, 1 us floor), m = k = n = 128:
    # the fused HBM term is the dot's x (2mk + 2kn + 2mn) / (2mk + 2kn + 4mn) = 4 x 6 / 8 = 3 us;
    # one kernel: 1 + max(2 + 0.1, 3) = 4 us (the two kernels: 1 + 4 + 1 + 3 = 9 us)
    r = {"m": "128", "k": "128", "n": "128", "time_definition": "device_op",
         "parts": [(2e-6, 4e-6, 1e-6), (0.1e-6, 3e-6, 1e-6)]}
    assert V.fused_us(r) == pytest.approx(4.0, rel=1e-12)
    assert V.closed_us(r) == pytest.approx(9.0, rel=1e-12)
    # a host-timed row adds its launch once: 50 us + 4 us
    assert V.fused_us(dict(r, time_definition="host_call", launch_s=50e-6)) == pytest.approx(54.0, rel=1e-12)
