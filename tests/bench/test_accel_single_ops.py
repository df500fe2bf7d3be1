"""bench/accel_single_ops.py's quick subset: single JAX ops on every TPU profile under ``xla`` and
one-node ONNX models on the Hexagon, ANE, Edge TPU, DSP and NPU profiles each predict (no
exception, finite and > 0, or 0 with the no-kernel warning), and a newer TPU at least as good on
every figure a case needs is never predicted slower (predictions only)."""

from __future__ import annotations

import math

import accel_single_ops as B
import pytest


@pytest.fixture(scope="module")
def jax_rows():
    return B.run_jax(set(B.QUICK))


def test_every_quick_jax_case_predicts_on_every_tpu(jax_rows):
    assert set(jax_rows) == set(B.QUICK)
    bad = [(n, tpu, c) for n, cells in jax_rows.items() for tpu, c in zip(B.TPUS, cells) if not B.plausible(c)]
    assert not bad
    # under xla a TPU call pays its launch: every cell is > 0, the lone reshape too
    assert all(c[0] > 0 and math.isfinite(c[0]) for cells in jax_rows.values() for c in cells)


def test_newer_tpus_are_never_slower_on_the_quick_cases(jax_rows):
    assert B.order_violations(jax_rows) == []
    assert B.case_dtype("matmul f32 l") == "bf16"   # an f32 dot: one bf16 MXU pass
    assert B.order_applies("tpu-v5e", "tpu-v5p", "matmul f32 l")
    assert not B.order_applies("tpu-v6e", "tpu7x", "matmul int8 s")  # TPU7x states no int8 figure


def test_every_quick_onnx_case_predicts_on_every_accelerator():
    rows = B.run_onnx(set(B.QUICK_ONNX))
    assert set(rows) == set(B.QUICK_ONNX)
    bad = [(n, acc[0], c) for n, cells in rows.items() for acc, c in zip(B.ACCELS, cells) if not B.plausible(c)]
    assert not bad
    # only the lone Reshape (a view) may be 0, and then with the library's warning
    zeros = {n for n, cells in rows.items() for c in cells if c[0] == 0}
    assert zeros <= {"Reshape s"} and all(c[2] for c in rows["Reshape s"] if c[0] == 0)
