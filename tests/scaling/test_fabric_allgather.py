"""All-gather over nodes is the mirror of reduce-scatter: each device's nbytes/g share among the
k nodes on its network share, then the whole nbytes inside the node; a node's network moves
(k-1)/k x nbytes once (not once per device)."""

from __future__ import annotations

import pytest

from analyzer.scaling import fabric as FB


def test_allgather_over_nodes_moves_each_share_once():
    # 2 nodes x 4 GPUs, one 1e10 B/s NIC per GPU, 1e11 B/s inside; 1e9 B gathered per device:
    # network 1/2 x (1e9/4) / 1e10 = 12.5 ms, inside 3/4 x 1e9 / 1e11 = 7.5 ms
    f = FB.Fabric(inter=FB.Level(1e10, 0.0), intra=FB.Level(1e11, 0.0), per_node=4, nics=4)
    assert f.allgather(1e9, 8).total == pytest.approx(0.0125 + 0.0075)


def test_allgather_and_reduce_scatter_cost_the_same_over_nodes():
    f = FB.Fabric(inter=FB.Level(5e10, 1e-6), intra=FB.Level(4.5e11, 0.0), per_node=8, nics=8)
    for n in (16, 32, 64):
        assert f.allgather(3e8, n).total == pytest.approx(f.reduce_scatter(3e8, n).total, rel=1e-12)
