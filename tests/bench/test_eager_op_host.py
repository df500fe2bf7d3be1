"""bench/eager_op_host.py: the shipped torch2.11-h200 eager-op table is the H200 rows' medians."""

from __future__ import annotations

import eager_op_host as E

from analyzer.prediction import runtimes


def test_the_shipped_table_is_the_measured_medians():
    # median over each class's calls of eager wall-clock - kernel sum (us), to 0.1 us
    # (the shipped table's "attention", a fused attention call, takes torch.bmm's: no row measures one)
    got = E.table(E.host_parts())
    shipped = runtimes.eager_host(E.HOST).op_call
    assert got == {c: v for c, v in shipped.items() if c != "attention"}
    assert shipped["attention"] == got["bgemm"]
    assert got["gemm"] == 20.6 and got["conv"] == 18.8 and got["norm"] == 18.1


def test_host_parts_cover_every_measured_call():
    parts = E.host_parts()
    assert len(parts) == 780 + 318                    # the single-op run's calls + the conv run's
    assert set(parts.cls) == set(E.CLASS_OF.values())
