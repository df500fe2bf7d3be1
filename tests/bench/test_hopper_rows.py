"""bench/hopper_rows.py: the H200 norm and softmax rows with ``analyze``'s counts, their row kinds
and classes, and the fitted (not shipped) norm constants against a recorded row."""

from __future__ import annotations

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

import hopper_rows as hr  # noqa: E402
import op_models  # noqa: E402

import analyzer  # noqa: E402
from analyzer.prediction import row_kernels as rk  # noqa: E402


@pytest.mark.parametrize("key", ["layernorm|fp16|512|768", "rmsnorm|bf16|1|8192", "softmax|fp16|2048|4096"])
def test_the_frame_takes_analyzes_counts(key):
    row = hr.frame().set_index("key").loc[key]
    op, dtype, m, n = key.split("|")
    c = analyzer.analyze(op_models.build(op, dtype, M=int(m), N=int(n)), hw="h200-sxm").nodes[0].cost
    assert (row.vec, row.trans) == (c.vector_flops, c.transcendentals)
    assert row.bytes == c.activation_bytes_read + c.activation_bytes_written + c.weight_bytes


def test_kinds_and_classes():
    df = hr.frame().set_index("key")
    # torch 2.11 runs the warp kernel at N = 2048 (the CSV's main_kernel: softmax_warp_forward), which the
    # class boundary (SOFTMAX_WARP_ROW, 1024: the Ampere sets' torch 2.1 rule) puts in softmax_block
    assert tuple(df.loc["softmax|fp16|1|2048", ["kind", "op_class"]]) == ("softmax_warp", "softmax_block")
    assert tuple(df.loc["softmax|fp16|1|1024", ["kind", "op_class"]]) == ("softmax_warp", "softmax")
    assert tuple(df.loc["softmax|bf16|1|4096", ["kind", "op_class"]]) == ("softmax_block", "softmax_block")
    assert tuple(df.loc["rmsnorm|fp16|1|768", ["kind", "op_class"]]) == ("rms_norm", "norm")
    assert len(df) == 210


def test_the_norm_fit_reproduces_a_recorded_row():
    # the norm group's constants (bench/results/hopper_rows.md), layer norm fp16 M = 1, N = 8192:
    # 10.143 us measured (h200_ops_2026-12-04.csv); floor 1.125 + (1825.8 + 16 x 957.2) / 1.98 GHz = 9.78 us
    # plus the streaming terms of 64 KB
    sets = {"norm": dict(hr.HELD, floor_s=1.125e-6, b_half_bytes=1.194e5, bpc=66.35, l2_hit=0.1666)}
    rows = {"layer_norm": {"c0_cycles": 1825.8, "step_cycles": 957.2, "overlap": 0.0}}
    hw = hr.hw_of("h200_sxm")
    d = hr.frame()
    d = d[d.key == "layernorm|fp16|1|8192"]
    t = hr.predict(d, hw, hr.arrays_of(sets, rows, hw), detail=True)
    assert t["row_s"][0] == pytest.approx((1825.8 + 16 * 957.2) / 1.98e9, rel=1e-9)
    assert t["time_s"][0] == pytest.approx(10.143e-6, rel=0.05)
    assert float(np.asarray(t["row_waves"])[0]) == 1 and rk.launch("layer_norm", 8192)[0] == 16
