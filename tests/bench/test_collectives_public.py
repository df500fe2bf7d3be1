"""The public nccl-tests tables (bench/data/nccl_public) and their scoring script: every table
loads with its posted numbers self-consistent, names its source, and is predicted by the library's
own Fabric with the forced algorithm where the run forced one."""

from __future__ import annotations

import collectives_public as P
import pytest

from analyzer.scaling import collectives as C
from hardware_db import collectives, links

K = C.constants_from(collectives.nccl())


@pytest.fixture(scope="module")
def tables():
    return P.load()


def test_every_table_loads_names_its_source_and_no_hopper_h100(tables):
    assert len(tables) >= 10
    for tid, (t, rows) in tables.items():
        assert rows, tid
        assert t["source"] and t["posted"], tid
        assert "H100" not in t["posted"] + t["source"] and "H800" not in t["posted"], tid
        if "nic_gbs_per_gpu" in t:
            assert t["nic_source"], tid


def test_a_mistyped_time_is_caught():
    row = {"collective": "all_reduce", "size_bytes": "1073741824", "time_us": "7163.5",
           "algbw_gbs": "149.89", "busbw_gbs": "224.84"}
    P.check_row(row, 4, "ok")
    with pytest.raises(SystemExit):
        P.check_row({**row, "time_us": "7613.5"}, 4, "typo")


def test_single_node_table_is_the_library_nccl_call(tables):
    t, rows = tables["dgx_a100_4of8"]
    node = links.get_node("dgx-a100")
    want = [C.nccl(c, nb, 4, node.ring_gbs(4)[0] * 1e9, K).comm.total for c, nb, _ in rows]
    assert list(P.predict(t, rows, K)) == pytest.approx(want, rel=1e-12)


def test_forced_algorithms_restrict_the_candidates(tables):
    t, rows = tables["azure_nd_gb200_v6"]
    assert P.fabric(t, K).intra.nvls_efficiency == 0.0   # NCCL_ALGO=Ring: no NVLS
    t, rows = tables["azure_nd_h200_v5"]
    fb = P.fabric(t, K)
    big = [r for r in rows if r[1] == 1 << 30][0]
    node = links.get_node("dgx-h200")
    nvls = (1 + K.out_share) * big[1] / (450e9 * node.nvls_efficiency) + K.base_s + 2 * K.nvls_step_s
    assert fb.collective("all_reduce", big[1], 8).total == pytest.approx(nvls, rel=1e-12)


def test_tables_without_a_network_figure_are_not_scored(tables):
    res = P.evaluate(tables, K)
    assert res["coreweave_gb200_2rack"] is None
    assert res["oci_bm_gpu4_8_x2"]["run_base_us"] > K.base_s * 1e6
