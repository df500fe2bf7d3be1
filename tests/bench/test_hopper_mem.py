"""The H200 op rows (bench/data/hopper_mem) as a fit source of nvidia-hopper: which rows, their
closed-form counts, and that the norms of the same run stay out of the fit."""

from __future__ import annotations

import pytest

pd = pytest.importorskip("pandas")

import efficiency_data as ed  # noqa: E402


def test_the_hopper_fit_reads_the_h200_add_and_gelu_kernel_sums():
    df = ed.load_h200_ops()
    # 70 rows each: 7 M x 5 N x 2 dtypes; the norms are scored, not fitted
    assert df.op.value_counts().to_dict() == {"add": 70, "gelu": 70}
    assert set(df.op_class) == {"elementwise", "activation"}
    assert sorted(set(df.group)) == [768, 1024, 2048, 4096, 8192]
    assert ("h200_ops", "h200_sxm") in ed.FIT_SOURCES["nvidia-hopper"]
    assert all(("h200_ops", "h200_sxm") not in v for k, v in ed.FIT_SOURCES.items() if k != "nvidia-hopper")


def test_h200_rows_take_the_closed_form_counts_and_their_kernel_sum():
    df = ed.load_h200_ops(ops=tuple(ed.H200_COUNTS))
    # add fp16 [2048, 4096] + [2048, 4096]: 2 reads + 1 write of 2-byte elements = 3 x 2 x 2048 x 4096
    a = df[df.key == "add|fp16|2048|4096"].iloc[0]
    assert a.bytes == 3 * 2 * 2048 * 4096 and a.vec == 2048 * 4096 and a.op_class == "elementwise"
    # layer norm bf16 [512, 768] with weight and bias: x read, y written, 2 x 768 parameters
    n = df[df.key == "layernorm|bf16|512|768"].iloc[0]
    assert n.bytes == 2 * (2 * 768 + 2 * 512 * 768) and n.op_class == "norm"
    rows = pd.read_csv(ed.H200_OPS)
    r = rows[(rows.op == "add") & (rows.dtype == "fp16") & (rows.M == 2048) & (rows.N == 4096)].iloc[0]
    assert a.t == pytest.approx(r.kernel_sum_us * 1e-6, rel=1e-12)
